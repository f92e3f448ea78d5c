//! Where rooms are kept beyond memory: the [`Store`] trait, an in-memory
//! store (the default, lost on restart) and the Redis store.
//!
//! A room writes one [`RoomWrite`] per change: its whole record (small), the
//! moves played since the last write (appended to an ordered, duplicate-proof
//! log), and the PDN of any game that finished. The Redis store applies a
//! write atomically with one Lua script; every key of a room carries the
//! hash tag `{CODE}` so a room lives in one Redis Cluster slot.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

/// A store failure. Nothing in the write took effect.
#[derive(Debug, thiserror::Error)]
#[error("store unavailable: {0}")]
pub struct StoreError(pub String);

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// One move in a room's log: `(game_no, ply)` orders it and makes a
/// retried write harmless.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMove {
    pub game_no: u64,
    /// 1-based ply within the game.
    pub ply: u32,
    /// The path as internal square indices, comma-separated.
    pub path: String,
    /// The move as written in the rule set's notation when it was played.
    pub text: String,
    pub seat: u8,
    pub seq: u32,
}

/// Everything one change of a room persists.
#[derive(Clone, Debug)]
pub struct RoomWrite {
    pub code: String,
    /// The room record (JSON), replacing the previous one.
    pub record: String,
    /// Moves since the last successful write, oldest first.
    pub moves: Vec<StoredMove>,
    /// Games that finished: `(game_no, PDN)`.
    pub finished_games: Vec<(u64, String)>,
    /// Whether the lobby still has something to resume (is listed for
    /// recovery at start). Closed lobbies are unlisted and expire.
    pub open: bool,
    /// Let the room's keys expire after this long (finished or closed
    /// lobbies); `None` keeps them.
    pub expire_after: Option<Duration>,
}

/// A room as loaded at start.
#[derive(Clone, Debug)]
pub struct StoredRoom {
    pub code: String,
    pub record: String,
    /// Every move in the room's log, in order.
    pub moves: Vec<StoredMove>,
}

/// What the rooms persist.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Applies a write atomically: all of it or none of it.
    fn write(&self, write: RoomWrite) -> StoreFuture<'_, ()>;
    /// Every open room, for resuming after a restart.
    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>>;
    /// The finished games of a room as PDN, oldest first.
    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>>;
    /// Whether the store answers (readiness).
    fn ping(&self) -> StoreFuture<'_, ()>;
    /// Whether state survives a restart of this process.
    fn is_durable(&self) -> bool;
}

#[derive(Debug, Default)]
struct MemoryRoom {
    record: String,
    moves: BTreeMap<(u64, u32), StoredMove>,
    games: BTreeMap<u64, String>,
}

/// Keeps everything in this process: nothing survives a restart.
#[derive(Debug, Default)]
pub struct MemoryStore {
    rooms: Mutex<HashMap<String, MemoryRoom>>,
    open: Mutex<HashSet<String>>,
}

impl Store for MemoryStore {
    fn write(&self, write: RoomWrite) -> StoreFuture<'_, ()> {
        {
            let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
            let room = rooms.entry(write.code.clone()).or_default();
            room.record = write.record;
            for m in write.moves {
                room.moves.entry((m.game_no, m.ply)).or_insert(m);
            }
            for (n, pdn) in write.finished_games {
                room.games.insert(n, pdn);
            }
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            if write.open {
                open.insert(write.code);
            } else {
                open.remove(&write.code);
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>> {
        let rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let list = open
            .iter()
            .filter_map(|code| {
                rooms.get(code).map(|r| StoredRoom {
                    code: code.clone(),
                    record: r.record.clone(),
                    moves: r.moves.values().cloned().collect(),
                })
            })
            .collect();
        Box::pin(async move { Ok(list) })
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        let rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let list = rooms
            .get(code)
            .map(|r| r.games.values().cloned().collect())
            .unwrap_or_default();
        Box::pin(async move { Ok(list) })
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    fn is_durable(&self) -> bool {
        false
    }
}

/// The Redis store. Keys (all for one room share the hash tag `{CODE}`):
///
/// - `jg:{CODE}:room` — the room record (JSON string);
/// - `jg:{CODE}:moves` — a stream, entry id `GAME-PLY`, fields `path`,
///   `text`, `seat`, `seq`; ids only grow, so a retried move is ignored;
/// - `jg:{CODE}:games` — a hash from game number to PDN;
/// - `jg:lobbies` — the set of open lobby codes, read at start.
#[derive(Clone)]
pub struct RedisStore {
    conn: redis::aio::ConnectionManager,
    script: redis::Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisStore { .. }")
    }
}

const OPEN_SET: &str = "jg:lobbies";

/// Applies one room write atomically. A move whose id is not above the
/// stream's last id was written before (a retry) and is skipped.
const WRITE_SCRIPT: &str = r"
local i = 3
local n = tonumber(ARGV[2])
for _ = 1, n do
  local r = redis.pcall('XADD', KEYS[2], ARGV[i], 'path', ARGV[i+1], 'text', ARGV[i+2], 'seat', ARGV[i+3], 'seq', ARGV[i+4])
  if type(r) == 'table' and r.err and not string.find(r.err, 'equal or smaller') then
    return redis.error_reply(r.err)
  end
  i = i + 5
end
local g = tonumber(ARGV[i])
i = i + 1
for _ = 1, g do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i+1])
  i = i + 2
end
redis.call('SET', KEYS[1], ARGV[1])
local ttl = tonumber(ARGV[i])
for k = 1, 3 do
  if ttl > 0 then
    redis.call('EXPIRE', KEYS[k], ttl)
  else
    redis.call('PERSIST', KEYS[k])
  end
end
return 1
";

fn keys(code: &str) -> [String; 3] {
    [
        format!("jg:{{{code}}}:room"),
        format!("jg:{{{code}}}:moves"),
        format!("jg:{{{code}}}:games"),
    ]
}

fn redis_error(e: redis::RedisError) -> StoreError {
    StoreError(e.to_string())
}

/// Times a Redis operation and counts its failure.
async fn observed<T>(
    op: &'static str,
    work: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let metrics = &crate::metrics::METRICS;
    let timer = metrics
        .redis_op_seconds
        .with_label_values(&[op])
        .start_timer();
    let result = work.await;
    timer.observe_duration();
    if result.is_err() {
        metrics.redis_errors.with_label_values(&[op]).inc();
    }
    result
}

/// A Redis connection shared by the Redis-backed stores: it connects
/// lazily on the first command, reconnects by itself after a failure, and
/// every command times out.
pub fn redis_connection(
    url: &str,
    timeout: Duration,
) -> Result<redis::aio::ConnectionManager, StoreError> {
    let client = redis::Client::open(url).map_err(redis_error)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500));
    redis::aio::ConnectionManager::new_lazy_with_config(client, config).map_err(redis_error)
}

impl RedisStore {
    pub fn open(url: &str, timeout: Duration) -> Result<RedisStore, StoreError> {
        let conn = redis_connection(url, timeout)?;
        Ok(RedisStore {
            conn,
            script: redis::Script::new(WRITE_SCRIPT),
        })
    }
}

impl Store for RedisStore {
    fn write(&self, write: RoomWrite) -> StoreFuture<'_, ()> {
        Box::pin(observed("write", async move {
            let mut conn = self.conn.clone();
            let [room, moves, games] = keys(&write.code);
            let mut invocation = self.script.prepare_invoke();
            invocation.key(&room).key(&moves).key(&games);
            invocation.arg(&write.record).arg(write.moves.len());
            for m in &write.moves {
                invocation
                    .arg(format!("{}-{}", m.game_no, m.ply))
                    .arg(&m.path)
                    .arg(&m.text)
                    .arg(m.seat)
                    .arg(m.seq);
            }
            invocation.arg(write.finished_games.len());
            for (n, pdn) in &write.finished_games {
                invocation.arg(n).arg(pdn);
            }
            invocation.arg(write.expire_after.map_or(0, |d| d.as_secs().max(1)));
            // The script and the index update go out together, in one round
            // trip. The index lives outside the room's slot, so it cannot be
            // in the script. Adding and removing are idempotent, and an index
            // entry whose record is missing is dropped at start
            // (`load_open`), so the update may land even when the script fails.
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation)
                .ignore()
                .cmd(if write.open { "SADD" } else { "SREM" })
                .arg(OPEN_SET)
                .arg(&write.code)
                .ignore();
            match pipe.query_async::<()>(&mut conn).await {
                // A restarted Redis has forgotten the script: load it, once.
                Err(e)
                    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    invocation
                        .load_async(&mut conn)
                        .await
                        .map_err(redis_error)?;
                    pipe.query_async::<()>(&mut conn)
                        .await
                        .map_err(redis_error)?;
                }
                result => result.map_err(redis_error)?,
            }
            Ok(())
        }))
    }

    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>> {
        Box::pin(observed("load", async move {
            let mut conn = self.conn.clone();
            let codes: Vec<String> = redis::cmd("SMEMBERS")
                .arg(OPEN_SET)
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            let mut rooms = Vec::new();
            for code in codes {
                let [room, moves, _] = keys(&code);
                let record: Option<String> = redis::cmd("GET")
                    .arg(&room)
                    .query_async(&mut conn)
                    .await
                    .map_err(redis_error)?;
                let Some(record) = record else {
                    // Expired: nothing left to resume.
                    let _: i64 = redis::cmd("SREM")
                        .arg(OPEN_SET)
                        .arg(&code)
                        .query_async(&mut conn)
                        .await
                        .map_err(redis_error)?;
                    continue;
                };
                let entries: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
                    .arg(&moves)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut conn)
                    .await
                    .map_err(redis_error)?;
                let moves = entries
                    .ids
                    .iter()
                    .map(parse_entry)
                    .collect::<Result<Vec<_>, _>>()?;
                rooms.push(StoredRoom {
                    code,
                    record,
                    moves,
                });
            }
            Ok(rooms)
        }))
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(observed("games", async move {
            let mut conn = self.conn.clone();
            let [_, _, games] = keys(code);
            let all: HashMap<u64, String> = redis::cmd("HGETALL")
                .arg(&games)
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            let ordered: BTreeMap<u64, String> = all.into_iter().collect();
            Ok(ordered.into_values().collect())
        }))
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(observed("ping", async move {
            let mut conn = self.conn.clone();
            let _: String = redis::cmd("PING")
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            Ok(())
        }))
    }

    fn is_durable(&self) -> bool {
        true
    }
}

fn parse_entry(entry: &redis::streams::StreamId) -> Result<StoredMove, StoreError> {
    let bad = || StoreError(format!("malformed move entry {}", entry.id));
    let (game, ply) = entry.id.split_once('-').ok_or_else(bad)?;
    let field =
        |name: &str| -> Result<String, StoreError> { entry.get::<String>(name).ok_or_else(bad) };
    Ok(StoredMove {
        game_no: game.parse().map_err(|_| bad())?,
        ply: ply.parse().map_err(|_| bad())?,
        path: field("path")?,
        text: field("text")?,
        seat: field("seat")?.parse().map_err(|_| bad())?,
        seq: field("seq")?.parse().map_err(|_| bad())?,
    })
}
