//! What an instance checks of its Redis before it writes anything: the
//! storage format the data is in, and an eviction policy that can never
//! drop a key.
//!
//! **Storage format.** `jg:storage-format` holds the newest format any
//! instance has written to this Redis. Format 1 rewrites a lobby's record
//! with every move; format 2 appends moves to a log after the record
//! (`--compact-every` above 1), which a format-1 build cannot read. An
//! instance raises the number to the format it writes, and refuses to start
//! when the number is above the newest format it reads: a build rolled back
//! past a format change stops at once instead of misreading rooms. A Redis
//! without the key (a new one, or one written before the key existed) is
//! taken to be in the format this instance writes.
//!
//! **Eviction.** With `maxmemory` set, a policy other than `noeviction`
//! lets Redis drop keys under memory pressure: balances, idempotency keys
//! (a write could then apply twice), heartbeats (live instances would look
//! dead). The instance refuses to start on such a Redis. A Redis that does
//! not allow `CONFIG GET` (some managed services) is only warned about.

use super::{RedisConn, StoreError};

pub use crate::keys::FORMAT_KEY;

/// The newest storage format this build reads.
pub const NEWEST_FORMAT_READ: u32 = 2;

/// The format an instance writes: 2 with the move log on, 1 with a record
/// rewritten on every move (`--compact-every 1`).
pub fn format_written(compact_every: u32) -> u32 {
    if compact_every > 1 { 2 } else { 1 }
}

/// Why an instance will not run on this Redis.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "this Redis holds storage format {found}, and this build reads formats up to {reads}: run the newer build (see deploy/README.md, \"Upgrades\")"
    )]
    NewerFormat { found: u32, reads: u32 },
    #[error(
        "this Redis may evict keys (maxmemory {maxmemory} bytes, maxmemory-policy {policy}): balances, idempotency keys and heartbeats could vanish; set maxmemory-policy noeviction (see deploy/README.md, \"Redis\")"
    )]
    Evicting { maxmemory: u64, policy: String },
    #[error("the storage format key {FORMAT_KEY} holds {0:?}, not a number")]
    UnreadableFormat(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl PreflightError {
    /// Whether trying again later may help (the store did not answer).
    pub fn is_transient(&self) -> bool {
        matches!(self, PreflightError::Store(_))
    }
}

/// What the checks found, for the start-up log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// The storage format the Redis is in now.
    pub format: u32,
    /// The eviction policy, if Redis would say.
    pub policy: Option<String>,
}

/// Raises the stored format to at least `writes` (unless it is above what
/// this build reads, which is refused). Returns the format now stored.
const FORMAT_SCRIPT: &str = r"
local found = redis.call('GET', KEYS[1])
if found and not tonumber(found) then
  return {-2, found}
end
local current = tonumber(found or '0')
if current > tonumber(ARGV[2]) then
  return {-1, tostring(current)}
end
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return {1, ARGV[1]}
end
return {0, tostring(current)}
";

/// Runs the checks; an error other than a transient one means the
/// instance must not start.
pub async fn preflight(conn: &RedisConn, writes: u32) -> Result<Preflight, PreflightError> {
    let mut conn = conn.clone();
    // Before anything is written.
    let policy = eviction(&mut conn).await?;
    if let Some((maxmemory, policy)) = &policy
        && *maxmemory > 0
        && policy != "noeviction"
    {
        return Err(PreflightError::Evicting {
            maxmemory: *maxmemory,
            policy: policy.clone(),
        });
    }
    let (outcome, value): (i64, String) = redis::Script::new(FORMAT_SCRIPT)
        .key(FORMAT_KEY)
        .arg(writes)
        .arg(NEWEST_FORMAT_READ)
        .invoke_async(&mut conn)
        .await
        .map_err(StoreError::from)?;
    let format = match outcome {
        -2 => return Err(PreflightError::UnreadableFormat(value)),
        -1 => {
            return Err(PreflightError::NewerFormat {
                found: value.parse().unwrap_or(u32::MAX),
                reads: NEWEST_FORMAT_READ,
            });
        }
        _ => value
            .parse()
            .map_err(|_| PreflightError::UnreadableFormat(value))?,
    };
    Ok(Preflight {
        format,
        policy: policy.map(|(_, p)| p),
    })
}

/// `maxmemory` and `maxmemory-policy`, or `None` where Redis refuses
/// `CONFIG GET` (warned about). On a cluster the node asked is one of its
/// masters; every master of a cluster should be configured alike.
async fn eviction(conn: &mut RedisConn) -> Result<Option<(u64, String)>, PreflightError> {
    let answer: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory*")
        .query_async(conn)
        .await;
    let pairs = match answer {
        Ok(pairs) => pairs,
        Err(e) if e.is_timeout() || e.is_io_error() || e.is_connection_dropped() => {
            return Err(StoreError::from(e).into());
        }
        Err(e) => {
            tracing::warn!(error = %e, "Redis does not say its eviction policy (CONFIG GET refused): make sure it is maxmemory-policy noeviction");
            return Ok(None);
        }
    };
    let value = |name: &str| {
        pairs
            .chunks(2)
            .find(|pair| pair.first().map(String::as_str) == Some(name))
            .and_then(|pair| pair.get(1).cloned())
    };
    let maxmemory = value("maxmemory").and_then(|v| v.parse().ok()).unwrap_or(0);
    Ok(value("maxmemory-policy").map(|policy| (maxmemory, policy)))
}
