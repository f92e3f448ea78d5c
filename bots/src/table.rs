//! The transposition table: a fixed-size, always-allocated array of search
//! results keyed by Zobrist hash, with a move remembered by its result
//! (origin, destination, captured set) since paths may differ.

use jumpgate_rules::{Bitboard, Move, Square};

/// A move by its result, small enough to store and compare cheaply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct MoveKey {
    from: u8,
    to: u8,
    captured: u64,
}

impl MoveKey {
    pub(crate) fn of(m: &Move) -> MoveKey {
        let (from, to, captured): (Square, Square, Bitboard) = m.result_key();
        MoveKey {
            from: from.index() as u8,
            to: to.index() as u8,
            captured: captured.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    Exact,
    /// The true score is at least this (a beta cutoff).
    Lower,
    /// The true score is at most this (no move reached alpha).
    Upper,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub key: u64,
    pub depth: i32,
    pub score: i32,
    pub bound: Bound,
    pub best: Option<MoveKey>,
}

#[derive(Debug)]
pub(crate) struct TransTable {
    slots: Vec<Option<Entry>>,
    mask: usize,
    /// Slots come in pairs (even: the deepest result, odd: the latest).
    paired: bool,
}

impl TransTable {
    /// A table of `2^bits` slots.
    pub(crate) fn new(bits: u32) -> TransTable {
        let len = 1usize << bits;
        TransTable {
            slots: vec![None; len],
            mask: len - 1,
            paired: false,
        }
    }

    /// A table of `2^bits` slots in pairs: a position may sit in either
    /// slot of its pair, the first keeping the deepest result seen, the
    /// second the latest, so a deep result is not lost to a flood of
    /// shallow ones.
    pub(crate) fn with_pairs(bits: u32) -> TransTable {
        TransTable {
            paired: true,
            ..TransTable::new(bits.max(1))
        }
    }

    pub(crate) fn probe(&self, key: u64) -> Option<Entry> {
        let index = key as usize & self.mask;
        if !self.paired {
            return self.slots[index].filter(|e| e.key == key);
        }
        let first = index & !1;
        self.slots[first..=first + 1]
            .iter()
            .flatten()
            .find(|e| e.key == key)
            .copied()
    }

    /// Keeps the deeper result for the same position; a new position
    /// always takes the slot (recent results matter most).
    pub(crate) fn store(&mut self, entry: Entry) {
        if self.paired {
            return self.store_paired(entry);
        }
        let slot = &mut self.slots[entry.key as usize & self.mask];
        Self::keep_deeper(slot, entry);
    }

    fn keep_deeper(slot: &mut Option<Entry>, entry: Entry) {
        match slot {
            Some(old) if old.key == entry.key && old.depth > entry.depth => {
                if old.best.is_none() {
                    old.best = entry.best;
                }
            }
            _ => *slot = Some(entry),
        }
    }

    fn store_paired(&mut self, entry: Entry) {
        let first = entry.key as usize & self.mask & !1;
        let (deep, latest) = self.slots[first..=first + 1].split_at_mut(1);
        let (deep, latest) = (&mut deep[0], &mut latest[0]);
        match deep {
            Some(old) if old.key == entry.key => Self::keep_deeper(deep, entry),
            Some(old) if old.depth > entry.depth => Self::keep_deeper(latest, entry),
            _ => {
                // The deep slot's old result becomes the latest, which
                // also drops any older copy of this position there.
                match deep.replace(entry) {
                    Some(old) => *latest = Some(old),
                    None if latest.is_some_and(|l| l.key == entry.key) => *latest = None,
                    None => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: u64, depth: i32) -> Entry {
        Entry {
            key,
            depth,
            score: depth * 10,
            bound: Bound::Exact,
            best: None,
        }
    }

    #[test]
    fn a_paired_table_keeps_a_deep_result_through_shallow_ones() {
        // Keys 4, 5, 8 and 12 share a pair in a table of 4 slots.
        let mut t = TransTable::with_pairs(2);
        t.store(entry(4, 9));
        t.store(entry(8, 2));
        t.store(entry(12, 1));
        assert_eq!(t.probe(4).map(|e| e.depth), Some(9));
        assert_eq!(t.probe(12).map(|e| e.depth), Some(1));
        assert!(t.probe(8).is_none(), "the latest slot was taken over");
        // A deeper result takes the deep slot; the old one moves over.
        t.store(entry(5, 10));
        assert_eq!(t.probe(5).map(|e| e.depth), Some(10));
        assert_eq!(t.probe(4).map(|e| e.depth), Some(9));
        // The same position found deeper moves from latest to deep, once.
        t.store(entry(4, 11));
        assert_eq!(t.probe(4).map(|e| e.depth), Some(11));
        assert_eq!(t.probe(5).map(|e| e.depth), Some(10));
    }

    #[test]
    fn a_plain_table_replaces_a_different_position() {
        let mut t = TransTable::new(2);
        t.store(entry(4, 9));
        t.store(entry(8, 1));
        assert!(t.probe(4).is_none());
        t.store(entry(8, 0));
        assert_eq!(t.probe(8).map(|e| e.depth), Some(1));
    }
}
