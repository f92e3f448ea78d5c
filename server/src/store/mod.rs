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
//!
//! Every write is also fenced: it names the instance that owns the room and
//! the owner's epoch, and is refused with [`WriteError::Fenced`] once another
//! instance has claimed the room (a higher epoch). Ownership itself — claims,
//! releases, instance heartbeats, orphans — is part of the same trait, so
//! the fence and the room live in the same place (see ARCHITECTURE.md,
//! "Ownership").

mod redis;

pub use self::redis::{RedisStore, redis_connection};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

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

impl From<::redis::RedisError> for StoreError {
    fn from(e: ::redis::RedisError) -> StoreError {
        if e.is_timeout() {
            StoreError::Timeout
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            StoreError::Connection(e.to_string())
        } else if e.kind() == ::redis::ErrorKind::Parse
            || e.kind() == ::redis::ErrorKind::UnexpectedReturnType
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
    /// Another instance owns the room now (its epoch is higher than the
    /// writer's). Nothing was written; the writer must stop serving it.
    #[error("the room is owned by another instance ({0})")]
    Fenced(String),
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

/// The instance that owns a room, and the epoch at which it claimed it.
/// Epochs only grow: every claim adds one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerEpoch {
    pub instance: Arc<str>,
    pub epoch: u64,
}

impl OwnerEpoch {
    /// Whether a stored fence names this owner at this epoch.
    pub fn holds(&self, fence: &Fence) -> bool {
        fence.owner.as_deref() == Some(&*self.instance) && fence.epoch == self.epoch
    }

    /// The owner of a room this instance creates: its first write claims it.
    pub fn first(instance: &Arc<str>) -> OwnerEpoch {
        OwnerEpoch {
            instance: instance.clone(),
            epoch: 1,
        }
    }
}

/// A stored room's fence: who owns it and at which epoch. `owner` is
/// `None` once its owner released it (or for a room stored before
/// ownership existed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub owner: Option<String>,
    pub epoch: u64,
    /// Its previous owner handed it to `owner` on request (a planned move:
    /// no clock grace when it is taken up).
    pub handed: bool,
    /// Unloaded by its owner (a correspondence lobby nobody was connected
    /// to): free to claim, but loaded only when asked for or when due
    /// (see [`Store::park`]), not by the audit at start.
    pub parked: bool,
}

/// What renewing a heartbeat found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beat {
    /// The previous heartbeat, this process's, was still current.
    Continued,
    /// There was none: a first beat, or one after a pause long enough for
    /// the others to count this instance dead (and take its rooms).
    Lapsed,
    /// Another process renews the same instance id: an operator mistake.
    Shared,
}

/// A room that may have no live owner, and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Orphan {
    pub code: String,
    /// The dead instance whose rooms list it, or `None` for the list of
    /// rooms released by their owner.
    pub dead_owner: Option<String>,
}

/// Everything one change of a room persists.
#[derive(Clone, Debug)]
pub struct RoomWrite {
    pub code: String,
    /// The owner writing, at its epoch. A write whose owner and epoch are
    /// not the stored fence's is refused ([`WriteError::Fenced`]); the
    /// very first write of a new room (nothing stored, epoch 1) claims it.
    pub owner: OwnerEpoch,
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
    /// Identities to list this room under ("my games"), once the write
    /// applied: the seat holders not yet listed. Listing is idempotent;
    /// entries are dropped when read, once they no longer hold.
    pub seated: Vec<String>,
}

/// A dormant room due to be loaded, as listed: its code and the listed
/// wake time exactly as stored (to take it off only if unchanged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dormant {
    pub code: String,
    pub wake: String,
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
    /// Every open room with its moves (tests and tools read the store
    /// with it; the server itself finds rooms through their fences).
    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>>;
    /// One room as stored, if it is.
    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>>;
    /// The finished games of a room as PDN, oldest first.
    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>>;
    /// Whether the store answers (readiness).
    fn ping(&self) -> StoreFuture<'_, ()>;
    /// Whether state survives a restart of this process.
    fn is_durable(&self) -> bool;

    /// The fence of an open room; `None` if no open room has that code.
    fn fence<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<Fence>>;
    /// Claims a room for `me` if its fence is still `seen` (a compare and
    /// set); the new owner epoch, or `None` if someone else moved first.
    /// The room is first listed among `me`'s rooms, so it is never owned
    /// by an instance whose rooms do not list it.
    fn claim<'a>(
        &'a self,
        code: &'a str,
        seen: &'a Fence,
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, Option<OwnerEpoch>>;
    /// Gives a room up if `owner` still holds it: to the instance `to`
    /// (which asked for it; epoch + 1, marked handed), or to anyone (no
    /// owner, same epoch, listed as released so any instance takes it).
    fn release<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        to: Option<&'a str>,
    ) -> StoreFuture<'a, bool>;
    /// Says `me` is alive for `ttl` more; `token` tells this process from
    /// another started with the same id by mistake.
    fn heartbeat<'a>(&'a self, me: &'a str, token: &'a str, ttl: Duration)
    -> StoreFuture<'a, Beat>;
    /// Says `me` is gone (its rooms are adopted without waiting).
    fn retire<'a>(&'a self, me: &'a str) -> StoreFuture<'a, ()>;
    /// Whether an instance's heartbeat is current.
    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool>;
    /// Up to `limit` rooms whose owner is dead or which were released, and
    /// up to `limit` of `me`'s own list (`dead_owner` = `me`: a room handed
    /// to it, or claimed, that it may not run). Entries may be stale (the
    /// room was adopted since): callers check the fence, then
    /// [`forget_orphan`](Self::forget_orphan).
    fn orphans<'a>(&'a self, me: &'a str, limit: usize) -> StoreFuture<'a, Vec<Orphan>>;
    /// Takes a room off the list it was found on.
    fn forget_orphan<'a>(&'a self, orphan: &'a Orphan) -> StoreFuture<'a, ()>;
    /// Every open room's code (the audit at start).
    fn open_codes(&self) -> StoreFuture<'_, Vec<String>>;
    /// Asks the instance `owner` to hand the room over to `to`.
    fn ask_handover<'a>(
        &'a self,
        owner: &'a str,
        code: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, ()>;
    /// What other instances ask `me` to hand over, as they come: the code,
    /// a space and the asking instance.
    fn handover_requests(&self, me: &str) -> mpsc::Receiver<String>;
    /// Notes which solo game an identity plays (read by `resume_solo` on
    /// any instance). The note lasts until a write closes that game.
    fn index_solo<'a>(&'a self, owner: &'a str, id: &'a str) -> StoreFuture<'a, ()>;
    /// Notes `id` as the identity's solo game unless another game is noted
    /// (a game taken over must not displace the current one); returns the
    /// game noted afterwards.
    fn index_solo_unless_noted<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> StoreFuture<'a, Option<String>>;
    /// The solo game last noted for an identity.
    fn solo_of<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Option<String>>;
    /// [`write`](Self::write) for a solo game of the identity `owner`: a
    /// write that closes the game (not [`open`](RoomWrite::open)) also
    /// gives the identity's note a TTL of `expire_after`, if the note
    /// still names this game, so the note expires with it. Like the set
    /// of open rooms, the note is updated only once the write applied,
    /// and a failure to update it makes the write's outcome unknown.
    fn write_solo<'a>(&'a self, write: RoomWrite, owner: &'a str) -> WriteFuture<'a>;
    /// Unloads a room `owner` still holds: its owner is cleared (the epoch
    /// stays) and it is marked parked, and it is listed as dormant until
    /// `wake_ms` (Unix milliseconds; `u64::MAX` for never), when a sweep
    /// loads it. `false` if `owner` no longer holds it.
    fn park<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        wake_ms: u64,
    ) -> StoreFuture<'a, bool>;
    /// Up to `limit` dormant rooms due by `now_ms`, soonest first. Entries
    /// may be stale (the room was loaded since): callers check the fence.
    fn dormant_due(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<Dormant>>;
    /// Takes a dormant entry off the list, unless the room was listed again
    /// with another wake time meanwhile.
    fn forget_dormant<'a>(&'a self, entry: &'a Dormant) -> StoreFuture<'a, ()>;
    /// The lobbies listed under an identity ("my games"): a superset of
    /// the open lobbies it holds a seat in.
    fn rooms_of<'a>(&'a self, identity: &'a str) -> StoreFuture<'a, Vec<String>>;
    /// Takes lobbies off an identity's list (they closed, or it lost its
    /// seat).
    fn forget_rooms_of<'a>(&'a self, identity: &'a str, codes: &'a [String])
    -> StoreFuture<'a, ()>;
    /// The records of these rooms, where open (`None`: closed or gone).
    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<String>>>;
}

/// A key of the memory store that can expire.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Expiring {
    Room(String),
    SoloNote(String),
}

#[derive(Debug, Default)]
struct MemoryRoom {
    owner: Option<String>,
    epoch: u64,
    handed: bool,
    parked: bool,
    version: u64,
    record: String,
    moves: BTreeMap<(u64, u32), StoredMove>,
    games: BTreeMap<u64, String>,
    /// When the room's keys expire (a finished or closed room), as in Redis.
    expires_at: Option<Instant>,
}

#[derive(Debug, Default)]
struct MemoryTables {
    rooms: HashMap<String, MemoryRoom>,
    open: HashSet<String>,
    /// Each identity's solo game, and when the note expires.
    solos: HashMap<String, (String, Option<Instant>)>,
    /// Every deadline set, soonest first. An entry whose key has since
    /// been given another deadline (or none) is stale and skipped.
    deadlines: BTreeSet<(Instant, Expiring)>,
    /// Dormant rooms by code: when they are due.
    dormant: HashMap<String, u64>,
    /// Each identity's lobbies ("my games").
    mine: HashMap<String, BTreeSet<String>>,
}

impl MemoryTables {
    /// Deletes whatever expired by `now`, as Redis would: O(log n) per
    /// deadline passed, so each operation pays only for what expired.
    fn purge(&mut self, now: Instant) {
        while let Some((at, key)) = self.deadlines.first().cloned() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            match key {
                Expiring::Room(code) => {
                    if self.rooms.get(&code).and_then(|r| r.expires_at) == Some(at) {
                        self.rooms.remove(&code);
                        self.open.remove(&code);
                    }
                }
                Expiring::SoloNote(owner) => {
                    if self.solos.get(&owner).and_then(|(_, t)| *t) == Some(at) {
                        self.solos.remove(&owner);
                    }
                }
            }
        }
    }

    /// Sets or clears (`None`) a key's deadline.
    fn expire(&mut self, key: Expiring, ttl: Option<Duration>, now: Instant) -> Option<Instant> {
        let at = ttl.map(|ttl| now + ttl);
        if let Some(at) = at {
            self.deadlines.insert((at, key));
        }
        at
    }

    /// The same checks as the Redis script.
    fn apply(&mut self, write: RoomWrite, now: Instant) -> Result<(), WriteError> {
        let room = self.rooms.entry(write.code.clone()).or_default();
        let claims = room.epoch == 0 && room.version == 0 && write.owner.epoch == 1;
        if !claims
            && (room.owner.as_deref() != Some(&*write.owner.instance)
                || room.epoch != write.owner.epoch)
        {
            return Err(WriteError::Fenced(format!(
                "owned by {:?} at epoch {}",
                room.owner, room.epoch
            )));
        }
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
        room.owner = Some(write.owner.instance.to_string());
        room.epoch = write.owner.epoch;
        room.version = write.version;
        room.record = write.record;
        for m in fresh {
            room.moves.insert((m.game_no, m.ply), m);
        }
        for (n, pdn) in write.finished_games {
            room.games.insert(n, pdn);
        }
        if write.open {
            for id in &write.seated {
                self.mine
                    .entry(id.clone())
                    .or_default()
                    .insert(write.code.clone());
            }
        }
        let at = self.expire(Expiring::Room(write.code.clone()), write.expire_after, now);
        if let Some(room) = self.rooms.get_mut(&write.code) {
            room.expires_at = at;
        }
        if write.open {
            self.open.insert(write.code);
        } else {
            self.open.remove(&write.code);
        }
        Ok(())
    }
}

/// Keeps everything in this process: nothing survives a restart. Keys
/// expire as they would in Redis (a finished or closed room after its
/// TTL), checked on every operation, so memory stays bounded too.
#[derive(Debug, Default)]
pub struct MemoryStore {
    tables: Mutex<MemoryTables>,
}

impl MemoryStore {
    /// The tables, with everything expired by now deleted.
    fn tables(&self) -> std::sync::MutexGuard<'_, MemoryTables> {
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        tables.purge(Instant::now());
        tables
    }

    /// How many rooms are held, expired ones excluded (for tests).
    pub fn len(&self) -> usize {
        self.tables().rooms.len()
    }

    /// Whether no room is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Store for MemoryStore {
    fn write(&self, write: RoomWrite) -> WriteFuture<'_> {
        let result = self.tables().apply(write, Instant::now());
        Box::pin(async move { result })
    }

    fn write_solo<'a>(&'a self, write: RoomWrite, owner: &'a str) -> WriteFuture<'a> {
        let now = Instant::now();
        let mut tables = self.tables();
        let (code, open, ttl) = (write.code.clone(), write.open, write.expire_after);
        let result = tables.apply(write, now);
        if result.is_ok() && !open && tables.solos.get(owner).is_some_and(|(id, _)| *id == code) {
            let at = tables.expire(Expiring::SoloNote(owner.to_owned()), ttl, now);
            if let Some(note) = tables.solos.get_mut(owner) {
                note.1 = at;
            }
        }
        Box::pin(async move { result })
    }

    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>> {
        let tables = self.tables();
        let room = tables.rooms.get(code).map(|r| StoredRoom {
            code: code.to_owned(),
            record: r.record.clone(),
            moves: r.moves.values().cloned().collect(),
        });
        Box::pin(async move { Ok(room) })
    }

    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>> {
        let tables = self.tables();
        let list = tables
            .open
            .iter()
            .filter_map(|code| {
                tables.rooms.get(code).map(|r| StoredRoom {
                    code: code.clone(),
                    record: r.record.clone(),
                    moves: r.moves.values().cloned().collect(),
                })
            })
            .collect();
        Box::pin(async move { Ok(list) })
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        let tables = self.tables();
        let list = tables
            .rooms
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

    // One process holds a memory store, so ownership is trivial; it is kept
    // exact anyway so the rooms' fencing behaves the same in every test.

    fn fence<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<Fence>> {
        let tables = self.tables();
        let fence = tables
            .rooms
            .get(code)
            .filter(|_| tables.open.contains(code))
            .map(|r| Fence {
                owner: r.owner.clone(),
                epoch: r.epoch,
                handed: r.handed,
                parked: r.parked,
            });
        Box::pin(async move { Ok(fence) })
    }

    fn claim<'a>(
        &'a self,
        code: &'a str,
        seen: &'a Fence,
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, Option<OwnerEpoch>> {
        let mut tables = self.tables();
        let claimed = tables.rooms.get_mut(code).and_then(|r| {
            (r.owner == seen.owner && r.epoch == seen.epoch).then(|| {
                r.owner = Some(me.to_string());
                r.epoch += 1;
                r.handed = false;
                r.parked = false;
                OwnerEpoch {
                    instance: me.clone(),
                    epoch: r.epoch,
                }
            })
        });
        Box::pin(async move { Ok(claimed) })
    }

    fn release<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        to: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let mut tables = self.tables();
        let released = tables.rooms.get_mut(code).is_some_and(|r| {
            let holds = r.owner.as_deref() == Some(&*owner.instance) && r.epoch == owner.epoch;
            if holds {
                r.owner = to.map(str::to_owned);
                if to.is_some() {
                    r.epoch += 1;
                    r.handed = true;
                }
            }
            holds
        });
        Box::pin(async move { Ok(released) })
    }

    fn heartbeat<'a>(
        &'a self,
        _me: &'a str,
        _token: &'a str,
        _ttl: Duration,
    ) -> StoreFuture<'a, Beat> {
        Box::pin(async { Ok(Beat::Continued) })
    }

    fn retire<'a>(&'a self, _me: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    fn is_alive<'a>(&'a self, _instance: &'a str) -> StoreFuture<'a, bool> {
        // The only instance is this one.
        Box::pin(async { Ok(true) })
    }

    fn orphans<'a>(&'a self, _me: &'a str, _limit: usize) -> StoreFuture<'a, Vec<Orphan>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn forget_orphan<'a>(&'a self, _orphan: &'a Orphan) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    fn open_codes(&self) -> StoreFuture<'_, Vec<String>> {
        let codes = self.tables().open.iter().cloned().collect();
        Box::pin(async move { Ok(codes) })
    }

    fn ask_handover<'a>(
        &'a self,
        _owner: &'a str,
        _code: &'a str,
        _to: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    fn handover_requests(&self, _me: &str) -> mpsc::Receiver<String> {
        // Nobody else can ask: a channel whose sender is gone.
        mpsc::channel(1).1
    }

    fn index_solo<'a>(&'a self, owner: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        self.tables()
            .solos
            .insert(owner.to_owned(), (id.to_owned(), None));
        Box::pin(async { Ok(()) })
    }

    fn index_solo_unless_noted<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> StoreFuture<'a, Option<String>> {
        let noted = self
            .tables()
            .solos
            .entry(owner.to_owned())
            .or_insert_with(|| (id.to_owned(), None))
            .0
            .clone();
        Box::pin(async move { Ok(Some(noted)) })
    }

    fn solo_of<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Option<String>> {
        let id = self.tables().solos.get(owner).map(|(id, _)| id.clone());
        Box::pin(async move { Ok(id) })
    }

    fn park<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        wake_ms: u64,
    ) -> StoreFuture<'a, bool> {
        let mut tables = self.tables();
        let parked = tables.rooms.get_mut(code).is_some_and(|r| {
            let holds = r.owner.as_deref() == Some(&*owner.instance) && r.epoch == owner.epoch;
            if holds {
                r.owner = None;
                r.parked = true;
            }
            holds
        });
        if parked {
            tables.dormant.insert(code.to_owned(), wake_ms);
        }
        Box::pin(async move { Ok(parked) })
    }

    fn dormant_due(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<Dormant>> {
        let mut due: Vec<(u64, String)> = self
            .tables()
            .dormant
            .iter()
            .filter(|(_, wake)| **wake <= now_ms)
            .map(|(code, wake)| (*wake, code.clone()))
            .collect();
        due.sort();
        due.truncate(limit);
        let due = due
            .into_iter()
            .map(|(wake, code)| Dormant {
                code,
                wake: wake.to_string(),
            })
            .collect();
        Box::pin(async move { Ok(due) })
    }

    fn forget_dormant<'a>(&'a self, entry: &'a Dormant) -> StoreFuture<'a, ()> {
        let mut tables = self.tables();
        if tables
            .dormant
            .get(&entry.code)
            .is_some_and(|wake| wake.to_string() == entry.wake)
        {
            tables.dormant.remove(&entry.code);
        }
        Box::pin(async { Ok(()) })
    }

    fn rooms_of<'a>(&'a self, identity: &'a str) -> StoreFuture<'a, Vec<String>> {
        let codes = self
            .tables()
            .mine
            .get(identity)
            .map(|codes| codes.iter().cloned().collect())
            .unwrap_or_default();
        Box::pin(async move { Ok(codes) })
    }

    fn forget_rooms_of<'a>(
        &'a self,
        identity: &'a str,
        codes: &'a [String],
    ) -> StoreFuture<'a, ()> {
        let mut tables = self.tables();
        if let Some(listed) = tables.mine.get_mut(identity) {
            for code in codes {
                listed.remove(code);
            }
            if listed.is_empty() {
                tables.mine.remove(identity);
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<String>>> {
        let tables = self.tables();
        let records = codes
            .iter()
            .map(|code| {
                tables
                    .rooms
                    .get(code)
                    .filter(|_| tables.open.contains(code))
                    .map(|r| r.record.clone())
            })
            .collect();
        Box::pin(async move { Ok(records) })
    }
}

#[cfg(test)]
mod tests;
