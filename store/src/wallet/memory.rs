//! Wallets in this process only (no `--redis-url`): the same rules as the
//! Redis scripts, under one lock.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{
    ArchiveTotals, ArchivedPeriod, Escrow, LedgerEntry, Settled, Settlement, Totals, WalletRules,
    WalletView, Wallets, month_of, now_ms,
};
use crate::idempotency::SeenKeys;
use crate::sync::lock;
use crate::{StoreError, StoreFuture};

#[derive(Debug, Default)]
struct Book {
    balances: HashMap<String, i64>,
    escrow: HashMap<String, HashMap<String, i64>>,
    done: SeenKeys,
    ledger: HashMap<String, Vec<LedgerEntry>>,
    archive: HashMap<String, ArchiveTotals>,
    won: HashMap<(String, u64), i64>,
    granted: i64,
    escrow_total: i64,
}

impl Book {
    fn ensure(&mut self, rules: &WalletRules, account: &str) {
        if !self.balances.contains_key(account) {
            let grant = rules.initial_grant as i64;
            self.balances.insert(account.to_owned(), grant);
            self.granted += grant;
            self.entry(rules, account, "initial-grant", "grant", grant);
        }
    }

    fn entry(&mut self, rules: &WalletRules, account: &str, key: &str, kind: &str, amount: i64) {
        let ledger = self.ledger.entry(account.to_owned()).or_default();
        ledger.push(LedgerEntry {
            key: key.to_owned(),
            kind: kind.to_owned(),
            amount,
            at: now_ms(),
        });
        let over = ledger.len().saturating_sub(rules.ledger_keep as usize);
        let archive = self.archive.entry(account.to_owned()).or_default();
        for old in ledger.drain(..over) {
            let period = archive.entry((month_of(old.at), old.kind)).or_default();
            period.0 += 1;
            period.1 += old.amount;
        }
    }

    /// Refuses a movement decided too long ago, else forgets old keys.
    fn admit(&mut self, rules: &WalletRules, what: &str, decided: u64) -> Result<u64, StoreError> {
        self.done.admit(rules.window, what, decided, now_ms())
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
        lock(&self.book)
    }

    fn take(
        &self,
        series: &str,
        stakes: [(&str, u64); 2],
        decided: u64,
    ) -> Result<Escrow, StoreError> {
        let rules = &self.rules;
        let mut book = self.book();
        let key = format!("{series}:escrow");
        let decided = book.admit(rules, &key, decided)?;
        let wanted: HashMap<String, i64> = stakes
            .iter()
            .map(|(a, s)| ((*a).to_owned(), *s as i64))
            .collect();
        if book.done.contains(&format!("{series}:settle")) {
            return Ok(Escrow::Closed);
        }
        if book.done.contains(&key) {
            return Ok(if book.escrow.get(series) == Some(&wanted) {
                Escrow::Taken
            } else {
                Escrow::Closed
            });
        }
        for (account, _) in stakes {
            book.ensure(rules, account);
        }
        if let Some((a, _)) = stakes
            .iter()
            .find(|(a, stake)| book.balances[*a] < *stake as i64)
        {
            return Ok(Escrow::Short((*a).to_owned()));
        }
        for (account, stake) in stakes {
            *book.balances.get_mut(account).expect("ensured") -= stake as i64;
            book.escrow_total += stake as i64;
            book.entry(rules, account, &key, "escrow", -(stake as i64));
        }
        book.escrow.insert(series.to_owned(), wanted);
        book.done.insert(key, decided);
        Ok(Escrow::Taken)
    }

    fn pay(
        &self,
        series: &str,
        settlement: &Settlement,
        day: u64,
        decided: u64,
    ) -> Result<Settled, StoreError> {
        let rules = &self.rules;
        let mut book = self.book();
        let key = format!("{series}:settle");
        // Never refused: a settlement repeated after its key is forgotten
        // finds its escrow gone and moves nothing.
        let decided = book.done.admit_always(rules.window, decided, now_ms());
        let mut settled = Settled::default();
        if book.done.contains(&key) {
            return Ok(settled);
        }
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
        let credit = |book: &mut Book, account: &str, kind: &str, amount: i64| {
            *book.balances.entry(account.to_owned()).or_default() += amount;
            book.entry(rules, account, &key, kind, amount);
        };
        for (account, amount) in others {
            held.remove(&account);
            if amount > 0 {
                credit(&mut book, &account, "refund", amount);
                settled.refunded += amount as u64;
            }
        }
        match settlement {
            Settlement::Refund { players } => {
                for p in players {
                    let amount = held.get(p).copied().unwrap_or(0);
                    if amount > 0 {
                        credit(&mut book, p, "refund", amount);
                        settled.refunded += amount as u64;
                    }
                }
            }
            Settlement::Winner { winner, loser } => {
                let own = held.get(winner).copied().unwrap_or(0);
                let theirs = held.get(loser).copied().unwrap_or(0);
                let won = book.won.entry((winner.clone(), day)).or_default();
                let room = (rules.daily_cap as i64 - *won).max(0);
                let gain = theirs.min(room);
                *won += gain;
                let back = theirs - gain;
                if own + gain > 0 {
                    credit(&mut book, winner, "payout", own + gain);
                }
                if back > 0 {
                    credit(&mut book, loser, "refund", back);
                }
                settled.paid = (own + gain) as u64;
                settled.refunded += back as u64;
            }
        }
        book.done.insert(key.clone(), decided);
        Ok(settled)
    }

    fn add(&self, account: &str, amount: u64, key: &str) -> Result<(), StoreError> {
        let rules = &self.rules;
        let mut book = self.book();
        let key = format!("grant:{key}");
        let decided = book.admit(rules, &key, 0)?;
        book.ensure(rules, account);
        if book.done.insert(key.clone(), decided) {
            *book.balances.get_mut(account).expect("ensured") += amount as i64;
            book.granted += amount as i64;
            book.entry(rules, account, &key, "grant", amount as i64);
        }
        Ok(())
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
        decided: u64,
    ) -> StoreFuture<'a, Escrow> {
        let result = self.take(series, stakes, decided);
        Box::pin(async move { result })
    }

    fn settle<'a>(
        &'a self,
        series: &'a str,
        settlement: &'a Settlement,
        day: u64,
        decided: u64,
    ) -> StoreFuture<'a, Settled> {
        let result = self.pay(series, settlement, day, decided);
        Box::pin(async move { result })
    }

    fn grant<'a>(&'a self, account: &'a str, amount: u64, key: &'a str) -> StoreFuture<'a, ()> {
        let result = self.add(account, amount, key);
        Box::pin(async move { result })
    }

    fn wallet<'a>(&'a self, account: &'a str) -> StoreFuture<'a, WalletView> {
        let mut book = self.book();
        book.ensure(&self.rules, account);
        let view = WalletView {
            account: account.to_owned(),
            balance: book.balances[account],
            ledger: book.ledger.get(account).cloned().unwrap_or_default(),
            archived: ArchivedPeriod::list(book.archive.get(account).cloned().unwrap_or_default()),
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
