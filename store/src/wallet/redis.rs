//! Wallets in Redis: one Lua script per operation, every key under the hash
//! tag `{wallets}`.

use std::collections::HashMap;

use super::{
    ArchiveTotals, ArchivedPeriod, Escrow, Settled, Settlement, Totals, WalletRules, WalletView,
    Wallets, now_ms,
};
use crate::idempotency::{SEEN_LUA, seen_keys};
use crate::{StoreError, StoreFuture};

/// Wallets in Redis. Keys (tag `{wallets}`): `jgw:{wallets}:bal` (hash
/// account → balance), `…:escrow:SERIES` (hash account → held), `…:done`
/// with `…:done:at` and `…:done:scan` (the idempotency keys, see
/// [`crate::idempotency`]), `…:ledger:ACCOUNT` (list of JSON entries, the
/// latest [`WalletRules::ledger_keep`]), `…:archive:ACCOUNT` (hash
/// `YYYY-MM:KIND:count` and `…:amount` → the entries rolled out of the
/// ledger), `…:won:DAY` (hash account → won that day, kept two days),
/// `…:totals` (hash: granted, escrow).
#[derive(Clone)]
pub struct RedisWallets {
    conn: crate::RedisConn,
    rules: WalletRules,
    escrow: ::redis::Script,
    settle: ::redis::Script,
    grant: ::redis::Script,
    open: ::redis::Script,
    totals: ::redis::Script,
}

impl std::fmt::Debug for RedisWallets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisWallets { .. }")
    }
}

use crate::keys::WALLETS as P;

/// Shared by every wallet script, after [`SEEN_LUA`]: `KEYS[4]` is the
/// balances, `KEYS[5]` the totals, `ARGV[3]` the ledger entries kept per
/// account. An entry pushed past that rolls the oldest into the archive.
const WALLET_LUA: &str = r#"
local BAL, TOTALS = KEYS[4], KEYS[5]
local LEDGER_KEEP = tonumber(ARGV[3])
local LEDGER_PREFIX = 'jgw:{wallets}:ledger:'
local function month_of(ms)
  local z = math.floor(ms / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d', y, m)
end
local function entry(ledger, key, kind, amount, at)
  redis.call('RPUSH', ledger, cjson.encode({key = key, kind = kind, amount = amount, at = at}))
  while redis.call('LLEN', ledger) > LEDGER_KEEP do
    local old = cjson.decode(redis.call('LPOP', ledger))
    local archive = 'jgw:{wallets}:archive:' .. string.sub(ledger, #LEDGER_PREFIX + 1)
    local period = month_of(old.at) .. ':' .. old.kind
    redis.call('HINCRBY', archive, period .. ':count', 1)
    redis.call('HINCRBY', archive, period .. ':amount', string.format('%d', old.amount))
  end
end
local function ensure(ledger, account, grant, at)
  if redis.call('HEXISTS', BAL, account) == 0 then
    redis.call('HSET', BAL, account, grant)
    redis.call('HINCRBY', TOTALS, 'granted', grant)
    entry(ledger, 'initial-grant', 'grant', grant, at)
  end
end
"#;

/// KEYS: (seen), bal, totals, escrow, ledger_a, ledger_b.
/// ARGV: (window, decided, keep), key, a, stake_a, b, stake_b, grant, at,
/// settle key. Returns `ok`, `short:ACCOUNT` or `closed`.
const ESCROW: &str = r#"
if seen_expired() then return redis.error_reply('EXPIRED escrow ' .. ARGV[4]) end
seen_prune()
local ESC = KEYS[6]
if seen(ARGV[11]) then return 'closed' end
if seen(ARGV[4]) then
  local held = redis.call('HGETALL', ESC)
  if #held == 4 and tonumber(redis.call('HGET', ESC, ARGV[5]) or '-1') == tonumber(ARGV[6])
     and tonumber(redis.call('HGET', ESC, ARGV[7]) or '-1') == tonumber(ARGV[8]) then
    return 'ok'
  end
  return 'closed'
end
local at = tonumber(ARGV[10])
local grant = tonumber(ARGV[9])
ensure(KEYS[7], ARGV[5], grant, at)
ensure(KEYS[8], ARGV[7], grant, at)
local sa, sb = tonumber(ARGV[6]), tonumber(ARGV[8])
if tonumber(redis.call('HGET', BAL, ARGV[5])) < sa then return 'short:' .. ARGV[5] end
if tonumber(redis.call('HGET', BAL, ARGV[7])) < sb then return 'short:' .. ARGV[7] end
redis.call('HINCRBY', BAL, ARGV[5], -sa)
redis.call('HINCRBY', BAL, ARGV[7], -sb)
redis.call('HSET', ESC, ARGV[5], sa, ARGV[7], sb)
redis.call('HINCRBY', TOTALS, 'escrow', sa + sb)
entry(KEYS[7], ARGV[4], 'escrow', -sa, at)
entry(KEYS[8], ARGV[4], 'escrow', -sb, at)
seen_add(ARGV[4])
return 'ok'
"#;

/// KEYS: (seen), bal, totals, escrow, ledger_a, ledger_b, won.
/// ARGV: (window, decided, keep), key, mode ('winner' | 'refund'),
/// a (winner), b (loser), cap, at.
/// An account held that is neither a nor b is refunded (its ledger entry
/// goes to its own ledger key, built here: the key shares the hash tag).
///
/// Never refused as expired: repeated after its key is forgotten, it finds
/// the escrow deleted and moves nothing.
const SETTLE: &str = r#"
seen_prune()
if seen(ARGV[4]) then return {0, 0} end
local ESC, WON = KEYS[6], KEYS[9]
local at = tonumber(ARGV[9])
local ea = tonumber(redis.call('HGET', ESC, ARGV[6]) or '0')
local eb = tonumber(redis.call('HGET', ESC, ARGV[7]) or '0')
local paid, refunded = 0, 0
local held = redis.call('HGETALL', ESC)
local others = 0
for k = 1, #held, 2 do
  local account, amount = held[k], tonumber(held[k + 1])
  if account ~= ARGV[6] and account ~= ARGV[7] and amount > 0 then
    redis.call('HINCRBY', BAL, account, amount)
    entry(LEDGER_PREFIX .. account, ARGV[4], 'refund', amount, at)
    others = others + amount
  end
end
if ARGV[5] == 'refund' then
  if ea > 0 then redis.call('HINCRBY', BAL, ARGV[6], ea); entry(KEYS[7], ARGV[4], 'refund', ea, at) end
  if eb > 0 then redis.call('HINCRBY', BAL, ARGV[7], eb); entry(KEYS[8], ARGV[4], 'refund', eb, at) end
  refunded = ea + eb
else
  local won = tonumber(redis.call('HGET', WON, ARGV[6]) or '0')
  local room = math.max(0, tonumber(ARGV[8]) - won)
  local gain = math.min(eb, room)
  local back = eb - gain
  redis.call('HINCRBY', WON, ARGV[6], gain)
  redis.call('EXPIRE', WON, 172800)
  if ea + gain > 0 then
    redis.call('HINCRBY', BAL, ARGV[6], ea + gain)
    entry(KEYS[7], ARGV[4], 'payout', ea + gain, at)
  end
  if back > 0 then
    redis.call('HINCRBY', BAL, ARGV[7], back)
    entry(KEYS[8], ARGV[4], 'refund', back, at)
  end
  paid, refunded = ea + gain, back
end
refunded = refunded + others
local released = ea + eb + others
-- (Lua would write -0 for nothing released, which HINCRBY refuses.)
if released > 0 then redis.call('HINCRBY', TOTALS, 'escrow', -released) end
redis.call('DEL', ESC)
seen_add(ARGV[4])
return {paid, refunded}
"#;

/// Opens a wallet if need be and reads it in one go, so the balance is
/// exactly the archive plus the ledger.
///
/// KEYS: (seen), bal, totals, ledger, archive. ARGV: (window, decided,
/// keep), account, grant, at. Returns {balance, ledger, archive fields}.
const OPEN: &str = r#"
ensure(KEYS[6], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]))
return {redis.call('HGET', BAL, ARGV[4]), redis.call('LRANGE', KEYS[6], 0, -1),
        redis.call('HGETALL', KEYS[7])}
"#;

/// KEYS: (seen), bal, totals, ledger. ARGV: (window, decided, keep), key,
/// account, amount, grant, at.
const GRANT: &str = r#"
local at = tonumber(ARGV[8])
seen_prune()
ensure(KEYS[6], ARGV[5], tonumber(ARGV[7]), at)
if seen(ARGV[4]) then return 0 end
redis.call('HINCRBY', BAL, ARGV[5], tonumber(ARGV[6]))
redis.call('HINCRBY', TOTALS, 'granted', tonumber(ARGV[6]))
entry(KEYS[6], ARGV[4], 'grant', tonumber(ARGV[6]), at)
seen_add(ARGV[4])
return 1
"#;

/// The sum of every balance and the totals, read at one instant (two
/// separate reads could straddle a movement and seem not to balance).
/// KEYS: bal, totals. Returns {balances, escrow, granted}.
const TOTALS: &str = r#"
local sum = 0
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do sum = sum + tonumber(v) end
return {sum, tonumber(redis.call('HGET', KEYS[2], 'escrow') or '0'),
        tonumber(redis.call('HGET', KEYS[2], 'granted') or '0')}
"#;

impl RedisWallets {
    pub fn open(
        url: &str,
        timeout: std::time::Duration,
        rules: WalletRules,
    ) -> Result<RedisWallets, StoreError> {
        Ok(RedisWallets::on(
            crate::redis_connection(url, timeout)?,
            rules,
        ))
    }

    /// The wallets on a shared connection.
    pub fn on(conn: crate::RedisConn, rules: WalletRules) -> RedisWallets {
        let script = |body: &str| ::redis::Script::new(&format!("{SEEN_LUA}{WALLET_LUA}{body}"));
        RedisWallets {
            conn,
            rules,
            escrow: script(ESCROW),
            settle: script(SETTLE),
            grant: script(GRANT),
            open: script(OPEN),
            totals: ::redis::Script::new(TOTALS),
        }
    }

    /// An invocation of `script` with the keys and arguments every wallet
    /// script starts with.
    fn invocation<'s>(
        &self,
        script: &'s ::redis::Script,
        decided: u64,
    ) -> ::redis::ScriptInvocation<'s> {
        let mut call = script.prepare_invoke();
        for key in seen_keys(&format!("{P}:done")) {
            call.key(key);
        }
        call.key(format!("{P}:bal"))
            .key(format!("{P}:totals"))
            .arg(self.rules.window.ms)
            .arg(decided)
            .arg(self.rules.ledger_keep.max(1));
        call
    }
}

fn ledger_key(account: &str) -> String {
    format!("{P}:ledger:{account}")
}

fn archive_key(account: &str) -> String {
    format!("{P}:archive:{account}")
}

/// The archive hash's fields (`YYYY-MM:KIND:count` / `:amount`) as periods,
/// oldest month first.
fn archived_periods(fields: HashMap<String, i64>) -> Vec<ArchivedPeriod> {
    let mut periods = ArchiveTotals::new();
    for (field, value) in fields {
        let mut parts = field.rsplitn(3, ':');
        let (Some(what), Some(kind), Some(period)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let slot = periods
            .entry((period.to_owned(), kind.to_owned()))
            .or_default();
        match what {
            "count" => slot.0 = value.max(0) as u64,
            "amount" => slot.1 = value,
            _ => {}
        }
    }
    ArchivedPeriod::list(periods)
}

impl Wallets for RedisWallets {
    fn rules(&self) -> WalletRules {
        self.rules
    }

    fn escrow<'a>(
        &'a self,
        series: &'a str,
        stakes: [(&'a str, u64); 2],
        decided: u64,
    ) -> StoreFuture<'a, Escrow> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let [(a, sa), (b, sb)] = stakes;
            let reply: String = self
                .invocation(&self.escrow, decided)
                .key(format!("{P}:escrow:{series}"))
                .key(ledger_key(a))
                .key(ledger_key(b))
                .arg(format!("{series}:escrow"))
                .arg(a)
                .arg(sa)
                .arg(b)
                .arg(sb)
                .arg(self.rules.initial_grant)
                .arg(now_ms())
                .arg(format!("{series}:settle"))
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(match (reply.as_str(), reply.strip_prefix("short:")) {
                (_, Some(account)) => Escrow::Short(account.to_owned()),
                ("closed", _) => Escrow::Closed,
                _ => Escrow::Taken,
            })
        })
    }

    fn settle<'a>(
        &'a self,
        series: &'a str,
        settlement: &'a Settlement,
        day: u64,
        decided: u64,
    ) -> StoreFuture<'a, Settled> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let (mode, a, b) = match settlement {
                Settlement::Winner { winner, loser } => ("winner", winner, loser),
                Settlement::Refund { players: [a, b] } => ("refund", a, b),
            };
            let (paid, refunded): (i64, i64) = self
                .invocation(&self.settle, decided)
                .key(format!("{P}:escrow:{series}"))
                .key(ledger_key(a))
                .key(ledger_key(b))
                .key(format!("{P}:won:{day}"))
                .arg(format!("{series}:settle"))
                .arg(mode)
                .arg(a)
                .arg(b)
                .arg(self.rules.daily_cap)
                .arg(now_ms())
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(Settled {
                paid: paid as u64,
                refunded: refunded as u64,
            })
        })
    }

    fn grant<'a>(&'a self, account: &'a str, amount: u64, key: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let _: i64 = self
                .invocation(&self.grant, 0)
                .key(ledger_key(account))
                .arg(format!("grant:{key}"))
                .arg(account)
                .arg(amount)
                .arg(self.rules.initial_grant)
                .arg(now_ms())
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(())
        })
    }

    fn wallet<'a>(&'a self, account: &'a str) -> StoreFuture<'a, WalletView> {
        Box::pin(async move {
            // Reading a wallet creates it, like every other operation.
            let mut conn = self.conn.clone();
            let (balance, raw, archive): (i64, Vec<String>, HashMap<String, i64>) = self
                .invocation(&self.open, 0)
                .key(ledger_key(account))
                .key(archive_key(account))
                .arg(account)
                .arg(self.rules.initial_grant)
                .arg(now_ms())
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let ledger = raw
                .iter()
                .filter_map(|e| serde_json::from_str(e).ok())
                .collect();
            Ok(WalletView {
                account: account.to_owned(),
                balance,
                ledger,
                archived: archived_periods(archive),
            })
        })
    }

    fn totals(&self) -> StoreFuture<'_, Totals> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let (balances, escrow, granted): (i64, i64, i64) = self
                .totals
                .key(format!("{P}:bal"))
                .key(format!("{P}:totals"))
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(Totals {
                balances,
                escrow,
                granted,
            })
        })
    }
}
