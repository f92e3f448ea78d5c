//! Bold Points: wallets, escrow and the ledger. Every movement is a ledger
//! entry with an idempotency key, so a retry never pays or refunds twice,
//! and no balance goes negative. Invariant: the sum of all balances plus
//! all escrow equals everything ever granted.
//!
//! Bounded by policy: an account's ledger keeps its last
//! [`WalletRules::ledger_keep`] entries; older ones are rolled into
//! per-month totals per kind ([`ArchivedPeriod`]), so the balance is always
//! exactly the archived amounts plus the ledger's. Idempotency keys are
//! kept for [`WalletRules::window`] after their movement was decided (see
//! [`crate::idempotency`]).
//!
//! The Redis implementation ([`RedisWallets`]) runs each operation as one
//! Lua script over keys that share the hash tag `{wallets}` (one Cluster
//! slot); the in-memory one ([`MemoryWallets`]) does the same under a lock.

mod memory;
mod redis;

use serde::{Deserialize, Serialize};

pub use self::memory::MemoryWallets;
pub use self::redis::RedisWallets;
use crate::StoreFuture;
use crate::idempotency::IdempotencyWindow;

/// Wallet rules.
#[derive(Clone, Copy, Debug)]
pub struct WalletRules {
    /// Points a new account starts with.
    pub initial_grant: u64,
    /// Most a member may win per UTC day.
    pub daily_cap: u64,
    /// Ledger entries kept per account before the oldest are archived.
    pub ledger_keep: u64,
    /// How long an idempotency key is kept after its movement was decided.
    pub window: IdempotencyWindow,
}

impl Default for WalletRules {
    fn default() -> WalletRules {
        WalletRules {
            initial_grant: 1_000,
            daily_cap: 5_000,
            ledger_keep: 100,
            window: IdempotencyWindow::default(),
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

/// The ledger entries of one kind in one UTC month that were rolled out of
/// the ledger: how many, and their sum.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ArchivedPeriod {
    /// `YYYY-MM`, of the entries' `at`.
    pub period: String,
    pub kind: String,
    pub count: u64,
    pub amount: i64,
}

/// One account's archive as both wallets keep it: `(month, kind)` →
/// `(count, amount)`, ordered by month, then kind.
pub type ArchiveTotals = std::collections::BTreeMap<(String, String), (u64, i64)>;

impl ArchivedPeriod {
    /// An archive's periods in its order (oldest month first).
    pub fn list(archive: impl IntoIterator<Item = ((String, String), (u64, i64))>) -> Vec<Self> {
        archive
            .into_iter()
            .map(|((period, kind), (count, amount))| ArchivedPeriod {
                period,
                kind,
                count,
                amount,
            })
            .collect()
    }
}

/// A wallet as read. `balance` = the archived amounts + the ledger's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletView {
    pub account: String,
    pub balance: i64,
    /// The latest entries, oldest first.
    pub ledger: Vec<LedgerEntry>,
    /// Everything older, by month and kind, in that order.
    pub archived: Vec<ArchivedPeriod>,
}

pub use jumpgate_lobby::Settlement;

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

/// `decided` (Unix ms; 0 for now) is when the movement was first decided,
/// the same for every retry; an escrow decided longer ago than the window
/// allows is refused with [`crate::StoreError::Expired`] and takes
/// nothing (a settlement is never refused: see [`Wallets::settle`]).
pub trait Wallets: Send + Sync + std::fmt::Debug {
    fn rules(&self) -> WalletRules;
    /// Takes both stakes into escrow for `series`, or nothing at all.
    fn escrow<'a>(
        &'a self,
        series: &'a str,
        stakes: [(&'a str, u64); 2],
        decided: u64,
    ) -> StoreFuture<'a, Escrow>;
    /// Pays out or refunds the escrow of `series`; `day` is the UTC day
    /// number (days since 1970) that the daily cap counts in. Every point
    /// held goes back to someone: an account held that the settlement does
    /// not name is refunded. Settling closes the series, even one whose
    /// escrow was never taken, so a late escrow call can no longer take
    /// anything: refunding is how an escrow of unknown outcome is undone.
    /// A settlement repeated after its key was forgotten finds no escrow
    /// and moves nothing.
    fn settle<'a>(
        &'a self,
        series: &'a str,
        settlement: &'a Settlement,
        day: u64,
        decided: u64,
    ) -> StoreFuture<'a, Settled>;
    /// Grants points (operator API); `key` makes a retry within the window
    /// harmless.
    fn grant<'a>(&'a self, account: &'a str, amount: u64, key: &'a str) -> StoreFuture<'a, ()>;
    fn wallet<'a>(&'a self, account: &'a str) -> StoreFuture<'a, WalletView>;
    fn totals(&self) -> StoreFuture<'_, Totals>;
}

fn now_ms() -> u64 {
    crate::sync::now_ms()
}

/// Today's UTC day number.
pub fn utc_day() -> u64 {
    now_ms() / 86_400_000
}

/// The UTC month (`YYYY-MM`) of a Unix millisecond time (the days-to-civil
/// conversion of the proleptic Gregorian calendar; the Lua in
/// [`RedisWallets`] computes the same).
pub fn month_of(ms: u64) -> String {
    let z = (ms / 86_400_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_of_known_days() {
        assert_eq!(month_of(0), "1970-01");
        // 2000-02-29 12:00 UTC, 2000-03-01 00:00 UTC, 2026-12-01 00:00 UTC.
        assert_eq!(month_of(951_825_600_000), "2000-02");
        assert_eq!(month_of(951_868_800_000), "2000-03");
        assert_eq!(month_of(1_796_083_200_000), "2026-12");
        assert_eq!(month_of(1_796_083_199_999), "2026-11");
    }

    #[test]
    fn the_memory_ledger_rolls_into_months_and_keeps_the_balance_exact() {
        let rules = WalletRules {
            ledger_keep: 3,
            ..WalletRules::default()
        };
        let w = MemoryWallets::new(rules);
        for i in 0..10 {
            futures_lite(w.grant("a_ann", 10 + i, &format!("k{i}")));
        }
        let view = futures_lite(w.wallet("a_ann"));
        assert_eq!(view.ledger.len(), 3);
        let archived: i64 = view.archived.iter().map(|p| p.amount).sum();
        let recent: i64 = view.ledger.iter().map(|e| e.amount).sum();
        assert_eq!(view.balance, archived + recent);
        assert_eq!(view.balance, 1_000 + (10..20).sum::<i64>());
        let count: u64 = view.archived.iter().map(|p| p.count).sum();
        assert_eq!(count, 8, "the initial grant and seven grants archived");
    }

    /// Runs a store future that is ready at once (the memory stores').
    fn futures_lite<T>(f: StoreFuture<'_, T>) -> T {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = f;
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => r.unwrap(),
            std::task::Poll::Pending => panic!("a memory store future waited"),
        }
    }
}
