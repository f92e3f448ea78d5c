//! Perft: counting the leaves of the move tree, the standard check of a
//! move generator against published tables.

use super::movegen::{count_legal, dedup_results, dedup_sequences, legal_moves};
use super::position::{Move, Position};
use super::variant::{RuleSet, Rules};
use crate::with_rules;

/// Counts leaf nodes `depth` plies below `pos`. With `unique`, capture paths
/// with the same origin, destination and captured set count once per node;
/// otherwise every capture sequence counts (the convention of published
/// tables: the same pieces taken in another order count again, but a flying
/// king's choice of intermediate landing square does not).
pub fn perft(rule_set: RuleSet, pos: &Position, depth: u32, unique: bool) -> u64 {
    // One move buffer per ply, allocated once: no allocation per node.
    let mut buffers: Vec<Vec<Move>> = (0..=depth).map(|_| Vec::with_capacity(64)).collect();
    with_rules!(rule_set, R => perft_inner::<R>(pos, depth, unique, &mut buffers))
}

fn perft_inner<R: Rules>(
    pos: &Position,
    depth: u32,
    unique: bool,
    buffers: &mut [Vec<Move>],
) -> u64 {
    if depth == 0 {
        return 1;
    }
    let (moves, rest) = buffers
        .split_first_mut()
        .expect("one buffer per remaining ply");
    if depth == 1 && !unique {
        return count_legal::<R>(pos, moves);
    }
    legal_moves::<R>(pos, moves);
    if unique {
        dedup_results(moves);
    } else {
        dedup_sequences(moves);
    }
    if depth == 1 {
        return moves.len() as u64;
    }
    let mut total = 0;
    for m in moves.iter() {
        total += perft_inner::<R>(&pos.after(m), depth - 1, unique, rest);
    }
    total
}

/// Leaf counts for every first move (a "divide"), for hunting differences
/// between two generators.
pub fn divide(rule_set: RuleSet, pos: &Position, depth: u32, unique: bool) -> Vec<(Move, u64)> {
    let mut moves = Vec::new();
    with_rules!(rule_set, R => legal_moves::<R>(pos, &mut moves));
    if unique {
        dedup_results(&mut moves);
    } else {
        dedup_sequences(&mut moves);
    }
    moves
        .into_iter()
        .map(|m| {
            let n = if depth <= 1 {
                1
            } else {
                perft(rule_set, &pos.after(&m), depth - 1, unique)
            };
            (m, n)
        })
        .collect()
}
