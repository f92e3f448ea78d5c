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
}

impl TransTable {
    /// A table of `2^bits` slots.
    pub(crate) fn new(bits: u32) -> TransTable {
        let len = 1usize << bits;
        TransTable {
            slots: vec![None; len],
            mask: len - 1,
        }
    }

    pub(crate) fn probe(&self, key: u64) -> Option<Entry> {
        self.slots[key as usize & self.mask].filter(|e| e.key == key)
    }

    /// Keeps the deeper result for the same position; a new position
    /// always takes the slot (recent results matter most).
    pub(crate) fn store(&mut self, entry: Entry) {
        let slot = &mut self.slots[entry.key as usize & self.mask];
        match slot {
            Some(old) if old.key == entry.key && old.depth > entry.depth => {
                if old.best.is_none() {
                    old.best = entry.best;
                }
            }
            _ => *slot = Some(entry),
        }
    }
}
