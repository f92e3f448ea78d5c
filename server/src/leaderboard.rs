//! Public leaderboards, one per rule set: ranked games against the
//! Executive score win 3, draw 1, loss 0. Ordered by points, then more
//! wins, then fewer completed games, then name. Each game counts once.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::store::{StoreError, StoreFuture};

/// How a ranked game ended for the player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankedOutcome {
    Win,
    Draw,
    Loss,
}

/// One player's line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    pub name: String,
    pub points: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    pub games: u32,
}

impl Standing {
    fn add(&mut self, outcome: RankedOutcome) {
        self.games += 1;
        match outcome {
            RankedOutcome::Win => {
                self.wins += 1;
                self.points += 3;
            }
            RankedOutcome::Draw => {
                self.draws += 1;
                self.points += 1;
            }
            RankedOutcome::Loss => self.losses += 1,
        }
    }
}

/// A page of a leaderboard, names only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub rule_set: String,
    pub page: u32,
    pub per_page: u32,
    pub total: u32,
    pub entries: Vec<PageEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageEntry {
    /// 1-based place.
    pub place: u32,
    #[serde(flatten)]
    pub standing: Standing,
}

/// The full tie order.
pub fn order(standings: &mut [Standing]) {
    standings.sort_by(|a, b| {
        b.points
            .cmp(&a.points)
            .then(b.wins.cmp(&a.wins))
            .then(a.games.cmp(&b.games))
            .then(a.name.cmp(&b.name))
    });
}

fn page_of(rule_set: &str, mut all: Vec<Standing>, page: u32, per_page: u32) -> Page {
    order(&mut all);
    let per_page = per_page.clamp(1, 100);
    let page = page.max(1);
    let total = all.len() as u32;
    let start = ((page - 1) * per_page) as usize;
    let entries = all
        .into_iter()
        .enumerate()
        .skip(start)
        .take(per_page as usize)
        .map(|(i, standing)| PageEntry {
            place: i as u32 + 1,
            standing,
        })
        .collect();
    Page {
        rule_set: rule_set.to_owned(),
        page,
        per_page,
        total,
        entries,
    }
}

pub trait Leaderboards: Send + Sync + std::fmt::Debug {
    /// Counts one finished ranked game (idempotent by `game`).
    fn record<'a>(
        &'a self,
        game: &'a str,
        rule_set: &'a str,
        account: &'a str,
        name: &'a str,
        outcome: RankedOutcome,
    ) -> StoreFuture<'a, ()>;
    fn page<'a>(&'a self, rule_set: &'a str, page: u32, per_page: u32) -> StoreFuture<'a, Page>;
}

/// Games counted, and standings by (rule set, account).
type Tables = (HashSet<String>, HashMap<(String, String), Standing>);

/// Leaderboards in this process only.
#[derive(Debug, Default)]
pub struct MemoryLeaderboards {
    tables: Mutex<Tables>,
}

impl Leaderboards for MemoryLeaderboards {
    fn record<'a>(
        &'a self,
        game: &'a str,
        rule_set: &'a str,
        account: &'a str,
        name: &'a str,
        outcome: RankedOutcome,
    ) -> StoreFuture<'a, ()> {
        let mut t = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if t.0.insert(game.to_owned()) {
            let s =
                t.1.entry((rule_set.to_owned(), account.to_owned()))
                    .or_default();
            s.name = name.to_owned();
            s.add(outcome);
        }
        Box::pin(async { Ok(()) })
    }

    fn page<'a>(&'a self, rule_set: &'a str, page: u32, per_page: u32) -> StoreFuture<'a, Page> {
        let t = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let all: Vec<Standing> =
            t.1.iter()
                .filter(|((rs, _), _)| rs == rule_set)
                .map(|(_, s)| s.clone())
                .collect();
        let p = page_of(rule_set, all, page, per_page);
        Box::pin(async move { Ok(p) })
    }
}

/// Leaderboards in Redis: `jgl:{boards}:RULES` (hash account → standing
/// JSON) and `jgl:{boards}:done` (games counted). Pages are ordered in the
/// server with the full tie order, which reads the whole board: fine for
/// boards of thousands of players.
#[derive(Clone)]
pub struct RedisLeaderboards {
    conn: redis::aio::ConnectionManager,
    script: redis::Script,
}

impl std::fmt::Debug for RedisLeaderboards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisLeaderboards { .. }")
    }
}

/// KEYS: board, done. ARGV: game, account, name, outcome.
const RECORD: &str = r"
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
local raw = redis.call('HGET', KEYS[1], ARGV[2])
local s = {points = 0, wins = 0, draws = 0, losses = 0, games = 0}
if raw then s = cjson.decode(raw) end
s.name = ARGV[3]
s.games = s.games + 1
if ARGV[4] == 'win' then s.wins = s.wins + 1; s.points = s.points + 3
elseif ARGV[4] == 'draw' then s.draws = s.draws + 1; s.points = s.points + 1
else s.losses = s.losses + 1 end
redis.call('HSET', KEYS[1], ARGV[2], cjson.encode(s))
return 1
";

impl RedisLeaderboards {
    pub fn open(url: &str, timeout: std::time::Duration) -> Result<RedisLeaderboards, StoreError> {
        let conn = crate::store::redis_connection(url, timeout)?;
        Ok(RedisLeaderboards {
            conn,
            script: redis::Script::new(RECORD),
        })
    }
}

impl Leaderboards for RedisLeaderboards {
    fn record<'a>(
        &'a self,
        game: &'a str,
        rule_set: &'a str,
        account: &'a str,
        name: &'a str,
        outcome: RankedOutcome,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let outcome = match outcome {
                RankedOutcome::Win => "win",
                RankedOutcome::Draw => "draw",
                RankedOutcome::Loss => "loss",
            };
            let _: i64 = self
                .script
                .key(format!("jgl:{{boards}}:{rule_set}"))
                .key("jgl:{boards}:done")
                .arg(game)
                .arg(account)
                .arg(name)
                .arg(outcome)
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        })
    }

    fn page<'a>(&'a self, rule_set: &'a str, page: u32, per_page: u32) -> StoreFuture<'a, Page> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let raw: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(format!("jgl:{{boards}}:{rule_set}"))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let all = raw
                .values()
                .filter_map(|v| serde_json::from_str::<Standing>(v).ok())
                .collect();
            Ok(page_of(rule_set, all, page, per_page))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, points: u32, wins: u32, games: u32) -> Standing {
        Standing {
            name: name.into(),
            points,
            wins,
            games,
            ..Standing::default()
        }
    }

    #[test]
    fn the_full_tie_order() {
        let mut all = vec![
            s("Zed", 6, 2, 4),
            s("Amy", 6, 1, 4),
            s("Bob", 6, 2, 3),
            s("Cat", 9, 3, 3),
            s("Abe", 6, 2, 4),
        ];
        order(&mut all);
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Cat", "Bob", "Abe", "Zed", "Amy"]);
    }
}
