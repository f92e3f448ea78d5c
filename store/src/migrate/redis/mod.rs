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

mod export;
mod import;

use redis::aio::MultiplexedConnection;

pub use self::export::export;
pub use self::import::import;
use super::snapshot::NEVER;
use crate::StoreError;

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
