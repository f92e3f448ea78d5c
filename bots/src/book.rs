//! The Executive's opening book, one per rule set, made by our own deeper
//! searches of the early plies (`jumpgate-engine book`, see the bots README) and
//! stored in the crate as `book/<rule set>.bin`.
//!
//! A file is a sorted list of 12-byte entries: the position's Zobrist key
//! (little-endian `u64`), the move's origin and destination squares, and
//! its score (`i16`, hundredths of a man) from the side to move's view.
//! Every move within [`MARGIN`] of a position's best is kept, and the
//! Executive picks among them by its seed, so games differ.

use std::collections::{HashSet, VecDeque};

use jumpgate_rules::movegen::{dedup_results, legal_moves};
use jumpgate_rules::{Move, Position, RuleSet, Rules, with_rules};

use crate::hash::zobrist;
use crate::rng::SplitMix64;
use crate::search::{Evaluation, History, Limits, SearchFeatures, Searcher};
use crate::tuned::TunedWeights;

/// Moves this close to the best one (hundredths of a man) stay in.
pub const MARGIN: i32 = 12;
/// At most this many moves per position.
pub const CHOICES: usize = 3;
const ENTRY: usize = 12;

static AMERICAN: &[u8] = include_bytes!("../book/american.bin");
static BRAZILIAN: &[u8] = include_bytes!("../book/brazilian.bin");
static RUSSIAN: &[u8] = include_bytes!("../book/russian.bin");
static SPANISH: &[u8] = include_bytes!("../book/spanish.bin");
static ITALIAN: &[u8] = include_bytes!("../book/italian.bin");
static THAI: &[u8] = include_bytes!("../book/thai.bin");

fn bytes(rule_set: RuleSet) -> &'static [u8] {
    match rule_set {
        RuleSet::American => AMERICAN,
        RuleSet::Brazilian => BRAZILIAN,
        RuleSet::Russian => RUSSIAN,
        RuleSet::Spanish => SPANISH,
        RuleSet::Italian => ITALIAN,
        RuleSet::Thai => THAI,
    }
}

/// One book move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookMove {
    pub key: u64,
    pub from: u8,
    pub to: u8,
    pub score: i16,
}

impl BookMove {
    fn read(chunk: &[u8]) -> BookMove {
        let mut key = [0u8; 8];
        key.copy_from_slice(&chunk[..8]);
        BookMove {
            key: u64::from_le_bytes(key),
            from: chunk[8],
            to: chunk[9],
            score: i16::from_le_bytes([chunk[10], chunk[11]]),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.to_le_bytes());
        out.push(self.from);
        out.push(self.to);
        out.extend_from_slice(&self.score.to_le_bytes());
    }
}

/// The book moves stored for `key` in `book`.
pub fn lookup_in(book: &[u8], key: u64) -> Vec<BookMove> {
    let n = book.len() / ENTRY;
    let at = |i: usize| BookMove::read(&book[i * ENTRY..(i + 1) * ENTRY]);
    // The first entry whose key is not below `key`.
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if at(mid).key < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo..n).map(at).take_while(|e| e.key == key).collect()
}

/// The number of positions in a rule set's book.
pub fn positions(rule_set: RuleSet) -> usize {
    let book = bytes(rule_set);
    let mut keys: Vec<u64> = book
        .chunks_exact(ENTRY)
        .map(|c| BookMove::read(c).key)
        .collect();
    keys.dedup();
    keys.len()
}

/// The book's move in `pos` among `legal`, picked by `seed` among the
/// stored ones; `None` out of book.
pub fn choose(rule_set: RuleSet, pos: &Position, legal: &[Move], seed: u64) -> Option<Move> {
    choose_in(bytes(rule_set), pos, legal, seed)
}

fn choose_in(book: &[u8], pos: &Position, legal: &[Move], seed: u64) -> Option<Move> {
    let key = zobrist(pos);
    let stored = lookup_in(book, key);
    let playable: Vec<Move> = stored
        .iter()
        .filter_map(|e| {
            let mut same = legal.iter().filter(|m| {
                m.from().index() == usize::from(e.from) && m.to().index() == usize::from(e.to)
            });
            match (same.next(), same.next()) {
                (Some(m), None) => Some(*m),
                _ => None,
            }
        })
        .collect();
    if playable.is_empty() {
        return None;
    }
    let mut rng = SplitMix64::new(seed ^ key);
    Some(playable[rng.below(playable.len() as u64) as usize])
}

/// Builds a rule set's book: every position within `full_plies` of the
/// start has all its moves followed, deeper ones (to `max_plies`) only
/// their book moves. Each position's moves are scored by a search of
/// `nodes` nodes a move with the second Executive's (V2's) evaluation;
/// `progress` hears
/// the number of positions done. Returns the file's bytes.
pub fn build(
    rule_set: RuleSet,
    full_plies: usize,
    max_plies: usize,
    nodes: u64,
    mut progress: impl FnMut(usize),
) -> Vec<u8> {
    let mut entries: Vec<BookMove> = Vec::new();
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(Position::start(rule_set), 0usize)]);
    let mut done = 0;
    while let Some((pos, ply)) = queue.pop_front() {
        let key = zobrist(&pos);
        if ply >= max_plies || !seen.insert(key) {
            continue;
        }
        let scored = with_rules!(rule_set, R => score_moves::<R>(rule_set, &pos, nodes));
        done += 1;
        progress(done);
        let Some(best) = scored.iter().map(|&(_, s)| s).max() else {
            continue;
        };
        let mut kept: Vec<(Move, i32)> = scored
            .iter()
            .copied()
            .filter(|&(_, s)| s >= best - MARGIN)
            .collect();
        kept.sort_by_key(|&(_, s)| std::cmp::Reverse(s));
        kept.truncate(CHOICES);
        for (m, s) in &kept {
            entries.push(BookMove {
                key,
                from: m.from().index() as u8,
                to: m.to().index() as u8,
                score: (*s).clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16,
            });
        }
        let follow: Vec<Move> = if ply < full_plies {
            scored.iter().map(|&(m, _)| m).collect()
        } else {
            kept.iter().map(|&(m, _)| m).collect()
        };
        for m in follow {
            queue.push_back((pos.after(&m), ply + 1));
        }
    }
    entries.sort_by_key(|e| (e.key, std::cmp::Reverse(e.score)));
    let mut out = Vec::with_capacity(entries.len() * ENTRY);
    for e in &entries {
        e.write(&mut out);
    }
    out
}

/// Every legal move of `pos` with its score after a search of `nodes`.
fn score_moves<R: Rules>(rule_set: RuleSet, pos: &Position, nodes: u64) -> Vec<(Move, i32)> {
    let mut legal = Vec::new();
    legal_moves::<R>(pos, &mut legal);
    dedup_results(&mut legal);
    let limits = Limits {
        max_depth: 64,
        max_nodes: nodes,
        deadline: None,
        soft_deadline: None,
        plan: None,
        // The books in the crate were built with the unrefined search and
        // the first fit's weights (V2's); both stay so that the commands
        // rebuild them exactly.
        features: SearchFeatures::NONE,
    };
    let eval = Evaluation::Tuned(TunedWeights::second_version(rule_set));
    let history = History {
        hashes: vec![zobrist(pos)],
    };
    let mut searcher = Searcher::<R>::new(eval, limits, 20, history);
    let (scores, _) = searcher.score_all(pos, 0, &legal);
    legal.into_iter().zip(scores).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jumpgate_rules::Game;

    #[test]
    fn a_built_book_is_found_again_and_varies_with_the_seed() {
        let book = build(RuleSet::Russian, 1, 2, 3_000, |_| {});
        assert_eq!(book.len() % ENTRY, 0);
        let game = Game::new(RuleSet::Russian);
        let start = zobrist(game.position());
        let stored = lookup_in(&book, start);
        assert!(!stored.is_empty() && stored.len() <= CHOICES);
        assert!(stored.windows(2).all(|w| w[0].score >= w[1].score));
        let best = i32::from(stored[0].score);
        assert!(stored.iter().all(|e| i32::from(e.score) >= best - MARGIN));
        let picks: HashSet<_> = (0..32)
            .filter_map(|seed| choose_in(&book, game.position(), game.legal_moves(), seed))
            .map(|m| m.result_key())
            .collect();
        assert_eq!(picks.len(), stored.len());
        // Every reply to the first move is in the book as well.
        for m in game.legal_moves() {
            assert!(!lookup_in(&book, zobrist(&game.position().after(m))).is_empty());
        }
        // Out of book: no move.
        assert_eq!(choose_in(&[], game.position(), game.legal_moves(), 1), None);
    }

    #[test]
    fn every_stored_book_answers_the_start_and_every_reply_to_it() {
        for rs in RuleSet::ALL {
            assert_eq!(bytes(rs).len() % ENTRY, 0, "{rs}");
            assert!(positions(rs) > 50, "{rs}");
            let game = Game::new(rs);
            let m = choose(rs, game.position(), game.legal_moves(), 7).expect("in book");
            assert!(game.legal_moves().contains(&m), "{rs}");
            for first in game.legal_moves() {
                let mut next = game.clone();
                next.play(first).expect("legal");
                let reply = choose(rs, next.position(), next.legal_moves(), 7);
                assert!(
                    reply.is_some_and(|r| next.legal_moves().contains(&r)),
                    "{rs}"
                );
            }
        }
    }
}
