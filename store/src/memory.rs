//! The in-memory store: every table of the Redis store kept in this
//! process, with the same checks (fences, conditional versions, the move
//! log's order) and the same expiries, checked on every operation. Nothing
//! survives a restart.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{
    Beat, Dormant, DormantStore, Fence, MoveAppend, OpenRecord, Orphan, OwnerEpoch, OwnershipStore,
    RoomStore, RoomWrite, SoloStore, StoreFuture, StoredMove, StoredRoom, WriteError, WriteFuture,
};
use crate::sync::lock;

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
    home: Option<String>,
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
        // Looked at in place: only a key that is due is taken out.
        while self.deadlines.first().is_some_and(|(at, _)| *at <= now) {
            let Some((at, key)) = self.deadlines.pop_first() else {
                break;
            };
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
    fn apply(&mut self, write: &RoomWrite, now: Instant) -> Result<(), WriteError> {
        // A refused write leaves nothing behind, a room of its own making
        // included (Redis creates no key for a script that refuses).
        let existed = self.rooms.contains_key(&write.code);
        let result = self.apply_checked(write, now);
        if result.is_err() && !existed {
            self.rooms.remove(&write.code);
        }
        result
    }

    fn apply_checked(&mut self, write: &RoomWrite, now: Instant) -> Result<(), WriteError> {
        let room = self.rooms.entry(write.code.clone()).or_default();
        let claims = room.epoch == 0 && room.version == 0 && write.owner.epoch == 1;
        room.admits(&write.owner, claims)?;
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
        room.follows(write.expected_version, write.version)?;
        let fresh = room.fresh_moves(&write.moves)?;
        room.owner = Some(write.owner.instance.to_string());
        room.epoch = write.owner.epoch;
        room.version = write.version;
        room.record.clone_from(&write.record);
        room.log(fresh);
        for (n, pdn) in &write.finished_games {
            room.games.insert(*n, pdn.clone());
        }
        for id in &write.unseated {
            if let Some(listed) = self.mine.get_mut(id) {
                listed.remove(&write.code);
                if listed.is_empty() {
                    self.mine.remove(id);
                }
            }
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
            self.open.insert(write.code.clone());
        } else {
            self.open.remove(&write.code);
        }
        Ok(())
    }
}

impl MemoryTables {
    /// The same checks as the Redis script, for an append: the record,
    /// the games and the expiry stay as they are.
    fn apply_append(&mut self, append: &MoveAppend) -> Result<(), WriteError> {
        let Some(room) = self.rooms.get_mut(&append.code) else {
            return Err(WriteError::Conflict("no record to append to".into()));
        };
        room.admits(&append.owner, false)?;
        if room.version == append.version {
            let landed = append.moves.last().is_some_and(|sent| {
                room.moves.last_key_value().is_some_and(|(id, m)| {
                    *id == (sent.game_no, sent.ply)
                        && m.path == sent.path
                        && m.effects.as_ref().map(|e| e.version) == Some(append.version)
                })
            });
            return if landed {
                Ok(())
            } else {
                Err(WriteError::Conflict(format!(
                    "version {} holds another change",
                    room.version
                )))
            };
        }
        room.follows(append.expected_version, append.version)?;
        let fresh = room.fresh_moves(&append.moves)?;
        room.version = append.version;
        room.log(fresh);
        Ok(())
    }
}

impl MemoryRoom {
    /// Whether `owner` may write: it holds the fence, or its write is the
    /// room's very first, which claims it.
    fn admits(&self, owner: &OwnerEpoch, claims: bool) -> Result<(), WriteError> {
        if !claims && (self.owner.as_deref() != Some(&*owner.instance) || self.epoch != owner.epoch)
        {
            return Err(WriteError::Fenced(format!(
                "owned by {:?} at epoch {}",
                self.owner, self.epoch
            )));
        }
        Ok(())
    }

    /// Whether a write from `expected` to `version` follows from the
    /// stored version (see [`RoomWrite::expected_version`]).
    fn follows(&self, expected: u64, version: u64) -> Result<(), WriteError> {
        if self.version < expected || self.version > version {
            return Err(WriteError::Conflict(format!(
                "stored version {}, this write follows {expected}",
                self.version
            )));
        }
        Ok(())
    }

    /// The moves of a write that the log does not hold yet; a move at an
    /// id it holds must be the same move.
    fn fresh_moves(&self, moves: &[StoredMove]) -> Result<Vec<StoredMove>, WriteError> {
        let mut last = self.moves.keys().next_back().copied().unwrap_or((0, 0));
        let first_game = self.moves.keys().next().map_or(last.0, |k| k.0);
        let mut fresh = Vec::new();
        for m in moves {
            let id = (m.game_no, m.ply);
            if id > last {
                fresh.push(m.clone());
                last = id;
            } else if self.moves.get(&id).map_or(
                // Archived with its finished game: stored before.
                m.game_no >= first_game,
                |s| s.path != m.path || s.seat != m.seat,
            ) {
                return Err(WriteError::Conflict(format!(
                    "another move is stored at {}-{}",
                    m.game_no, m.ply
                )));
            }
        }
        Ok(fresh)
    }

    /// Logs new moves; a new game's first move takes the finished games'
    /// moves out of the log.
    fn log(&mut self, fresh: Vec<StoredMove>) {
        let stored_game = self.moves.keys().next_back().map_or(0, |k| k.0);
        let mut new_game = stored_game;
        for m in fresh {
            new_game = new_game.max(m.game_no);
            self.moves.insert((m.game_no, m.ply), m);
        }
        if new_game > stored_game && stored_game > 0 {
            self.moves = self.moves.split_off(&(new_game, 0));
        }
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
        let mut tables = lock(&self.tables);
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

impl RoomStore for MemoryStore {
    fn write<'a>(&'a self, write: &'a RoomWrite) -> WriteFuture<'a> {
        let result = self.tables().apply(write, Instant::now());
        Box::pin(async move { result })
    }

    fn append<'a>(&'a self, append: &'a MoveAppend) -> WriteFuture<'a> {
        let result = self.tables().apply_append(append);
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

    fn open_codes(&self) -> StoreFuture<'_, Vec<String>> {
        let codes = self.tables().open.iter().cloned().collect();
        Box::pin(async move { Ok(codes) })
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

    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<OpenRecord>>> {
        let tables = self.tables();
        let records = codes
            .iter()
            .map(|code| {
                tables
                    .rooms
                    .get(code)
                    .filter(|_| tables.open.contains(code))
                    .map(|r| OpenRecord {
                        record: r.record.clone(),
                        last_move: r.moves.values().next_back().cloned(),
                    })
            })
            .collect();
        Box::pin(async move { Ok(records) })
    }
}

impl OwnershipStore for MemoryStore {
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
                wake: None,
                home: r.home.clone(),
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

    fn set_home<'a>(
        &'a self,
        code: &'a str,
        me: &'a str,
        home: &'a str,
        only_if_unset: bool,
    ) -> StoreFuture<'a, Option<String>> {
        let mut tables = self.tables();
        let named = tables.rooms.get_mut(code).and_then(|r| {
            if r.owner.as_deref() != Some(me) {
                return None;
            }
            if !(only_if_unset && r.home.is_some()) {
                r.home = Some(home.to_owned());
            }
            r.home.clone()
        });
        Box::pin(async move { Ok(named) })
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

    fn mark_unready<'a>(&'a self, _me: &'a str, _unready: bool) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    fn up<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        // The only instance is this one.
        let up = vec![true; instances.len()];
        Box::pin(async move { Ok(up) })
    }

    fn orphans<'a>(&'a self, _me: &'a str, _limit: usize) -> StoreFuture<'a, Vec<Orphan>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn forget_orphan<'a>(&'a self, _orphan: &'a Orphan) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
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
}

impl SoloStore for MemoryStore {
    fn write_solo<'a>(&'a self, write: &'a RoomWrite, owner: &'a str) -> WriteFuture<'a> {
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
}

impl DormantStore for MemoryStore {
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

    fn relist_dormant<'a>(&'a self, code: &'a str, wake: &'a str) -> StoreFuture<'a, ()> {
        if let Ok(wake) = wake.parse() {
            self.tables().dormant.entry(code.to_owned()).or_insert(wake);
        }
        Box::pin(async { Ok(()) })
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
}
