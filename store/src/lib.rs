//! Jumpgate's persistence: everything the server keeps beyond one
//! process, behind traits with an in-memory and a Redis implementation
//! each — rooms and their move logs, ownership (fences, heartbeats,
//! orphans, handovers), solo games and unloaded rooms (the [`Store`]
//! traits, here), wallets with escrow ([`wallet`]), career records
//! ([`records`]), leaderboards ([`leaderboard`]), and the idempotency keys
//! they share ([`idempotency`]). [`keys`] names every Redis key, for the
//! tools that read a deployment's Redis too.
//!
//! ## Rooms
//!
//! A room stores each change in one of two shapes. A [`RoomWrite`] holds
//! its whole record (small), the moves played since the last write
//! (appended to an ordered, duplicate-proof log), and the PDN of any game
//! that finished. A [`MoveAppend`] (a move that changed nothing but the
//! game in play) only appends the move to the log, with what it changed
//! besides the game ([`MoveEffects`]), and leaves the record as it was: a
//! load rebuilds the room from the record and the moves logged after it.
//! The Redis store applies either atomically with one Lua script; every
//! key of a room carries the hash tag `{CODE}` so a room lives in one
//! Redis Cluster slot.
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

mod conn;
pub mod embedded;
pub mod idempotency;
pub mod keys;
pub mod leaderboard;
mod memory;
pub mod metrics;
pub mod migrate;
pub mod preflight;
pub mod records;
mod redis;
pub mod sync;
pub mod wallet;

pub use self::conn::{RedisConn, cluster_seeds, redis_connection};
pub use self::embedded::EmbeddedStore;
pub use self::memory::MemoryStore;
pub use self::redis::RedisStore;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

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
    /// The data file (the embedded store) refused or failed: a full disk,
    /// an I/O error. Nothing of the refused write was committed.
    #[error("store unavailable: the data file failed ({0})")]
    Disk(String),
    /// The write was decided longer ago than its idempotency key is kept
    /// (see [`crate::idempotency`]): it was not applied, and never will be.
    #[error("refused: decided too long ago to be applied exactly once ({0})")]
    Expired(String),
}

impl From<::redis::RedisError> for StoreError {
    fn from(e: ::redis::RedisError) -> StoreError {
        if e.is_timeout() {
            StoreError::Timeout
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            StoreError::Connection(e.to_string())
        } else if e.code() == Some("EXPIRED") {
            StoreError::Expired(e.detail().unwrap_or_default().to_owned())
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

pub use jumpgate_lobby::{MoveEffects, StoredMove};

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
    /// (see [`DormantStore::park`]), not by the audit at start.
    pub parked: bool,
    /// A parked room's wake time as listed in `jg:dormant` (its score).
    pub wake: Option<String>,
    /// The instance the balancer was last seen sending the room's players
    /// to (see [`OwnershipStore::set_home`]); kept while it runs elsewhere.
    pub home: Option<String>,
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

/// Everything one change of a room persists (any change but a plain move,
/// which is a [`MoveAppend`]).
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
    /// applied: the seat holders not yet listed. Idempotent.
    pub seated: Vec<String>,
    /// Identities to unlist it for: those who left, or everyone once it
    /// closes. Idempotent too; an entry that survives a failure is dropped
    /// when read.
    pub unseated: Vec<String>,
}

/// A move stored without rewriting the room record: appended to the log
/// with its [`MoveEffects`], fenced and conditional on the stored version
/// exactly as a [`RoomWrite`] is. A room appends a move only when the move
/// is the only change since the version stored and leaves its game in
/// play; anything else (a game's or series' end, a seat, an offer, a
/// stake, a clock event) is a [`RoomWrite`].
#[derive(Clone, Debug)]
pub struct MoveAppend {
    pub code: String,
    /// The owner writing, at its epoch (see [`RoomWrite::owner`]).
    pub owner: OwnerEpoch,
    /// The version the writer last knew to be stored (see
    /// [`RoomWrite::expected_version`]).
    pub expected_version: u64,
    /// The version this append stores: its last move's
    /// [`MoveEffects::version`]. Stored already, the append is this very
    /// one landed before if the log's last entry is its last move at this
    /// version.
    pub version: u64,
    /// The moves, oldest first, each with its effects.
    pub moves: Vec<StoredMove>,
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
    /// The record as last written; moves appended since are in `moves`
    /// with their effects (see [`MoveAppend`]).
    pub record: String,
    /// Every move in the room's log, in order.
    pub moves: Vec<StoredMove>,
}

/// An open lobby's record as "my games" reads it, with the last move in
/// its log (which may have been appended after the record was written).
#[derive(Clone, Debug)]
pub struct OpenRecord {
    pub record: String,
    pub last_move: Option<StoredMove>,
}

/// What claiming a room in a batch came to (see [`OwnershipStore::claim_and_load`]).
#[derive(Debug)]
pub enum Claimed {
    /// The fence was no longer the one seen: someone else moved first.
    Lost,
    /// Claimed at `owner`; the room as read after the claim (`Ok(None)`:
    /// gone meanwhile; an error: claimed, but not read).
    Won {
        owner: OwnerEpoch,
        stored: Result<Option<StoredRoom>, StoreError>,
    },
}

/// Per room of a batch: its result, or the store error that left it
/// unknown.
pub type PerRoom<T> = Vec<Result<T, StoreError>>;

/// Rooms and their move logs: conditional, fenced writes, loads, the
/// finished games, and the "my games" lists.
pub trait RoomStore: Send + Sync + std::fmt::Debug {
    /// Applies a write atomically, all of it or none of it, if it follows
    /// from the stored version (see [`RoomWrite::expected_version`]).
    fn write<'a>(&'a self, write: &'a RoomWrite) -> WriteFuture<'a>;
    /// Appends moves without rewriting the record, atomically, fenced and
    /// conditional like [`write`](Self::write) (see [`MoveAppend`]).
    fn append<'a>(&'a self, append: &'a MoveAppend) -> WriteFuture<'a>;
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
    /// Every open room's code (the audit at start).
    fn open_codes(&self) -> StoreFuture<'_, Vec<String>>;
    /// The lobbies listed under an identity ("my games"): a superset of
    /// the open lobbies it holds a seat in.
    fn rooms_of<'a>(&'a self, identity: &'a str) -> StoreFuture<'a, Vec<String>>;
    /// Takes lobbies off an identity's list (they closed, or it lost its
    /// seat).
    fn forget_rooms_of<'a>(&'a self, identity: &'a str, codes: &'a [String])
    -> StoreFuture<'a, ()>;
    /// The records of these rooms, where open (`None`: closed or gone),
    /// each with the last move logged.
    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<OpenRecord>>>;
}

/// Who runs which room: fences, claims, releases, homes, instance
/// heartbeats, orphans and handover requests (see ARCHITECTURE.md,
/// "Ownership"). It extends [`RoomStore`] because a room's fence and its
/// record live together (a claim can load what it claimed).
pub trait OwnershipStore: RoomStore {
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
    /// Records `home` as the instance the room belongs on, if `me` owns
    /// it, and (with `only_if_unset`) if it has none yet. Returns the home
    /// the fence names afterwards (`None`: none, or not `me`'s room).
    fn set_home<'a>(
        &'a self,
        code: &'a str,
        me: &'a str,
        home: &'a str,
        only_if_unset: bool,
    ) -> StoreFuture<'a, Option<String>>;
    /// Says `me` is alive for `ttl` more; `token` tells this process from
    /// another started with the same id by mistake.
    fn heartbeat<'a>(&'a self, me: &'a str, token: &'a str, ttl: Duration)
    -> StoreFuture<'a, Beat>;
    /// Says `me` is gone (its rooms are adopted without waiting).
    fn retire<'a>(&'a self, me: &'a str) -> StoreFuture<'a, ()>;
    /// Whether an instance's heartbeat is current.
    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool>;
    /// Marks `me` as not ready for rooms (`true`: while it starts, until
    /// its stored rooms are resumed, and from the start of its drain; ten
    /// minutes at most) or ready (`false`).
    fn mark_unready<'a>(&'a self, me: &'a str, unready: bool) -> StoreFuture<'a, ()>;
    /// Per instance, in order: whether its heartbeat is current and it is
    /// not marked unready (a room's home it may go back to).
    fn up<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>>;
    /// Up to `limit` rooms whose owner is dead or which were released, and
    /// up to `limit` of `me`'s own list (`dead_owner` = `me`: a room handed
    /// to it, or claimed, that it may not run). Entries may be stale (the
    /// room was adopted since): callers check the fence, then
    /// [`forget_orphan`](Self::forget_orphan).
    fn orphans<'a>(&'a self, me: &'a str, limit: usize) -> StoreFuture<'a, Vec<Orphan>>;
    /// Takes a room off the list it was found on.
    fn forget_orphan<'a>(&'a self, orphan: &'a Orphan) -> StoreFuture<'a, ()>;
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

    /// [`fence`](Self::fence) for many rooms at once (the start reads them
    /// in batches), in the order of `codes`. The outer error: nothing was
    /// read; an inner one: that room's fence was not.
    fn fences<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, PerRoom<Option<Fence>>> {
        Box::pin(async move {
            let mut fences = Vec::with_capacity(codes.len());
            for code in codes {
                fences.push(self.fence(code).await);
            }
            Ok(fences)
        })
    }
    /// [`is_alive`](Self::is_alive) for many instances at once, in order.
    fn alive<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        Box::pin(async move {
            let mut alive = Vec::with_capacity(instances.len());
            for instance in instances {
                alive.push(self.is_alive(instance).await?);
            }
            Ok(alive)
        })
    }
    /// [`claim`](Self::claim) for many rooms at once, each room read
    /// ([`load`](RoomStore::load)) right after its own claim, in the order of
    /// `rooms` (code and the fence seen). Every room is listed among `me`'s
    /// rooms before any is claimed. The outer error: nothing was claimed;
    /// an inner one: that room's claim may or may not have landed (read
    /// its fence again).
    fn claim_and_load<'a>(
        &'a self,
        rooms: &'a [(String, Fence)],
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, PerRoom<Claimed>> {
        Box::pin(async move {
            let mut claimed = Vec::with_capacity(rooms.len());
            for (code, seen) in rooms {
                claimed.push(match self.claim(code, seen, me).await {
                    Ok(Some(owner)) => Ok(Claimed::Won {
                        owner,
                        stored: self.load(code).await,
                    }),
                    Ok(None) => Ok(Claimed::Lost),
                    Err(e) => Err(e),
                });
            }
            Ok(claimed)
        })
    }
}

/// Solo games against the computer: which game an identity plays, and
/// the writes that close it together with that note.
pub trait SoloStore: RoomStore {
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
    /// [`write`](RoomStore::write) for a solo game of the identity `owner`: a
    /// write that closes the game (not [`open`](RoomWrite::open)) also
    /// gives the identity's note a TTL of `expire_after`, if the note
    /// still names this game, so the note expires with it. Like the set
    /// of open rooms, the note is updated only once the write applied,
    /// and a failure to update it makes the write's outcome unknown.
    fn write_solo<'a>(&'a self, write: &'a RoomWrite, owner: &'a str) -> WriteFuture<'a>;
}

/// Unloaded rooms (correspondence lobbies nobody is connected to): parked
/// with their wake time, and the list of those due.
pub trait DormantStore: OwnershipStore {
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
    /// Lists a parked room as dormant under `wake` (a score as
    /// [`Fence::wake`] holds it) unless it is listed already: restores an
    /// entry a failover lost.
    fn relist_dormant<'a>(&'a self, code: &'a str, wake: &'a str) -> StoreFuture<'a, ()>;
    /// Up to `limit` dormant rooms due by `now_ms`, soonest first. Entries
    /// may be stale (the room was loaded since): callers check the fence.
    fn dormant_due(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<Dormant>>;
    /// Takes a dormant entry off the list, unless the room was listed again
    /// with another wake time meanwhile.
    fn forget_dormant<'a>(&'a self, entry: &'a Dormant) -> StoreFuture<'a, ()>;
}

/// Everything the server persists about rooms: the four concerns above,
/// implemented together by each store (memory and Redis).
pub trait Store: RoomStore + OwnershipStore + SoloStore + DormantStore {}

impl<T: RoomStore + OwnershipStore + SoloStore + DormantStore> Store for T {}

/// The store traits, for code that calls a concrete store's methods
/// (a `dyn Store` needs no import).
pub mod prelude {
    pub use crate::{DormantStore, OwnershipStore, RoomStore, SoloStore, Store};
}

#[cfg(test)]
mod tests;
