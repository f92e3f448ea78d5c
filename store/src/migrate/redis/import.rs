//! Writing a [`Snapshot`] into an empty Redis: plain commands, in the
//! layout the Redis stores read, sent in pipelines.

use std::collections::BTreeMap;

use redis::aio::MultiplexedConnection;
use redis::{Cmd, Pipeline};

use super::{WRITE_BATCH, score};
use crate::StoreError;
use crate::keys::{
    DORMANT, FORMAT_KEY, OPEN_SET, RECORDS, RELEASED, WALLETS, board_key, board_order_key,
    board_ordered_key, mine_key, room_keys, solo_key,
};
use crate::leaderboard::PlaceKey;
use crate::migrate::embedded::WON_KEPT_MS;
use crate::migrate::snapshot::{Family, RecordsCopy, RoomCopy, Snapshot, WalletsCopy};

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
