//! A simulated wallet: its ledger of the last entries and the monthly archive of
//! older ones, kept exactly as the wallet scripts keep them (`wallet/redis.rs`).

use std::collections::VecDeque;

use super::DAY_MS;
use super::activity::series_id;

/// What a ledger entry was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Grant,
    Escrow,
    Payout,
    Refund,
}

impl EntryKind {
    #[cfg(test)]
    pub const ALL: [EntryKind; 4] = [
        EntryKind::Grant,
        EntryKind::Escrow,
        EntryKind::Payout,
        EntryKind::Refund,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Grant => "grant",
            EntryKind::Escrow => "escrow",
            EntryKind::Payout => "payout",
            EntryKind::Refund => "refund",
        }
    }
}

/// One ledger entry, compactly; [`Entry::key`] spells its idempotency key.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The lobby and series number (unused for the initial grant).
    pub lobby: u32,
    pub series_no: u16,
    pub kind: EntryKind,
    pub amount: i64,
    pub at: u64,
}

impl Entry {
    /// The entry's key as the wallet scripts write it.
    pub fn key(&self) -> String {
        match self.kind {
            EntryKind::Grant => "initial-grant".to_owned(),
            EntryKind::Escrow => format!("{}:escrow", series_id(self.lobby, self.series_no)),
            EntryKind::Payout | EntryKind::Refund => {
                format!("{}:settle", series_id(self.lobby, self.series_no))
            }
        }
    }
}

/// Entries rolled out of a ledger in one UTC month, of one kind.
#[derive(Debug, Clone, Copy)]
pub struct Archived {
    /// `year × 12 + month − 1`.
    pub month: u32,
    pub kind: EntryKind,
    pub count: u64,
    pub amount: i64,
}

/// A wallet: its balance, its latest entries and the archive of older ones.
#[derive(Debug, Clone, Default)]
pub struct Wallet {
    pub balance: i64,
    pub ledger: VecDeque<Entry>,
    pub archive: Vec<Archived>,
}

/// The UTC month of a Unix millisecond time as `year × 12 + month − 1` (the
/// server's `month_of`, days to civil date).
pub fn month_index(ms: u64) -> u32 {
    let z = (ms / DAY_MS) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year * 12 + month - 1) as u32
}

/// `YYYY-MM` of a [`month_index`].
pub fn month_name(index: u32) -> String {
    format!("{:04}-{:02}", index / 12, index % 12 + 1)
}

impl Wallet {
    /// Adds `entry`, rolling the oldest past `keep` into the archive.
    pub fn push(&mut self, entry: Entry, keep: usize) {
        self.balance += entry.amount;
        self.ledger.push_back(entry);
        while self.ledger.len() > keep {
            let Some(old) = self.ledger.pop_front() else {
                break;
            };
            let month = month_index(old.at);
            match self
                .archive
                .iter_mut()
                .find(|a| a.month == month && a.kind == old.kind)
            {
                Some(slot) => {
                    slot.count += 1;
                    slot.amount += old.amount;
                }
                None => self.archive.push(Archived {
                    month,
                    kind: old.kind,
                    count: 1,
                    amount: old.amount,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_match_the_server() {
        // 2000-02-29 12:00 UTC, 2000-03-01 00:00 UTC, 2026-12-01 00:00 UTC.
        assert_eq!(month_name(month_index(951_825_600_000)), "2000-02");
        assert_eq!(month_name(month_index(951_868_800_000)), "2000-03");
        assert_eq!(month_name(month_index(1_796_083_200_000)), "2026-12");
        assert_eq!(month_name(month_index(1_796_083_199_999)), "2026-11");
    }

    #[test]
    fn a_ledger_keeps_its_last_entries_and_the_balance_is_exact() {
        let mut w = Wallet::default();
        for i in 0..250u64 {
            let kind = EntryKind::ALL[(i % 4) as usize];
            w.push(
                Entry {
                    lobby: 1,
                    series_no: 1,
                    kind,
                    amount: i as i64 - 100,
                    at: 1_700_000_000_000 + i * 10 * DAY_MS,
                },
                100,
            );
        }
        assert_eq!(w.ledger.len(), 100);
        let archived: i64 = w.archive.iter().map(|a| a.amount).sum();
        let recent: i64 = w.ledger.iter().map(|e| e.amount).sum();
        assert_eq!(w.balance, archived + recent);
        assert_eq!(w.archive.iter().map(|a| a.count).sum::<u64>(), 150);
    }
}
