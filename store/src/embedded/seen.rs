//! Idempotency keys in the data file, with the window of
//! [`crate::idempotency`]: one table for every family (wallet movements,
//! recorded series, counted games), each key with its decision time.

use rusqlite::{OptionalExtension, params};

use super::db::Tx;
use crate::StoreError;
use crate::idempotency::{IdempotencyWindow, expired};

pub(super) const TABLES: &str = "
CREATE TABLE seen (
  family TEXT NOT NULL,
  key TEXT NOT NULL,
  decided INTEGER NOT NULL,
  PRIMARY KEY (family, key)
) WITHOUT ROWID;
CREATE INDEX seen_by_time ON seen (family, decided);
";

/// Refuses a write decided too long ago (`Ok(Err(Expired))`); else
/// forgets the family's keys past the window and returns the decision
/// time to record (`now` for 0).
pub(super) fn admit(
    t: &Tx<'_>,
    family: &str,
    window: IdempotencyWindow,
    what: &str,
    decided: u64,
) -> rusqlite::Result<Result<u64, StoreError>> {
    if !window.accepts(decided, t.now) {
        return Ok(Err(expired(what, decided)));
    }
    Ok(Ok(admit_always(t, family, window, decided)?))
}

/// [`admit`] for writes that are harmless to repeat once their key is
/// forgotten, which are never refused.
pub(super) fn admit_always(
    t: &Tx<'_>,
    family: &str,
    window: IdempotencyWindow,
    decided: u64,
) -> rusqlite::Result<u64> {
    let cutoff = window.forget_before(t.now);
    t.conn
        .prepare_cached("DELETE FROM seen WHERE family = ?1 AND decided < ?2")?
        .execute(params![family, cutoff as i64])?;
    Ok(if decided == 0 { t.now } else { decided })
}

/// Whether `key` was applied.
pub(super) fn contains(t: &Tx<'_>, family: &str, key: &str) -> rusqlite::Result<bool> {
    t.conn
        .prepare_cached("SELECT 1 FROM seen WHERE family = ?1 AND key = ?2")?
        .query_row(params![family, key], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Records `key` as applied at `decided`; false if it was there.
pub(super) fn insert(t: &Tx<'_>, family: &str, key: &str, decided: u64) -> rusqlite::Result<bool> {
    let added = t
        .conn
        .prepare_cached("INSERT OR IGNORE INTO seen (family, key, decided) VALUES (?1, ?2, ?3)")?
        .execute(params![family, key, decided as i64])?;
    Ok(added == 1)
}
