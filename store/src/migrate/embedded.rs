//! `migrate` on the data directory: the whole file read into a
//! [`Snapshot`] in one job (one transaction, so a consistent moment), a
//! snapshot written into an empty file in one job (all of it or none of
//! it), and the check that a file holds nothing yet.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};

use super::snapshot::{
    AccountCopy, BoardLine, Family, NEVER, RecordsCopy, RoomCopy, SeenKey, Snapshot, SoloNote,
    WalletsCopy, WonToday,
};
use crate::embedded::Db;
use crate::idempotency::IdempotencyWindow;
use crate::leaderboard::Standing;
use crate::wallet::{ArchiveTotals, LedgerEntry};
use crate::{MoveEffects, StoreError, StoredMove};

/// How long a day's winnings are kept after their last write, as the
/// embedded wallets keep them (and Redis expires `won:DAY`).
pub(super) const WON_KEPT_MS: u64 = 2 * 86_400_000;

/// SQLite integers are signed: larger values are stored as `i64::MAX`.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A stored integer as read back (`i64::MAX` is [`NEVER`]).
fn unsigned(n: i64) -> u64 {
    if n == i64::MAX {
        NEVER
    } else {
        u64::try_from(n).unwrap_or(0)
    }
}

/// The tables that hold data (everything but the format mark).
fn data_tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'meta' ORDER BY name",
    )?
    .query_map([], |r| r.get(0))?
    .collect()
}

/// The tables that hold rows, with how many: empty for a file with nothing
/// in it yet.
pub async fn filled_tables(db: &Db) -> Result<Vec<(String, i64)>, StoreError> {
    db.call(|t| {
        let mut filled = Vec::new();
        for table in data_tables(t.conn)? {
            let rows: i64 =
                t.conn
                    .query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
                        r.get(0)
                    })?;
            if rows > 0 {
                filled.push((table, rows));
            }
        }
        Ok(filled)
    })
    .await
}

/// Reads everything the file holds that has not expired (what the store
/// itself would still return), idempotency keys within `window`.
pub async fn export(db: &Db, window: IdempotencyWindow) -> Result<Snapshot, StoreError> {
    db.call(move |t| {
        let now = t.now;
        let mut snapshot = Snapshot {
            rooms: rooms(t.conn, now)?,
            mine: t
                .conn
                .prepare("SELECT identity, code FROM mine")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?,
            solo_notes: t
                .conn
                .prepare(
                    "SELECT owner, id, expires_at FROM solo_notes
                     WHERE expires_at IS NULL OR expires_at > ?1",
                )?
                .query_map(params![int(now)], |r| {
                    Ok(SoloNote {
                        identity: r.get(0)?,
                        game: r.get(1)?,
                        expires_at: r.get::<_, Option<i64>>(2)?.map(unsigned),
                    })
                })?
                .collect::<Result<_, _>>()?,
            dormant: t
                .conn
                .prepare("SELECT code, wake FROM dormant")?
                .query_map([], |r| Ok((r.get(0)?, unsigned(r.get(1)?))))?
                .collect::<Result<_, _>>()?,
            wallets: wallets(t.conn, now)?,
            seen: seen(t.conn, window.forget_before(now))?,
            records: records(t.conn)?,
            boards: t
                .conn
                .prepare(
                    "SELECT rule_set, account, name, points, wins, draws, losses, games
                     FROM board_lines",
                )?
                .query_map([], |r| {
                    let n = |i: usize| -> rusqlite::Result<u32> {
                        Ok(u32::try_from(r.get::<_, i64>(i)?).unwrap_or(0))
                    };
                    Ok(BoardLine {
                        rule_set: r.get(0)?,
                        account: r.get(1)?,
                        standing: Standing {
                            name: r.get(2)?,
                            points: n(3)?,
                            wins: n(4)?,
                            draws: n(5)?,
                            losses: n(6)?,
                            games: n(7)?,
                        },
                    })
                })?
                .collect::<Result<_, _>>()?,
        };
        snapshot.sort();
        Ok(snapshot)
    })
    .await
}

fn rooms(conn: &Connection, now: u64) -> rusqlite::Result<Vec<RoomCopy>> {
    let mut rooms: Vec<RoomCopy> = conn
        .prepare(
            "SELECT code, record, version, epoch, parked, wake, open, expires_at FROM rooms
             WHERE expires_at IS NULL OR expires_at > ?1",
        )?
        .query_map(params![int(now)], |r| {
            let wake: Option<String> = r.get(5)?;
            Ok(RoomCopy {
                code: r.get(0)?,
                record: r.get(1)?,
                version: unsigned(r.get(2)?),
                epoch: unsigned(r.get(3)?),
                parked: r.get::<_, i64>(4)? != 0,
                wake: wake.and_then(|w| w.parse::<i64>().ok()).map(unsigned),
                open: r.get::<_, i64>(6)? != 0,
                expires_at: r.get::<_, Option<i64>>(7)?.map(unsigned),
                moves: Vec::new(),
                games: Vec::new(),
            })
        })?
        .collect::<Result<_, _>>()?;
    let mut moves = conn.prepare(
        "SELECT game_no, ply, path, text, seat, seq, version, at_ms, deadline_ms, to_move, submitted
         FROM moves WHERE code = ?1 ORDER BY game_no, ply",
    )?;
    let mut games =
        conn.prepare("SELECT game_no, pdn FROM games WHERE code = ?1 ORDER BY game_no")?;
    for room in &mut rooms {
        room.moves = moves
            .query_map(params![room.code], read_move)?
            .collect::<Result<_, _>>()?;
        room.games = games
            .query_map(params![room.code], |r| {
                Ok((unsigned(r.get(0)?), r.get::<_, String>(1)?))
            })?
            .collect::<Result<_, _>>()?;
    }
    Ok(rooms)
}

fn read_move(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredMove> {
    let version: Option<i64> = r.get(6)?;
    let effects = match version {
        Some(version) => Some(MoveEffects {
            version: unsigned(version),
            at_ms: unsigned(r.get(7)?),
            deadline_ms: unsigned(r.get(8)?),
            to_move: r
                .get::<_, Option<i64>>(9)?
                .and_then(|s| u8::try_from(s).ok()),
            submitted: r.get(10)?,
        }),
        None => None,
    };
    Ok(StoredMove {
        game_no: unsigned(r.get(0)?),
        ply: u32::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
        path: r.get(2)?,
        text: r.get(3)?,
        seat: u8::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
        seq: u32::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
        effects,
    })
}

fn wallets(conn: &Connection, now: u64) -> rusqlite::Result<WalletsCopy> {
    let mut accounts: Vec<AccountCopy> = conn
        .prepare("SELECT account, balance FROM wallet_accounts")?
        .query_map([], |r| {
            Ok(AccountCopy {
                account: r.get(0)?,
                balance: r.get(1)?,
                ledger: Vec::new(),
                archive: ArchiveTotals::new(),
            })
        })?
        .collect::<Result<_, _>>()?;
    let mut ledger = conn.prepare(
        "SELECT key, kind, amount, at FROM wallet_ledger WHERE account = ?1 ORDER BY seq",
    )?;
    let mut archive =
        conn.prepare("SELECT period, kind, count, amount FROM wallet_archive WHERE account = ?1")?;
    for account in &mut accounts {
        account.ledger = ledger
            .query_map(params![account.account], |r| {
                Ok(LedgerEntry {
                    key: r.get(0)?,
                    kind: r.get(1)?,
                    amount: r.get(2)?,
                    at: unsigned(r.get(3)?),
                })
            })?
            .collect::<Result<_, _>>()?;
        account.archive = archive
            .query_map(params![account.account], |r| {
                Ok((
                    (r.get::<_, String>(0)?, r.get::<_, String>(1)?),
                    (unsigned(r.get(2)?), r.get::<_, i64>(3)?),
                ))
            })?
            .collect::<Result<_, _>>()?;
    }
    let (granted, escrow_total) = conn
        .query_row(
            "SELECT coalesce(max(granted), 0), coalesce(max(escrow), 0) FROM wallet_totals",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap_or((0, 0));
    Ok(WalletsCopy {
        accounts,
        escrow: conn
            .prepare("SELECT series, account, amount FROM wallet_escrow")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?,
        won: conn
            .prepare("SELECT day, account, won, touched FROM wallet_won WHERE touched >= ?1")?
            .query_map(params![int(now.saturating_sub(WON_KEPT_MS))], |r| {
                Ok(WonToday {
                    day: unsigned(r.get(0)?),
                    account: r.get(1)?,
                    won: r.get(2)?,
                    touched: unsigned(r.get(3)?),
                })
            })?
            .collect::<Result<_, _>>()?,
        granted,
        escrow_total,
    })
}

fn seen(conn: &Connection, forget_before: u64) -> rusqlite::Result<Vec<SeenKey>> {
    let rows: Vec<(String, String, i64)> = conn
        .prepare("SELECT family, key, decided FROM seen WHERE decided >= ?1")?
        .query_map(params![int(forget_before)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(family, key, decided)| {
            Some(SeenKey {
                family: Family::from_table_name(&family)?,
                key,
                decided: unsigned(decided),
            })
        })
        .collect())
}

fn records(conn: &Connection) -> rusqlite::Result<RecordsCopy> {
    Ok(RecordsCopy {
        won: conn
            .prepare("SELECT account, won FROM records_won")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?,
        streaks: conn
            .prepare("SELECT account, rule_set, streak, best FROM records_streaks")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?,
        head_to_head: conn
            .prepare("SELECT winner, loser, won FROM records_h2h")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?,
        draws: conn
            .prepare("SELECT a, b, drawn FROM records_draws")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?,
    })
}

/// Writes a snapshot into an empty data file, in one job: if any of it
/// fails, none of it is written. Rooms are written with no owner at their
/// epoch, so the next server on the directory takes them over.
pub async fn import(db: &Db, snapshot: Snapshot) -> Result<(), StoreError> {
    db.call(move |t| write_all(t.conn, &snapshot)).await
}

fn write_all(conn: &Connection, s: &Snapshot) -> rusqlite::Result<()> {
    let mut room = conn.prepare(
        "INSERT INTO rooms (code, record, version, owner, epoch, handed, parked, wake, home, open, expires_at)
         VALUES (?1, ?2, ?3, NULL, ?4, 0, ?5, ?6, NULL, ?7, ?8)",
    )?;
    let mut game = conn.prepare("INSERT INTO games (code, game_no, pdn) VALUES (?1, ?2, ?3)")?;
    for r in &s.rooms {
        room.execute(params![
            r.code,
            r.record,
            int(r.version),
            int(r.epoch),
            i64::from(r.parked),
            r.wake.map(|w| int(w).to_string()),
            i64::from(r.open),
            r.expires_at.map(int),
        ])?;
        for m in &r.moves {
            crate::embedded::insert_move(conn, &r.code, m)?;
        }
        for (n, pdn) in &r.games {
            game.execute(params![r.code, int(*n), pdn])?;
        }
    }
    let mut mine = conn.prepare("INSERT INTO mine (identity, code) VALUES (?1, ?2)")?;
    for (identity, code) in &s.mine {
        mine.execute(params![identity, code])?;
    }
    let mut note =
        conn.prepare("INSERT INTO solo_notes (owner, id, expires_at) VALUES (?1, ?2, ?3)")?;
    for n in &s.solo_notes {
        note.execute(params![n.identity, n.game, n.expires_at.map(int)])?;
    }
    let mut dormant = conn.prepare("INSERT INTO dormant (code, wake) VALUES (?1, ?2)")?;
    for (code, wake) in &s.dormant {
        dormant.execute(params![code, int(*wake)])?;
    }
    write_wallets(conn, &s.wallets)?;
    let mut seen = conn.prepare("INSERT INTO seen (family, key, decided) VALUES (?1, ?2, ?3)")?;
    for k in &s.seen {
        seen.execute(params![k.family.table_name(), k.key, int(k.decided)])?;
    }
    write_records(conn, &s.records)?;
    let mut line = conn.prepare(
        "INSERT INTO board_lines (rule_set, account, name, points, wins, draws, losses, games)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut boards = BTreeMap::new();
    for b in &s.boards {
        let st = &b.standing;
        line.execute(params![
            b.rule_set, b.account, st.name, st.points, st.wins, st.draws, st.losses, st.games
        ])?;
        boards.insert(b.rule_set.as_str(), ());
    }
    // A board's version tells its in-memory order it is out of date: a new
    // board starts at 1, and the server builds the order on first read.
    let mut version =
        conn.prepare("INSERT INTO board_versions (rule_set, version) VALUES (?1, 1)")?;
    for rule_set in boards.keys() {
        version.execute(params![rule_set])?;
    }
    Ok(())
}

fn write_wallets(conn: &Connection, w: &WalletsCopy) -> rusqlite::Result<()> {
    let mut account = conn.prepare(
        "INSERT INTO wallet_accounts (account, balance, first_seq, next_seq) VALUES (?1, ?2, 0, ?3)",
    )?;
    let mut entry = conn.prepare(
        "INSERT INTO wallet_ledger (account, seq, key, kind, amount, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut period = conn.prepare(
        "INSERT INTO wallet_archive (account, period, kind, count, amount)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for a in &w.accounts {
        account.execute(params![a.account, a.balance, a.ledger.len() as i64])?;
        for (seq, e) in a.ledger.iter().enumerate() {
            entry.execute(params![
                a.account,
                seq as i64,
                e.key,
                e.kind,
                e.amount,
                int(e.at)
            ])?;
        }
        for ((month, kind), (count, amount)) in &a.archive {
            period.execute(params![a.account, month, kind, int(*count), amount])?;
        }
    }
    let mut held =
        conn.prepare("INSERT INTO wallet_escrow (series, account, amount) VALUES (?1, ?2, ?3)")?;
    for (series, account, amount) in &w.escrow {
        held.execute(params![series, account, amount])?;
    }
    let mut won = conn
        .prepare("INSERT INTO wallet_won (account, day, won, touched) VALUES (?1, ?2, ?3, ?4)")?;
    for d in &w.won {
        won.execute(params![d.account, int(d.day), d.won, int(d.touched)])?;
    }
    if w.granted != 0 || w.escrow_total != 0 {
        conn.execute(
            "INSERT INTO wallet_totals (id, granted, escrow) VALUES (0, ?1, ?2)",
            params![w.granted, w.escrow_total],
        )?;
    }
    Ok(())
}

fn write_records(conn: &Connection, r: &RecordsCopy) -> rusqlite::Result<()> {
    let mut won = conn.prepare("INSERT INTO records_won (account, won) VALUES (?1, ?2)")?;
    for (account, n) in &r.won {
        won.execute(params![account, n])?;
    }
    let mut streak = conn.prepare(
        "INSERT INTO records_streaks (account, rule_set, streak, best) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (account, rule_set, s, best) in &r.streaks {
        streak.execute(params![account, rule_set, s, best])?;
    }
    let mut h2h =
        conn.prepare("INSERT INTO records_h2h (winner, loser, won) VALUES (?1, ?2, ?3)")?;
    for (w, l, n) in &r.head_to_head {
        h2h.execute(params![w, l, n])?;
    }
    let mut draws = conn.prepare("INSERT INTO records_draws (a, b, drawn) VALUES (?1, ?2, ?3)")?;
    for (a, b, n) in &r.draws {
        draws.execute(params![a, b, n])?;
    }
    Ok(())
}
