//! The embedded store's rooms: records, fences, move logs, finished games,
//! "my games", solo notes and dormant rooms, with the Redis store's rules
//! (fenced, conditional writes; a re-sent write that landed is `Ok`; a
//! refused write changes nothing) checked inside the write's transaction.

use rusqlite::{OptionalExtension, params};

use super::EmbeddedStore;
use super::db::Tx;
use crate::{
    Dormant, DormantStore, Fence, MoveAppend, MoveEffects, OpenRecord, OwnerEpoch, RoomStore,
    RoomWrite, SoloStore, StoreError, StoreFuture, StoredMove, StoredRoom, WriteError, WriteFuture,
};

pub(super) const TABLES: &str = "
CREATE TABLE rooms (
  code TEXT PRIMARY KEY,
  record TEXT NOT NULL,
  version INTEGER NOT NULL,
  owner TEXT,
  epoch INTEGER NOT NULL,
  handed INTEGER NOT NULL DEFAULT 0,
  parked INTEGER NOT NULL DEFAULT 0,
  wake TEXT,
  home TEXT,
  open INTEGER NOT NULL,
  expires_at INTEGER
) WITHOUT ROWID;
CREATE INDEX rooms_open_by_owner ON rooms (open, owner, code);
CREATE INDEX rooms_by_expiry ON rooms (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE moves (
  code TEXT NOT NULL,
  game_no INTEGER NOT NULL,
  ply INTEGER NOT NULL,
  path TEXT NOT NULL,
  text TEXT NOT NULL,
  seat INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  version INTEGER,
  at_ms INTEGER,
  deadline_ms INTEGER,
  to_move INTEGER,
  submitted TEXT,
  PRIMARY KEY (code, game_no, ply)
) WITHOUT ROWID;
CREATE TABLE games (
  code TEXT NOT NULL,
  game_no INTEGER NOT NULL,
  pdn TEXT NOT NULL,
  PRIMARY KEY (code, game_no)
) WITHOUT ROWID;
CREATE TABLE mine (
  identity TEXT NOT NULL,
  code TEXT NOT NULL,
  PRIMARY KEY (identity, code)
) WITHOUT ROWID;
CREATE TABLE solo_notes (
  owner TEXT PRIMARY KEY,
  id TEXT NOT NULL,
  expires_at INTEGER
) WITHOUT ROWID;
CREATE INDEX solo_notes_by_expiry ON solo_notes (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE dormant (
  code TEXT PRIMARY KEY,
  wake INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX dormant_by_wake ON dormant (wake, code);
";

/// Rows not yet expired at `?1` (Unix ms).
macro_rules! live {
    () => {
        "(expires_at IS NULL OR expires_at > ?1)"
    };
}

/// SQLite integers are signed: times and versions beyond `i64::MAX` are
/// stored as `i64::MAX` (never, in practice).
pub(super) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn expiry(t: &Tx<'_>, ttl: Option<std::time::Duration>) -> Option<i64> {
    ttl.map(|ttl| int(t.now.saturating_add(ttl.as_millis() as u64)))
}

/// Deletes a room whose time ran out, with its log and games, so that
/// what follows sees it as Redis would (gone).
fn drop_if_expired(t: &Tx<'_>, code: &str) -> rusqlite::Result<()> {
    let gone = t
        .conn
        .prepare_cached("DELETE FROM rooms WHERE code = ?1 AND expires_at <= ?2")?
        .execute(params![code, int(t.now)])?;
    if gone > 0 {
        delete_logs(t, code)?;
    }
    Ok(())
}

fn delete_logs(t: &Tx<'_>, code: &str) -> rusqlite::Result<()> {
    t.conn
        .prepare_cached("DELETE FROM moves WHERE code = ?1")?
        .execute(params![code])?;
    t.conn
        .prepare_cached("DELETE FROM games WHERE code = ?1")?
        .execute(params![code])?;
    Ok(())
}

pub(super) fn purge(t: &Tx<'_>) -> rusqlite::Result<()> {
    let expired: Vec<String> = t
        .conn
        .prepare_cached("SELECT code FROM rooms WHERE expires_at <= ?1 LIMIT 1000")?
        .query_map(params![int(t.now)], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for code in expired {
        drop_if_expired(t, &code)?;
    }
    t.conn
        .prepare_cached("DELETE FROM solo_notes WHERE expires_at <= ?1")?
        .execute(params![int(t.now)])?;
    Ok(())
}

/// A room's fence and version, as a write checks them.
struct Head {
    owner: Option<String>,
    epoch: u64,
    version: u64,
    record: String,
}

/// The room's head, or `None` if there is none (a room whose time ran out
/// is deleted first, with its log, so that the write sees it as Redis
/// would: gone). `with_record` also reads the stored record (a re-sent
/// write compares it; an append does not need it).
fn head(t: &Tx<'_>, code: &str, with_record: bool) -> rusqlite::Result<Option<Head>> {
    let sql = if with_record {
        "SELECT owner, epoch, version, expires_at, record FROM rooms WHERE code = ?1"
    } else {
        "SELECT owner, epoch, version, expires_at FROM rooms WHERE code = ?1"
    };
    let found = t
        .conn
        .prepare_cached(sql)?
        .query_row(params![code], |r| {
            let expires_at: Option<i64> = r.get(3)?;
            Ok((
                Head {
                    owner: r.get(0)?,
                    epoch: r.get::<_, i64>(1)? as u64,
                    version: r.get::<_, i64>(2)? as u64,
                    record: if with_record {
                        r.get(4)?
                    } else {
                        String::new()
                    },
                },
                expires_at,
            ))
        })
        .optional()?;
    match found {
        Some((_, Some(at))) if at <= int(t.now) => {
            drop_if_expired(t, code)?;
            Ok(None)
        }
        found => Ok(found.map(|(head, _)| head)),
    }
}

fn admits(head: &Head, owner: &OwnerEpoch, claims: bool) -> Result<(), WriteError> {
    if !claims && (head.owner.as_deref() != Some(&*owner.instance) || head.epoch != owner.epoch) {
        return Err(WriteError::Fenced(format!(
            "owned by {:?} at epoch {}",
            head.owner, head.epoch
        )));
    }
    Ok(())
}

fn follows(head: &Head, expected: u64, version: u64) -> Result<(), WriteError> {
    if head.version < expected || head.version > version {
        return Err(WriteError::Conflict(format!(
            "stored version {}, this write follows {expected}",
            head.version
        )));
    }
    Ok(())
}

type MoveId = (u64, u32);

/// The id of the log's last move ((0, 0) for an empty log).
fn log_end(t: &Tx<'_>, code: &str) -> rusqlite::Result<MoveId> {
    Ok(t
        .conn
        .prepare_cached(
            "SELECT game_no, ply FROM moves WHERE code = ?1 ORDER BY game_no DESC, ply DESC LIMIT 1",
        )?
        .query_row(params![code], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u32))
        })
        .optional()?
        .unwrap_or((0, 0)))
}

/// The oldest game the log still holds (`last` if it holds none).
fn log_first_game(t: &Tx<'_>, code: &str, last: MoveId) -> rusqlite::Result<u64> {
    Ok(t.conn
        .prepare_cached("SELECT min(game_no) FROM moves WHERE code = ?1")?
        .query_row(params![code], |r| r.get::<_, Option<i64>>(0))?
        .map_or(last.0, |g| g as u64))
}

fn read_move(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredMove> {
    let version: Option<i64> = r.get(6)?;
    let effects = match version {
        Some(version) => Some(MoveEffects {
            version: version as u64,
            at_ms: r.get::<_, i64>(7)? as u64,
            deadline_ms: r.get::<_, i64>(8)? as u64,
            to_move: r.get::<_, Option<i64>>(9)?.map(|s| s as u8),
            submitted: r.get(10)?,
        }),
        None => None,
    };
    Ok(StoredMove {
        game_no: r.get::<_, i64>(0)? as u64,
        ply: r.get::<_, i64>(1)? as u32,
        path: r.get(2)?,
        text: r.get(3)?,
        seat: r.get::<_, i64>(4)? as u8,
        seq: r.get::<_, i64>(5)? as u32,
        effects,
    })
}

macro_rules! move_columns {
    () => {
        "game_no, ply, path, text, seat, seq, version, at_ms, deadline_ms, to_move, submitted"
    };
}

fn stored_move(t: &Tx<'_>, code: &str, id: MoveId) -> rusqlite::Result<Option<StoredMove>> {
    t.conn
        .prepare_cached(concat!(
            "SELECT ",
            move_columns!(),
            " FROM moves WHERE code = ?1 AND game_no = ?2 AND ply = ?3"
        ))?
        .query_row(params![code, int(id.0), id.1], read_move)
        .optional()
}

fn last_move(t: &Tx<'_>, code: &str) -> rusqlite::Result<Option<StoredMove>> {
    t.conn
        .prepare_cached(concat!(
            "SELECT ",
            move_columns!(),
            " FROM moves WHERE code = ?1 ORDER BY game_no DESC, ply DESC LIMIT 1"
        ))?
        .query_row(params![code], read_move)
        .optional()
}

fn moves_of(t: &Tx<'_>, code: &str) -> rusqlite::Result<Vec<StoredMove>> {
    t.conn
        .prepare_cached(concat!(
            "SELECT ",
            move_columns!(),
            " FROM moves WHERE code = ?1 ORDER BY game_no, ply"
        ))?
        .query_map(params![code], read_move)?
        .collect()
}

/// The moves of a write the log does not hold yet, and the game of the
/// log's last move; a move at an id it holds must be the same move (the
/// Redis script's rule).
fn fresh_moves<'m>(
    t: &Tx<'_>,
    code: &str,
    moves: &'m [StoredMove],
) -> rusqlite::Result<Result<(Vec<&'m StoredMove>, u64), WriteError>> {
    let end = log_end(t, code)?;
    let mut last = end;
    let mut first_game = None;
    let mut fresh = Vec::new();
    for m in moves {
        let id = (m.game_no, m.ply);
        if id > last {
            fresh.push(m);
            last = id;
            continue;
        }
        let clash = match stored_move(t, code, id)? {
            // Archived with its finished game: stored before.
            None => {
                let first = match first_game {
                    Some(first) => first,
                    None => *first_game.insert(log_first_game(t, code, end)?),
                };
                m.game_no >= first
            }
            Some(s) => s.path != m.path || s.seat != m.seat,
        };
        if clash {
            return Ok(Err(WriteError::Conflict(format!(
                "another move is stored at {}-{}",
                m.game_no, m.ply
            ))));
        }
    }
    Ok(Ok((fresh, end.0)))
}

/// Stores one move of `code`'s log, every field.
pub(crate) fn insert_move(
    conn: &rusqlite::Connection,
    code: &str,
    m: &StoredMove,
) -> rusqlite::Result<()> {
    let e = m.effects.as_ref();
    conn.prepare_cached(concat!(
        "INSERT INTO moves (code, ",
        move_columns!(),
        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
    ))?
    .execute(params![
        code,
        int(m.game_no),
        m.ply,
        m.path,
        m.text,
        m.seat,
        m.seq,
        e.map(|e| int(e.version)),
        e.map(|e| int(e.at_ms)),
        e.map(|e| int(e.deadline_ms)),
        e.and_then(|e| e.to_move),
        e.map(|e| e.submitted.as_str()),
    ])?;
    Ok(())
}

/// Logs new moves; a new game's first move takes the finished games'
/// moves out of the log.
fn log(
    t: &Tx<'_>,
    code: &str,
    (fresh, stored_game): (Vec<&StoredMove>, u64),
) -> rusqlite::Result<()> {
    let mut new_game = stored_game;
    for m in &fresh {
        new_game = new_game.max(m.game_no);
        insert_move(t.conn, code, m)?;
    }
    if new_game > stored_game && stored_game > 0 {
        t.conn
            .prepare_cached("DELETE FROM moves WHERE code = ?1 AND game_no < ?2")?
            .execute(params![code, int(new_game)])?;
    }
    Ok(())
}

/// One room write, all of it or nothing (the caller's savepoint undoes a
/// failure half-way).
pub(super) fn apply_write(t: &Tx<'_>, w: &RoomWrite) -> rusqlite::Result<Result<(), WriteError>> {
    let stored = head(t, &w.code, true)?;
    let head = stored.unwrap_or(Head {
        owner: None,
        epoch: 0,
        version: 0,
        record: String::new(),
    });
    let claims = head.epoch == 0 && head.version == 0 && w.owner.epoch == 1;
    if let Err(e) = admits(&head, &w.owner, claims) {
        return Ok(Err(e));
    }
    if head.version == w.version {
        return Ok(if head.record == w.record {
            Ok(())
        } else {
            Err(WriteError::Conflict(format!(
                "version {} holds another change",
                head.version
            )))
        });
    }
    if let Err(e) = follows(&head, w.expected_version, w.version) {
        return Ok(Err(e));
    }
    let fresh = match fresh_moves(t, &w.code, &w.moves)? {
        Ok(fresh) => fresh,
        Err(e) => return Ok(Err(e)),
    };
    t.conn
        .prepare_cached(
            "INSERT INTO rooms (code, record, version, owner, epoch, open, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (code) DO UPDATE SET record = ?2, version = ?3, owner = ?4, epoch = ?5,
               open = ?6, expires_at = ?7",
        )?
        .execute(params![
            w.code,
            w.record,
            int(w.version),
            &*w.owner.instance,
            int(w.owner.epoch),
            w.open,
            expiry(t, w.expire_after),
        ])?;
    log(t, &w.code, fresh)?;
    let mut game = t
        .conn
        .prepare_cached("INSERT OR REPLACE INTO games (code, game_no, pdn) VALUES (?1, ?2, ?3)")?;
    for (n, pdn) in &w.finished_games {
        game.execute(params![w.code, int(*n), pdn])?;
    }
    let mut unlist = t
        .conn
        .prepare_cached("DELETE FROM mine WHERE identity = ?1 AND code = ?2")?;
    for id in &w.unseated {
        unlist.execute(params![id, w.code])?;
    }
    if w.open {
        let mut list = t
            .conn
            .prepare_cached("INSERT OR IGNORE INTO mine (identity, code) VALUES (?1, ?2)")?;
        for id in &w.seated {
            list.execute(params![id, w.code])?;
        }
    }
    Ok(Ok(()))
}

fn apply_append(t: &Tx<'_>, a: &MoveAppend) -> rusqlite::Result<Result<(), WriteError>> {
    let Some(head) = head(t, &a.code, false)? else {
        return Ok(Err(WriteError::Conflict("no record to append to".into())));
    };
    if let Err(e) = admits(&head, &a.owner, false) {
        return Ok(Err(e));
    }
    if head.version == a.version {
        let landed = match (a.moves.last(), last_move(t, &a.code)?) {
            (Some(sent), Some(m)) => {
                (m.game_no, m.ply) == (sent.game_no, sent.ply)
                    && m.path == sent.path
                    && m.effects.as_ref().map(|e| e.version) == Some(a.version)
            }
            _ => false,
        };
        return Ok(if landed {
            Ok(())
        } else {
            Err(WriteError::Conflict(format!(
                "version {} holds another change",
                head.version
            )))
        });
    }
    if let Err(e) = follows(&head, a.expected_version, a.version) {
        return Ok(Err(e));
    }
    let fresh = match fresh_moves(t, &a.code, &a.moves)? {
        Ok(fresh) => fresh,
        Err(e) => return Ok(Err(e)),
    };
    t.conn
        .prepare_cached("UPDATE rooms SET version = ?2 WHERE code = ?1")?
        .execute(params![a.code, int(a.version)])?;
    log(t, &a.code, fresh)?;
    Ok(Ok(()))
}

pub(super) fn stored_room(t: &Tx<'_>, code: &str) -> rusqlite::Result<Option<StoredRoom>> {
    let Some(head) = head(t, code, true)? else {
        return Ok(None);
    };
    Ok(Some(StoredRoom {
        code: code.to_owned(),
        record: head.record,
        moves: moves_of(t, code)?,
    }))
}

pub(super) fn open_codes(t: &Tx<'_>) -> rusqlite::Result<Vec<String>> {
    t.conn
        .prepare_cached(concat!(
            "SELECT code FROM rooms WHERE open = 1 AND ",
            live!(),
            " ORDER BY code"
        ))?
        .query_map(params![int(t.now)], |r| r.get(0))?
        .collect()
}

/// An open room's fence (`None`: no open room has that code).
pub(super) fn fence(t: &Tx<'_>, code: &str) -> rusqlite::Result<Option<Fence>> {
    t.conn
        .prepare_cached(concat!(
            "SELECT owner, epoch, handed, parked, wake, home FROM rooms
             WHERE code = ?2 AND open = 1 AND ",
            live!()
        ))?
        .query_row(params![int(t.now), code], |r| {
            Ok(Fence {
                owner: r.get(0)?,
                epoch: r.get::<_, i64>(1)? as u64,
                handed: r.get(2)?,
                parked: r.get(3)?,
                wake: r.get(4)?,
                home: r.get(5)?,
            })
        })
        .optional()
}

fn write_error(e: StoreError) -> WriteError {
    WriteError::Unavailable(e)
}

impl RoomStore for EmbeddedStore {
    fn write<'a>(&'a self, write: &'a RoomWrite) -> WriteFuture<'a> {
        let write = write.clone();
        Box::pin(async move {
            self.db
                .call(move |t| apply_write(t, &write))
                .await
                .map_err(write_error)?
        })
    }

    fn append<'a>(&'a self, append: &'a MoveAppend) -> WriteFuture<'a> {
        let append = append.clone();
        Box::pin(async move {
            self.db
                .call(move |t| apply_append(t, &append))
                .await
                .map_err(write_error)?
        })
    }

    fn load_open(&self) -> StoreFuture<'_, Vec<StoredRoom>> {
        Box::pin(self.db.call(|t| {
            let mut rooms = Vec::new();
            for code in open_codes(t)? {
                rooms.extend(stored_room(t, &code)?);
            }
            Ok(rooms)
        }))
    }

    fn load<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<StoredRoom>> {
        let code = code.to_owned();
        Box::pin(self.db.call(move |t| stored_room(t, &code)))
    }

    fn games<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Vec<String>> {
        let code = code.to_owned();
        Box::pin(self.db.call(move |t| {
            drop_if_expired(t, &code)?;
            t.conn
                .prepare_cached("SELECT pdn FROM games WHERE code = ?1 ORDER BY game_no")?
                .query_map(params![code], |r| r.get(0))?
                .collect()
        }))
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(
            self.db
                .call(|t| t.conn.query_row("SELECT 1", [], |_| Ok(()))),
        )
    }

    fn is_durable(&self) -> bool {
        true
    }

    fn open_codes(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(self.db.call(open_codes))
    }

    fn rooms_of<'a>(&'a self, identity: &'a str) -> StoreFuture<'a, Vec<String>> {
        let identity = identity.to_owned();
        Box::pin(self.db.call(move |t| {
            t.conn
                .prepare_cached("SELECT code FROM mine WHERE identity = ?1 ORDER BY code")?
                .query_map(params![identity], |r| r.get(0))?
                .collect()
        }))
    }

    fn forget_rooms_of<'a>(
        &'a self,
        identity: &'a str,
        codes: &'a [String],
    ) -> StoreFuture<'a, ()> {
        let (identity, codes) = (identity.to_owned(), codes.to_vec());
        Box::pin(self.db.call(move |t| {
            let mut unlist = t
                .conn
                .prepare_cached("DELETE FROM mine WHERE identity = ?1 AND code = ?2")?;
            for code in &codes {
                unlist.execute(params![identity, code])?;
            }
            Ok(())
        }))
    }

    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<OpenRecord>>> {
        let codes = codes.to_vec();
        Box::pin(self.db.call(move |t| {
            let mut records = Vec::with_capacity(codes.len());
            for code in &codes {
                let record: Option<String> = t
                    .conn
                    .prepare_cached(concat!(
                        "SELECT record FROM rooms WHERE code = ?2 AND open = 1 AND ",
                        live!()
                    ))?
                    .query_row(params![int(t.now), code], |r| r.get(0))
                    .optional()?;
                records.push(match record {
                    Some(record) => Some(OpenRecord {
                        record,
                        last_move: last_move(t, code)?,
                    }),
                    None => None,
                });
            }
            Ok(records)
        }))
    }
}

impl SoloStore for EmbeddedStore {
    fn write_solo<'a>(&'a self, write: &'a RoomWrite, owner: &'a str) -> WriteFuture<'a> {
        let (write, owner) = (write.clone(), owner.to_owned());
        Box::pin(async move {
            self.db
                .call(move |t| {
                    let applied = apply_write(t, &write)?;
                    if applied.is_ok() && !write.open {
                        // The note expires with the game it names (a note
                        // naming the next game is left alone), as in Redis.
                        match expiry(t, write.expire_after) {
                            Some(at) => t
                                .conn
                                .prepare_cached(
                                    "UPDATE solo_notes SET expires_at = ?3 WHERE owner = ?1 AND id = ?2",
                                )?
                                .execute(params![owner, write.code, at])?,
                            None => t
                                .conn
                                .prepare_cached("DELETE FROM solo_notes WHERE owner = ?1 AND id = ?2")?
                                .execute(params![owner, write.code])?,
                        };
                    }
                    Ok(applied)
                })
                .await
                .map_err(write_error)?
        })
    }

    fn index_solo<'a>(&'a self, owner: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        Box::pin(self.db.call(move |t| {
            t.conn
                .prepare_cached(
                    "INSERT INTO solo_notes (owner, id, expires_at) VALUES (?1, ?2, NULL)
                     ON CONFLICT (owner) DO UPDATE SET id = ?2, expires_at = NULL",
                )?
                .execute(params![owner, id])?;
            Ok(())
        }))
    }

    fn index_solo_unless_noted<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> StoreFuture<'a, Option<String>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        Box::pin(self.db.call(move |t| {
            t.conn
                .prepare_cached("DELETE FROM solo_notes WHERE owner = ?1 AND expires_at <= ?2")?
                .execute(params![owner, int(t.now)])?;
            t.conn
                .prepare_cached("INSERT OR IGNORE INTO solo_notes (owner, id) VALUES (?1, ?2)")?
                .execute(params![owner, id])?;
            solo_note(t, &owner)
        }))
    }

    fn solo_of<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Option<String>> {
        let owner = owner.to_owned();
        Box::pin(self.db.call(move |t| solo_note(t, &owner)))
    }
}

fn solo_note(t: &Tx<'_>, owner: &str) -> rusqlite::Result<Option<String>> {
    t.conn
        .prepare_cached(concat!(
            "SELECT id FROM solo_notes WHERE owner = ?2 AND ",
            live!()
        ))?
        .query_row(params![int(t.now), owner], |r| r.get(0))
        .optional()
}

/// Whether `owner` holds the room at its epoch.
pub(super) fn holds(t: &Tx<'_>, code: &str, owner: &OwnerEpoch) -> rusqlite::Result<bool> {
    Ok(head(t, code, false)?
        .is_some_and(|h| h.owner.as_deref() == Some(&*owner.instance) && h.epoch == owner.epoch))
}

impl DormantStore for EmbeddedStore {
    fn park<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        wake_ms: u64,
    ) -> StoreFuture<'a, bool> {
        let (code, owner) = (code.to_owned(), owner.clone());
        Box::pin(self.db.call(move |t| {
            if !holds(t, &code, &owner)? {
                return Ok(false);
            }
            let wake = int(wake_ms);
            t.conn
                .prepare_cached(
                    "UPDATE rooms SET owner = NULL, parked = 1, wake = ?2 WHERE code = ?1",
                )?
                .execute(params![code, wake.to_string()])?;
            t.conn
                .prepare_cached("INSERT OR REPLACE INTO dormant (code, wake) VALUES (?1, ?2)")?
                .execute(params![code, wake])?;
            Ok(true)
        }))
    }

    fn relist_dormant<'a>(&'a self, code: &'a str, wake: &'a str) -> StoreFuture<'a, ()> {
        let code = code.to_owned();
        let wake: Option<u64> = wake.parse().ok();
        Box::pin(self.db.call(move |t| {
            if let Some(wake) = wake {
                t.conn
                    .prepare_cached("INSERT OR IGNORE INTO dormant (code, wake) VALUES (?1, ?2)")?
                    .execute(params![code, int(wake)])?;
            }
            Ok(())
        }))
    }

    fn dormant_due(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<Dormant>> {
        Box::pin(self.db.call(move |t| {
            t.conn
                .prepare_cached(
                    "SELECT code, wake FROM dormant WHERE wake <= ?1 ORDER BY wake, code LIMIT ?2",
                )?
                .query_map(params![int(now_ms), int(limit as u64)], |r| {
                    Ok(Dormant {
                        code: r.get(0)?,
                        wake: r.get::<_, i64>(1)?.to_string(),
                    })
                })?
                .collect()
        }))
    }

    fn forget_dormant<'a>(&'a self, entry: &'a Dormant) -> StoreFuture<'a, ()> {
        let entry = entry.clone();
        Box::pin(self.db.call(move |t| {
            if let Ok(wake) = entry.wake.parse::<i64>() {
                t.conn
                    .prepare_cached("DELETE FROM dormant WHERE code = ?1 AND wake = ?2")?
                    .execute(params![entry.code, wake])?;
            }
            Ok(())
        }))
    }
}
