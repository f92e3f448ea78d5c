//! Where rooms are kept beyond memory: the [`Store`] trait, an in-memory
//! store (the default, lost on restart) and the Redis store.
//!
//! A room writes one [`RoomWrite`] per change: its whole record (small), the
//! moves played since the last write (appended to an ordered, duplicate-proof
//! log), and the PDN of any game that finished. The Redis store applies a
//! write atomically with one Lua script; every key of a room carries the
//! hash tag `{CODE}` so a room lives in one Redis Cluster slot.
//!
//! Every write is conditional on the version the writer last saw stored, so
//! a write whose outcome was unknown (a timeout, a dropped connection) can be
//! sent again safely, and a write that does not follow from what is stored
//! is refused whole with [`WriteError::Conflict`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

/// A store that did not answer, or answered with an error. For a write the
/// outcome is unknown: it may have been applied. The kind is kept so logs
/// and operators can tell a slow Redis from a lost one.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No answer within `--redis-timeout-ms`.
    #[error("store unavailable: no answer in time")]
    Timeout,
    /// The connection failed or dropped.
    #[error("store unavailable: connection lost ({0})")]
    Connection(String),
    /// Redis answered with an error.
    #[error("store unavailable: Redis refused ({0})")]
    Refused(String),
    /// Redis answered something this server cannot read.
    #[error("store unavailable: unreadable data ({0})")]
    Unreadable(String),
}

impl From<redis::RedisError> for StoreError {
    fn from(e: redis::RedisError) -> StoreError {
        if e.is_timeout() {
            StoreError::Timeout
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            StoreError::Connection(e.to_string())
        } else if e.kind() == redis::ErrorKind::Parse
            || e.kind() == redis::ErrorKind::UnexpectedReturnType
        {
            StoreError::Unreadable(e.to_string())
        } else {
            StoreError::Refused(e.to_string())
        }
    }
}

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a room write did not go through.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The stored room is not the one this write follows from (someone else
    /// wrote it, or an earlier write of a different change landed late).
    /// Nothing was written.
    #[error("the stored room has moved on ({0})")]
    Conflict(String),
    /// No answer or an error: the write may or may not have been applied.
    /// Sending the same write again is safe and tells which.
    #[error(transparent)]
    Unavailable(#[from] StoreError),
}

pub type WriteFuture<'a> = Pin<Box<dyn Future<Output = Result<(), WriteError>> + Send + 'a>>;

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
    /// The version the writer last knew to be stored (0: never written).
    /// The write applies only if the stored version is at least this and
    /// below [`version`](Self::version) — a version in between can only be
    /// an earlier write of the same writer whose answer was lost — or equal
    /// to `version` with the same record (this very write, landed before).
    pub expected_version: u64,
    /// The version this write stores.
    pub version: u64,
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
    /// Applies a write atomically, all of it or none of it, if it follows
    /// from the stored version (see [`RoomWrite::expected_version`]).
    fn write(&self, write: RoomWrite) -> WriteFuture<'_>;
    /// Every open room, for resuming after a restart.
    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>>;
    /// One room as stored, if it is.
    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>>;
    /// The finished games of a room as PDN, oldest first.
    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>>;
    /// Whether the store answers (readiness).
    fn ping(&self) -> StoreFuture<'_, ()>;
    /// Whether state survives a restart of this process.
    fn is_durable(&self) -> bool;
}

#[derive(Debug, Default)]
struct MemoryRoom {
    version: u64,
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

impl MemoryStore {
    /// The same checks as the Redis script, under the lock.
    fn apply(&self, write: RoomWrite) -> Result<(), WriteError> {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let room = rooms.entry(write.code.clone()).or_default();
        if room.version == write.version {
            return if room.record == write.record {
                Ok(())
            } else {
                Err(WriteError::Conflict(format!(
                    "version {} holds another change",
                    room.version
                )))
            };
        }
        if room.version < write.expected_version || room.version > write.version {
            return Err(WriteError::Conflict(format!(
                "stored version {}, this write follows {}",
                room.version, write.expected_version
            )));
        }
        let mut last = room.moves.keys().next_back().copied().unwrap_or((0, 0));
        let mut fresh = Vec::new();
        for m in &write.moves {
            let id = (m.game_no, m.ply);
            if id > last {
                fresh.push(m.clone());
                last = id;
            } else if room
                .moves
                .get(&id)
                .is_none_or(|s| s.path != m.path || s.seat != m.seat)
            {
                return Err(WriteError::Conflict(format!(
                    "another move is stored at {}-{}",
                    m.game_no, m.ply
                )));
            }
        }
        room.version = write.version;
        room.record = write.record;
        for m in fresh {
            room.moves.insert((m.game_no, m.ply), m);
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
        Ok(())
    }
}

impl Store for MemoryStore {
    fn write(&self, write: RoomWrite) -> WriteFuture<'_> {
        let result = self.apply(write);
        Box::pin(async move { result })
    }

    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>> {
        let rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let room = rooms.get(code).map(|r| StoredRoom {
            code: code.to_owned(),
            record: r.record.clone(),
            moves: r.moves.values().cloned().collect(),
        });
        Box::pin(async move { Ok(room) })
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
/// - `jg:{CODE}:fence` — a hash whose field `version` is the stored version
///   (a record written before it existed carries its version inside);
/// - `jg:{CODE}:moves` — a stream, entry id `GAME-PLY`, fields `path`,
///   `text`, `seat`, `seq`;
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

/// Applies one room write atomically, if it follows from what is stored
/// (the rule is on [`RoomWrite::expected_version`]). A move at an id the
/// stream already holds must be the same move (an earlier write of ours
/// that landed); any other move must come after the stream's last. Every
/// check runs before anything is written, so a refused write changes
/// nothing. Returns `ok`, or `conflict:` and why.
///
/// KEYS: room, moves, games, fence.
/// ARGV: record, expected, version, n, n × (id, path, text, seat, seq),
/// g, g × (game number, PDN), ttl (0 keeps the keys).
const WRITE_SCRIPT: &str = r"
local stored = redis.call('HGET', KEYS[4], 'version')
if stored then
  stored = tonumber(stored)
else
  local old = redis.call('GET', KEYS[1])
  if old then
    local ok, decoded = pcall(cjson.decode, old)
    if not ok or type(decoded) ~= 'table' then return 'conflict:unreadable stored record' end
    stored = tonumber(decoded.version) or 0
  else
    stored = 0
  end
end
local expected, version = tonumber(ARGV[2]), tonumber(ARGV[3])
if stored == version then
  if redis.call('GET', KEYS[1]) == ARGV[1] then return 'ok' end
  return 'conflict:version ' .. stored .. ' holds another change'
end
if stored < expected or stored > version then
  return 'conflict:stored version ' .. stored .. ', this write follows ' .. expected
end
local function id(s)
  local g, p = string.match(s, '^(%d+)-(%d+)$')
  return tonumber(g), tonumber(p)
end
local lg, lp = 0, 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then lg, lp = id(last[1][1]) end
local fresh = {}
local n = tonumber(ARGV[4])
local i = 5
for _ = 1, n do
  local g, p = id(ARGV[i])
  if g > lg or (g == lg and p > lp) then
    table.insert(fresh, i)
    lg, lp = g, p
  else
    local e = redis.call('XRANGE', KEYS[2], ARGV[i], ARGV[i])
    if #e == 0 then return 'conflict:no move at ' .. ARGV[i] end
    local f = e[1][2]
    local same = {}
    for k = 1, #f, 2 do same[f[k]] = f[k + 1] end
    if same['path'] ~= ARGV[i + 1] or same['seat'] ~= ARGV[i + 3] then
      return 'conflict:another move is stored at ' .. ARGV[i]
    end
  end
  i = i + 5
end
for _, j in ipairs(fresh) do
  redis.call('XADD', KEYS[2], ARGV[j], 'path', ARGV[j + 1], 'text', ARGV[j + 2], 'seat', ARGV[j + 3], 'seq', ARGV[j + 4])
end
local g = tonumber(ARGV[i])
i = i + 1
for _ = 1, g do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  i = i + 2
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[4], 'version', ARGV[3])
local ttl = tonumber(ARGV[i])
for k = 1, 4 do
  if ttl > 0 then
    redis.call('EXPIRE', KEYS[k], ttl)
  else
    redis.call('PERSIST', KEYS[k])
  end
end
return 'ok'
";

fn keys(code: &str) -> [String; 4] {
    [
        format!("jg:{{{code}}}:room"),
        format!("jg:{{{code}}}:moves"),
        format!("jg:{{{code}}}:games"),
        format!("jg:{{{code}}}:fence"),
    ]
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
    let client = redis::Client::open(url).map_err(StoreError::from)?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500));
    redis::aio::ConnectionManager::new_lazy_with_config(client, config).map_err(StoreError::from)
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
    fn write(&self, write: RoomWrite) -> WriteFuture<'_> {
        Box::pin(async move {
            let reply = observed("write", self.send_write(&write)).await?;
            match reply.strip_prefix("conflict:") {
                Some(why) => {
                    crate::metrics::METRICS.store_conflicts.inc();
                    Err(WriteError::Conflict(why.to_owned()))
                }
                None => Ok(()),
            }
        })
    }

    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>> {
        Box::pin(observed("load", async move {
            let mut conn = self.conn.clone();
            load_room(&mut conn, code).await
        }))
    }

    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>> {
        Box::pin(observed("load", async move {
            let mut conn = self.conn.clone();
            let codes: Vec<String> = redis::cmd("SMEMBERS")
                .arg(OPEN_SET)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let mut rooms = Vec::new();
            for code in codes {
                match load_room(&mut conn, &code).await? {
                    Some(room) => rooms.push(room),
                    None => {
                        // Expired: nothing left to resume.
                        let _: i64 = redis::cmd("SREM")
                            .arg(OPEN_SET)
                            .arg(&code)
                            .query_async(&mut conn)
                            .await
                            .map_err(StoreError::from)?;
                    }
                }
            }
            Ok(rooms)
        }))
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(observed("games", async move {
            let mut conn = self.conn.clone();
            let [_, _, games, _] = keys(code);
            let all: HashMap<u64, String> = redis::cmd("HGETALL")
                .arg(&games)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
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
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn is_durable(&self) -> bool {
        true
    }
}

impl RedisStore {
    /// Sends the write script and the index update in one round trip. The
    /// index lives outside the room's slot, so it cannot be in the script.
    /// Adding and removing are idempotent, and an index entry whose record
    /// is missing is dropped at start (`load_open`), so the update may land
    /// even when the script refuses.
    async fn send_write(&self, write: &RoomWrite) -> Result<String, StoreError> {
        let mut conn = self.conn.clone();
        let [room, moves, games, fence] = keys(&write.code);
        let mut invocation = self.script.prepare_invoke();
        invocation.key(&room).key(&moves).key(&games).key(&fence);
        invocation
            .arg(&write.record)
            .arg(write.expected_version)
            .arg(write.version)
            .arg(write.moves.len());
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
        let mut pipe = redis::pipe();
        pipe.invoke_script(&invocation)
            .cmd(if write.open { "SADD" } else { "SREM" })
            .arg(OPEN_SET)
            .arg(&write.code)
            .ignore();
        let reply: Result<(String,), _> = pipe.query_async(&mut conn).await;
        let (reply,) = match reply {
            // A restarted Redis has forgotten the script: load it, once.
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                invocation
                    .load_async(&mut conn)
                    .await
                    .map_err(StoreError::from)?;
                pipe.query_async(&mut conn)
                    .await
                    .map_err(StoreError::from)?
            }
            result => result.map_err(StoreError::from)?,
        };
        Ok(reply)
    }
}

/// Reads one room: its record and every move in its log.
async fn load_room(
    conn: &mut redis::aio::ConnectionManager,
    code: &str,
) -> Result<Option<StoredRoom>, StoreError> {
    let [room, moves, _, _] = keys(code);
    let record: Option<String> = redis::cmd("GET")
        .arg(&room)
        .query_async(conn)
        .await
        .map_err(StoreError::from)?;
    let Some(record) = record else {
        return Ok(None);
    };
    let entries: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
        .arg(&moves)
        .arg("-")
        .arg("+")
        .query_async(conn)
        .await
        .map_err(StoreError::from)?;
    let moves = entries
        .ids
        .iter()
        .map(parse_entry)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(StoredRoom {
        code: code.to_owned(),
        record,
        moves,
    }))
}

fn parse_entry(entry: &redis::streams::StreamId) -> Result<StoredMove, StoreError> {
    let bad = || StoreError::Unreadable(format!("malformed move entry {}", entry.id));
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
