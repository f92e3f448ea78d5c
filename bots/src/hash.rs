//! Zobrist hashing of a [`Position`] for the transposition table and for
//! spotting repetitions: one random key per (colour, role, square) and one
//! for the side to move, built at compile time from a fixed seed.

use super::rng::mix_step;
use jumpgate_rules::{Bitboard, Color, Position};

/// Keys indexed by `colour * 2 + is_king`, then square index.
const PIECE_KEYS: [[u64; 64]; 4] = {
    let mut keys = [[0u64; 64]; 4];
    let mut state = 0x4A75_6D70_6761_7465; // "Jumpgate"
    let mut kind = 0;
    while kind < 4 {
        let mut sq = 0;
        while sq < 64 {
            let (next, key) = mix_step(state);
            state = next;
            keys[kind][sq] = key;
            sq += 1;
        }
        kind += 1;
    }
    keys
};

const LIGHT_TO_MOVE: u64 = mix_step(0x5369_6465_546F_4D6F).1;

fn fold(keys: &[u64; 64], squares: Bitboard) -> u64 {
    squares
        .into_iter()
        .fold(0, |acc, sq| acc ^ keys[sq.index()])
}

/// The Zobrist key of a position (pieces and side to move).
pub fn zobrist(pos: &Position) -> u64 {
    let kings = pos.kings();
    let mut key = 0;
    for color in [Color::Dark, Color::Light] {
        let pieces = pos.pieces(color);
        let base = color.index() * 2;
        key ^= fold(&PIECE_KEYS[base], pieces & !kings);
        key ^= fold(&PIECE_KEYS[base + 1], pieces & kings);
    }
    if pos.turn() == Color::Light {
        key ^= LIGHT_TO_MOVE;
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use jumpgate_rules::{Game, RuleSet};

    #[test]
    fn keys_differ_by_move_and_agree_on_equal_positions() {
        let game = Game::new(RuleSet::Russian);
        let start = *game.position();
        let mut seen = std::collections::HashSet::new();
        for m in game.legal_moves() {
            assert!(seen.insert(zobrist(&start.after(m))));
        }
        assert_eq!(zobrist(&start), zobrist(&Position::start(RuleSet::Russian)));
        assert_ne!(zobrist(&start), 0);
    }
}
