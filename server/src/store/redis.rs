//! The Redis store: room writes (one Lua script, fenced and conditional),
//! loads, and ownership (claims, releases, heartbeats, orphans, handover
//! requests).
//!
//! About 900 lines: one `impl Store` holds the room writes and appends,
//! the ownership commands, unloading and the "my games" lists, which share
//! the connection, the script loading and the key layout documented on
//! [`RedisStore`]; splitting the impl would scatter that layout. The Lua
//! scripts themselves are in `scripts`, the reads of rooms (one, or many
//! at once) in `redis_reads`.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::conn::{RedisConn, redis_connection};
use super::redis_reads::load_room;
use super::scripts::{
    CLAIM_SCRIPT, EXPIRE_NOTE_SCRIPT, FORGET_DORMANT_SCRIPT, PARK_SCRIPT, RELEASE_SCRIPT,
    SET_HOME_SCRIPT, WRITE_SCRIPT,
};
use super::{
    Beat, Claimed, Dormant, Fence, MoveAppend, OpenRecord, Orphan, OwnerEpoch, PerRoom, RoomWrite,
    Store, StoreError, StoreFuture, StoredMove, StoredRoom, WriteError, WriteFuture,
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

pub(super) const OPEN_SET: &str = "jg:lobbies";
const INSTANCES: &str = "jg:instances";
const RELEASED: &str = "jg:orphans";
const DORMANT: &str = "jg:dormant";

fn mine_key(identity: &str) -> String {
    format!("jg:mine:{{{identity}}}")
}

pub(super) fn alive_key(instance: &str) -> String {
    format!("jg:alive:{{{instance}}}")
}

/// Set while an instance starts or shuts down (beside its heartbeat, in
/// its slot).
pub(super) fn unready_key(instance: &str) -> String {
    format!("jg:unready:{{{instance}}}")
}

/// How long an unready mark lasts at most (a start or drain is shorter).
const UNREADY_MS: u64 = 600_000;

pub(super) fn owned_key(instance: &str) -> String {
    format!("jg:owned:{{{instance}}}")
}

fn handover_channel(instance: &str) -> String {
    format!("jg:handover:{instance}")
}

fn solo_key(owner: &str) -> String {
    format!("jg:solo:{{{owner}}}")
}

pub(super) fn keys(code: &str) -> [String; 4] {
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

impl RedisStore {
    pub fn open(url: &str, timeout: Duration) -> Result<RedisStore, StoreError> {
        let conn = redis_connection(url, timeout)?;
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

impl Store for RedisStore {
    fn write<'a>(&'a self, write: &'a RoomWrite) -> WriteFuture<'a> {
        self.write_noting(write, None)
    }

    fn write_solo<'a>(&'a self, write: &'a RoomWrite, owner: &'a str) -> WriteFuture<'a> {
        self.write_noting(write, Some(owner))
    }

    fn append<'a>(&'a self, append: &'a MoveAppend) -> WriteFuture<'a> {
        Box::pin(async move {
            let reply = observed("append", self.send_append(append)).await?;
            written(&reply)
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
            let codes = smembers(&mut conn, OPEN_SET).await?;
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

    fn fence<'a>(&'a self, code: &'a str) -> StoreFuture<'a, Option<Fence>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [room, _, _, fence] = keys(code);
            // The room's slot in one round trip, the open set (another
            // slot) beside it.
            type Read = (
                Option<String>,
                Option<u64>,
                Option<u8>,
                Option<u8>,
                Option<String>,
                Option<String>,
                bool,
            );
            let mut other = self.conn.clone();
            let mut room_pipe = redis::pipe();
            room_pipe
                .hget(&fence, "owner")
                .hget(&fence, "epoch")
                .hget(&fence, "handed")
                .hget(&fence, "parked")
                .hget(&fence, "wake")
                .hget(&fence, "home")
                .exists(&room);
            let room_read = room_pipe.query_async::<Read>(&mut conn);
            let mut open_cmd = redis::cmd("SISMEMBER");
            open_cmd.arg(OPEN_SET).arg(code);
            let open_read = open_cmd.query_async::<bool>(&mut other);
            let (read, open) = futures_util::future::join(room_read, open_read).await;
            let (owner, epoch, handed, parked, wake, home, exists) =
                read.map_err(StoreError::from)?;
            let open = open.map_err(StoreError::from)?;
            Ok((exists && open).then(|| Fence {
                owner: owner.filter(|o| !o.is_empty()),
                epoch: epoch.unwrap_or(0),
                handed: handed == Some(1),
                parked: parked == Some(1),
                wake: wake.filter(|_| parked == Some(1)),
                home: home.filter(|h| !h.is_empty()),
            }))
        }))
    }

    fn claim<'a>(
        &'a self,
        code: &'a str,
        seen: &'a Fence,
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, Option<OwnerEpoch>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [room, _, _, fence] = keys(code);
            let mut invocation = self.claim.prepare_invoke();
            invocation
                .key(&room)
                .key(&fence)
                .arg(&**me)
                .arg(seen.owner.as_deref().unwrap_or(""))
                .arg(seen.epoch);
            // Listed under its claimer first, so it is never owned by an
            // instance whose rooms do not list it (another slot: a command
            // of its own).
            sadd(&mut conn, &owned_key(me), code).await?;
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (epoch,): (u64,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
            Ok((epoch > 0).then(|| OwnerEpoch {
                instance: me.clone(),
                epoch,
            }))
        }))
    }

    fn release<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        to: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [_, _, _, fence] = keys(code);
            let mut invocation = self.release.prepare_invoke();
            invocation
                .key(&fence)
                .arg(&*owner.instance)
                .arg(owner.epoch)
                .arg(to.unwrap_or(""));
            // Listed for its next owner (or as released) before it is given
            // up, unlisted from this owner's rooms after: at every moment
            // some list names it.
            match to {
                Some(to) => sadd(&mut conn, &owned_key(to), code).await?,
                None => sadd(&mut conn, RELEASED, code).await?,
            }
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (released,): (u8,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
            srem(&mut conn, &owned_key(&owner.instance), code).await?;
            Ok(released == 1)
        }))
    }

    fn set_home<'a>(
        &'a self,
        code: &'a str,
        me: &'a str,
        home: &'a str,
        only_if_unset: bool,
    ) -> StoreFuture<'a, Option<String>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [_, _, _, fence] = keys(code);
            let mut invocation = self.set_home.prepare_invoke();
            invocation
                .key(&fence)
                .arg(me)
                .arg(home)
                .arg(if only_if_unset { "1" } else { "0" });
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (named,): (Option<String>,) =
                self.query_scripted(&mut conn, &pipe, &invocation).await?;
            Ok(named.filter(|h| !h.is_empty()))
        }))
    }

    fn heartbeat<'a>(
        &'a self,
        me: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Beat> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut other = self.conn.clone();
            let mut set = redis::cmd("SET");
            set.arg(alive_key(me))
                .arg(token)
                .arg("PX")
                .arg(ttl_ms)
                .arg("GET");
            let beat = set.query_async::<Option<String>>(&mut conn);
            let listed = sadd(&mut other, INSTANCES, me);
            let (previous, listed) = futures_util::future::join(beat, listed).await;
            listed?;
            let previous = previous.map_err(StoreError::from)?;
            Ok(match previous {
                None => Beat::Lapsed,
                Some(previous) if previous == token => Beat::Continued,
                Some(_) => Beat::Shared,
            })
        }))
    }

    fn retire<'a>(&'a self, me: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("DEL")
                .arg(alive_key(me))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn mark_unready<'a>(&'a self, me: &'a str, unready: bool) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let cmd = if unready {
                let mut set = redis::cmd("SET");
                set.arg(unready_key(me)).arg(1).arg("PX").arg(UNREADY_MS);
                set
            } else {
                let mut del = redis::cmd("DEL");
                del.arg(unready_key(me));
                del
            };
            let _: redis::Value = cmd.query_async(&mut conn).await.map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn up<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        Box::pin(observed("ownership", self.read_up(instances)))
    }

    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let alive: bool = redis::cmd("EXISTS")
                .arg(alive_key(instance))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(alive)
        }))
    }

    fn orphans<'a>(&'a self, me: &'a str, limit: usize) -> StoreFuture<'a, Vec<Orphan>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let instances = smembers(&mut conn, INSTANCES).await?;
            let others: Vec<String> = instances.into_iter().filter(|i| i != me).collect();
            let mut found = Vec::new();
            if !others.is_empty() {
                // Every heartbeat is in a slot of its own.
                let reads = others.iter().map(|other| {
                    let mut conn = self.conn.clone();
                    async move {
                        redis::cmd("EXISTS")
                            .arg(alive_key(other))
                            .query_async::<bool>(&mut conn)
                            .await
                    }
                });
                let alive: Vec<bool> = futures_util::future::try_join_all(reads)
                    .await
                    .map_err(StoreError::from)?;
                for (dead, _) in others.iter().zip(alive).filter(|(_, alive)| !alive) {
                    let codes: Vec<String> = redis::cmd("SRANDMEMBER")
                        .arg(owned_key(dead))
                        .arg(limit)
                        .query_async(&mut conn)
                        .await
                        .map_err(StoreError::from)?;
                    if codes.is_empty() {
                        // Nothing left to adopt: forget the instance (it
                        // lists itself again if it was only slow).
                        srem(&mut conn, INSTANCES, dead).await?;
                    }
                    found.extend(codes.into_iter().map(|code| Orphan {
                        code,
                        dead_owner: Some(dead.clone()),
                    }));
                }
            }
            let mut other = self.conn.clone();
            let mut released_cmd = redis::cmd("SRANDMEMBER");
            released_cmd.arg(RELEASED).arg(limit);
            let released = released_cmd.query_async::<Vec<String>>(&mut conn);
            let mut own_cmd = redis::cmd("SRANDMEMBER");
            own_cmd.arg(owned_key(me)).arg(limit);
            let own = own_cmd.query_async::<Vec<String>>(&mut other);
            let (released, own) = futures_util::future::join(released, own).await;
            let (released, own) = (
                released.map_err(StoreError::from)?,
                own.map_err(StoreError::from)?,
            );
            found.extend(released.into_iter().map(|code| Orphan {
                code,
                dead_owner: None,
            }));
            found.extend(own.into_iter().map(|code| Orphan {
                code,
                dead_owner: Some(me.to_owned()),
            }));
            Ok(found)
        }))
    }

    fn forget_orphan<'a>(&'a self, orphan: &'a Orphan) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let list = orphan
                .dead_owner
                .as_deref()
                .map_or(RELEASED.to_owned(), owned_key);
            srem(&mut conn, &list, &orphan.code).await
        }))
    }

    fn open_codes(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(observed("load", async move {
            smembers(&mut self.conn.clone(), OPEN_SET).await
        }))
    }

    fn ask_handover<'a>(
        &'a self,
        owner: &'a str,
        code: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("PUBLISH")
                .arg(handover_channel(owner))
                .arg(format!("{code} {to}"))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn handover_requests(&self, me: &str) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel(1024);
        let client = self.client.clone();
        let channel = handover_channel(me);
        tokio::spawn(async move {
            use futures_util::StreamExt;
            // Subscribes, and subscribes again whenever the connection is
            // lost; a request lost meanwhile is asked again by its sender.
            while !tx.is_closed() {
                let subscribed = async {
                    let mut pubsub = client.get_async_pubsub().await?;
                    pubsub.subscribe(&channel).await?;
                    Ok::<_, redis::RedisError>(pubsub)
                };
                match subscribed.await {
                    Ok(mut pubsub) => {
                        let mut messages = pubsub.on_message();
                        while let Some(message) = messages.next().await {
                            if let Ok(code) = message.get_payload::<String>()
                                && tx.send(code).await.is_err()
                            {
                                return;
                            }
                        }
                        tracing::warn!("handover subscription lost; subscribing again");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot subscribe to handover requests; retrying");
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        rx
    }

    fn index_solo<'a>(&'a self, owner: &'a str, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let () = redis::cmd("SET")
                .arg(solo_key(owner))
                .arg(id)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn index_solo_unless_noted<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> StoreFuture<'a, Option<String>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let key = solo_key(owner);
            let (noted,): (Option<String>,) = redis::pipe()
                .cmd("SET")
                .arg(&key)
                .arg(id)
                .arg("NX")
                .ignore()
                .get(&key)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(noted)
        }))
    }

    fn park<'a>(
        &'a self,
        code: &'a str,
        owner: &'a OwnerEpoch,
        wake_ms: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let [_, _, _, fence] = keys(code);
            let mut invocation = self.park.prepare_invoke();
            invocation
                .key(&fence)
                .arg(&*owner.instance)
                .arg(owner.epoch)
                .arg(dormant_score(wake_ms));
            // Listed as dormant before it is given up, unlisted from this
            // owner's rooms after (as in `release`): some list always
            // names it. A dormant entry of a room that was not parked is
            // dropped by the sweep once it sees the live owner.
            let _: i64 = redis::cmd("ZADD")
                .arg(DORMANT)
                .arg(dormant_score(wake_ms))
                .arg(code)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let mut pipe = redis::pipe();
            pipe.invoke_script(&invocation);
            let (parked,): (u8,) = self.query_scripted(&mut conn, &pipe, &invocation).await?;
            srem(&mut conn, &owned_key(&owner.instance), code).await?;
            Ok(parked == 1)
        }))
    }

    fn relist_dormant<'a>(&'a self, code: &'a str, wake: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("ZADD")
                .arg(DORMANT)
                .arg("NX")
                .arg(wake)
                .arg(code)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn dormant_due(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<Dormant>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let due: Vec<(String, String)> = redis::cmd("ZRANGEBYSCORE")
                .arg(DORMANT)
                .arg("-inf")
                .arg(now_ms)
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(due
                .into_iter()
                .map(|(code, wake)| Dormant { code, wake })
                .collect())
        }))
    }

    fn forget_dormant<'a>(&'a self, entry: &'a Dormant) -> StoreFuture<'a, ()> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("EVAL")
                .arg(FORGET_DORMANT_SCRIPT)
                .arg(1)
                .arg(DORMANT)
                .arg(&entry.code)
                .arg(&entry.wake)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn rooms_of<'a>(&'a self, identity: &'a str) -> StoreFuture<'a, Vec<String>> {
        Box::pin(observed("load", async move {
            smembers(&mut self.conn.clone(), &mine_key(identity)).await
        }))
    }

    fn forget_rooms_of<'a>(
        &'a self,
        identity: &'a str,
        codes: &'a [String],
    ) -> StoreFuture<'a, ()> {
        Box::pin(observed("load", async move {
            if codes.is_empty() {
                return Ok(());
            }
            let mut conn = self.conn.clone();
            let _: i64 = redis::cmd("SREM")
                .arg(mine_key(identity))
                .arg(codes)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        }))
    }

    fn open_records<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, Vec<Option<OpenRecord>>> {
        Box::pin(observed("load", self.read_open_records(codes)))
    }

    fn fences<'a>(&'a self, codes: &'a [String]) -> StoreFuture<'a, PerRoom<Option<Fence>>> {
        Box::pin(observed("resume", self.read_fences(codes)))
    }

    fn alive<'a>(&'a self, instances: &'a [String]) -> StoreFuture<'a, Vec<bool>> {
        Box::pin(observed("resume", self.read_alive(instances)))
    }

    fn claim_and_load<'a>(
        &'a self,
        rooms: &'a [(String, Fence)],
        me: &'a Arc<str>,
    ) -> StoreFuture<'a, PerRoom<Claimed>> {
        Box::pin(observed("resume", self.claim_and_read(rooms, me)))
    }

    fn solo_of<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(observed("ownership", async move {
            let mut conn = self.conn.clone();
            let id: Option<String> = redis::cmd("GET")
                .arg(solo_key(owner))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(id)
        }))
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
        let [room, moves, games, fence] = keys(&write.code);
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
        let [room, moves, games, fence] = keys(&append.code);
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
        crate::metrics::METRICS.writes_fenced.inc();
        return Err(WriteError::Fenced(why.to_owned()));
    }
    match reply.strip_prefix("conflict:") {
        Some(why) => {
            crate::metrics::METRICS.store_conflicts.inc();
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
