//! `migrate` on one Redis: every Jumpgate key read into a [`Snapshot`]
//! (found with `SCAN`, read in pipelines), a snapshot written into an empty
//! database with plain commands in pipelines, and the checks that a
//! database is empty and that no instance runs on it.
//!
//! The layout written is the one the Redis stores read (see `keys` and
//! each store's documentation): rooms released (no owner) at their epoch,
//! open ones in `jg:lobbies` and, unless unloaded, in `jg:orphans`, so a
//! starting instance adopts them; unloaded ones with their wake time in
//! `jg:dormant`; `jg:storage-format` as `preflight` expects. Instance keys
//! (`jg:alive:*`, `jg:owned:*`, `jg:instances`, …) are neither read nor
//! written: they belong to the processes of the old deployment.

use std::collections::{BTreeMap, HashMap};

use redis::aio::MultiplexedConnection;
use redis::{Cmd, Pipeline, Value};

use super::embedded::WON_KEPT_MS;
use super::snapshot::{
    AccountCopy, BoardLine, Family, NEVER, RecordsCopy, RoomCopy, SeenKey, Snapshot, SoloNote,
    WalletsCopy, WonToday,
};
use crate::StoreError;
use crate::idempotency::IdempotencyWindow;
use crate::keys::{
    BOARDS, DORMANT, FORMAT_KEY, OPEN_SET, RECORDS, RELEASED, WALLETS, board_key, board_order_key,
    board_ordered_key, mine_key, room_keys, solo_key,
};
use crate::leaderboard::{PlaceKey, Standing};
use crate::wallet::LedgerEntry;

/// Rooms (or wallets) read per pipeline.
const BATCH: usize = 200;
/// Commands sent per pipeline when writing.
const WRITE_BATCH: usize = 1_000;

fn unreadable(what: impl std::fmt::Display) -> StoreError {
    StoreError::Unreadable(what.to_string())
}

/// Every key matching `pattern` (`SCAN`, so Redis is never blocked).
pub async fn scan(
    conn: &mut MultiplexedConnection,
    pattern: &str,
) -> Result<Vec<String>, StoreError> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1_000)
            .query_async(conn)
            .await?;
        keys.extend(found);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// Some Jumpgate keys (`jg*`) in the database, at most a few: none means
/// it is empty.
pub async fn jumpgate_keys(conn: &mut MultiplexedConnection) -> Result<Vec<String>, StoreError> {
    let mut keys = scan(conn, "jg*").await?;
    keys.truncate(5);
    Ok(keys)
}

/// The instances whose heartbeat is current.
pub async fn live_instances(conn: &mut MultiplexedConnection) -> Result<Vec<String>, StoreError> {
    Ok(scan(conn, "jg:alive:*")
        .await?
        .iter()
        .map(|k| tag_of(k).unwrap_or(k).to_owned())
        .collect())
}

/// The hash tag of a key (`jg:mine:{a_ann}` → `a_ann`).
fn tag_of(key: &str) -> Option<&str> {
    let start = key.find('{')?;
    let end = key.rfind('}')?;
    key.get(start + 1..end)
}

/// Redis's clock, Unix milliseconds (the clock the stores' scripts use).
async fn now_ms(conn: &mut MultiplexedConnection) -> Result<u64, StoreError> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1_000 + micros / 1_000)
}

/// An absolute expiry from a `PTTL` answer (negative: none).
fn expiry(now: u64, pttl: i64) -> Option<u64> {
    u64::try_from(pttl).ok().map(|ms| now + ms)
}

/// A wake time as `jg:dormant` scores it.
fn score(wake: u64) -> String {
    if wake == NEVER {
        "+inf".to_owned()
    } else {
        wake.to_string()
    }
}

/// A `jg:dormant` score (or a fence's `wake`) as a wake time.
fn wake_of(score: &str) -> Option<u64> {
    match score {
        "inf" | "+inf" => Some(NEVER),
        s => s
            .parse::<u64>()
            .ok()
            .or_else(|| s.parse::<f64>().ok().map(|f| f as u64)),
    }
}

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

/// The commands that write a snapshot, in the order they are sent. Rooms
/// first, the indexes that name them after, the storage format last.
fn commands(s: &Snapshot, format: u32) -> Vec<Cmd> {
    let mut cmds = Vec::new();
    for r in &s.rooms {
        room_commands(r, &mut cmds);
    }
    for (identity, code) in &s.mine {
        cmds.push(redis::cmd("SADD").arg(mine_key(identity)).arg(code).clone());
    }
    for n in &s.solo_notes {
        let mut set = redis::cmd("SET");
        set.arg(solo_key(&n.identity)).arg(&n.game);
        if let Some(at) = n.expires_at {
            set.arg("PXAT").arg(at);
        }
        cmds.push(set);
    }
    for (code, wake) in &s.dormant {
        cmds.push(
            redis::cmd("ZADD")
                .arg(DORMANT)
                .arg(score(*wake))
                .arg(code)
                .clone(),
        );
    }
    wallet_commands(&s.wallets, &mut cmds);
    for k in &s.seen {
        let done = k.family.redis_done();
        cmds.push(redis::cmd("SADD").arg(&done).arg(&k.key).clone());
        cmds.push(
            redis::cmd("ZADD")
                .arg(format!("{done}:at"))
                .arg(k.decided)
                .arg(&k.key)
                .clone(),
        );
    }
    for family in Family::ALL {
        // Every key has its time: nothing left for the one-off backfill.
        let scan = format!("{}:scan", family.redis_done());
        cmds.push(redis::cmd("SET").arg(scan).arg("complete").clone());
    }
    record_commands(&s.records, &mut cmds);
    let mut ordered = BTreeMap::new();
    for b in &s.boards {
        let json = serde_json::to_string(&b.standing).unwrap_or_default();
        cmds.push(
            redis::cmd("HSET")
                .arg(board_key(&b.rule_set))
                .arg(&b.account)
                .arg(json)
                .clone(),
        );
        cmds.push(
            redis::cmd("ZADD")
                .arg(board_order_key(&b.rule_set))
                .arg(0)
                .arg(PlaceKey::new(&b.standing, &b.account).0)
                .clone(),
        );
        ordered.insert(b.rule_set.as_str(), ());
    }
    for rule_set in ordered.keys() {
        cmds.push(
            redis::cmd("SET")
                .arg(board_ordered_key(rule_set))
                .arg(1)
                .clone(),
        );
    }
    cmds.push(redis::cmd("SET").arg(FORMAT_KEY).arg(format).clone());
    cmds
}

fn room_commands(r: &RoomCopy, cmds: &mut Vec<Cmd>) {
    let [room, moves, games, fence] = room_keys(&r.code);
    cmds.push(redis::cmd("SET").arg(&room).arg(&r.record).clone());
    let mut head = redis::cmd("HSET");
    head.arg(&fence)
        .arg("version")
        .arg(r.version)
        .arg("owner")
        .arg("")
        .arg("epoch")
        .arg(r.epoch)
        .arg("handed")
        .arg(0)
        .arg("parked")
        .arg(u8::from(r.parked));
    if let Some(wake) = r.wake.filter(|_| r.parked) {
        head.arg("wake").arg(score(wake));
    }
    cmds.push(head);
    for m in &r.moves {
        let mut add = redis::cmd("XADD");
        add.arg(&moves)
            .arg(format!("{}-{}", m.game_no, m.ply))
            .arg("path")
            .arg(&m.path)
            .arg("text")
            .arg(&m.text)
            .arg("seat")
            .arg(m.seat)
            .arg("seq")
            .arg(m.seq);
        if let Some(e) = &m.effects {
            add.arg("v")
                .arg(e.version)
                .arg("at")
                .arg(e.at_ms)
                .arg("dl")
                .arg(e.deadline_ms)
                .arg("tm")
                .arg(e.to_move.map_or(String::new(), |s| s.to_string()))
                .arg("act")
                .arg(&e.submitted);
        }
        cmds.push(add);
    }
    if !r.games.is_empty() {
        let mut set = redis::cmd("HSET");
        set.arg(&games);
        for (n, pdn) in &r.games {
            set.arg(n).arg(pdn);
        }
        cmds.push(set);
    }
    if let Some(at) = r.expires_at {
        for key in [&room, &moves, &games, &fence] {
            cmds.push(redis::cmd("PEXPIREAT").arg(key).arg(at).clone());
        }
    }
    if r.open {
        cmds.push(redis::cmd("SADD").arg(OPEN_SET).arg(&r.code).clone());
        if !r.parked {
            // Released: the orphan sweep of any instance takes it, as the
            // audit at start does.
            cmds.push(redis::cmd("SADD").arg(RELEASED).arg(&r.code).clone());
        }
    }
}

fn wallet_commands(w: &WalletsCopy, cmds: &mut Vec<Cmd>) {
    for a in &w.accounts {
        cmds.push(
            redis::cmd("HSET")
                .arg(format!("{WALLETS}:bal"))
                .arg(&a.account)
                .arg(a.balance)
                .clone(),
        );
        if !a.ledger.is_empty() {
            let mut push = redis::cmd("RPUSH");
            push.arg(format!("{WALLETS}:ledger:{}", a.account));
            for e in &a.ledger {
                push.arg(serde_json::to_string(e).unwrap_or_default());
            }
            cmds.push(push);
        }
        if !a.archive.is_empty() {
            let mut set = redis::cmd("HSET");
            set.arg(format!("{WALLETS}:archive:{}", a.account));
            for ((month, kind), (count, amount)) in &a.archive {
                set.arg(format!("{month}:{kind}:count"))
                    .arg(count)
                    .arg(format!("{month}:{kind}:amount"))
                    .arg(amount);
            }
            cmds.push(set);
        }
    }
    if w.granted != 0 || w.escrow_total != 0 {
        cmds.push(
            redis::cmd("HSET")
                .arg(format!("{WALLETS}:totals"))
                .arg("granted")
                .arg(w.granted)
                .arg("escrow")
                .arg(w.escrow_total)
                .clone(),
        );
    }
    for (series, account, amount) in &w.escrow {
        cmds.push(
            redis::cmd("HSET")
                .arg(format!("{WALLETS}:escrow:{series}"))
                .arg(account)
                .arg(amount)
                .clone(),
        );
    }
    let mut last_touch: BTreeMap<u64, u64> = BTreeMap::new();
    for d in &w.won {
        cmds.push(
            redis::cmd("HSET")
                .arg(format!("{WALLETS}:won:{}", d.day))
                .arg(&d.account)
                .arg(d.won)
                .clone(),
        );
        let at = last_touch.entry(d.day).or_default();
        *at = (*at).max(d.touched);
    }
    for (day, touched) in last_touch {
        cmds.push(
            redis::cmd("PEXPIREAT")
                .arg(format!("{WALLETS}:won:{day}"))
                .arg(touched + WON_KEPT_MS)
                .clone(),
        );
    }
}

fn record_commands(r: &RecordsCopy, cmds: &mut Vec<Cmd>) {
    let hset =
        |key: String, field: &str, n: i64| redis::cmd("HSET").arg(key).arg(field).arg(n).clone();
    for (account, n) in &r.won {
        cmds.push(hset(format!("{RECORDS}:won"), account, *n));
    }
    for (account, rule_set, streak, best) in &r.streaks {
        cmds.push(hset(
            format!("{RECORDS}:streak:{rule_set}"),
            account,
            *streak,
        ));
        cmds.push(hset(format!("{RECORDS}:best:{rule_set}"), account, *best));
    }
    for (w, l, n) in &r.head_to_head {
        cmds.push(hset(format!("{RECORDS}:h2h"), &format!("{w}|{l}"), *n));
    }
    for (a, b, n) in &r.draws {
        cmds.push(hset(format!("{RECORDS}:draws"), &format!("{a}|{b}"), *n));
    }
}

/// Writes a snapshot into an empty database, in pipelines; `format` is
/// the storage format to mark it with. An error leaves part of it
/// written (the caller says so).
pub async fn import(
    conn: &mut MultiplexedConnection,
    snapshot: &Snapshot,
    format: u32,
) -> Result<(), StoreError> {
    let cmds = commands(snapshot, format);
    for batch in cmds.chunks(WRITE_BATCH) {
        let mut pipe = Pipeline::new();
        for cmd in batch {
            pipe.add_command(cmd.clone()).ignore();
        }
        let () = pipe.query_async(conn).await?;
    }
    Ok(())
}
