//! The Redis store: room writes (one Lua script, fenced and conditional),
//! loads, and ownership (claims, releases, heartbeats, orphans, handover
//! requests).
//!
//! Here: the store, its key layout (documented on [`RedisStore`]) and the
//! helpers its commands share. Each store trait is implemented in a file
//! of its own (`rooms`, `ownership`, `solo`, `dormant`); the Lua scripts
//! are in `scripts`, the reads of rooms (one, or many at once) in `reads`.

mod dormant;
mod ownership;
mod reads;
mod rooms;
mod scripts;
mod solo;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use self::reads::load_room;
pub(crate) use self::reads::parse_entry;
use self::scripts::{
    CLAIM_SCRIPT, EXPIRE_NOTE_SCRIPT, FORGET_DORMANT_SCRIPT, PARK_SCRIPT, RELEASE_SCRIPT,
    SET_HOME_SCRIPT, WRITE_SCRIPT,
};
use crate::conn::{RedisConn, redis_connection};
use crate::keys::{
    DORMANT, INSTANCES, OPEN_SET, RELEASED, alive_key, handover_channel, mine_key, owned_key,
    room_keys, solo_key, unready_key,
};
use crate::{
    Beat, Claimed, Dormant, DormantStore, Fence, MoveAppend, OpenRecord, Orphan, OwnerEpoch,
    OwnershipStore, PerRoom, RoomStore, RoomWrite, SoloStore, StoreError, StoreFuture, StoredMove,
    StoredRoom, WriteError, WriteFuture,
};

/// The Redis store. Keys (all for one room share the hash tag `{CODE}`):
///
/// - `jg:{CODE}:room` — the room record (JSON string);
/// - `jg:{CODE}:fence` — a hash: `version`, the stored version (a record
///   written before it existed carries its version inside), and `owner`
///   and `epoch`, the owning instance (empty once released) and its epoch;
/// - `jg:{CODE}:moves` — a stream, entry id `GAME-PLY`, fields `path`,
///   `text`, `seat`, `seq`, and for a move appended without its record
///   its effects: `v` (version), `at`, `dl` (deadline), `tm` (seat to
///   move), `act` (the action as submitted);
/// - `jg:{CODE}:games` — a hash from game number to PDN;
/// - `jg:lobbies` — the set of open lobby codes (and solo game ids);
///
/// and for ownership (none of them per room and per second):
///
/// - `jg:alive:{ID}` — an instance's heartbeat, expiring after its TTL;
/// - `jg:unready:{ID}` — set while an instance starts (until its stored
///   rooms are resumed) and while it shuts down, ten minutes at most:
///   perhaps alive, but no home for rooms to go back to;
/// - `jg:instances` — every instance that may still own rooms;
/// - `jg:owned:{ID}` — the rooms an instance has claimed (a superset: a
///   room is listed before it is claimed and unlisted after it is given up);
/// - `jg:orphans` — rooms released by their owner, for anyone to take;
/// - `jg:solo:{IDENTITY}` — the solo game an identity last started (given
///   the game's TTL once that game closes);
/// - `jg:dormant` — a sorted set of unloaded rooms by when they are due
///   (Unix ms): a sweep loads those whose time has come;
/// - `jg:mine:{IDENTITY}` — the lobbies an identity took a seat in (a
///   superset of its open ones, cleaned as it is read);
/// - channel `jg:handover:{ID}` — codes other instances want handed over.
#[derive(Clone)]
pub struct RedisStore {
    client: redis::Client,
    pub(super) conn: RedisConn,
    script: redis::Script,
    pub(super) claim: redis::Script,
    release: redis::Script,
    set_home: redis::Script,
    park: redis::Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisStore { .. }")
    }
}

/// How long an unready mark lasts at most (a start or drain is shorter).
const UNREADY_MS: u64 = 600_000;

/// Times a Redis operation and counts its failure.
async fn observed<T>(
    op: &'static str,
    work: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let metrics = &crate::metrics::STORE_METRICS;
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

impl RedisStore {
    /// The store on a connection of its own to `url`.
    pub fn open(url: &str, timeout: Duration) -> Result<RedisStore, StoreError> {
        RedisStore::on(redis_connection(url, timeout)?, url)
    }

    /// The store on a shared connection to `url` (which also names the
    /// node the handover subscription goes to).
    pub fn on(conn: RedisConn, url: &str) -> Result<RedisStore, StoreError> {
        Ok(RedisStore {
            client: redis::Client::open(super::conn::first_node(url)).map_err(StoreError::from)?,
            conn,
            script: redis::Script::new(WRITE_SCRIPT),
            claim: redis::Script::new(CLAIM_SCRIPT),
            release: redis::Script::new(RELEASE_SCRIPT),
            set_home: redis::Script::new(SET_HOME_SCRIPT),
            park: redis::Script::new(PARK_SCRIPT),
        })
    }
}

impl RedisStore {
    /// A room write; `solo_owner` names the identity whose solo game it is
    /// (see [`Store::write_solo`]).
    fn write_noting<'a>(
        &'a self,
        write: &'a RoomWrite,
        solo_owner: Option<&'a str>,
    ) -> WriteFuture<'a> {
        Box::pin(async move {
            let reply = observed("write", self.send_write(write, solo_owner)).await?;
            written(&reply)
        })
    }

    /// Runs a pipeline holding `script`, loading the script once if a
    /// restarted Redis has forgotten it.
    async fn query_scripted<T: redis::FromRedisValue>(
        &self,
        conn: &mut RedisConn,
        pipe: &redis::Pipeline,
        script: &redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        match pipe.query_async(conn).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                script.load_async(conn).await.map_err(StoreError::from)?;
                pipe.query_async(conn).await.map_err(StoreError::from)
            }
            result => result.map_err(StoreError::from),
        }
    }

    /// Sends the write script (after listing a new room under its owner),
    /// then, once the script answered `ok`, the update of the open-rooms
    /// index, which lives outside the room's slot and so cannot be in the
    /// script. Adding and removing are idempotent; an index entry whose
    /// record has expired reads as no room.
    async fn send_write(
        &self,
        write: &RoomWrite,
        solo_owner: Option<&str>,
    ) -> Result<String, StoreError> {
        let mut conn = self.conn.clone();
        let [room, moves, games, fence] = room_keys(&write.code);
        let mut invocation = self.script.prepare_invoke();
        invocation.key(&room).key(&moves).key(&games).key(&fence);
        invocation
            .arg(&write.record)
            .arg(write.expected_version)
            .arg(write.version)
            .arg(&*write.owner.instance)
            .arg(write.owner.epoch);
        move_args(&mut invocation, &write.moves);
        invocation.arg(write.finished_games.len());
        for (n, pdn) in &write.finished_games {
            invocation.arg(n).arg(pdn);
        }
        invocation.arg(write.expire_after.map_or(0, |d| d.as_secs().max(1)));
        let owned = owned_key(&write.owner.instance);
        if write.expected_version == 0 && write.owner.epoch == 1 {
            // A new room's first write claims it: list it among the
            // claimer's rooms first (see `Store::claim`).
            sadd(&mut conn, &owned, &write.code).await?;
        }
        let mut pipe = redis::pipe();
        pipe.invoke_script(&invocation);
        let (reply,): (String,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
        // The index of open rooms (outside the room's slot, so outside the
        // script) changes only after the script applied the write: a
        // refused write, a fenced owner's above all, changes nothing. It
        // changes only when a room opens or closes; if this fails the
        // write reports an unknown outcome and is sent again.
        let lists_seats = !write.seated.is_empty() || !write.unseated.is_empty();
        if reply == "ok" && (write.expected_version == 0 || !write.open || lists_seats) {
            // Each key is in a slot of its own: one command each, all sent
            // together (each is idempotent, so their order does not matter).
            let mut index: Vec<redis::Cmd> = Vec::new();
            let set = |verb: &str, key: &str| {
                let mut cmd = redis::cmd(verb);
                cmd.arg(key).arg(&write.code);
                cmd
            };
            for id in &write.unseated {
                index.push(set("SREM", &mine_key(id)));
            }
            if write.open {
                // Open before it is on anyone's list, so that a list read
                // meanwhile never takes it for a closed lobby.
                sadd(&mut conn, OPEN_SET, &write.code).await?;
                // Each new seat holder's "my games" (idempotent, like the set).
                for id in &write.seated {
                    index.push(set("SADD", &mine_key(id)));
                }
            } else {
                // A closed room has nothing left to adopt.
                index.push(set("SREM", OPEN_SET));
                index.push(set("SREM", &owned));
                // A closed solo game's note expires with it, unless it
                // already names the identity's next game.
                if let Some(owner) = solo_owner {
                    let ttl = write.expire_after.map_or(0, |d| d.as_secs().max(1));
                    let mut note = redis::cmd("EVAL");
                    note.arg(EXPIRE_NOTE_SCRIPT)
                        .arg(1)
                        .arg(solo_key(owner))
                        .arg(&write.code)
                        .arg(ttl);
                    index.push(note);
                }
            }
            let sends = index.iter().map(|cmd| {
                let mut conn = self.conn.clone();
                async move { cmd.query_async::<redis::Value>(&mut conn).await }
            });
            futures_util::future::try_join_all(sends)
                .await
                .map_err(StoreError::from)?;
        }
        Ok(reply)
    }
}

impl RedisStore {
    /// Sends an append: the write script with no record (so it leaves the
    /// record, the games and the expiry alone). The indexes outside the
    /// room's slot do not change: a move opens, closes and seats nothing.
    async fn send_append(&self, append: &MoveAppend) -> Result<String, StoreError> {
        let mut conn = self.conn.clone();
        let [room, moves, games, fence] = room_keys(&append.code);
        let mut invocation = self.script.prepare_invoke();
        invocation.key(&room).key(&moves).key(&games).key(&fence);
        invocation
            .arg("")
            .arg(append.expected_version)
            .arg(append.version)
            .arg(&*append.owner.instance)
            .arg(append.owner.epoch);
        move_args(&mut invocation, &append.moves);
        invocation.arg(0).arg(0);
        let mut pipe = redis::pipe();
        pipe.invoke_script(&invocation);
        let (reply,): (String,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
        Ok(reply)
    }
}

/// The write script's moves: their count, then ten arguments each (the
/// effects '' for a move without them).
fn move_args(invocation: &mut redis::ScriptInvocation<'_>, moves: &[StoredMove]) {
    invocation.arg(moves.len());
    for m in moves {
        invocation
            .arg(format!("{}-{}", m.game_no, m.ply))
            .arg(&m.path)
            .arg(&m.text)
            .arg(m.seat)
            .arg(m.seq);
        match &m.effects {
            Some(e) => invocation
                .arg(e.version)
                .arg(e.at_ms)
                .arg(e.deadline_ms)
                .arg(e.to_move.map_or(String::new(), |s| s.to_string()))
                .arg(&e.submitted),
            None => invocation.arg("").arg("").arg("").arg("").arg(""),
        };
    }
}

/// A wake time as the `jg:dormant` score (`+inf`: never due).
fn dormant_score(wake_ms: u64) -> String {
    if wake_ms == u64::MAX {
        "+inf".to_owned()
    } else {
        wake_ms.to_string()
    }
}

/// The write script's answer as the write's outcome.
fn written(reply: &str) -> Result<(), WriteError> {
    if let Some(why) = reply.strip_prefix("fenced:") {
        crate::metrics::STORE_METRICS.writes_fenced.inc();
        return Err(WriteError::Fenced(why.to_owned()));
    }
    match reply.strip_prefix("conflict:") {
        Some(why) => {
            crate::metrics::STORE_METRICS.store_conflicts.inc();
            Err(WriteError::Conflict(why.to_owned()))
        }
        None => Ok(()),
    }
}

/// `SMEMBERS key`.
async fn smembers(conn: &mut RedisConn, key: &str) -> Result<Vec<String>, StoreError> {
    redis::cmd("SMEMBERS")
        .arg(key)
        .query_async(conn)
        .await
        .map_err(StoreError::from)
}

/// `SADD key member`, alone (keys of other slots get commands of their own).
async fn sadd(conn: &mut RedisConn, key: &str, member: &str) -> Result<(), StoreError> {
    let _: i64 = redis::cmd("SADD")
        .arg(key)
        .arg(member)
        .query_async(conn)
        .await
        .map_err(StoreError::from)?;
    Ok(())
}

/// `SREM key member`, alone.
async fn srem(conn: &mut RedisConn, key: &str, member: &str) -> Result<(), StoreError> {
    let _: i64 = redis::cmd("SREM")
        .arg(key)
        .arg(member)
        .query_async(conn)
        .await
        .map_err(StoreError::from)?;
    Ok(())
}
