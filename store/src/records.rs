//! Lasting records between accounts: head-to-head series results, win
//! streaks per rule set, and ranks by series won. Recording a series is
//! idempotent (keyed by the series id), so a retry never counts twice; the
//! keys are kept for the idempotency window after the series ended (see
//! [`crate::idempotency`]).

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::idempotency::{IdempotencyWindow, SEEN_LUA, SeenKeys, seen_keys};
use crate::{StoreError, StoreFuture};

/// Rank names, lowest first.
pub const RANKS: [&str; 6] = [
    "Rookie",
    "Contender",
    "Hustler",
    "Shark",
    "Kingpin",
    "Legend",
];

/// Series won needed for each rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankThresholds(pub [u32; 6]);

impl Default for RankThresholds {
    fn default() -> RankThresholds {
        RankThresholds([0, 3, 10, 25, 50, 100])
    }
}

impl RankThresholds {
    pub fn rank(&self, series_won: u32) -> &'static str {
        let i = self.0.iter().rposition(|t| series_won >= *t).unwrap_or(0);
        RANKS[i]
    }
}

/// One player's record in one rule set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayerRecord {
    /// Series won in every rule set.
    pub series_won: u32,
    /// Consecutive series won in this rule set.
    pub streak: u32,
    pub best_streak: u32,
}

pub use jumpgate_lobby::SeriesRecord;

pub trait Records: Send + Sync + std::fmt::Debug {
    fn record<'a>(&'a self, series: &'a SeriesRecord) -> StoreFuture<'a, ()>;
    fn player<'a>(&'a self, account: &'a str, rule_set: &'a str) -> StoreFuture<'a, PlayerRecord>;
    /// `(a's wins, b's wins, draws)` between two accounts.
    fn head_to_head<'a>(&'a self, a: &'a str, b: &'a str) -> StoreFuture<'a, (u32, u32, u32)>;
}

#[derive(Debug, Default)]
struct Tables {
    done: SeenKeys,
    won: HashMap<String, u32>,
    streak: HashMap<(String, String), (u32, u32)>,
    h2h: HashMap<(String, String), u32>,
    draws: HashMap<(String, String), u32>,
}

fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

/// Records in this process only.
#[derive(Debug, Default)]
pub struct MemoryRecords {
    tables: Mutex<Tables>,
    window: IdempotencyWindow,
}

impl MemoryRecords {
    pub fn new(window: IdempotencyWindow) -> MemoryRecords {
        MemoryRecords {
            tables: Mutex::default(),
            window,
        }
    }
}

impl Records for MemoryRecords {
    fn record<'a>(&'a self, s: &'a SeriesRecord) -> StoreFuture<'a, ()> {
        let mut t = lock(&self.tables);
        let now = crate::sync::now_ms();
        let decided = match t.done.admit(self.window, &s.series, s.decided, now) {
            Ok(decided) => decided,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        if t.done.insert(s.series.clone(), decided) {
            let [a, b] = &s.players;
            match s.winner {
                None => {
                    *t.draws.entry(pair(a, b)).or_default() += 1;
                    for p in [a, b] {
                        t.streak
                            .entry((p.clone(), s.rule_set.clone()))
                            .or_default()
                            .0 = 0;
                    }
                }
                Some(w) => {
                    let (winner, loser) = (&s.players[w], &s.players[1 - w]);
                    *t.won.entry(winner.clone()).or_default() += 1;
                    *t.h2h.entry((winner.clone(), loser.clone())).or_default() += 1;
                    let e = t
                        .streak
                        .entry((winner.clone(), s.rule_set.clone()))
                        .or_default();
                    e.0 += 1;
                    e.1 = e.1.max(e.0);
                    t.streak
                        .entry((loser.clone(), s.rule_set.clone()))
                        .or_default()
                        .0 = 0;
                }
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn player<'a>(&'a self, account: &'a str, rule_set: &'a str) -> StoreFuture<'a, PlayerRecord> {
        let t = lock(&self.tables);
        let (streak, best_streak) = t
            .streak
            .get(&(account.to_owned(), rule_set.to_owned()))
            .copied()
            .unwrap_or_default();
        let r = PlayerRecord {
            series_won: t.won.get(account).copied().unwrap_or(0),
            streak,
            best_streak,
        };
        Box::pin(async move { Ok(r) })
    }

    fn head_to_head<'a>(&'a self, a: &'a str, b: &'a str) -> StoreFuture<'a, (u32, u32, u32)> {
        let t = lock(&self.tables);
        let get = |x: &str, y: &str| {
            t.h2h
                .get(&(x.to_owned(), y.to_owned()))
                .copied()
                .unwrap_or(0)
        };
        let r = (
            get(a, b),
            get(b, a),
            t.draws.get(&pair(a, b)).copied().unwrap_or(0),
        );
        Box::pin(async move { Ok(r) })
    }
}

/// Records in Redis, keys under the hash tag `{records}`: `…:done` with
/// `…:done:at` and `…:done:scan` (the recorded series, see
/// [`crate::idempotency`]), `…:won` (hash account → series won), `…:streak:RULES`
/// and `…:best:RULES` (hash account → streak), `…:h2h` (hash
/// `WINNER|LOSER` → count), `…:draws` (hash `A|B`, sorted → count).
#[derive(Clone)]
pub struct RedisRecords {
    conn: crate::RedisConn,
    script: redis::Script,
    window: IdempotencyWindow,
}

impl std::fmt::Debug for RedisRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisRecords { .. }")
    }
}

use crate::keys::RECORDS as R;
use crate::sync::lock;

/// After [`SEEN_LUA`]. KEYS: (seen), won, streak, best, h2h, draws.
/// ARGV: (window, decided), series, a, b, winner ('a' | 'b' | ''), draw
/// field.
const RECORD: &str = r"
if seen_expired() then return redis.error_reply('EXPIRED series ' .. ARGV[3]) end
seen_prune()
if seen(ARGV[3]) then return 0 end
seen_add(ARGV[3])
local WON, STREAK, BEST, H2H, DRAWS = KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
if ARGV[6] == '' then
  redis.call('HINCRBY', DRAWS, ARGV[7], 1)
  redis.call('HSET', STREAK, ARGV[4], 0, ARGV[5], 0)
  return 1
end
local w, l = ARGV[4], ARGV[5]
if ARGV[6] == 'b' then w, l = ARGV[5], ARGV[4] end
redis.call('HINCRBY', WON, w, 1)
redis.call('HINCRBY', H2H, w .. '|' .. l, 1)
local s = redis.call('HINCRBY', STREAK, w, 1)
local best = tonumber(redis.call('HGET', BEST, w) or '0')
if s > best then redis.call('HSET', BEST, w, s) end
redis.call('HSET', STREAK, l, 0)
return 1
";

impl RedisRecords {
    pub fn open(
        url: &str,
        timeout: std::time::Duration,
        window: IdempotencyWindow,
    ) -> Result<RedisRecords, StoreError> {
        Ok(RedisRecords::on(
            crate::redis_connection(url, timeout)?,
            window,
        ))
    }

    /// The records on a shared connection.
    pub fn on(conn: crate::RedisConn, window: IdempotencyWindow) -> RedisRecords {
        RedisRecords {
            conn,
            script: redis::Script::new(&format!("{SEEN_LUA}{RECORD}")),
            window,
        }
    }

    async fn hget(&self, key: &str, field: &str) -> Result<u32, StoreError> {
        let mut conn = self.conn.clone();
        let v: Option<u32> = redis::cmd("HGET")
            .arg(key)
            .arg(field)
            .query_async(&mut conn)
            .await
            .map_err(StoreError::from)?;
        Ok(v.unwrap_or(0))
    }
}

impl Records for RedisRecords {
    fn record<'a>(&'a self, s: &'a SeriesRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let [a, b] = &s.players;
            let (x, y) = pair(a, b);
            let mut call = self.script.prepare_invoke();
            for key in seen_keys(&format!("{R}:done")) {
                call.key(key);
            }
            let _: i64 = call
                .key(format!("{R}:won"))
                .key(format!("{R}:streak:{}", s.rule_set))
                .key(format!("{R}:best:{}", s.rule_set))
                .key(format!("{R}:h2h"))
                .key(format!("{R}:draws"))
                .arg(self.window.ms)
                .arg(s.decided)
                .arg(&s.series)
                .arg(a)
                .arg(b)
                .arg(match s.winner {
                    None => "",
                    Some(0) => "a",
                    Some(_) => "b",
                })
                .arg(format!("{x}|{y}"))
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        })
    }

    fn player<'a>(&'a self, account: &'a str, rule_set: &'a str) -> StoreFuture<'a, PlayerRecord> {
        Box::pin(async move {
            Ok(PlayerRecord {
                series_won: self.hget(&format!("{R}:won"), account).await?,
                streak: self
                    .hget(&format!("{R}:streak:{rule_set}"), account)
                    .await?,
                best_streak: self.hget(&format!("{R}:best:{rule_set}"), account).await?,
            })
        })
    }

    fn head_to_head<'a>(&'a self, a: &'a str, b: &'a str) -> StoreFuture<'a, (u32, u32, u32)> {
        Box::pin(async move {
            let (x, y) = pair(a, b);
            Ok((
                self.hget(&format!("{R}:h2h"), &format!("{a}|{b}")).await?,
                self.hget(&format!("{R}:h2h"), &format!("{b}|{a}")).await?,
                self.hget(&format!("{R}:draws"), &format!("{x}|{y}"))
                    .await?,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_the_thresholds() {
        let t = RankThresholds::default();
        assert_eq!(t.rank(0), "Rookie");
        assert_eq!(t.rank(2), "Rookie");
        assert_eq!(t.rank(3), "Contender");
        assert_eq!(t.rank(24), "Hustler");
        assert_eq!(t.rank(25), "Shark");
        assert_eq!(t.rank(99), "Kingpin");
        assert_eq!(t.rank(1000), "Legend");
    }
}
