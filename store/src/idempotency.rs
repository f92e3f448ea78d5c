//! Idempotency keys that are forgotten after a window, exactly: the keys of
//! applied writes (wallet movements, recorded series, counted games) are
//! kept for [`IdempotencyWindow`] after the write was *decided*, and a
//! write decided earlier than [`IdempotencyWindow::accepts`] allows is
//! refused ([`StoreError::Expired`]) instead of being applied, because its
//! key may be gone. So every write either finds its key (and is not applied
//! twice) or is refused; it is never applied twice after its key is
//! forgotten.
//!
//! The decision time travels with the write: a room stores it with the
//! pending write (the escrow intent, the settlement, the series record, the
//! ranked result), so a retry or a replay after a crash carries the time of
//! the first attempt. "Now" is Redis's clock (`TIME`) for the Redis stores
//! and this process's for the memory ones; both the forgetting and the
//! refusing use the same clock and the same decision time, so a skewed
//! instance clock makes a key live longer or a write be refused sooner,
//! never a key forgotten while its write can still be accepted.
//!
//! In Redis a family of keys is three keys under one hash tag: `…:done` (a
//! set: the keys applied; its name and type are what earlier versions
//! wrote and read), `…:done:at` (a sorted set: key → decision time, which
//! drives the forgetting) and `…:done:scan` (the cursor of the one-off
//! backfill that gives every key written before `:at` existed a time: it
//! is forgotten a window after the first write of this version).

use std::collections::HashMap;

use crate::StoreError;

/// How long an idempotency key is kept after its write was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdempotencyWindow {
    /// Milliseconds.
    pub ms: u64,
}

impl Default for IdempotencyWindow {
    /// 30 days: far longer than any write is retried or replayed (seconds
    /// normally; a room waiting for a Redis that is back within the window).
    fn default() -> IdempotencyWindow {
        IdempotencyWindow {
            ms: 30 * 86_400_000,
        }
    }
}

impl IdempotencyWindow {
    /// The earliest decision time still accepted at `now`: 90% of the
    /// window back, so a Redis clock that steps back by less than a tenth
    /// of the window cannot accept a write whose key was already forgotten.
    pub fn earliest_accepted(self, now: u64) -> u64 {
        now.saturating_sub(self.ms / 10 * 9)
    }

    /// Keys decided before this are forgotten at `now`.
    pub fn forget_before(self, now: u64) -> u64 {
        now.saturating_sub(self.ms)
    }

    /// Whether a write decided at `decided` may be applied at `now`
    /// (`decided` 0: written before decision times were stored; taken as
    /// decided now).
    pub fn accepts(self, decided: u64, now: u64) -> bool {
        decided == 0 || decided >= self.earliest_accepted(now)
    }
}

/// The error for a write decided too long ago.
pub fn expired(what: &str, decided: u64) -> StoreError {
    StoreError::Expired(format!("{what} decided at {decided} ms"))
}

/// Lua shared by every script that keeps idempotency keys. Each such
/// script passes, first in `KEYS`, the family's `done`, `done:at` and
/// `done:scan`, and first in `ARGV` the window in ms and the decision time
/// (0: now). [`SEEN_LUA`] defines `NOW`, `DECIDED` (never 0) and:
///
/// - `seen_expired()`: true when the write must be refused (the caller
///   returns `redis.error_reply('EXPIRED …')`; a write that is harmless to
///   repeat once its key is forgotten does not ask);
/// - `seen(key)`: whether `key` was applied;
/// - `seen_add(key)`: records `key` as applied at `DECIDED`;
/// - `seen_prune()`: forgets up to 100 keys decided before the window, and
///   gives up to 50 untimed keys from before this version a time (now).
///
/// The scripts' own keys and arguments follow (`KEYS[4]…`, `ARGV[3]…`).
pub const SEEN_LUA: &str = r#"
local SEEN_DONE, SEEN_AT, SEEN_SCAN = KEYS[1], KEYS[2], KEYS[3]
local WINDOW = tonumber(ARGV[1])
local NOW
do
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local DECIDED = tonumber(ARGV[2])
if DECIDED == 0 then DECIDED = NOW end
local function seen_expired()
  return DECIDED < NOW - math.floor(WINDOW / 10) * 9
end
local function seen(key)
  return redis.call('SISMEMBER', SEEN_DONE, key) == 1
end
local function seen_add(key)
  redis.call('SADD', SEEN_DONE, key)
  redis.call('ZADD', SEEN_AT, DECIDED, key)
end
local function seen_prune()
  local cursor = redis.call('GET', SEEN_SCAN)
  if cursor ~= 'complete' then
    local r = redis.call('SSCAN', SEEN_DONE, cursor or '0', 'COUNT', 50)
    for _, key in ipairs(r[2]) do redis.call('ZADD', SEEN_AT, 'NX', NOW, key) end
    if r[1] == '0' then redis.call('SET', SEEN_SCAN, 'complete') else redis.call('SET', SEEN_SCAN, r[1]) end
  end
  local old = redis.call('ZRANGEBYSCORE', SEEN_AT, '-inf', string.format('(%d', NOW - WINDOW), 'LIMIT', 0, 100)
  if #old > 0 then
    redis.call('SREM', SEEN_DONE, unpack(old))
    redis.call('ZREM', SEEN_AT, unpack(old))
  end
end
"#;

/// The Redis keys of one family: `done`, `done:at`, `done:scan`.
pub fn seen_keys(done: &str) -> [String; 3] {
    [
        done.to_owned(),
        format!("{done}:at"),
        format!("{done}:scan"),
    ]
}

/// The memory stores' idempotency keys, with the same window.
#[derive(Debug, Default)]
pub struct SeenKeys {
    decided: HashMap<String, u64>,
}

impl SeenKeys {
    /// Refuses a write decided too long ago; else forgets the keys past the
    /// window and returns the decision time to record (`now` for 0).
    pub fn admit(
        &mut self,
        window: IdempotencyWindow,
        what: &str,
        decided: u64,
        now: u64,
    ) -> Result<u64, StoreError> {
        if !window.accepts(decided, now) {
            return Err(expired(what, decided));
        }
        let cutoff = window.forget_before(now);
        self.decided.retain(|_, at| *at >= cutoff);
        Ok(if decided == 0 { now } else { decided })
    }

    /// Forgets the keys past the window; returns the decision time to
    /// record (`now` for 0). For writes that are harmless to repeat once
    /// their key is forgotten, which are never refused.
    pub fn admit_always(&mut self, window: IdempotencyWindow, decided: u64, now: u64) -> u64 {
        let cutoff = window.forget_before(now);
        self.decided.retain(|_, at| *at >= cutoff);
        if decided == 0 { now } else { decided }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.decided.contains_key(key)
    }

    /// Records `key`; false if it was there.
    pub fn insert(&mut self, key: String, decided: u64) -> bool {
        self.decided.insert(key, decided).is_none()
    }

    pub fn len(&self) -> usize {
        self.decided.len()
    }

    pub fn is_empty(&self) -> bool {
        self.decided.is_empty()
    }
}

/// The clock decisions are stamped with (kept here for the callers that
/// name it with the window; it is [`crate::sync::now_ms`]).
pub use crate::sync::now_ms;

#[cfg(test)]
mod tests {
    use super::*;

    const W: IdempotencyWindow = IdempotencyWindow { ms: 1_000 };

    #[test]
    fn a_key_outlives_every_write_that_can_still_be_accepted() {
        let mut seen = SeenKeys::default();
        let decided = seen.admit(W, "x", 10_000, 10_000).unwrap();
        assert!(seen.insert("k".into(), decided));
        // Accepted up to 900 ms after the decision; the key is still there.
        for now in [10_000, 10_500, 10_900] {
            seen.admit(W, "x", 10_000, now).unwrap();
            assert!(seen.contains("k"), "at {now}");
        }
        // Refused from then on, whether or not the key is still kept.
        for now in [10_901, 11_000, 11_001, 50_000] {
            assert!(matches!(
                seen.admit(W, "x", 10_000, now),
                Err(StoreError::Expired(_))
            ));
        }
        // Forgotten once a full window has passed (on the next write).
        seen.admit(W, "y", 0, 11_001).unwrap();
        assert!(!seen.contains("k"));
        assert!(seen.is_empty());
    }

    #[test]
    fn an_unknown_decision_time_is_now() {
        let mut seen = SeenKeys::default();
        assert_eq!(seen.admit(W, "x", 0, 5_000).unwrap(), 5_000);
        assert!(W.accepts(0, u64::MAX));
        assert_eq!(W.earliest_accepted(100), 0);
    }
}
