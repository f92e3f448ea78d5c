//! The embedded records: [`crate::records`]' career records — series won,
//! streaks per rule set, head-to-head results and draws — as the memory
//! and Redis records keep them. Recording a series is one job that counts
//! it once (its id is an idempotency key of the `seen` family `records`)
//! or refuses it as decided too long ago, writing nothing.
//!
//! Tables: `records_won` (account → series won in every rule set),
//! `records_streaks` (account, rule set → streak, best streak),
//! `records_h2h` (winner, loser → series won) and `records_draws` (the two
//! accounts in byte order → drawn series).

use rusqlite::{OptionalExtension, params};

use super::db::{Db, Tx};
use super::seen;
use crate::idempotency::IdempotencyWindow;
use crate::records::{PlayerRecord, Records, SeriesRecord};
use crate::{StoreError, StoreFuture};

/// The idempotency keys' family in the `seen` table.
const FAMILY: &str = "records";

pub(super) const TABLES: &str = "
CREATE TABLE records_won (
  account TEXT PRIMARY KEY,
  won INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE records_streaks (
  account TEXT NOT NULL,
  rule_set TEXT NOT NULL,
  streak INTEGER NOT NULL,
  best INTEGER NOT NULL,
  PRIMARY KEY (account, rule_set)
) WITHOUT ROWID;
CREATE TABLE records_h2h (
  winner TEXT NOT NULL,
  loser TEXT NOT NULL,
  won INTEGER NOT NULL,
  PRIMARY KEY (winner, loser)
) WITHOUT ROWID;
CREATE TABLE records_draws (
  a TEXT NOT NULL,
  b TEXT NOT NULL,
  drawn INTEGER NOT NULL,
  PRIMARY KEY (a, b)
) WITHOUT ROWID;
";

/// Nothing of the records expires (their keys are forgotten as they are
/// written: [`seen::admit`]).
pub(super) fn purge(_t: &Tx<'_>) -> rusqlite::Result<()> {
    Ok(())
}

/// Records in the data file.
#[derive(Clone, Debug)]
pub struct EmbeddedRecords {
    db: Db,
    window: IdempotencyWindow,
}

impl EmbeddedRecords {
    /// The records on an open data file (shared with the rest of the
    /// embedded store).
    pub fn on(db: Db, window: IdempotencyWindow) -> EmbeddedRecords {
        EmbeddedRecords { db, window }
    }
}

/// Two accounts in byte order (the draws' key, as in the memory records).
fn pair<'s>(a: &'s str, b: &'s str) -> (&'s str, &'s str) {
    if a <= b { (a, b) } else { (b, a) }
}

/// A count as read (never negative, never past `u32::MAX`).
fn count(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

fn reset_streak(t: &Tx<'_>, account: &str, rule_set: &str) -> rusqlite::Result<()> {
    t.conn
        .prepare_cached(
            "INSERT INTO records_streaks (account, rule_set, streak, best) VALUES (?1, ?2, 0, 0)
             ON CONFLICT (account, rule_set) DO UPDATE SET streak = 0",
        )?
        .execute(params![account, rule_set])?;
    Ok(())
}

/// The record job.
fn record(
    t: &Tx<'_>,
    window: IdempotencyWindow,
    s: &SeriesRecord,
) -> rusqlite::Result<Result<(), StoreError>> {
    let decided = match seen::admit(t, FAMILY, window, &s.series, s.decided)? {
        Ok(decided) => decided,
        Err(e) => return Ok(Err(e)),
    };
    if !seen::insert(t, FAMILY, &s.series, decided)? {
        return Ok(Ok(()));
    }
    let [a, b] = &s.players;
    let Some(w) = s.winner else {
        let (x, y) = pair(a, b);
        t.conn
            .prepare_cached(
                "INSERT INTO records_draws (a, b, drawn) VALUES (?1, ?2, 1)
                 ON CONFLICT (a, b) DO UPDATE SET drawn = drawn + 1",
            )?
            .execute(params![x, y])?;
        reset_streak(t, a, &s.rule_set)?;
        reset_streak(t, b, &s.rule_set)?;
        return Ok(Ok(()));
    };
    let (winner, loser) = if w == 0 { (a, b) } else { (b, a) };
    t.conn
        .prepare_cached(
            "INSERT INTO records_won (account, won) VALUES (?1, 1)
             ON CONFLICT (account) DO UPDATE SET won = won + 1",
        )?
        .execute(params![winner])?;
    t.conn
        .prepare_cached(
            "INSERT INTO records_h2h (winner, loser, won) VALUES (?1, ?2, 1)
             ON CONFLICT (winner, loser) DO UPDATE SET won = won + 1",
        )?
        .execute(params![winner, loser])?;
    // Every expression of an UPDATE reads the row as it was: the best
    // streak is the larger of the old best and the new streak.
    t.conn
        .prepare_cached(
            "INSERT INTO records_streaks (account, rule_set, streak, best) VALUES (?1, ?2, 1, 1)
             ON CONFLICT (account, rule_set)
             DO UPDATE SET streak = streak + 1, best = max(best, streak + 1)",
        )?
        .execute(params![winner, s.rule_set])?;
    reset_streak(t, loser, &s.rule_set)?;
    Ok(Ok(()))
}

fn player(t: &Tx<'_>, account: &str, rule_set: &str) -> rusqlite::Result<PlayerRecord> {
    let won: i64 = t
        .conn
        .prepare_cached("SELECT won FROM records_won WHERE account = ?1")?
        .query_row(params![account], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    let (streak, best): (i64, i64) = t
        .conn
        .prepare_cached(
            "SELECT streak, best FROM records_streaks WHERE account = ?1 AND rule_set = ?2",
        )?
        .query_row(params![account, rule_set], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, 0));
    Ok(PlayerRecord {
        series_won: count(won),
        streak: count(streak),
        best_streak: count(best),
    })
}

fn head_to_head(t: &Tx<'_>, a: &str, b: &str) -> rusqlite::Result<(u32, u32, u32)> {
    let mut won = t
        .conn
        .prepare_cached("SELECT won FROM records_h2h WHERE winner = ?1 AND loser = ?2")?;
    let mut wins = |x: &str, y: &str| -> rusqlite::Result<u32> {
        Ok(count(
            won.query_row(params![x, y], |r| r.get(0))
                .optional()?
                .unwrap_or(0),
        ))
    };
    let (a_won, b_won) = (wins(a, b)?, wins(b, a)?);
    let (x, y) = pair(a, b);
    let drawn: i64 = t
        .conn
        .prepare_cached("SELECT drawn FROM records_draws WHERE a = ?1 AND b = ?2")?
        .query_row(params![x, y], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    Ok((a_won, b_won, count(drawn)))
}

impl Records for EmbeddedRecords {
    fn record<'a>(&'a self, series: &'a SeriesRecord) -> StoreFuture<'a, ()> {
        let (window, series) = (self.window, series.clone());
        Box::pin(async move { self.db.call(move |t| record(t, window, &series)).await? })
    }

    fn player<'a>(&'a self, account: &'a str, rule_set: &'a str) -> StoreFuture<'a, PlayerRecord> {
        let (account, rule_set) = (account.to_owned(), rule_set.to_owned());
        Box::pin(self.db.call(move |t| player(t, &account, &rule_set)))
    }

    fn head_to_head<'a>(&'a self, a: &'a str, b: &'a str) -> StoreFuture<'a, (u32, u32, u32)> {
        let (a, b) = (a.to_owned(), b.to_owned());
        Box::pin(self.db.call(move |t| head_to_head(t, &a, &b)))
    }
}
