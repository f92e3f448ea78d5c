//! Property tests over random playouts in every rule set: the engine's
//! invariants, not only "it does not panic".

use jumpgate_rules::{DrawReason, Game, Outcome, RuleSet, Square, WinReason, fen, movegen, pdn};
use proptest::prelude::*;

fn rule_set() -> impl Strategy<Value = RuleSet> {
    prop::sample::select(RuleSet::ALL.to_vec())
}

fn total_pieces(game: &Game) -> u32 {
    game.position().occupied().count()
}

/// Whether `victim` lies on the diagonal strictly between `a` and `b`.
fn between(a: Square, b: Square, victim: Square) -> bool {
    let (df, dr) = (
        i32::from(b.file()) - i32::from(a.file()),
        i32::from(b.rank()) - i32::from(a.rank()),
    );
    let (vf, vr) = (
        i32::from(victim.file()) - i32::from(a.file()),
        i32::from(victim.rank()) - i32::from(a.rank()),
    );
    df.abs() == dr.abs()
        && vf.abs() == vr.abs()
        && vf.signum() == df.signum()
        && vr.signum() == dr.signum()
        && 0 < vf.abs()
        && vf.abs() < df.abs()
}

/// A capture lists its victims in the order they are jumped: the i-th lies
/// between the i-th and the next square of the path, and together they are
/// the captured set.
fn assert_jumped_in_order(m: &jumpgate_rules::Move) {
    let order: Vec<Square> = m.captured_in_order().collect();
    if !m.is_capture() {
        assert!(order.is_empty());
        return;
    }
    let path = m.path();
    assert_eq!(order.len(), path.len() - 1, "one victim per jump");
    for (i, victim) in order.iter().enumerate() {
        assert!(
            between(path[i], path[i + 1], *victim),
            "victim {i} is jumped by step {i}"
        );
    }
    assert_eq!(
        order.iter().copied().collect::<jumpgate_rules::Bitboard>(),
        m.captured()
    );
}

/// Plays up to `choices.len()` plies, picking moves by the given indices,
/// checking invariants at every step.
fn playout(rs: RuleSet, choices: &[usize], corrupt: &[u8]) -> Game {
    let mut game = Game::new(rs);
    for (ply, &choice) in choices.iter().enumerate() {
        if game.outcome().is_some() {
            break;
        }
        let legal = game.legal_moves().to_vec();
        assert!(!legal.is_empty());

        // FEN round-trips.
        let text = fen::write(rs, game.position());
        assert_eq!(
            fen::parse(rs, &text).as_ref(),
            Ok(game.position()),
            "{text}"
        );

        // Every listed move plays, by path and by its own notation.
        for m in &legal {
            let mut by_path = game.clone();
            by_path
                .play_path(m.path())
                .expect("listed move plays by path");
            let mut by_text = game.clone();
            let written = game.move_text(m);
            let played = by_text
                .play_text(&written)
                .expect("listed move plays by text");
            assert_eq!(played.result_key(), m.result_key(), "{written}");
            assert_eq!(by_path.position(), by_text.position());
            assert_jumped_in_order(m);
        }

        // A corrupted move is refused unless it happens to be legal, and
        // refusing leaves the game unchanged.
        let victim = legal[choice % legal.len()];
        let mut path = victim.path().to_vec();
        let at = corrupt[ply % corrupt.len()] as usize % path.len();
        path[at] = Square::playable()
            .nth(corrupt[(ply + 1) % corrupt.len()] as usize % 32)
            .unwrap();
        // The oracle follows `Game::play_path`: a path of two squares names a
        // move by its ends (legal when exactly one listed move has them, so a
        // multi-jump may be given as origin and destination); a longer path
        // must be one of the complete paths.
        let is_legal = if path.len() == 2 {
            legal
                .iter()
                .filter(|m| m.from() == path[0] && m.to() == path[1])
                .count()
                == 1
        } else {
            let mut all = Vec::new();
            with_all(rs, game.position(), &mut all);
            all.iter().any(|m| m.path() == path.as_slice())
        };
        let before = game.position().to_owned();
        let mut trial = game.clone();
        assert_eq!(trial.play_path(&path).is_ok(), is_legal, "{path:?}");
        if !is_legal {
            assert_eq!(*trial.position(), before);
        }

        let pieces_before = total_pieces(&game);
        let m = legal[choice % legal.len()];
        game.play(&m).expect("legal move plays");
        assert!(total_pieces(&game) <= pieces_before);
        assert_eq!(
            total_pieces(&game),
            pieces_before - m.captured().count(),
            "captures remove exactly the captured pieces"
        );
    }
    game
}

fn with_all(rs: RuleSet, pos: &jumpgate_rules::Position, out: &mut Vec<jumpgate_rules::Move>) {
    jumpgate_rules::with_rules!(rs, R => movegen::legal_moves::<R>(pos, out));
}

fn check_outcome(game: &Game) {
    let Some(outcome) = game.outcome() else {
        assert!(!game.legal_moves().is_empty());
        return;
    };
    assert!(game.legal_moves().is_empty(), "no moves after the end");
    let loser = game.turn();
    match outcome {
        Outcome::Win { winner, reason } => {
            assert_eq!(winner, loser.opposite());
            let mut moves = Vec::new();
            with_all(game.rule_set(), game.position(), &mut moves);
            match reason {
                WinReason::NoPieces => assert!(game.position().pieces(loser).is_empty()),
                WinReason::NoMoves => {
                    assert!(game.position().pieces(loser).any());
                    assert!(moves.is_empty());
                }
            }
        }
        Outcome::Draw { reason } => match reason {
            DrawReason::Repetition => assert!(game.repetitions() >= 3),
            DrawReason::NoProgress => {
                assert!(game.plies_without_progress() >= game.draw_table().king_only_plies)
            }
            DrawReason::EndgameLimit | DrawReason::MaterialUnchanged => {
                assert!(!game.draw_table().endgames.is_empty())
            }
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_playouts_keep_every_invariant(
        rs in rule_set(),
        choices in prop::collection::vec(any::<usize>(), 1..160),
        corrupt in prop::collection::vec(any::<u8>(), 2..8),
    ) {
        let game = playout(rs, &choices, &corrupt);
        check_outcome(&game);

        // PDN round-trips: the same moves and the same final position.
        let text = pdn::write(&game, &pdn::PdnTags::default());
        let back = pdn::read(rs, &text).expect("our own PDN reads back");
        prop_assert_eq!(back.position(), game.position());
        prop_assert_eq!(back.moves().len(), game.moves().len());
        prop_assert_eq!(back.outcome(), game.outcome());
    }

    #[test]
    fn long_playouts_always_finish(rs in rule_set(), seed in any::<u64>()) {
        // Pick moves pseudo-randomly until the game ends: the draw rules
        // guarantee an end.
        let mut game = Game::new(rs);
        let mut state = seed | 1;
        let mut plies = 0;
        while game.outcome().is_none() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let legal = game.legal_moves();
            let m = legal[(state % legal.len() as u64) as usize];
            game.play(&m).unwrap();
            plies += 1;
            prop_assert!(plies < 5000, "game did not end");
        }
        check_outcome(&game);
    }
}
