//! Reading every Jumpgate key of one Redis into a [`Snapshot`]: rooms by
//! `SCAN` of their records, each read whole in a pipeline with its fence,
//! log, games, expiry and open flag; then the indexes, wallets, idempotency
//! keys, records and boards.

use std::collections::{BTreeMap, HashMap};

use redis::Value;
use redis::aio::MultiplexedConnection;

use super::{BATCH, expiry, now_ms, scan, tag_of, unreadable, wake_of};
use crate::StoreError;
use crate::idempotency::IdempotencyWindow;
use crate::keys::{BOARDS, DORMANT, OPEN_SET, RECORDS, WALLETS, room_keys};
use crate::leaderboard::Standing;
use crate::migrate::embedded::WON_KEPT_MS;
use crate::migrate::snapshot::{
    AccountCopy, BoardLine, Family, RecordsCopy, RoomCopy, SeenKey, Snapshot, SoloNote,
    WalletsCopy, WonToday,
};
use crate::wallet::LedgerEntry;

/// Reads every Jumpgate key into a snapshot (idempotency keys within
/// `window` by Redis's clock).
pub async fn export(
    conn: &mut MultiplexedConnection,
    window: IdempotencyWindow,
) -> Result<Snapshot, StoreError> {
    let now = now_ms(conn).await?;
    let mut snapshot = Snapshot {
        rooms: rooms(conn, now).await?,
        ..Snapshot::default()
    };
    for key in scan(conn, "jg:mine:*").await? {
        let Some(identity) = tag_of(&key) else {
            continue;
        };
        let codes: Vec<String> = redis::cmd("SMEMBERS").arg(&key).query_async(conn).await?;
        snapshot
            .mine
            .extend(codes.into_iter().map(|c| (identity.to_owned(), c)));
    }
    for key in scan(conn, "jg:solo:*").await? {
        let Some(identity) = tag_of(&key) else {
            continue;
        };
        let (game, pttl): (Option<String>, i64) = redis::pipe()
            .get(&key)
            .cmd("PTTL")
            .arg(&key)
            .query_async(conn)
            .await?;
        if let Some(game) = game {
            snapshot.solo_notes.push(SoloNote {
                identity: identity.to_owned(),
                game,
                expires_at: expiry(now, pttl),
            });
        }
    }
    let dormant: Vec<(String, String)> = redis::cmd("ZRANGE")
        .arg(DORMANT)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await?;
    for (code, wake) in dormant {
        let wake = wake_of(&wake).ok_or_else(|| unreadable(format!("dormant score {wake}")))?;
        snapshot.dormant.push((code, wake));
    }
    snapshot.wallets = wallets(conn, now).await?;
    snapshot.seen = seen(conn, now, window).await?;
    snapshot.records = records(conn).await?;
    snapshot.boards = boards(conn).await?;
    snapshot.sort();
    Ok(snapshot)
}

async fn rooms(conn: &mut MultiplexedConnection, now: u64) -> Result<Vec<RoomCopy>, StoreError> {
    let codes: Vec<String> = scan(conn, "jg:{*}:room")
        .await?
        .iter()
        .filter_map(|k| tag_of(k).map(str::to_owned))
        .collect();
    let mut rooms = Vec::with_capacity(codes.len());
    for batch in codes.chunks(BATCH) {
        let mut pipe = redis::pipe();
        for code in batch {
            let [room, moves, games, fence] = room_keys(code);
            pipe.get(&room)
                .hgetall(&fence)
                .cmd("XRANGE")
                .arg(&moves)
                .arg("-")
                .arg("+")
                .hgetall(&games)
                .cmd("PTTL")
                .arg(&room)
                .sismember(OPEN_SET, code);
        }
        let replies: Vec<Value> = pipe.query_async(conn).await?;
        for (code, reply) in batch.iter().zip(replies.chunks(6)) {
            if let Some(room) = room_of(code, reply, now)? {
                rooms.push(room);
            }
        }
    }
    Ok(rooms)
}

fn parse<T: redis::FromRedisValue>(value: &Value) -> Result<T, StoreError> {
    redis::from_redis_value_ref(value).map_err(|e| StoreError::from(redis::RedisError::from(e)))
}

/// One room from its six replies (`None`: it expired meanwhile).
fn room_of(code: &str, reply: &[Value], now: u64) -> Result<Option<RoomCopy>, StoreError> {
    let [record, fence, log, games, pttl, open] = reply else {
        return Err(unreadable(format!("{code}: {} replies", reply.len())));
    };
    let Some(record): Option<String> = parse(record)? else {
        return Ok(None);
    };
    let fence: HashMap<String, String> = parse(fence)?;
    let version = match fence.get("version") {
        Some(v) => v
            .parse()
            .map_err(|_| unreadable(format!("{code}: version {v}")))?,
        // A record written before the fence held the version carries it.
        None => serde_json::from_str::<serde_json::Value>(&record)
            .ok()
            .and_then(|r| r.get("version")?.as_u64())
            .unwrap_or(0),
    };
    let number = |field: &str| fence.get(field).and_then(|v| v.parse::<u64>().ok());
    let parked = number("parked") == Some(1);
    let log: redis::streams::StreamRangeReply = parse(log)?;
    let moves = log
        .ids
        .iter()
        .map(crate::redis::parse_entry)
        .collect::<Result<Vec<_>, _>>()?;
    let games: HashMap<String, String> = parse(games)?;
    let mut games = games
        .into_iter()
        .map(|(n, pdn)| {
            Ok((
                n.parse()
                    .map_err(|_| unreadable(format!("{code}: game {n}")))?,
                pdn,
            ))
        })
        .collect::<Result<Vec<(u64, String)>, StoreError>>()?;
    games.sort();
    Ok(Some(RoomCopy {
        code: code.to_owned(),
        record,
        version,
        epoch: number("epoch").unwrap_or(0),
        parked,
        wake: fence
            .get("wake")
            .filter(|_| parked)
            .and_then(|w| wake_of(w)),
        open: parse(open)?,
        expires_at: expiry(now, parse(pttl)?),
        moves,
        games,
    }))
}

async fn wallets(conn: &mut MultiplexedConnection, now: u64) -> Result<WalletsCopy, StoreError> {
    let balances: HashMap<String, i64> = redis::cmd("HGETALL")
        .arg(format!("{WALLETS}:bal"))
        .query_async(conn)
        .await?;
    let totals: HashMap<String, i64> = redis::cmd("HGETALL")
        .arg(format!("{WALLETS}:totals"))
        .query_async(conn)
        .await?;
    let names: Vec<String> = balances.keys().cloned().collect();
    let mut accounts = Vec::with_capacity(names.len());
    for batch in names.chunks(BATCH) {
        let mut pipe = redis::pipe();
        for account in batch {
            pipe.lrange(format!("{WALLETS}:ledger:{account}"), 0, -1)
                .hgetall(format!("{WALLETS}:archive:{account}"));
        }
        let replies: Vec<Value> = pipe.query_async(conn).await?;
        for (account, reply) in batch.iter().zip(replies.chunks(2)) {
            let raw: Vec<String> = parse(&reply[0])?;
            let ledger = raw
                .iter()
                .map(|e| serde_json::from_str::<LedgerEntry>(e).map_err(unreadable))
                .collect::<Result<Vec<_>, _>>()?;
            let fields: HashMap<String, i64> = parse(&reply[1])?;
            let mut archive = BTreeMap::new();
            for (field, value) in fields {
                let mut parts = field.rsplitn(3, ':');
                let (Some(what), Some(kind), Some(period)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return Err(unreadable(format!("archive field {field}")));
                };
                let slot: &mut (u64, i64) = archive
                    .entry((period.to_owned(), kind.to_owned()))
                    .or_default();
                match what {
                    "count" => slot.0 = u64::try_from(value).unwrap_or(0),
                    "amount" => slot.1 = value,
                    _ => return Err(unreadable(format!("archive field {field}"))),
                }
            }
            accounts.push(AccountCopy {
                account: account.clone(),
                balance: balances[account],
                ledger,
                archive,
            });
        }
    }
    let mut escrow = Vec::new();
    let prefix = format!("{WALLETS}:escrow:");
    for key in scan(conn, &format!("{prefix}*")).await? {
        let held: HashMap<String, i64> = redis::cmd("HGETALL").arg(&key).query_async(conn).await?;
        let series = &key[prefix.len()..];
        escrow.extend(held.into_iter().map(|(a, n)| (series.to_owned(), a, n)));
    }
    let mut won = Vec::new();
    let prefix = format!("{WALLETS}:won:");
    for key in scan(conn, &format!("{prefix}*")).await? {
        let Ok(day) = key[prefix.len()..].parse::<u64>() else {
            continue;
        };
        let (counts, pttl): (HashMap<String, i64>, i64) = redis::pipe()
            .hgetall(&key)
            .cmd("PTTL")
            .arg(&key)
            .query_async(conn)
            .await?;
        // The day's hash expires two days after its last write.
        let touched = expiry(now, pttl).map_or(now, |at| at.saturating_sub(WON_KEPT_MS));
        won.extend(counts.into_iter().map(|(account, won)| WonToday {
            day,
            account,
            won,
            touched,
        }));
    }
    Ok(WalletsCopy {
        accounts,
        escrow,
        won,
        granted: totals.get("granted").copied().unwrap_or(0),
        escrow_total: totals.get("escrow").copied().unwrap_or(0),
    })
}

async fn seen(
    conn: &mut MultiplexedConnection,
    now: u64,
    window: IdempotencyWindow,
) -> Result<Vec<SeenKey>, StoreError> {
    let mut seen = Vec::new();
    for family in Family::ALL {
        let done = family.redis_done();
        let (keys, times): (Vec<String>, Vec<(String, f64)>) = redis::pipe()
            .smembers(&done)
            .cmd("ZRANGE")
            .arg(format!("{done}:at"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(conn)
            .await?;
        let times: HashMap<String, f64> = times.into_iter().collect();
        for key in keys {
            // A key from before decision times were kept is forgotten a
            // window after it is first seen, as the scripts do.
            let decided = times.get(&key).map_or(now, |&t| t as u64);
            if decided >= window.forget_before(now) {
                seen.push(SeenKey {
                    family,
                    key,
                    decided,
                });
            }
        }
    }
    Ok(seen)
}

async fn records(conn: &mut MultiplexedConnection) -> Result<RecordsCopy, StoreError> {
    let hash = |pairs: HashMap<String, i64>| -> Vec<(String, String, i64)> {
        pairs
            .into_iter()
            .filter_map(|(field, n)| {
                let (a, b) = field.split_once('|')?;
                Some((a.to_owned(), b.to_owned(), n))
            })
            .collect()
    };
    let (won, h2h, draws): (
        HashMap<String, i64>,
        HashMap<String, i64>,
        HashMap<String, i64>,
    ) = redis::pipe()
        .hgetall(format!("{RECORDS}:won"))
        .hgetall(format!("{RECORDS}:h2h"))
        .hgetall(format!("{RECORDS}:draws"))
        .query_async(conn)
        .await?;
    // Streaks and best streaks, by (account, rule set).
    let mut streaks: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
    for (what, best) in [("streak", false), ("best", true)] {
        let prefix = format!("{RECORDS}:{what}:");
        for key in scan(conn, &format!("{prefix}*")).await? {
            let rule_set = key[prefix.len()..].to_owned();
            let counts: HashMap<String, i64> =
                redis::cmd("HGETALL").arg(&key).query_async(conn).await?;
            for (account, n) in counts {
                let slot = streaks.entry((account, rule_set.clone())).or_default();
                if best {
                    slot.1 = n;
                } else {
                    slot.0 = n;
                }
            }
        }
    }
    Ok(RecordsCopy {
        won: won.into_iter().collect(),
        streaks: streaks
            .into_iter()
            .map(|((account, rule_set), (s, b))| (account, rule_set, s, b))
            .collect(),
        head_to_head: hash(h2h),
        draws: hash(draws),
    })
}

async fn boards(conn: &mut MultiplexedConnection) -> Result<Vec<BoardLine>, StoreError> {
    let prefix = format!("{BOARDS}:");
    let mut lines = Vec::new();
    for key in scan(conn, &format!("{prefix}*")).await? {
        // The board hashes; the order, its mark and the idempotency keys
        // beside them are other types.
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(conn).await?;
        if kind != "hash" {
            continue;
        }
        let rule_set = key[prefix.len()..].to_owned();
        let standings: HashMap<String, String> =
            redis::cmd("HGETALL").arg(&key).query_async(conn).await?;
        for (account, json) in standings {
            let standing: Standing = serde_json::from_str(&json)
                .map_err(|e| unreadable(format!("{key} {account}: {e}")))?;
            lines.push(BoardLine {
                rule_set: rule_set.clone(),
                account,
                standing,
            });
        }
    }
    Ok(lines)
}
