//! The Redis store's reads of rooms: one room's record and moves, many
//! rooms' records with their last moves at once ("my games"), and for the start-up resume, a
//! batch of rooms' fences, their owners' heartbeats, and claims each
//! followed by the room's read, in a few round trips per batch rather than
//! a few per room.
//!
//! Every command still names keys of one slot, and each room's commands
//! form one group of its own slot ([`crate::RedisConn::query_per_slot`]):
//! one pipeline on one Redis, one per slot, all at once, on a cluster. A
//! batch's claim is the same compare-and-set script as
//! [`Store::claim`](crate::Store::claim), sent once the whole batch is
//! listed under the claimer; the room's record and moves are read in the
//! same pipeline right after its claim, so the read sees everything
//! written before the claim, and no one else can write after it.

use std::sync::Arc;

use redis::{Cmd, Value};

use super::RedisStore;
use crate::conn::RedisConn;
use crate::keys::{OPEN_SET, alive_key, owned_key, room_keys, unready_key};
use crate::{
    Claimed, Fence, MoveEffects, OpenRecord, OwnerEpoch, PerRoom, StoreError, StoredMove,
    StoredRoom,
};

impl RedisStore {
    /// See [`Store::open_records`](crate::Store::open_records).
    pub(super) async fn read_open_records(
        &self,
        codes: &[String],
    ) -> Result<Vec<Option<OpenRecord>>, StoreError> {
        if codes.is_empty() {
            return Ok(Vec::new());
        }
        // Each room's record and last logged move (its own slot, one round
        // trip) and whether it is open, all at once.
        let reads = codes.iter().map(|code| {
            let mut conn = self.conn.clone();
            let mut other = self.conn.clone();
            async move {
                let [room, moves, _, _] = room_keys(code);
                let mut read = redis::pipe();
                read.get(&room)
                    .cmd("XREVRANGE")
                    .arg(&moves)
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1);
                let record = read.query_async::<(Option<String>, Value)>(&mut conn);
                let mut member = redis::cmd("SISMEMBER");
                member.arg(OPEN_SET).arg(code);
                let open = member.query_async::<bool>(&mut other);
                let (read, open) = futures_util::future::join(record, open).await;
                let open = open.map_err(StoreError::from)?;
                let (record, last) = read.map_err(StoreError::from)?;
                let Some(record) = record.filter(|_| open) else {
                    return Ok(None);
                };
                let last: redis::streams::StreamRangeReply = parse(last)?;
                Ok::<_, StoreError>(Some(OpenRecord {
                    record,
                    last_move: last.ids.first().map(parse_entry).transpose()?,
                }))
            }
        });
        futures_util::future::try_join_all(reads).await
    }

    /// See [`Store::fences`](crate::Store::fences).
    pub(super) async fn read_fences(
        &self,
        codes: &[String],
    ) -> Result<PerRoom<Option<Fence>>, StoreError> {
        if codes.is_empty() {
            return Ok(Vec::new());
        }
        let groups: Vec<(String, Vec<Cmd>)> = codes
            .iter()
            .map(|code| {
                let [room, _, _, fence] = room_keys(code);
                let mut read = redis::cmd("HMGET");
                read.arg(&fence)
                    .arg(&["owner", "epoch", "handed", "parked", "wake", "home"]);
                let mut exists = redis::cmd("EXISTS");
                exists.arg(&room);
                (room, vec![read, exists])
            })
            .collect();
        // Whether each is still open: one command on the set's own slot,
        // beside the rooms' reads.
        let mut conn = self.conn.clone();
        let mut member = redis::cmd("SMISMEMBER");
        member.arg(OPEN_SET).arg(codes);
        let open = member.query_async::<Vec<bool>>(&mut conn);
        let (read, open) =
            futures_util::future::join(self.conn.query_per_slot(&groups), open).await;
        let open = open.map_err(StoreError::from)?;
        if open.len() != codes.len() {
            return Err(StoreError::Unreadable(format!(
                "SMISMEMBER answered {} of {} codes",
                open.len(),
                codes.len()
            )));
        }
        Ok(read
            .into_iter()
            .zip(open)
            .map(|(reply, open)| {
                let [fence, exists] = replies::<2>(reply)?;
                type Read = (
                    Option<String>,
                    Option<u64>,
                    Option<u8>,
                    Option<u8>,
                    Option<String>,
                    Option<String>,
                );
                let (owner, epoch, handed, parked, wake, home): Read = parse(fence)?;
                let exists: bool = parse(exists)?;
                Ok((exists && open).then(|| Fence {
                    owner: owner.filter(|o| !o.is_empty()),
                    epoch: epoch.unwrap_or(0),
                    handed: handed == Some(1),
                    parked: parked == Some(1),
                    wake: wake.filter(|_| parked == Some(1)),
                    home: home.filter(|h| !h.is_empty()),
                }))
            })
            .collect())
    }

    /// See [`Store::alive`](crate::Store::alive).
    pub(super) async fn read_alive(&self, instances: &[String]) -> Result<Vec<bool>, StoreError> {
        let found = self
            .exist_per_instance(instances, |i| vec![alive_key(i)])
            .await?;
        Ok(found.iter().map(|f| f[0]).collect())
    }

    /// See [`Store::up`](crate::Store::up).
    pub(super) async fn read_up(&self, instances: &[String]) -> Result<Vec<bool>, StoreError> {
        let keys = |i: &str| vec![alive_key(i), unready_key(i)];
        let found = self.exist_per_instance(instances, keys).await?;
        Ok(found.iter().map(|f| f[0] && !f[1]).collect())
    }

    /// Per instance, in order, whether each of the keys `keys` names for it
    /// exists: one `EXISTS` per key, grouped by the instance's slot (its
    /// keys share it; each instance has a slot of its own).
    async fn exist_per_instance(
        &self,
        instances: &[String],
        keys: impl Fn(&str) -> Vec<String>,
    ) -> Result<Vec<Vec<bool>>, StoreError> {
        let groups: Vec<(String, Vec<Cmd>)> = instances
            .iter()
            .map(|instance| {
                let keys = keys(instance);
                let cmds = keys
                    .iter()
                    .map(|key| {
                        let mut exists = redis::cmd("EXISTS");
                        exists.arg(key);
                        exists
                    })
                    .collect();
                (keys[0].clone(), cmds)
            })
            .collect();
        self.conn
            .query_per_slot(&groups)
            .await
            .into_iter()
            .zip(&groups)
            .map(|(reply, (_, cmds))| {
                let values = reply.map_err(StoreError::from)?;
                if values.len() != cmds.len() {
                    return Err(StoreError::Unreadable(format!(
                        "{} replies, not {}",
                        values.len(),
                        cmds.len()
                    )));
                }
                values.into_iter().map(parse::<bool>).collect()
            })
            .collect()
    }

    /// See [`Store::claim_and_load`](crate::Store::claim_and_load).
    pub(super) async fn claim_and_read(
        &self,
        rooms: &[(String, Fence)],
        me: &Arc<str>,
    ) -> Result<PerRoom<Claimed>, StoreError> {
        if rooms.is_empty() {
            return Ok(Vec::new());
        }
        // Listed under the claimer before any claim (another slot: a
        // command of its own, answered before the claims are sent).
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("SADD")
            .arg(owned_key(me))
            .arg(rooms.iter().map(|(code, _)| code).collect::<Vec<_>>())
            .query_async(&mut conn)
            .await
            .map_err(StoreError::from)?;
        let mut claimed = self.claim_and_read_listed(rooms, me).await;
        // A Redis that forgot the claim script ran none of those claims:
        // load it once and send them again.
        let forgotten: Vec<usize> = (0..rooms.len())
            .filter(|&i| matches!(&claimed[i], Err(Forgot)))
            .collect();
        if !forgotten.is_empty() {
            self.claim
                .prepare_invoke()
                .load_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let again: Vec<(String, Fence)> = forgotten.iter().map(|&i| rooms[i].clone()).collect();
            let answers = self.claim_and_read_listed(&again, me).await;
            for (i, answer) in forgotten.into_iter().zip(answers) {
                claimed[i] = answer;
            }
        }
        Ok(claimed
            .into_iter()
            .map(|claim| {
                claim.map_err(|e| match e {
                    Forgot => {
                        StoreError::Refused("NOSCRIPT: the claim script is not loaded".into())
                    }
                    Failed(e) => e,
                })
            })
            .collect())
    }

    /// The claims of rooms already listed under `me`, each followed by
    /// the room's record and moves, one group per room.
    async fn claim_and_read_listed(
        &self,
        rooms: &[(String, Fence)],
        me: &Arc<str>,
    ) -> Vec<Result<Claimed, ClaimFailure>> {
        let groups: Vec<(String, Vec<Cmd>)> = rooms
            .iter()
            .map(|(code, seen)| {
                let [room, moves, _, fence] = room_keys(code);
                let mut claim = redis::cmd("EVALSHA");
                claim
                    .arg(self.claim.get_hash())
                    .arg(2)
                    .arg(&room)
                    .arg(&fence)
                    .arg(&**me)
                    .arg(seen.owner.as_deref().unwrap_or(""))
                    .arg(seen.epoch);
                let mut record = redis::cmd("GET");
                record.arg(&room);
                let mut log = redis::cmd("XRANGE");
                log.arg(&moves).arg("-").arg("+");
                (room, vec![claim, record, log])
            })
            .collect();
        let answers = self.conn.query_per_slot(&groups).await;
        rooms
            .iter()
            .zip(answers)
            .map(|((code, _), reply)| {
                let [claim, record, log] = replies::<3>(reply)?;
                let epoch: u64 = match claim.extract_error() {
                    Ok(epoch) => parse(epoch)?,
                    Err(e)
                        if e.kind()
                            == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                    {
                        return Err(Forgot);
                    }
                    Err(e) => return Err(Failed(e.into())),
                };
                if epoch == 0 {
                    return Ok(Claimed::Lost);
                }
                let owner = OwnerEpoch {
                    instance: me.clone(),
                    epoch,
                };
                Ok(Claimed::Won {
                    owner,
                    stored: stored_room(code, record, log),
                })
            })
            .collect()
    }
}

/// Why a claim of a batch failed: the script was not loaded (none of the
/// batch's claims ran), or anything else.
enum ClaimFailure {
    Forgot,
    Failed(StoreError),
}
use ClaimFailure::{Failed, Forgot};

impl From<StoreError> for ClaimFailure {
    fn from(e: StoreError) -> ClaimFailure {
        Failed(e)
    }
}

/// Reads one room: its record and every move in its log, in one round
/// trip (one slot).
pub(super) async fn load_room(
    conn: &mut RedisConn,
    code: &str,
) -> Result<Option<StoredRoom>, StoreError> {
    let [room, moves, _, _] = room_keys(code);
    let (record, log): (Value, Value) = redis::pipe()
        .get(&room)
        .cmd("XRANGE")
        .arg(&moves)
        .arg("-")
        .arg("+")
        .query_async(conn)
        .await
        .map_err(StoreError::from)?;
    stored_room(code, record, log)
}

/// A room from the replies to `GET` of its record and `XRANGE` of its log
/// (`None`: no record, the room is gone).
fn stored_room(code: &str, record: Value, log: Value) -> Result<Option<StoredRoom>, StoreError> {
    let Some(record): Option<String> = parse(record)? else {
        return Ok(None);
    };
    let entries: redis::streams::StreamRangeReply = parse(log)?;
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

/// A group's `N` replies, or why there are none.
fn replies<const N: usize>(
    reply: redis::RedisResult<Vec<Value>>,
) -> Result<[Value; N], StoreError> {
    let values = reply.map_err(StoreError::from)?;
    <[Value; N]>::try_from(values)
        .map_err(|got| StoreError::Unreadable(format!("{} replies, not {N}", got.len())))
}

/// One reply as `T` (a command's error as the store's error).
fn parse<T: redis::FromRedisValue>(value: Value) -> Result<T, StoreError> {
    let value = value.extract_error().map_err(StoreError::from)?;
    redis::from_redis_value(value).map_err(|e| StoreError::from(redis::RedisError::from(e)))
}

/// One entry of a room's move log (`jg:{CODE}:moves`), with its effects
/// if it was appended without its record.
pub(crate) fn parse_entry(entry: &redis::streams::StreamId) -> Result<StoredMove, StoreError> {
    let bad = || StoreError::Unreadable(format!("malformed move entry {}", entry.id));
    let (game, ply) = entry.id.split_once('-').ok_or_else(bad)?;
    let field =
        |name: &str| -> Result<String, StoreError> { entry.get::<String>(name).ok_or_else(bad) };
    let number =
        |name: &str| -> Result<u64, StoreError> { field(name)?.parse().map_err(|_| bad()) };
    let effects = match entry.get::<String>("v") {
        None => None,
        Some(version) => Some(MoveEffects {
            version: version.parse().map_err(|_| bad())?,
            at_ms: number("at")?,
            deadline_ms: number("dl")?,
            to_move: match field("tm")?.as_str() {
                "" => None,
                seat => Some(seat.parse().map_err(|_| bad())?),
            },
            submitted: field("act")?,
        }),
    };
    Ok(StoredMove {
        game_no: game.parse().map_err(|_| bad())?,
        ply: ply.parse().map_err(|_| bad())?,
        path: field("path")?,
        text: field("text")?,
        seat: field("seat")?.parse().map_err(|_| bad())?,
        seq: field("seq")?.parse().map_err(|_| bad())?,
        effects,
    })
}
