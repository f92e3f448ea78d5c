//! Undo in solo games, on the record alone.

use super::*;
use crate::bots::Level;
use crate::rules::{Color, Variant};
use record::movers;

/// An orbit game from the start in which some side had to pass: the
/// first found by playing pseudo-random moves from a fixed seed.
fn orbit_moves_with_a_pass() -> (Vec<String>, Vec<Color>) {
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..500 {
        let mut game = VariantGame::new(Variant::Orbit, 0);
        let (mut moves, mut movers) = (Vec::new(), Vec::new());
        while game.outcome().is_none() {
            let legal = game.legal_moves();
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = &legal[(rng >> 33) as usize % legal.len()];
            movers.push(game.turn());
            moves.push(m.stored.clone());
            game.play_stored(&m.stored).unwrap();
            if movers.len() >= 2 && movers[movers.len() - 1] == movers[movers.len() - 2] {
                return (moves, movers);
            }
        }
    }
    panic!("no pass in 500 random orbit games");
}

fn record(moves: &[String], same_device: bool) -> SoloRecord {
    SoloRecord {
        kind: "solo".into(),
        id: "STEST".into(),
        owner: "u".into(),
        owner_name: "U".into(),
        rule_set: Variant::Orbit,
        seed: 0,
        same_device,
        level: (!same_device).then_some(Level::Tamer),
        ranked: false,
        you: Color::Dark,
        moves: moves.iter().cloned().map(SoloMove::Stored).collect(),
        result: None,
        version: 0,
        pending_score: false,
        score_decided: 0,
        closed: false,
    }
}

#[test]
fn undo_goes_back_before_your_last_move_even_after_a_pass() {
    let (moves, sides) = orbit_moves_with_a_pass();
    let r = record(&moves, false);
    assert_eq!(movers(&r), sides);
    let keep = undo_point(&r).unwrap();
    // The move undone is Dark's (yours), the last one Dark made.
    assert_eq!(sides[keep], Color::Dark);
    assert!(sides[keep + 1..].iter().all(|&c| c == Color::Light));
    // Afterwards it is your turn.
    let mut game = VariantGame::new(Variant::Orbit, 0);
    for m in &moves[..keep] {
        game.play_stored(m).unwrap();
    }
    assert_eq!(game.turn(), Color::Dark);
    // On one device, one move at a time.
    assert_eq!(undo_point(&record(&moves, true)), Some(moves.len() - 1));
    assert_eq!(undo_point(&record(&[], true)), None);
    assert_eq!(undo_point(&record(&[], false)), None);
}
