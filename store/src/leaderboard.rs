//! Public leaderboards, one per rule set: ranked games against the
//! Executive score win 3, draw 1, loss 0. Ordered by points, then more
//! wins, then fewer completed games, then name. Each game counts once.
//!
//! The whole tie order is one key per player, [`PlaceKey`], whose bytes
//! sort as the board does, so a board is kept sorted as it is written (a
//! Redis sorted set whose members all score 0 is ordered by its members'
//! bytes) and a page is read by rank: O(log n + page), never the whole
//! board.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::idempotency::{IdempotencyWindow, SEEN_LUA, SeenKeys, seen_keys};
use crate::keys::{BOARDS, board_key, board_order_key, board_ordered_key};
use crate::sync::lock;
use crate::{StoreError, StoreFuture};

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

/// A player's place in the tie order as bytes that sort like it: points
/// and wins counted down from `u32::MAX` and games up, each as ten
/// digits, then the name, a NUL and the account (two players of one name
/// stay apart, ordered by account). A NUL sorts before every character a
/// name may hold, so "Ab" comes before "Ab c", as in [`order`]. Draws and
/// losses follow from points, wins and games, so the key alone is a
/// player's whole line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlaceKey(pub String);

impl PlaceKey {
    pub fn new(standing: &Standing, account: &str) -> PlaceKey {
        PlaceKey(format!(
            "{:010}{:010}{:010}{}\0{account}",
            u32::MAX - standing.points,
            u32::MAX - standing.wins,
            standing.games,
            standing.name,
        ))
    }

    /// The line a key stands for; `None` if it is not one.
    pub fn standing(&self) -> Option<Standing> {
        let s = &self.0;
        let number = |range: std::ops::Range<usize>| s.get(range)?.parse::<u32>().ok();
        let points = u32::MAX - number(0..10)?;
        let wins = u32::MAX - number(10..20)?;
        let games = number(20..30)?;
        let (name, _account) = s.get(30..)?.split_once('\0')?;
        let draws = points.checked_sub(wins.checked_mul(3)?)?;
        let losses = games.checked_sub(wins.checked_add(draws)?)?;
        Some(Standing {
            name: name.to_owned(),
            points,
            wins,
            draws,
            losses,
            games,
        })
    }
}

/// The page asked for, made valid: `page` from 1, `per_page` 1 to 100;
/// and the 0-based rank of its first line.
fn page_bounds(page: u32, per_page: u32) -> (u32, u32, u64) {
    let per_page = per_page.clamp(1, 100);
    let page = page.max(1);
    (page, per_page, u64::from(page - 1) * u64::from(per_page))
}

/// A page from the lines of its ranks, the first at rank `first`.
fn page_from(
    rule_set: &str,
    (page, per_page, first): (u32, u32, u64),
    total: u64,
    keys: impl IntoIterator<Item = PlaceKey>,
) -> Page {
    let entries = keys
        .into_iter()
        .filter_map(|k| k.standing())
        .enumerate()
        .map(|(i, standing)| PageEntry {
            place: u32::try_from(first + i as u64 + 1).unwrap_or(u32::MAX),
            standing,
        })
        .collect();
    Page {
        rule_set: rule_set.to_owned(),
        page,
        per_page,
        total: u32::try_from(total).unwrap_or(u32::MAX),
        entries,
    }
}

pub trait Leaderboards: Send + Sync + std::fmt::Debug {
    /// Counts one finished ranked game (idempotent by `game`, for the
    /// idempotency window after `decided`, Unix ms, 0 for now; refused with
    /// [`StoreError::Expired`] after that: see [`crate::idempotency`]).
    fn record<'a>(
        &'a self,
        game: &'a str,
        rule_set: &'a str,
        account: &'a str,
        name: &'a str,
        outcome: RankedOutcome,
        decided: u64,
    ) -> StoreFuture<'a, ()>;
    /// One page, read by rank (see the module's documentation).
    fn page<'a>(&'a self, rule_set: &'a str, page: u32, per_page: u32) -> StoreFuture<'a, Page>;
}

/// Games counted, standings by (rule set, account), and each board in
/// order.
#[derive(Debug, Default)]
struct Tables {
    counted: SeenKeys,
    standings: HashMap<(String, String), Standing>,
    boards: HashMap<String, BTreeSet<PlaceKey>>,
}

/// Leaderboards in this process only. A page walks its board from the
/// top to the page (O(place + page)); the public board in production is
/// Redis's.
#[derive(Debug, Default)]
pub struct MemoryLeaderboards {
    tables: Mutex<Tables>,
    window: IdempotencyWindow,
}

impl MemoryLeaderboards {
    pub fn new(window: IdempotencyWindow) -> MemoryLeaderboards {
        MemoryLeaderboards {
            tables: Mutex::default(),
            window,
        }
    }
}

impl Leaderboards for MemoryLeaderboards {
    fn record<'a>(
        &'a self,
        game: &'a str,
        rule_set: &'a str,
        account: &'a str,
        name: &'a str,
        outcome: RankedOutcome,
        decided: u64,
    ) -> StoreFuture<'a, ()> {
        let mut guard = lock(&self.tables);
        let t = &mut *guard;
        let now = crate::sync::now_ms();
        let decided = match t.counted.admit(self.window, game, decided, now) {
            Ok(decided) => decided,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        if t.counted.insert(game.to_owned(), decided) {
            let s = t
                .standings
                .entry((rule_set.to_owned(), account.to_owned()))
                .or_default();
            let board = t.boards.entry(rule_set.to_owned()).or_default();
            board.remove(&PlaceKey::new(s, account));
            s.name = name.to_owned();
            s.add(outcome);
            board.insert(PlaceKey::new(s, account));
        }
        Box::pin(async { Ok(()) })
    }

    fn page<'a>(&'a self, rule_set: &'a str, page: u32, per_page: u32) -> StoreFuture<'a, Page> {
        let t = lock(&self.tables);
        let bounds = page_bounds(page, per_page);
        let board = t.boards.get(rule_set);
        let total = board.map_or(0, |b| b.len() as u64);
        let keys: Vec<PlaceKey> = board
            .into_iter()
            .flatten()
            .skip(usize::try_from(bounds.2).unwrap_or(usize::MAX))
            .take(bounds.1 as usize)
            .cloned()
            .collect();
        let p = page_from(rule_set, bounds, total, keys);
        Box::pin(async move { Ok(p) })
    }
}

/// Leaderboards in Redis, every key under the hash tag `{boards}` (one
/// Cluster slot, so recording a game is one script):
///
/// - `jgl:{boards}:done`, with `…:done:at` and `…:done:scan` — the games
///   counted (a game counts once; see [`crate::idempotency`]);
/// - `jgl:{boards}:RULES` — a hash, account → standing JSON (the record
///   of each player, and what the order is rebuilt from);
/// - `jgl:{boards}:RULES:order` — a sorted set, every member at score 0,
///   each player's [`PlaceKey`]: the board in order;
/// - `jgl:{boards}:RULES:ordered` — set once the order holds every
///   player of the hash (boards written before the order existed are
///   filled in once, in the background: see [`RedisLeaderboards::migrate`]).
#[derive(Clone)]
pub struct RedisLeaderboards {
    conn: crate::RedisConn,
    window: IdempotencyWindow,
    script: redis::Script,
    fill: redis::Script,
    /// Rule sets whose order this process has seen complete, or is filling.
    checked: std::sync::Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for RedisLeaderboards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisLeaderboards { .. }")
    }
}

/// The place key in Lua, exactly as [`PlaceKey::new`] writes it.
const PLACE_KEY_LUA: &str = r"
local function place(s, account)
  return string.format('%010d%010d%010d', 4294967295 - s.points, 4294967295 - s.wins, s.games)
    .. s.name .. '\0' .. account
end
";

/// Counts a game once: the standing is updated and the player's place
/// key replaced, all or nothing.
///
/// After [`SEEN_LUA`]. KEYS: (seen), board hash, order. ARGV: (window,
/// decided), game, account, name, outcome.
const RECORD: &str = r"
if seen_expired() then return redis.error_reply('EXPIRED game ' .. ARGV[3]) end
seen_prune()
if seen(ARGV[3]) then return 0 end
seen_add(ARGV[3])
local BOARD, ORDER = KEYS[4], KEYS[5]
local account = ARGV[4]
local raw = redis.call('HGET', BOARD, account)
local s = {points = 0, wins = 0, draws = 0, losses = 0, games = 0, name = ''}
if raw then
  s = cjson.decode(raw)
  redis.call('ZREM', ORDER, place(s, account))
end
s.name = ARGV[5]
s.games = s.games + 1
if ARGV[6] == 'win' then s.wins = s.wins + 1; s.points = s.points + 3
elseif ARGV[6] == 'draw' then s.draws = s.draws + 1; s.points = s.points + 1
else s.losses = s.losses + 1 end
redis.call('HSET', BOARD, account, cjson.encode(s))
redis.call('ZADD', ORDER, 0, place(s, account))
return 1
";

/// Puts the given players of a board written before the order existed
/// into the order, from their standings as they are now (a game recorded
/// meanwhile already replaced its player's key, and adding the same key
/// again changes nothing). Atomic per batch, so it never races a record.
///
/// KEYS: board hash, order. ARGV: accounts.
const FILL: &str = r"
for _, account in ipairs(ARGV) do
  local raw = redis.call('HGET', KEYS[1], account)
  if raw then redis.call('ZADD', KEYS[2], 0, place(cjson.decode(raw), account)) end
end
return #ARGV
";

/// Players per batch when a board is filled into its order.
const FILL_BATCH: usize = 500;

impl RedisLeaderboards {
    pub fn open(
        url: &str,
        timeout: std::time::Duration,
        window: IdempotencyWindow,
    ) -> Result<RedisLeaderboards, StoreError> {
        Ok(RedisLeaderboards::on(
            crate::redis_connection(url, timeout)?,
            window,
        ))
    }

    /// The leaderboards on a shared connection.
    pub fn on(conn: crate::RedisConn, window: IdempotencyWindow) -> RedisLeaderboards {
        RedisLeaderboards {
            conn,
            window,
            script: redis::Script::new(&format!("{SEEN_LUA}{PLACE_KEY_LUA}{RECORD}")),
            fill: redis::Script::new(&format!("{PLACE_KEY_LUA}{FILL}")),
            checked: std::sync::Arc::default(),
        }
    }

    /// Fills the order of a board written before the order existed (the
    /// migration), in batches of `FILL_BATCH` players, each batch one
    /// short script, so Redis is never blocked for the whole board; then
    /// marks the board ordered. Safe to run while games are recorded and
    /// more than once. Started in the background by the first page read
    /// of a board not marked ordered; pages read meanwhile may miss
    /// players not yet filled in.
    pub async fn migrate(&self, rule_set: &str) -> Result<usize, StoreError> {
        let mut conn = self.conn.clone();
        let (board, order) = (board_key(rule_set), board_order_key(rule_set));
        let mut cursor = 0u64;
        let mut filled = 0;
        loop {
            let (next, pairs): (u64, Vec<String>) = redis::cmd("HSCAN")
                .arg(&board)
                .arg(cursor)
                .arg("COUNT")
                .arg(FILL_BATCH)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let accounts: Vec<&String> = pairs.iter().step_by(2).collect();
            if !accounts.is_empty() {
                let mut fill = self.fill.key(&board);
                fill.key(&order);
                for account in &accounts {
                    fill.arg(account.as_str());
                }
                let n: usize = fill
                    .invoke_async(&mut conn)
                    .await
                    .map_err(StoreError::from)?;
                filled += n;
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        let () = redis::cmd("SET")
            .arg(board_ordered_key(rule_set))
            .arg(1)
            .query_async(&mut conn)
            .await
            .map_err(StoreError::from)?;
        Ok(filled)
    }

    /// Starts the migration of a board once per process if it is not
    /// marked ordered (`ordered` as read with the page).
    fn migrate_if_needed(&self, rule_set: &str, ordered: bool) {
        if ordered {
            return;
        }
        let first = lock(&self.checked).insert(rule_set.to_owned());
        if !first {
            return;
        }
        let boards = self.clone();
        let rule_set = rule_set.to_owned();
        tokio::spawn(async move {
            match boards.migrate(&rule_set).await {
                Ok(n) => tracing::info!(%rule_set, players = n, "leaderboard order filled in"),
                Err(e) => {
                    tracing::warn!(%rule_set, error = %e, "leaderboard order not filled in yet; the next page read tries again");
                    lock(&boards.checked).remove(&rule_set);
                }
            }
        });
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
        decided: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let outcome = match outcome {
                RankedOutcome::Win => "win",
                RankedOutcome::Draw => "draw",
                RankedOutcome::Loss => "loss",
            };
            let mut call = self.script.prepare_invoke();
            for key in seen_keys(&format!("{BOARDS}:done")) {
                call.key(key);
            }
            let _: i64 = call
                .key(board_key(rule_set))
                .key(board_order_key(rule_set))
                .arg(self.window.ms)
                .arg(decided)
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
            let bounds = page_bounds(page, per_page);
            let (_, per_page, first) = bounds;
            let order = board_order_key(rule_set);
            // ZCARD is O(1), ZRANGE by rank O(log n + page), EXISTS O(1).
            let (total, keys, ordered): (u64, Vec<String>, bool) = redis::pipe()
                .zcard(&order)
                .zrange(
                    &order,
                    isize::try_from(first).unwrap_or(isize::MAX),
                    isize::try_from(first + u64::from(per_page) - 1).unwrap_or(isize::MAX),
                )
                .exists(board_ordered_key(rule_set))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            self.migrate_if_needed(rule_set, ordered);
            Ok(page_from(
                rule_set,
                bounds,
                total,
                keys.into_iter().map(PlaceKey),
            ))
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

    /// A standing as the game counts make it.
    fn line(name: &str, wins: u32, draws: u32, losses: u32) -> Standing {
        Standing {
            name: name.into(),
            points: 3 * wins + draws,
            wins,
            draws,
            losses,
            games: wins + draws + losses,
        }
    }

    #[test]
    fn a_place_key_is_the_whole_line() {
        for s in [
            line("Ann", 0, 0, 0),
            line("Bo b", 3, 1, 2),
            line("Ünïcødé 名前", 1_000_000, 5, 7),
        ] {
            let key = PlaceKey::new(&s, "a_1");
            assert_eq!(key.standing(), Some(s));
        }
        assert_eq!(PlaceKey("garbage".into()).standing(), None);
    }

    proptest::proptest! {
        /// Sorting the keys' bytes is the full tie order, names that are
        /// prefixes of others and equal names included.
        #[test]
        fn place_keys_sort_in_the_tie_order(
            lines in proptest::collection::vec(
                ("[AB][ b]{0,2}", 0u32..4, 0u32..4, 0u32..4),
                1..40,
            )
        ) {
            let mut standings: Vec<Standing> = lines
                .iter()
                .map(|(name, w, d, l)| line(name, *w, *d, *l))
                .collect();
            let mut keys: Vec<PlaceKey> = standings
                .iter()
                .enumerate()
                .map(|(i, s)| PlaceKey::new(s, &format!("a_{i}")))
                .collect();
            keys.sort();
            order(&mut standings);
            let by_key: Vec<Standing> = keys.iter().map(|k| k.standing().unwrap()).collect();
            // Equal lines (same name and counts) may come in either order.
            proptest::prop_assert_eq!(by_key, standings);
        }
    }

    #[tokio::test]
    async fn memory_pages_are_read_by_place() {
        let boards = MemoryLeaderboards::default();
        for i in 0..30u32 {
            let account = format!("a_{i}");
            let name = format!("P{i:02}");
            for g in 0..(i % 4) {
                let game = format!("{account}-{g}");
                boards
                    .record(&game, "thai", &account, &name, RankedOutcome::Win, 0)
                    .await
                    .unwrap();
            }
            // Counted once, however often it lands.
            boards
                .record(
                    &format!("{account}-0"),
                    "thai",
                    &account,
                    &name,
                    RankedOutcome::Win,
                    0,
                )
                .await
                .unwrap();
        }
        let page = boards.page("thai", 2, 10).await.unwrap();
        assert_eq!(page.total, 30);
        assert_eq!(page.entries.len(), 10);
        assert_eq!(page.entries[0].place, 11);
        let all = boards.page("thai", 1, 100).await.unwrap();
        let mut expected: Vec<Standing> = all.entries.iter().map(|e| e.standing.clone()).collect();
        order(&mut expected);
        let got: Vec<Standing> = all.entries.into_iter().map(|e| e.standing).collect();
        assert_eq!(got, expected);
        assert_eq!(got[0].wins, 3, "at most three wins, each counted once");
        assert!(boards.page("thai", 4, 10).await.unwrap().entries.is_empty());
    }
}
