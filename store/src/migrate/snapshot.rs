//! The neutral copy of a store that `migrate` carries from one store to the
//! other: plain values for everything either store keeps (rooms with their
//! fences, logs and games, the indexes, wallets, idempotency keys, records
//! and leaderboards), times as absolute Unix milliseconds, and the counts
//! and money totals the copy is checked by.

use std::collections::BTreeMap;
use std::fmt;

use crate::StoredMove;
use crate::leaderboard::Standing;
use crate::wallet::{ArchiveTotals, LedgerEntry};

/// Everything one store holds, read at one moment (the embedded store in
/// one transaction; Redis while nothing runs on it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub rooms: Vec<RoomCopy>,
    /// "My games": `(identity, code)`.
    pub mine: Vec<(String, String)>,
    pub solo_notes: Vec<SoloNote>,
    /// Unloaded rooms by wake time: `(code, wake_ms)`, [`NEVER`] for a room
    /// with no timer.
    pub dormant: Vec<(String, u64)>,
    pub wallets: WalletsCopy,
    pub seen: Vec<SeenKey>,
    pub records: RecordsCopy,
    pub boards: Vec<BoardLine>,
}

/// A wake time that never comes (Redis's `+inf`).
pub const NEVER: u64 = u64::MAX;

/// One room or solo game: its record, fence and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoomCopy {
    pub code: String,
    /// The record (JSON) exactly as stored.
    pub record: String,
    /// The stored version (the fence's).
    pub version: u64,
    /// The owner's epoch. The copy is written with no owner at this epoch,
    /// so the next instance's claim moves it on (the old owner is not kept).
    pub epoch: u64,
    /// Unloaded (a dormant correspondence lobby), and its wake time.
    pub parked: bool,
    pub wake: Option<u64>,
    /// Listed as open (to resume); closed rooms are copied until they expire.
    pub open: bool,
    /// When its keys expire (Unix ms); `None`: kept.
    pub expires_at: Option<u64>,
    /// The move log, in `(game, ply)` order, every field with it.
    pub moves: Vec<StoredMove>,
    /// Finished games: `(game number, PDN)`, by game number.
    pub games: Vec<(u64, String)>,
}

/// The solo game an identity last started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoloNote {
    pub identity: String,
    pub game: String,
    pub expires_at: Option<u64>,
}

/// Bold Points: every wallet and what is held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalletsCopy {
    pub accounts: Vec<AccountCopy>,
    /// `(series, account, held)`.
    pub escrow: Vec<(String, String, i64)>,
    pub won: Vec<WonToday>,
    pub granted: i64,
    /// The escrow total as kept beside the balances.
    pub escrow_total: i64,
}

/// One wallet: balance, the ledger's latest entries (oldest first) and
/// the archive of older ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountCopy {
    pub account: String,
    pub balance: i64,
    pub ledger: Vec<LedgerEntry>,
    pub archive: ArchiveTotals,
}

/// What an account won on one UTC day (the daily cap), and when it was
/// last written (the day's count is forgotten two days after).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WonToday {
    pub day: u64,
    pub account: String,
    pub won: i64,
    pub touched: u64,
}

/// The families of idempotency keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Wallet,
    Records,
    Boards,
}

impl Family {
    pub const ALL: [Family; 3] = [Family::Wallet, Family::Records, Family::Boards];

    /// Its name in the data file's `seen` table.
    pub fn table_name(self) -> &'static str {
        match self {
            Family::Wallet => "wallet",
            Family::Records => "records",
            Family::Boards => "boards",
        }
    }

    /// Its `done` set in Redis (`…:done:at` holds the times).
    pub fn redis_done(self) -> String {
        let prefix = match self {
            Family::Wallet => crate::keys::WALLETS,
            Family::Records => crate::keys::RECORDS,
            Family::Boards => crate::keys::BOARDS,
        };
        format!("{prefix}:done")
    }

    pub fn from_table_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.table_name() == name)
    }
}

/// An idempotency key still within its window, with its decision time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenKey {
    pub family: Family,
    pub key: String,
    pub decided: u64,
}

/// Career records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordsCopy {
    /// `(account, series won)`.
    pub won: Vec<(String, i64)>,
    /// `(account, rule set, streak, best streak)`.
    pub streaks: Vec<(String, String, i64, i64)>,
    /// `(winner, loser, series won)`.
    pub head_to_head: Vec<(String, String, i64)>,
    /// `(a, b, drawn)`, the two accounts as stored.
    pub draws: Vec<(String, String, i64)>,
}

/// One player's line on one leaderboard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardLine {
    pub rule_set: String,
    pub account: String,
    pub standing: Standing,
}

impl Snapshot {
    /// Puts every list in one order, so two copies of the same data compare
    /// equal whichever store they were read from.
    pub fn sort(&mut self) {
        self.rooms.sort_by(|a, b| a.code.cmp(&b.code));
        for room in &mut self.rooms {
            room.moves.sort_by_key(|m| (m.game_no, m.ply));
            room.games.sort();
        }
        self.mine.sort();
        self.solo_notes.sort_by(|a, b| a.identity.cmp(&b.identity));
        self.dormant.sort();
        let w = &mut self.wallets;
        w.accounts.sort_by(|a, b| a.account.cmp(&b.account));
        w.escrow.sort();
        w.won
            .sort_by(|a, b| (a.day, &a.account).cmp(&(b.day, &b.account)));
        self.seen
            .sort_by(|a, b| (a.family, &a.key).cmp(&(b.family, &b.key)));
        let r = &mut self.records;
        r.won.sort();
        r.streaks.sort();
        r.head_to_head.sort();
        r.draws.sort();
        self.boards
            .sort_by(|a, b| (&a.rule_set, &a.account).cmp(&(&b.rule_set, &b.account)));
    }

    /// How much of each kind it holds.
    pub fn counts(&self) -> Counts {
        let w = &self.wallets;
        Counts {
            rooms: self.rooms.len(),
            open_rooms: self.rooms.iter().filter(|r| r.open).count(),
            parked_rooms: self.rooms.iter().filter(|r| r.parked).count(),
            moves: self.rooms.iter().map(|r| r.moves.len()).sum(),
            games: self.rooms.iter().map(|r| r.games.len()).sum(),
            my_games: self.mine.len(),
            solo_notes: self.solo_notes.len(),
            dormant: self.dormant.len(),
            accounts: w.accounts.len(),
            ledger_entries: w.accounts.iter().map(|a| a.ledger.len()).sum(),
            archived_periods: w.accounts.iter().map(|a| a.archive.len()).sum(),
            escrows: w.escrow.len(),
            won_today: w.won.len(),
            idempotency_keys: self.seen.len(),
            records: self.records.won.len()
                + self.records.streaks.len()
                + self.records.head_to_head.len()
                + self.records.draws.len(),
            board_entries: self.boards.len(),
        }
    }

    /// The money: every balance, the escrow held, everything granted.
    pub fn money(&self) -> Money {
        let w = &self.wallets;
        Money {
            balances: w.accounts.iter().map(|a| a.balance).sum(),
            escrow_held: w.escrow.iter().map(|e| e.2).sum(),
            escrow_total: w.escrow_total,
            granted: w.granted,
        }
    }

    /// Every balance by account.
    pub fn balances(&self) -> BTreeMap<&str, i64> {
        self.wallets
            .accounts
            .iter()
            .map(|a| (a.account.as_str(), a.balance))
            .collect()
    }

    /// What differs between this copy and `other` (empty: nothing): the
    /// counts of each kind, the money totals, every balance and every
    /// escrow.
    pub fn differences(&self, other: &Snapshot) -> Vec<String> {
        let mut found = Vec::new();
        let (a, b) = (self.counts(), other.counts());
        for ((name, x), (_, y)) in a.named().into_iter().zip(b.named()) {
            if x != y {
                found.push(format!("{name}: {x} in the source, {y} in the copy"));
            }
        }
        if self.money() != other.money() {
            found.push(format!(
                "money: {} in the source, {} in the copy",
                self.money(),
                other.money()
            ));
        }
        let (mine, theirs) = (self.balances(), other.balances());
        for (account, balance) in &mine {
            match theirs.get(account) {
                Some(copied) if copied == balance => {}
                copied => found.push(format!(
                    "the balance of {account}: {balance} in the source, {copied:?} in the copy"
                )),
            }
        }
        if self.wallets.escrow != other.wallets.escrow {
            found.push("the escrow held per series differs".to_owned());
        }
        found
    }
}

/// How much of each kind a store holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub rooms: usize,
    pub open_rooms: usize,
    pub parked_rooms: usize,
    pub moves: usize,
    pub games: usize,
    pub my_games: usize,
    pub solo_notes: usize,
    pub dormant: usize,
    pub accounts: usize,
    pub ledger_entries: usize,
    pub archived_periods: usize,
    pub escrows: usize,
    pub won_today: usize,
    pub idempotency_keys: usize,
    pub records: usize,
    pub board_entries: usize,
}

impl Counts {
    /// Each count with its name, in the order the summary prints them.
    pub fn named(&self) -> [(&'static str, usize); 16] {
        [
            ("rooms", self.rooms),
            ("open", self.open_rooms),
            ("unloaded", self.parked_rooms),
            ("moves", self.moves),
            ("finished games", self.games),
            ("my-games entries", self.my_games),
            ("solo notes", self.solo_notes),
            ("dormant entries", self.dormant),
            ("accounts", self.accounts),
            ("ledger entries", self.ledger_entries),
            ("archived periods", self.archived_periods),
            ("escrow holdings", self.escrows),
            ("daily winnings", self.won_today),
            ("idempotency keys", self.idempotency_keys),
            ("record entries", self.records),
            ("leaderboard entries", self.board_entries),
        ]
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .named()
            .iter()
            .map(|(name, n)| format!("{name}: {n}"))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// The money totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Money {
    pub balances: i64,
    /// The sum of every escrow holding.
    pub escrow_held: i64,
    /// The escrow total kept beside the balances.
    pub escrow_total: i64,
    pub granted: i64,
}

impl Money {
    /// Whether it adds up: balances plus escrow equal everything granted,
    /// and the escrow total is what the holdings hold.
    pub fn balanced(&self) -> bool {
        self.balances + self.escrow_total == self.granted && self.escrow_total == self.escrow_held
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "balances {} + escrow {} (held {}) = granted {}",
            self.balances, self.escrow_total, self.escrow_held, self.granted
        )
    }
}
