//! The embedded wallets: [`crate::wallet`]'s rules as the memory wallets
//! keep them and the Redis scripts run them — escrow all or nothing,
//! settlement within the daily cap (anything held and not named refunded,
//! the series closed), grants by key, the ledger rolled into monthly
//! totals per kind so the balance is exactly the archive plus the ledger,
//! the initial grant on an account's first touch. Each operation is one
//! job (one transaction) that checks everything before it writes, so a
//! refusal writes nothing (only an escrow found short keeps the accounts
//! it opened, as the memory and Redis wallets do).
//!
//! Tables: `wallet_accounts` (balance, and the sequence numbers of the
//! first entry still in the ledger and of the next one), `wallet_ledger`
//! (the latest [`WalletRules::ledger_keep`] entries per account),
//! `wallet_archive` (account, `YYYY-MM`, kind → count, amount: the
//! entries rolled out), `wallet_escrow` (series, account → held),
//! `wallet_won` (account, UTC day → won that day, with the time of its last
//! write: deleted two days after it, as Redis expires its `won:DAY` hash)
//! and `wallet_totals` (granted, escrow). Idempotency keys (`SERIES:escrow`,
//! `SERIES:settle`, `grant:KEY`) are the `seen` family `wallet`.

use std::collections::{BTreeMap, HashMap};

use rusqlite::{OptionalExtension, params};

use super::db::{Db, Tx};
use super::rooms::int;
use super::seen;
use crate::wallet::{
    ArchiveTotals, ArchivedPeriod, Escrow, LedgerEntry, Settled, Settlement, Totals, WalletRules,
    WalletView, Wallets, month_of,
};
use crate::{StoreError, StoreFuture};

/// The idempotency keys' family in the `seen` table.
const FAMILY: &str = "wallet";
/// How long a day's winnings are kept after their last write (Redis's
/// `EXPIRE won:DAY 172800`).
const WON_KEPT_MS: u64 = 2 * 86_400_000;

pub(super) const TABLES: &str = "
CREATE TABLE wallet_accounts (
  account TEXT PRIMARY KEY,
  balance INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  next_seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE wallet_ledger (
  account TEXT NOT NULL,
  seq INTEGER NOT NULL,
  key TEXT NOT NULL,
  kind TEXT NOT NULL,
  amount INTEGER NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (account, seq)
) WITHOUT ROWID;
CREATE TABLE wallet_archive (
  account TEXT NOT NULL,
  period TEXT NOT NULL,
  kind TEXT NOT NULL,
  count INTEGER NOT NULL,
  amount INTEGER NOT NULL,
  PRIMARY KEY (account, period, kind)
) WITHOUT ROWID;
CREATE TABLE wallet_escrow (
  series TEXT NOT NULL,
  account TEXT NOT NULL,
  amount INTEGER NOT NULL,
  PRIMARY KEY (series, account)
) WITHOUT ROWID;
CREATE TABLE wallet_won (
  account TEXT NOT NULL,
  day INTEGER NOT NULL,
  won INTEGER NOT NULL,
  touched INTEGER NOT NULL,
  PRIMARY KEY (account, day)
) WITHOUT ROWID;
CREATE INDEX wallet_won_by_time ON wallet_won (touched);
CREATE TABLE wallet_totals (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  granted INTEGER NOT NULL,
  escrow INTEGER NOT NULL
);
";

/// Deletes the days' winnings whose time ran out.
pub(super) fn purge(t: &Tx<'_>) -> rusqlite::Result<()> {
    t.conn
        .prepare_cached("DELETE FROM wallet_won WHERE touched < ?1")?
        .execute(params![won_cutoff(t)])?;
    Ok(())
}

fn won_cutoff(t: &Tx<'_>) -> i64 {
    int(t.now.saturating_sub(WON_KEPT_MS))
}

/// Wallets in the data file.
#[derive(Clone, Debug)]
pub struct EmbeddedWallets {
    db: Db,
    rules: WalletRules,
}

impl EmbeddedWallets {
    /// The wallets on an open data file (shared with the rest of the
    /// embedded store).
    pub fn on(db: Db, rules: WalletRules) -> EmbeddedWallets {
        EmbeddedWallets { db, rules }
    }
}

fn balance(t: &Tx<'_>, account: &str) -> rusqlite::Result<Option<i64>> {
    t.conn
        .prepare_cached("SELECT balance FROM wallet_accounts WHERE account = ?1")?
        .query_row(params![account], |r| r.get(0))
        .optional()
}

/// Adds to the running totals.
fn add_totals(t: &Tx<'_>, granted: i64, escrow: i64) -> rusqlite::Result<()> {
    t.conn
        .prepare_cached(
            "INSERT INTO wallet_totals (id, granted, escrow) VALUES (0, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET granted = granted + ?1, escrow = escrow + ?2",
        )?
        .execute(params![granted, escrow])?;
    Ok(())
}

/// Moves a balance by `amount`; an account not opened yet gets a balance
/// of just that (the memory wallets' `or_default`; never the case for an
/// account that held escrow).
fn add_balance(t: &Tx<'_>, account: &str, amount: i64) -> rusqlite::Result<()> {
    t.conn
        .prepare_cached(
            "INSERT INTO wallet_accounts (account, balance, first_seq, next_seq) VALUES (?1, ?2, 0, 0)
             ON CONFLICT (account) DO UPDATE SET balance = balance + ?2",
        )?
        .execute(params![account, amount])?;
    Ok(())
}

/// Opens an account on its first touch, with the initial grant.
fn ensure(t: &Tx<'_>, rules: &WalletRules, account: &str) -> rusqlite::Result<()> {
    if balance(t, account)?.is_some() {
        return Ok(());
    }
    let grant = rules.initial_grant as i64;
    add_balance(t, account, grant)?;
    add_totals(t, grant, 0)?;
    entry(t, rules, account, "initial-grant", "grant", grant)
}

/// Appends a ledger entry (the account is open) and rolls the oldest
/// entries past [`WalletRules::ledger_keep`] into the archive.
fn entry(
    t: &Tx<'_>,
    rules: &WalletRules,
    account: &str,
    key: &str,
    kind: &str,
    amount: i64,
) -> rusqlite::Result<()> {
    let (mut first, next): (i64, i64) = t
        .conn
        .prepare_cached("SELECT first_seq, next_seq FROM wallet_accounts WHERE account = ?1")?
        .query_row(params![account], |r| Ok((r.get(0)?, r.get(1)?)))?;
    t.conn
        .prepare_cached(
            "INSERT INTO wallet_ledger (account, seq, key, kind, amount, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![account, next, key, kind, amount, int(t.now)])?;
    let next = next + 1;
    let keep = int(rules.ledger_keep);
    while next - first > keep {
        let (kind, amount, at): (String, i64, i64) = t
            .conn
            .prepare_cached(
                "SELECT kind, amount, at FROM wallet_ledger WHERE account = ?1 AND seq = ?2",
            )?
            .query_row(params![account, first], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
        t.conn
            .prepare_cached("DELETE FROM wallet_ledger WHERE account = ?1 AND seq = ?2")?
            .execute(params![account, first])?;
        t.conn
            .prepare_cached(
                "INSERT INTO wallet_archive (account, period, kind, count, amount)
                 VALUES (?1, ?2, ?3, 1, ?4)
                 ON CONFLICT (account, period, kind)
                 DO UPDATE SET count = count + 1, amount = amount + ?4",
            )?
            .execute(params![account, month_of(at.max(0) as u64), kind, amount])?;
        first += 1;
    }
    t.conn
        .prepare_cached(
            "UPDATE wallet_accounts SET first_seq = ?2, next_seq = ?3 WHERE account = ?1",
        )?
        .execute(params![account, first, next])?;
    Ok(())
}

/// What a series holds, by account.
fn held(t: &Tx<'_>, series: &str) -> rusqlite::Result<BTreeMap<String, i64>> {
    t.conn
        .prepare_cached("SELECT account, amount FROM wallet_escrow WHERE series = ?1")?
        .query_map(params![series], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

/// The escrow job: [`crate::wallet::MemoryWallets`]'s rules, in its order.
fn take(
    t: &Tx<'_>,
    rules: &WalletRules,
    series: &str,
    stakes: &[(String, u64); 2],
    decided: u64,
) -> rusqlite::Result<Result<Escrow, StoreError>> {
    let key = format!("{series}:escrow");
    let decided = match seen::admit(t, FAMILY, rules.window, &key, decided)? {
        Ok(decided) => decided,
        Err(e) => return Ok(Err(e)),
    };
    if seen::contains(t, FAMILY, &format!("{series}:settle"))? {
        return Ok(Ok(Escrow::Closed));
    }
    let wanted: HashMap<String, i64> = stakes.iter().map(|(a, s)| (a.clone(), *s as i64)).collect();
    if seen::contains(t, FAMILY, &key)? {
        let held: HashMap<String, i64> = held(t, series)?.into_iter().collect();
        return Ok(Ok(if held == wanted {
            Escrow::Taken
        } else {
            Escrow::Closed
        }));
    }
    for (account, _) in stakes {
        ensure(t, rules, account)?;
    }
    for (account, stake) in stakes {
        if balance(t, account)?.unwrap_or(0) < *stake as i64 {
            return Ok(Ok(Escrow::Short(account.clone())));
        }
    }
    for (account, stake) in stakes {
        let stake = *stake as i64;
        add_balance(t, account, -stake)?;
        add_totals(t, 0, stake)?;
        entry(t, rules, account, &key, "escrow", -stake)?;
        t.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO wallet_escrow (series, account, amount) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![series, account, stake])?;
    }
    seen::insert(t, FAMILY, &key, decided)?;
    Ok(Ok(Escrow::Taken))
}

/// The settlement job: [`crate::wallet::MemoryWallets`]'s rules, in its
/// order. Never refused (see [`Wallets::settle`]).
fn pay(
    t: &Tx<'_>,
    rules: &WalletRules,
    series: &str,
    settlement: &Settlement,
    day: u64,
    decided: u64,
) -> rusqlite::Result<Settled> {
    let key = format!("{series}:settle");
    let decided = seen::admit_always(t, FAMILY, rules.window, decided)?;
    let mut settled = Settled::default();
    if seen::contains(t, FAMILY, &key)? {
        return Ok(settled);
    }
    let mut held = held(t, series)?;
    t.conn
        .prepare_cached("DELETE FROM wallet_escrow WHERE series = ?1")?
        .execute(params![series])?;
    let total: i64 = held.values().sum();
    if total != 0 {
        add_totals(t, 0, -total)?;
    }
    let credit = |account: &str, kind: &str, amount: i64| -> rusqlite::Result<()> {
        add_balance(t, account, amount)?;
        entry(t, rules, account, &key, kind, amount)
    };
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
            credit(&account, "refund", amount)?;
            settled.refunded += amount as u64;
        }
    }
    match settlement {
        Settlement::Refund { players } => {
            for p in players {
                let amount = held.get(p).copied().unwrap_or(0);
                if amount > 0 {
                    credit(p, "refund", amount)?;
                    settled.refunded += amount as u64;
                }
            }
        }
        Settlement::Winner { winner, loser } => {
            let own = held.get(winner).copied().unwrap_or(0);
            let theirs = held.get(loser).copied().unwrap_or(0);
            let won = won_today(t, winner, day)?;
            let room = (rules.daily_cap as i64 - won).max(0);
            let gain = theirs.min(room);
            t.conn
                .prepare_cached(
                    "INSERT INTO wallet_won (account, day, won, touched) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (account, day) DO UPDATE SET won = won + ?3, touched = ?4",
                )?
                .execute(params![winner, int(day), gain, int(t.now)])?;
            let back = theirs - gain;
            if own + gain > 0 {
                credit(winner, "payout", own + gain)?;
            }
            if back > 0 {
                credit(loser, "refund", back)?;
            }
            settled.paid = (own + gain) as u64;
            settled.refunded += back as u64;
        }
    }
    seen::insert(t, FAMILY, &key, decided)?;
    Ok(settled)
}

/// What `account` won on `day`, if that is not forgotten yet.
fn won_today(t: &Tx<'_>, account: &str, day: u64) -> rusqlite::Result<i64> {
    t.conn
        .prepare_cached("DELETE FROM wallet_won WHERE account = ?1 AND day = ?2 AND touched < ?3")?
        .execute(params![account, int(day), won_cutoff(t)])?;
    Ok(t.conn
        .prepare_cached("SELECT won FROM wallet_won WHERE account = ?1 AND day = ?2")?
        .query_row(params![account, int(day)], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// The grant job (a key already applied moves nothing).
fn add(
    t: &Tx<'_>,
    rules: &WalletRules,
    account: &str,
    amount: u64,
    key: &str,
) -> rusqlite::Result<Result<(), StoreError>> {
    let key = format!("grant:{key}");
    let decided = match seen::admit(t, FAMILY, rules.window, &key, 0)? {
        Ok(decided) => decided,
        Err(e) => return Ok(Err(e)),
    };
    ensure(t, rules, account)?;
    if seen::insert(t, FAMILY, &key, decided)? {
        let amount = amount as i64;
        add_balance(t, account, amount)?;
        add_totals(t, amount, 0)?;
        entry(t, rules, account, &key, "grant", amount)?;
    }
    Ok(Ok(()))
}

/// Opens the wallet if need be and reads it (one job: the balance is
/// exactly the archive plus the ledger).
fn view(t: &Tx<'_>, rules: &WalletRules, account: &str) -> rusqlite::Result<WalletView> {
    ensure(t, rules, account)?;
    let ledger = t
        .conn
        .prepare_cached(
            "SELECT key, kind, amount, at FROM wallet_ledger WHERE account = ?1 ORDER BY seq",
        )?
        .query_map(params![account], |r| {
            Ok(LedgerEntry {
                key: r.get(0)?,
                kind: r.get(1)?,
                amount: r.get(2)?,
                at: r.get::<_, i64>(3)?.max(0) as u64,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut archive = ArchiveTotals::new();
    let rows = t
        .conn
        .prepare_cached(
            "SELECT period, kind, count, amount FROM wallet_archive WHERE account = ?1",
        )?
        .query_map(params![account], |r| {
            Ok((
                (r.get::<_, String>(0)?, r.get::<_, String>(1)?),
                (r.get::<_, i64>(2)?.max(0) as u64, r.get::<_, i64>(3)?),
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    archive.extend(rows);
    Ok(WalletView {
        account: account.to_owned(),
        balance: balance(t, account)?.unwrap_or(0),
        ledger,
        archived: ArchivedPeriod::list(archive),
    })
}

fn totals(t: &Tx<'_>) -> rusqlite::Result<Totals> {
    t.conn
        .prepare_cached(
            "SELECT (SELECT coalesce(sum(balance), 0) FROM wallet_accounts),
                    coalesce((SELECT escrow FROM wallet_totals WHERE id = 0), 0),
                    coalesce((SELECT granted FROM wallet_totals WHERE id = 0), 0)",
        )?
        .query_row([], |r| {
            Ok(Totals {
                balances: r.get(0)?,
                escrow: r.get(1)?,
                granted: r.get(2)?,
            })
        })
}

impl Wallets for EmbeddedWallets {
    fn rules(&self) -> WalletRules {
        self.rules
    }

    fn escrow<'a>(
        &'a self,
        series: &'a str,
        stakes: [(&'a str, u64); 2],
        decided: u64,
    ) -> StoreFuture<'a, Escrow> {
        let rules = self.rules;
        let series = series.to_owned();
        let stakes = stakes.map(|(a, s)| (a.to_owned(), s));
        Box::pin(async move {
            self.db
                .call(move |t| take(t, &rules, &series, &stakes, decided))
                .await?
        })
    }

    fn settle<'a>(
        &'a self,
        series: &'a str,
        settlement: &'a Settlement,
        day: u64,
        decided: u64,
    ) -> StoreFuture<'a, Settled> {
        let rules = self.rules;
        let (series, settlement) = (series.to_owned(), settlement.clone());
        Box::pin(
            self.db
                .call(move |t| pay(t, &rules, &series, &settlement, day, decided)),
        )
    }

    fn grant<'a>(&'a self, account: &'a str, amount: u64, key: &'a str) -> StoreFuture<'a, ()> {
        let rules = self.rules;
        let (account, key) = (account.to_owned(), key.to_owned());
        Box::pin(async move {
            self.db
                .call(move |t| add(t, &rules, &account, amount, &key))
                .await?
        })
    }

    fn wallet<'a>(&'a self, account: &'a str) -> StoreFuture<'a, WalletView> {
        let rules = self.rules;
        let account = account.to_owned();
        Box::pin(self.db.call(move |t| view(t, &rules, &account)))
    }

    fn totals(&self) -> StoreFuture<'_, Totals> {
        Box::pin(self.db.call(totals))
    }
}
