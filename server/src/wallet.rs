//! Bold Points: wallets, escrow and the ledger. Every movement is a ledger
//! entry with an idempotency key, so a retry never pays or refunds twice,
//! and no balance goes negative. Invariant: the sum of all balances plus
//! all escrow equals everything ever granted.
//!
//! The Redis implementation runs each operation as one Lua script over keys
//! that share the hash tag `{wallets}` (one Cluster slot); the in-memory one
//! does the same under a lock.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::store::{StoreError, StoreFuture};

/// Wallet rules.
#[derive(Clone, Copy, Debug)]
pub struct WalletRules {
    /// Points a new account starts with.
    pub initial_grant: u64,
    /// Most a member may win per UTC day.
    pub daily_cap: u64,
}

impl Default for WalletRules {
    fn default() -> WalletRules {
        WalletRules {
            initial_grant: 1_000,
            daily_cap: 5_000,
        }
    }
}

/// One movement of points.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Idempotency key, e.g. `K7M2QX9P:3:escrow`.
    pub key: String,
    /// `grant`, `escrow`, `payout` or `refund`.
    pub kind: String,
    /// Change to the balance (negative for escrow).
    pub amount: i64,
    /// Unix milliseconds.
    pub at: u64,
}

/// A wallet as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletView {
    pub account: String,
    pub balance: i64,
    pub ledger: Vec<LedgerEntry>,
}

/// How a staked series ends for the money.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Settlement {
    /// The winner takes the pot, up to the daily cap.
    Winner { winner: String, loser: String },
    /// Every stake goes back.
    Refund { players: [String; 2] },
}

/// What a settlement moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settled {
    pub paid: u64,
    pub refunded: u64,
}

/// Totals across every wallet, for checking the invariant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub balances: i64,
    pub escrow: i64,
    pub granted: i64,
}

/// What taking a series' stakes into escrow did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Escrow {
    /// Both stakes are held for the series: taken now, or by an earlier call
    /// with exactly these accounts and amounts (a retry).
    Taken,
    /// This account cannot cover its stake; nothing was taken.
    Short(String),
    /// The series is settled already (a late or repeated call after its
    /// refund), or holds other stakes; nothing was taken. A series id is
    /// used for one escrow and one settlement, never again.
    Closed,
}

pub trait Wallets: Send + Sync + std::fmt::Debug {
    fn rules(&self) -> WalletRules;
    /// Takes both stakes into escrow for `series`, or nothing at all.
    fn escrow<'a>(
        &'a self,
        series: &'a str,
        stakes: [(&'a str, u64); 2],
    ) -> StoreFuture<'a, Escrow>;
    /// Pays out or refunds the escrow of `series`; `day` is the UTC day
    /// number (days since 1970) that the daily cap counts in. Every point
    /// held goes back to someone: an account held that the settlement does
    /// not name is refunded. Settling closes the series, even one whose
    /// escrow was never taken, so a late escrow call can no longer take
    /// anything: refunding is how an escrow of unknown outcome is undone.
    fn settle<'a>(
        &'a self,
        series: &'a str,
        settlement: &'a Settlement,
        day: u64,
    ) -> StoreFuture<'a, Settled>;
    /// Grants points (operator API); `key` makes a retry harmless.
    fn grant<'a>(&'a self, account: &'a str, amount: u64, key: &'a str) -> StoreFuture<'a, ()>;
    fn wallet<'a>(&'a self, account: &'a str) -> StoreFuture<'a, WalletView>;
    fn totals(&self) -> StoreFuture<'_, Totals>;
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Today's UTC day number.
pub fn utc_day() -> u64 {
    now_ms() / 86_400_000
}

#[derive(Debug, Default)]
struct Book {
    balances: HashMap<String, i64>,
    escrow: HashMap<String, HashMap<String, i64>>,
    done: HashSet<String>,
    ledger: HashMap<String, Vec<LedgerEntry>>,
    won: HashMap<(String, u64), i64>,
    granted: i64,
    escrow_total: i64,
}

impl Book {
    fn ensure(&mut self, account: &str, grant: u64) {
        if !self.balances.contains_key(account) {
            self.balances.insert(account.to_owned(), grant as i64);
            self.granted += grant as i64;
            self.entry(account, "initial-grant", "grant", grant as i64);
        }
    }

    fn entry(&mut self, account: &str, key: &str, kind: &str, amount: i64) {
        self.ledger
            .entry(account.to_owned())
            .or_default()
            .push(LedgerEntry {
                key: key.to_owned(),
                kind: kind.to_owned(),
                amount,
                at: now_ms(),
            });
    }
}

/// Wallets in this process only.
#[derive(Debug, Default)]
pub struct MemoryWallets {
    rules: WalletRules,
    book: Mutex<Book>,
}

impl MemoryWallets {
    pub fn new(rules: WalletRules) -> MemoryWallets {
        MemoryWallets {
            rules,
            book: Mutex::new(Book::default()),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Wallets for MemoryWallets {
    fn rules(&self) -> WalletRules {
        self.rules
    }

    fn escrow<'a>(
        &'a self,
        series: &'a str,
        stakes: [(&'a str, u64); 2],
    ) -> StoreFuture<'a, Escrow> {
        let mut book = self.book();
        let key = format!("{series}:escrow");
        let wanted: HashMap<String, i64> = stakes
            .iter()
            .map(|(a, s)| ((*a).to_owned(), *s as i64))
            .collect();
        let result = if book.done.contains(&format!("{series}:settle")) {
            Escrow::Closed
        } else if book.done.contains(&key) {
            if book.escrow.get(series) == Some(&wanted) {
                Escrow::Taken
            } else {
                Escrow::Closed
            }
        } else {
            for (account, _) in stakes {
                book.ensure(account, self.rules.initial_grant);
            }
            match stakes
                .iter()
                .find(|(a, stake)| book.balances[*a] < *stake as i64)
            {
                Some((a, _)) => Escrow::Short((*a).to_owned()),
                None => {
                    for (account, stake) in stakes {
                        *book.balances.get_mut(account).expect("ensured") -= stake as i64;
                        book.escrow_total += stake as i64;
                        book.entry(account, &key, "escrow", -(stake as i64));
                    }
                    book.escrow.insert(series.to_owned(), wanted);
                    book.done.insert(key);
                    Escrow::Taken
                }
            }
        };
        Box::pin(async move { Ok(result) })
    }

    fn settle<'a>(
        &'a self,
        series: &'a str,
        settlement: &'a Settlement,
        day: u64,
    ) -> StoreFuture<'a, Settled> {
        let mut book = self.book();
        let key = format!("{series}:settle");
        let mut settled = Settled::default();
        if !book.done.contains(&key) {
            let mut held = book.escrow.remove(series).unwrap_or_default();
            let total: i64 = held.values().sum();
            book.escrow_total -= total;
            // Anyone held whom the settlement does not name gets theirs back.
            let named: Vec<&String> = match settlement {
                Settlement::Refund { players } => players.iter().collect(),
                Settlement::Winner { winner, loser } => vec![winner, loser],
            };
            let others: Vec<(String, i64)> = held
                .iter()
                .filter(|(a, _)| !named.contains(a))
                .map(|(a, v)| (a.clone(), *v))
                .collect();
            for (account, amount) in others {
                held.remove(&account);
                if amount > 0 {
                    *book.balances.entry(account.clone()).or_default() += amount;
                    book.entry(&account, &key, "refund", amount);
                    settled.refunded += amount as u64;
                }
            }
            match settlement {
                Settlement::Refund { players } => {
                    for p in players {
                        let amount = held.get(p).copied().unwrap_or(0);
                        if amount > 0 {
                            *book.balances.entry(p.clone()).or_default() += amount;
                            book.entry(p, &key, "refund", amount);
                            settled.refunded += amount as u64;
                        }
                    }
                }
                Settlement::Winner { winner, loser } => {
                    let own = held.get(winner).copied().unwrap_or(0);
                    let theirs = held.get(loser).copied().unwrap_or(0);
                    let won = book.won.entry((winner.clone(), day)).or_default();
                    let room = (self.rules.daily_cap as i64 - *won).max(0);
                    let gain = theirs.min(room);
                    *won += gain;
                    let back = theirs - gain;
                    if own + gain > 0 {
                        *book.balances.entry(winner.clone()).or_default() += own + gain;
                        book.entry(winner, &key, "payout", own + gain);
                    }
                    if back > 0 {
                        *book.balances.entry(loser.clone()).or_default() += back;
                        book.entry(loser, &key, "refund", back);
                    }
                    settled.paid = (own + gain) as u64;
                    settled.refunded += back as u64;
                }
            }
            book.done.insert(key);
        }
        Box::pin(async move { Ok(settled) })
    }

    fn grant<'a>(&'a self, account: &'a str, amount: u64, key: &'a str) -> StoreFuture<'a, ()> {
        let mut book = self.book();
        book.ensure(account, self.rules.initial_grant);
        let key = format!("grant:{key}");
        if book.done.insert(key.clone()) {
            *book.balances.get_mut(account).expect("ensured") += amount as i64;
            book.granted += amount as i64;
            book.entry(account, &key, "grant", amount as i64);
        }
        Box::pin(async { Ok(()) })
    }

    fn wallet<'a>(&'a self, account: &'a str) -> StoreFuture<'a, WalletView> {
        let mut book = self.book();
        book.ensure(account, self.rules.initial_grant);
        let view = WalletView {
            account: account.to_owned(),
            balance: book.balances[account],
            ledger: book.ledger.get(account).cloned().unwrap_or_default(),
        };
        Box::pin(async move { Ok(view) })
    }

    fn totals(&self) -> StoreFuture<'_, Totals> {
        let book = self.book();
        let totals = Totals {
            balances: book.balances.values().sum(),
            escrow: book.escrow_total,
            granted: book.granted,
        };
        Box::pin(async move { Ok(totals) })
    }
}

/// Wallets in Redis. Keys (tag `{wallets}`): `jgw:{wallets}:bal` (hash
/// account → balance), `…:escrow:SERIES` (hash account → held),
/// `…:done` (set of applied idempotency keys), `…:ledger:ACCOUNT` (list of
/// JSON entries), `…:won:DAY` (hash account → won that day), `…:totals`
/// (hash: granted, escrow).
#[derive(Clone)]
pub struct RedisWallets {
    conn: crate::store::RedisConn,
    rules: WalletRules,
    escrow: redis::Script,
    settle: redis::Script,
    grant: redis::Script,
    open: redis::Script,
}

impl std::fmt::Debug for RedisWallets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisWallets { .. }")
    }
}

const P: &str = "jgw:{wallets}";

/// Shared prelude: give an account its initial grant once.
const ENSURE: &str = r#"
local function entry(ledger, key, kind, amount, at)
  redis.call('RPUSH', ledger, cjson.encode({key = key, kind = kind, amount = amount, at = at}))
end
local function ensure(bal, totals, ledger, account, grant, at)
  if redis.call('HEXISTS', bal, account) == 0 then
    redis.call('HSET', bal, account, grant)
    redis.call('HINCRBY', totals, 'granted', grant)
    entry(ledger, 'initial-grant', 'grant', grant, at)
  end
end
"#;

/// KEYS: bal, escrow, done, totals, ledger_a, ledger_b.
/// ARGV: key, a, stake_a, b, stake_b, grant, at, settle key.
/// Returns `ok`, `short:ACCOUNT` or `closed`.
const ESCROW: &str = r#"
if redis.call('SISMEMBER', KEYS[3], ARGV[8]) == 1 then return 'closed' end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then
  local held = redis.call('HGETALL', KEYS[2])
  if #held == 4 and tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '-1') == tonumber(ARGV[3])
     and tonumber(redis.call('HGET', KEYS[2], ARGV[4]) or '-1') == tonumber(ARGV[5]) then
    return 'ok'
  end
  return 'closed'
end
local at = tonumber(ARGV[7])
local grant = tonumber(ARGV[6])
ensure(KEYS[1], KEYS[4], KEYS[5], ARGV[2], grant, at)
ensure(KEYS[1], KEYS[4], KEYS[6], ARGV[4], grant, at)
local sa, sb = tonumber(ARGV[3]), tonumber(ARGV[5])
if tonumber(redis.call('HGET', KEYS[1], ARGV[2])) < sa then return 'short:' .. ARGV[2] end
if tonumber(redis.call('HGET', KEYS[1], ARGV[4])) < sb then return 'short:' .. ARGV[4] end
redis.call('HINCRBY', KEYS[1], ARGV[2], -sa)
redis.call('HINCRBY', KEYS[1], ARGV[4], -sb)
redis.call('HSET', KEYS[2], ARGV[2], sa, ARGV[4], sb)
redis.call('HINCRBY', KEYS[4], 'escrow', sa + sb)
entry(KEYS[5], ARGV[1], 'escrow', -sa, at)
entry(KEYS[6], ARGV[1], 'escrow', -sb, at)
redis.call('SADD', KEYS[3], ARGV[1])
return 'ok'
"#;

/// KEYS: bal, escrow, done, totals, ledger_a, ledger_b, won.
/// ARGV: key, mode ('winner' | 'refund'), a (winner), b (loser), cap, at.
/// An account held that is neither a nor b is refunded (its ledger entry
/// goes to its own ledger key, built here: the key shares the hash tag).
const SETTLE: &str = r#"
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return {0, 0} end
local at = tonumber(ARGV[6])
local ea = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0')
local eb = tonumber(redis.call('HGET', KEYS[2], ARGV[4]) or '0')
local paid, refunded = 0, 0
local held = redis.call('HGETALL', KEYS[2])
local others = 0
for k = 1, #held, 2 do
  local account, amount = held[k], tonumber(held[k + 1])
  if account ~= ARGV[3] and account ~= ARGV[4] and amount > 0 then
    redis.call('HINCRBY', KEYS[1], account, amount)
    entry(string.gsub(KEYS[5], ':ledger:.*$', ':ledger:') .. account, ARGV[1], 'refund', amount, at)
    others = others + amount
  end
end
if ARGV[2] == 'refund' then
  if ea > 0 then redis.call('HINCRBY', KEYS[1], ARGV[3], ea); entry(KEYS[5], ARGV[1], 'refund', ea, at) end
  if eb > 0 then redis.call('HINCRBY', KEYS[1], ARGV[4], eb); entry(KEYS[6], ARGV[1], 'refund', eb, at) end
  refunded = ea + eb
else
  local won = tonumber(redis.call('HGET', KEYS[7], ARGV[3]) or '0')
  local room = math.max(0, tonumber(ARGV[5]) - won)
  local gain = math.min(eb, room)
  local back = eb - gain
  redis.call('HINCRBY', KEYS[7], ARGV[3], gain)
  redis.call('EXPIRE', KEYS[7], 172800)
  if ea + gain > 0 then
    redis.call('HINCRBY', KEYS[1], ARGV[3], ea + gain)
    entry(KEYS[5], ARGV[1], 'payout', ea + gain, at)
  end
  if back > 0 then
    redis.call('HINCRBY', KEYS[1], ARGV[4], back)
    entry(KEYS[6], ARGV[1], 'refund', back, at)
  end
  paid, refunded = ea + gain, back
end
refunded = refunded + others
local released = ea + eb + others
-- (Lua would write -0 for nothing released, which HINCRBY refuses.)
if released > 0 then redis.call('HINCRBY', KEYS[4], 'escrow', -released) end
redis.call('DEL', KEYS[2])
redis.call('SADD', KEYS[3], ARGV[1])
return {paid, refunded}
"#;

/// KEYS: bal, totals, ledger. ARGV: account, grant, at.
const OPEN: &str = r#"
ensure(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
return 1
"#;

/// KEYS: bal, done, totals, ledger. ARGV: key, account, amount, grant, at.
const GRANT: &str = r#"
local at = tonumber(ARGV[5])
ensure(KEYS[1], KEYS[3], KEYS[4], ARGV[2], tonumber(ARGV[4]), at)
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[2], tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[3], 'granted', tonumber(ARGV[3]))
entry(KEYS[4], ARGV[1], 'grant', tonumber(ARGV[3]), at)
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"#;

impl RedisWallets {
    pub fn open(
        url: &str,
        timeout: std::time::Duration,
        rules: WalletRules,
    ) -> Result<RedisWallets, StoreError> {
        let conn = crate::store::redis_connection(url, timeout)?;
        Ok(RedisWallets {
            conn,
            rules,
            escrow: redis::Script::new(&format!("{ENSURE}{ESCROW}")),
            settle: redis::Script::new(&format!("{ENSURE}{SETTLE}")),
            grant: redis::Script::new(&format!("{ENSURE}{GRANT}")),
            open: redis::Script::new(&format!("{ENSURE}{OPEN}")),
        })
    }
}

fn ledger_key(account: &str) -> String {
    format!("{P}:ledger:{account}")
}

impl Wallets for RedisWallets {
    fn rules(&self) -> WalletRules {
        self.rules
    }

    fn escrow<'a>(
        &'a self,
        series: &'a str,
        stakes: [(&'a str, u64); 2],
    ) -> StoreFuture<'a, Escrow> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let [(a, sa), (b, sb)] = stakes;
            let reply: String = self
                .escrow
                .key(format!("{P}:bal"))
                .key(format!("{P}:escrow:{series}"))
                .key(format!("{P}:done"))
                .key(format!("{P}:totals"))
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
    ) -> StoreFuture<'a, Settled> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let (mode, a, b) = match settlement {
                Settlement::Winner { winner, loser } => ("winner", winner, loser),
                Settlement::Refund { players: [a, b] } => ("refund", a, b),
            };
            let (paid, refunded): (i64, i64) = self
                .settle
                .key(format!("{P}:bal"))
                .key(format!("{P}:escrow:{series}"))
                .key(format!("{P}:done"))
                .key(format!("{P}:totals"))
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
                .grant
                .key(format!("{P}:bal"))
                .key(format!("{P}:done"))
                .key(format!("{P}:totals"))
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
            let _: i64 = self
                .open
                .key(format!("{P}:bal"))
                .key(format!("{P}:totals"))
                .key(ledger_key(account))
                .arg(account)
                .arg(self.rules.initial_grant)
                .arg(now_ms())
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let balance: Option<i64> = redis::cmd("HGET")
                .arg(format!("{P}:bal"))
                .arg(account)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let raw: Vec<String> = redis::cmd("LRANGE")
                .arg(ledger_key(account))
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let ledger = raw
                .iter()
                .filter_map(|e| serde_json::from_str(e).ok())
                .collect();
            Ok(WalletView {
                account: account.to_owned(),
                balance: balance.unwrap_or(0),
                ledger,
            })
        })
    }

    fn totals(&self) -> StoreFuture<'_, Totals> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let balances: HashMap<String, i64> = redis::cmd("HGETALL")
                .arg(format!("{P}:bal"))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            let totals: HashMap<String, i64> = redis::cmd("HGETALL")
                .arg(format!("{P}:totals"))
                .query_async(&mut conn)
                .await
                .map_err(StoreError::from)?;
            Ok(Totals {
                balances: balances.values().sum(),
                escrow: totals.get("escrow").copied().unwrap_or(0),
                granted: totals.get("granted").copied().unwrap_or(0),
            })
        })
    }
}
