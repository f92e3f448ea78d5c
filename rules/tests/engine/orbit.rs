//! Space Checkers on the orbit board: hand-built positions for every rule,
//! perft cross-checked against a slow second generator, and random playouts.

use std::collections::HashMap;

use jumpgate_rules::orbit::{
    ORBIT_SETUP, OrbitColor, OrbitEndReason, OrbitError, OrbitGame, OrbitMove, OrbitMoveKind,
    OrbitPosition, OrbitSquare, score,
};
use proptest::prelude::*;

use OrbitColor::{Dark, Light};

fn sq(name: &str) -> OrbitSquare {
    OrbitSquare::parse(name).expect("square name")
}

fn squares(list: &str) -> Vec<OrbitSquare> {
    list.split_whitespace().map(sq).collect()
}

/// A position past both players' first turns.
fn position(dark: &str, light: &str, turn: OrbitColor) -> OrbitPosition {
    let mut pos =
        OrbitPosition::from_squares(&squares(dark), &squares(light), turn).expect("position");
    pos.first_turn = [false, false];
    pos
}

fn game(dark: &str, light: &str, turn: OrbitColor) -> OrbitGame {
    OrbitGame::from_position(position(dark, light, turn)).expect("game")
}

/// Legal moves from `from`, written long-form and sorted.
fn moves_from(game: &OrbitGame, from: &str) -> Vec<String> {
    let mut v: Vec<String> = game
        .legal_moves()
        .iter()
        .filter(|m| m.from == sq(from))
        .map(OrbitMove::long_text)
        .collect();
    v.sort();
    v
}

fn find(game: &OrbitGame, text: &str) -> OrbitMove {
    game.parse_move(text).expect(text)
}

#[test]
fn square_names_round_trip() {
    let all: Vec<OrbitSquare> = OrbitSquare::all().collect();
    assert_eq!(all.len(), 25);
    for s in all {
        assert_eq!(OrbitSquare::parse(&s.name()), Some(s));
    }
    assert_eq!(sq("a7"), OrbitSquare::Outer(7));
    assert_eq!(sq("B12"), OrbitSquare::Inner(12));
    assert_eq!(sq("C"), OrbitSquare::C);
    for bad in ["A0", "B13", "C1", "D3", "A", "", "A01", "B-1"] {
        assert_eq!(OrbitSquare::parse(bad), None, "{bad}");
    }
}

#[test]
fn start_position() {
    let g = OrbitGame::new();
    let pos = g.position();
    assert_eq!(g.turn(), Dark);
    assert_eq!(pos.pieces(Dark), squares("A1 A2 A3 A4 A5 A12"));
    assert_eq!(pos.pieces(Light), squares("A6 A7 A8 A9 A10 A11"));
    assert_eq!(pos.first_turn, [true, true]);
    // Proceed and exit for each of six pieces; no diagonals on the first turn.
    let moves = g.legal_moves();
    assert_eq!(moves.len(), 12);
    assert!(moves.iter().all(|m| !m.kind.is_diagonal()));
}

#[test]
fn proceed_to_core_and_exit() {
    let g = game("A1", "A7", Dark);
    let m = find(&g, "A1-C");
    assert_eq!(m.kind, OrbitMoveKind::Proceed);
    assert_eq!(m.path, squares("B1 C"));
    let m = find(&g, "A1-B1");
    assert_eq!(m.kind, OrbitMoveKind::Exit);
    assert_eq!(m.path, squares("B1"));
}

#[test]
fn outer_moves_blocked() {
    // Something on the ray's inner square blocks every move from the outer one.
    let g = game("A1 B6", "B1 A7", Dark);
    assert!(moves_from(&g, "A1").is_empty());
    // An occupied core blocks only the proceed.
    let g = game("A1", "C", Dark);
    assert!(g.parse_move("A1-C").is_err());
    assert!(g.parse_move("A1-B1").is_ok());
}

#[test]
fn diagonal_and_double_diagonal() {
    let g = game("A1", "A7", Dark);
    assert_eq!(
        moves_from(&g, "A1"),
        vec![
            "A1-B1",
            "A1-B1-B12",
            "A1-B1-B12-B11",
            "A1-B1-B2",
            "A1-B1-B2-B3",
            "A1-B1-C",
        ]
    );
    let m = find(&g, "A1-B3");
    assert_eq!(m.kind, OrbitMoveKind::DoubleDiagonal);
    assert_eq!(m.boosts, 0);
    let m = find(&g, "A1-B12");
    assert_eq!(m.kind, OrbitMoveKind::Diagonal);
}

#[test]
fn no_diagonals_on_first_turn() {
    let mut pos = position("A1 A3", "A7", Dark);
    pos.first_turn = [true, false];
    let g = OrbitGame::from_position(pos.clone()).expect("game");
    assert_eq!(moves_from(&g, "A1"), vec!["A1-B1", "A1-B1-C"]);
    // Light's flag is its own: after Dark's first move, Light may go diagonal.
    pos.first_turn = [true, false];
    let mut g = OrbitGame::from_position(pos).expect("game");
    g.play_text("A1-B1").expect("exit");
    assert!(g.parse_move("A7-B8").is_ok());
    assert_eq!(g.position().first_turn, [false, false]);
}

#[test]
fn diagonal_paths_blocked() {
    // B2 taken: no single or double exit clockwise.
    let g = game("A1", "B2 A7", Dark);
    assert!(g.parse_move("A1-B2").is_err());
    assert!(g.parse_move("A1-B3").is_err());
    assert!(g.parse_move("A1-B12").is_ok());
    // B3 taken: single clockwise fine, double not.
    let g = game("A1 B3", "A7", Dark);
    assert!(g.parse_move("A1-B2").is_ok());
    assert!(g.parse_move("A1-B3").is_err());
}

#[test]
fn return_from_inner() {
    let g = game("B4 A11", "A9", Dark);
    let m = find(&g, "B4-A4");
    assert_eq!(m.kind, OrbitMoveKind::Return);
    assert_eq!(moves_from(&g, "B4"), vec!["B4-A4"]);
    let g = game("B4 A10", "A4", Dark);
    assert!(moves_from(&g, "B4").is_empty());
}

#[test]
fn out_from_core() {
    let g = game("C", "B5 A7", Dark);
    let moves = moves_from(&g, "C");
    assert_eq!(moves.len(), 10);
    assert!(moves.contains(&"C-B1-A1".to_owned()));
    assert!(!moves.iter().any(|m| m.ends_with("A5") || m.ends_with("A7")));
    let m = find(&g, "C-A3");
    assert_eq!(m.kind, OrbitMoveKind::FromCore);
    assert_eq!(m.path, squares("B3 A3"));
}

#[test]
fn boost_once() {
    let g = game("A1 A2", "A7", Dark);
    let m = find(&g, "A1-B4");
    assert_eq!(m.kind, OrbitMoveKind::Diagonal);
    assert_eq!(m.boosts, 1);
    assert_eq!(m.path, squares("B1 B2 B3 B4"));
    // Boosting is compulsory: no stop on B2.
    assert!(g.parse_move("A1-B2").is_err());
}

#[test]
fn boost_after_double_diagonal() {
    let g = game("A1 A3", "A7", Dark);
    let m = find(&g, "A1-B5");
    assert_eq!(m.kind, OrbitMoveKind::DoubleDiagonal);
    assert_eq!(m.boosts, 1);
    assert_eq!(m.path, squares("B1 B2 B3 B4 B5"));
}

#[test]
fn boost_twice_and_three_times() {
    let g = game("A1 A2 A4", "A9", Dark);
    let m = find(&g, "A1-B6");
    assert_eq!(m.boosts, 2);
    let g = game("A1 A2 A4 A6", "A9", Dark);
    let m = find(&g, "A1-B8");
    assert_eq!(m.boosts, 3);
    assert_eq!(m.path, squares("B1 B2 B3 B4 B5 B6 B7 B8"));
    // Three is the most, even with another own piece on A8.
    let g = game("A1 A2 A4 A6 A8", "A11", Dark);
    let m = find(&g, "A1-B8");
    assert_eq!(m.boosts, 3);
}

#[test]
fn boost_counter_clockwise() {
    let g = game("A1 A12", "A7", Dark);
    let m = find(&g, "A1-B10");
    assert_eq!(m.boosts, 1);
    assert_eq!(m.path, squares("B1 B12 B11 B10"));
}

#[test]
fn boost_blocked() {
    // Second boost square taken: the piece stays on B2.
    let g = game("A1 A2 B4", "A9", Dark);
    let m = find(&g, "A1-B2");
    assert_eq!(m.boosts, 0);
    assert!(m.captures.is_empty());
    // First boost path fine, second blocked: one boost only.
    let g = game("A1 A2 A4 B6", "A9", Dark);
    let m = find(&g, "A1-B4");
    assert_eq!(m.boosts, 1);
}

#[test]
fn no_boost_beside_opponent_on_ray() {
    let g = game("A1", "A2", Dark);
    let m = find(&g, "A1-B2");
    assert_eq!(m.boosts, 0);
    assert_eq!(m.path, squares("B1 B2"));
}

#[test]
fn diagonal_captures_neighbour() {
    let mut g = game("A1", "B3 A8", Dark);
    let m = find(&g, "A1-B2");
    assert_eq!(m.captures, squares("B3"));
    g.play(&m).expect("capture");
    assert_eq!(g.position().get(sq("B3")), None);
    assert_eq!(g.position().get(sq("B2")), Some(Dark));
    assert_eq!(g.position().captured, [0, 1]);
    assert_eq!(g.position().count(Light), 1);
}

#[test]
fn boost_blocked_by_opponent_then_captures_it() {
    let g = game("A1 A2", "B3 A9", Dark);
    let m = find(&g, "A1-B2");
    assert_eq!(m.boosts, 0);
    assert_eq!(m.captures, squares("B3"));
}

#[test]
fn capture_after_boost_and_double() {
    let g = game("A1 A2", "B5 A9", Dark);
    let m = find(&g, "A1-B4");
    assert_eq!(m.boosts, 1);
    assert_eq!(m.captures, squares("B5"));
    let g = game("A1", "B4 A9", Dark);
    let m = find(&g, "A1-B3");
    assert_eq!(m.kind, OrbitMoveKind::DoubleDiagonal);
    assert_eq!(m.captures, squares("B4"));
}

/// The square behind a diagonal exit is on its own (clear) path, so at most
/// the square ahead can hold a victim: a two-sided capture cannot happen.
#[test]
fn capture_never_behind() {
    let g = game("A1", "B12 B3 A9", Dark);
    let m = find(&g, "A1-B2");
    assert_eq!(m.captures, squares("B3"));
    for m in g.legal_moves() {
        assert!(m.captures.len() <= 1, "{m}");
    }
}

#[test]
fn only_diagonals_capture() {
    let mut g = game("A1 A9", "B2 B12", Dark);
    g.play_text("A1-B1").expect("exit");
    assert_eq!(g.position().count(Light), 2);
    let mut g = game("C A9", "B2 B12", Dark);
    g.play_text("C-A1").expect("from core");
    assert_eq!(g.position().count(Light), 2);
}

#[test]
fn cannot_capture_own() {
    let g = game("A1 B3", "A9", Dark);
    let m = find(&g, "A1-B2");
    assert!(m.captures.is_empty());
}

#[test]
fn ends_when_half_lost() {
    let mut pos = position("A1 A9", "B3 A5 A6", Dark);
    pos.captured = [0, 2];
    let mut g = OrbitGame::from_position(pos).expect("game");
    assert!(g.outcome().is_none());
    g.play_text("A1-B2").expect("capture");
    let out = g.outcome().expect("over");
    assert_eq!(out.reason, OrbitEndReason::HalfLost(Light));
    // Dark: B2 and A9, one in a row = all but one: 1; Light has none inner: +2.
    // Light: A5 A6, none in a row: 0; Dark has one inner: +2.
    assert_eq!(out.points, [3, 2]);
    assert_eq!(out.winner, Some(Dark));
    assert_eq!(g.play_text("A9-B9"), Err(OrbitError::GameOver));
    assert!(g.legal_moves().is_empty());
}

#[test]
fn ends_when_all_in_row() {
    let mut g = game("B1 B2 A3", "A7 A8", Dark);
    g.play_text("A3-B3").expect("exit");
    let out = g.outcome().expect("over");
    assert_eq!(out.reason, OrbitEndReason::InARow(Dark));
    // Dark 3 (row) + 2 (Light none inner); Light 0 + 2 (Dark three inner).
    assert_eq!(out.points, [5, 2]);
    assert_eq!(out.winner, Some(Dark));
}

#[test]
fn row_wraps_round_the_orbit() {
    let g = game("B12 B1 B11", "A5", Light);
    assert_eq!(
        g.outcome().map(|o| o.reason),
        Some(OrbitEndReason::InARow(Dark))
    );
}

#[test]
fn scoring_cases() {
    // All six in a row; Light with four inner (not weak): 3 for Dark.
    let p = position("B1 B2 B3 B4 B5 B6", "B8 B9 B10 B12 A7 A11", Dark);
    assert_eq!(score(&p), [3, 0]);
    // All but one in a row: 1. Light three inner: Dark +2. Dark five inner: Light +0.
    let p = position("B1 B2 B3 B4 B5 A9", "B8 B10 B12 A7 A11 A6", Dark);
    assert_eq!(score(&p), [3, 0]);
    // Neither in a row; both at most half inner: 2 each, a draw on points.
    let p = position("B1 B3 A5", "B7 B9 A11", Dark);
    assert_eq!(score(&p), [2, 2]);
    // Four inner is more than half: no 2 points for the other side.
    let p = position("B1 B3 B5 B7 A2 A4", "B9 B11 A6 A8 A10 A12", Dark);
    assert_eq!(score(&p), [2, 0]);
    // A single remaining piece does not score "all but one".
    let p = position("A1", "A7", Dark);
    assert_eq!(score(&p), [2, 2]);
}

#[test]
fn no_moves_for_either_ends_game() {
    let g = game("B1 B3", "A1 A3", Dark);
    let out = g.outcome().expect("over");
    assert_eq!(out.reason, OrbitEndReason::NoMoves);
    // Dark: all but one in a row (1) + Light none inner (2); Light: 0 + 2.
    assert_eq!(out.points, [3, 2]);
    assert_eq!(out.winner, Some(Dark));
}

#[test]
fn side_without_moves_passes() {
    let g = game("B1 B3 A6", "A1 A3", Light);
    assert!(g.outcome().is_none());
    assert_eq!(g.turn(), Dark);
    let mut g = game("B1 A3 A6", "A1 A8", Dark);
    // Dark's B1-A... is blocked; after Dark's A3-B3 Light (A1 blocked) still has A8.
    g.play_text("A3-B3").expect("exit");
    assert_eq!(g.turn(), Light);
}

#[test]
fn ply_cap_ends_game() {
    let mut g = game("A1 A3", "A7 A9", Dark);
    let cycle = ["A1-B1", "A7-B7", "B1-A1", "B7-A7"];
    for i in 0..ORBIT_SETUP.ply_cap {
        assert!(g.outcome().is_none(), "ended early at ply {i}");
        g.play_text(cycle[i as usize % 4]).expect("shuffle");
    }
    assert_eq!(g.ply(), ORBIT_SETUP.ply_cap);
    let out = g.outcome().expect("capped");
    assert_eq!(out.reason, OrbitEndReason::PlyCap);
    assert_eq!(out.points, [2, 2]);
    assert_eq!(out.winner, None);
}

#[test]
fn illegal_moves_leave_game_unchanged() {
    let mut g = OrbitGame::new();
    let before = g.clone();
    assert!(matches!(
        g.play_text("A1-B2"),
        Err(OrbitError::IllegalMove(_))
    ));
    assert!(matches!(
        g.play_text("A6-B6"),
        Err(OrbitError::IllegalMove(_))
    ));
    assert!(matches!(
        g.play_text("X1-B1"),
        Err(OrbitError::BadNotation(_))
    ));
    assert!(matches!(g.play_text("A1"), Err(OrbitError::BadNotation(_))));
    let mut m = find(&g, "A1-B1");
    m.path = squares("B2");
    assert!(matches!(g.play(&m), Err(OrbitError::IllegalMove(_))));
    m.from = OrbitSquare::Outer(0);
    assert!(g.play(&m).is_err());
    assert_eq!(g, before);
}

#[test]
fn ambiguous_short_form() {
    // Clockwise: B2, boosts to B4 and B6 (A2, A4 own). Counter-clockwise:
    // B12, boosts to B10, B8, B6 (A12, A10, A8 own). Both end on B6.
    let mut g = game("A1 A2 A4 A8 A10 A12", "A7 A5", Dark);
    assert!(matches!(
        g.parse_move("A1-B6"),
        Err(OrbitError::Ambiguous(_))
    ));
    let cw = find(&g, "A1-B1-B2-B3-B4-B5-B6");
    assert_eq!(cw.boosts, 2);
    let ccw = find(&g, "A1-B1-B12-B11-B10-B9-B8-B7-B6");
    assert_eq!(ccw.boosts, 3);
    assert_eq!(g.move_text(&ccw), "A1-B1-B12-B11-B10-B9-B8-B7-B6");
    let exit = find(&g, "A1-B1");
    assert_eq!(g.move_text(&exit), "A1-B1");
    g.play_text("A1-B1-B12-B11-B10-B9-B8-B7-B6")
        .expect("long form");
    assert_eq!(g.position().get(sq("B6")), Some(Dark));
}

#[test]
fn every_move_round_trips_through_text() {
    let g = game("A1 A2 A4 C B9", "A7 B11 B3", Dark);
    for m in g.legal_moves() {
        assert_eq!(g.parse_move(&g.move_text(&m)), Ok(m.clone()));
        assert_eq!(g.parse_move(&m.long_text()), Ok(m));
    }
}

// ---------------------------------------------------------------------------
// A second, deliberately simple generator over the same rules: squares are
// strings, the board a map, moves produce whole new states.

#[derive(Clone, Debug)]
struct Slow {
    cells: HashMap<String, usize>,
    turn: usize,
    fresh: [bool; 2],
    lost: [u32; 2],
}

fn wrap(k: i32) -> i32 {
    ((k - 1) % 12 + 12) % 12 + 1
}

fn a(k: i32) -> String {
    format!("A{}", wrap(k))
}

fn b(k: i32) -> String {
    format!("B{}", wrap(k))
}

impl Slow {
    fn from_game(g: &OrbitGame) -> Self {
        let pos = g.position();
        let mut cells = HashMap::new();
        for s in OrbitSquare::all() {
            if let Some(c) = pos.get(s) {
                cells.insert(s.name(), if c == Dark { 0 } else { 1 });
            }
        }
        Slow {
            cells,
            turn: if pos.turn == Dark { 0 } else { 1 },
            fresh: pos.first_turn,
            lost: [u32::from(pos.captured[0]), u32::from(pos.captured[1])],
        }
    }

    fn free(&self, s: &str) -> bool {
        !self.cells.contains_key(s)
    }

    fn owns(&self, s: &str, side: usize) -> bool {
        self.cells.get(s) == Some(&side)
    }

    fn step(&self, from: &str, to: &str) -> Slow {
        let mut n = self.clone();
        n.cells.remove(from);
        n.cells.insert(to.to_owned(), self.turn);
        n.fresh[self.turn] = false;
        n.turn = 1 - self.turn;
        n
    }

    fn diag(&self, k: i32, d: i32, steps: i32) -> Slow {
        let me = self.turn;
        let mut n = self.clone();
        n.cells.remove(&a(k));
        let mut at = k + d * steps;
        let mut boosts = 0;
        while boosts < 3 && n.owns(&a(at), me) && n.free(&b(at + d)) && n.free(&b(at + 2 * d)) {
            at += 2 * d;
            boosts += 1;
        }
        n.cells.insert(b(at), me);
        for side in [at - 1, at + 1] {
            if n.owns(&b(side), 1 - me) {
                n.cells.remove(&b(side));
                n.lost[1 - me] += 1;
            }
        }
        n.fresh[me] = false;
        n.turn = 1 - me;
        n
    }

    fn children(&self) -> Vec<Slow> {
        let me = self.turn;
        let mut out = Vec::new();
        for k in 1..=12 {
            if self.owns(&a(k), me) && self.free(&b(k)) {
                if self.free("C") {
                    out.push(self.step(&a(k), "C"));
                }
                out.push(self.step(&a(k), &b(k)));
                if !self.fresh[me] {
                    for d in [1, -1] {
                        for steps in 1..=2 {
                            if (1..=steps).all(|i| self.free(&b(k + d * i))) {
                                out.push(self.diag(k, d, steps));
                            }
                        }
                    }
                }
            }
            if self.owns(&b(k), me) && self.free(&a(k)) {
                out.push(self.step(&b(k), &a(k)));
            }
            if self.owns("C", me) && self.free(&b(k)) && self.free(&a(k)) {
                out.push(self.step("C", &a(k)));
            }
        }
        out
    }

    fn over(&self) -> bool {
        if self.lost.iter().any(|&l| l >= 3) {
            return true;
        }
        (0..2).any(|side| {
            let n = self.cells.values().filter(|&&c| c == side).count() as i32;
            n > 0 && (1..=12).any(|start| (0..n).all(|i| self.owns(&b(start + i), side)))
        })
    }

    fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        if self.over() {
            return 0;
        }
        let mut kids = self.children();
        if kids.is_empty() {
            let mut passed = self.clone();
            passed.turn = 1 - self.turn;
            kids = passed.children();
        }
        kids.iter().map(|k| k.perft(depth - 1)).sum()
    }
}

const START_PERFT: [u64; 5] = [1, 12, 108, 2574, 52406];

#[test]
fn perft_from_start() {
    let g = OrbitGame::new();
    let slow = Slow::from_game(&g);
    for (depth, &expected) in START_PERFT.iter().enumerate() {
        let depth = depth as u32;
        let fast = g.perft(depth);
        assert_eq!(fast, slow.perft(depth), "depth {depth}");
        assert_eq!(fast, expected, "depth {depth}");
    }
}

#[test]
fn perft_agrees_on_busy_positions() {
    for (dark, light) in [
        ("A1 A2 A4 A6 B9 C", "A7 B11 B3 A10"),
        ("A1 A2 A4 A8 A10 A12", "A7 A5 B6"),
        ("B1 B2 A5 A6", "B4 A11 A12 C"),
    ] {
        let g = game(dark, light, Dark);
        let slow = Slow::from_game(&g);
        for depth in 0..=3 {
            assert_eq!(
                g.perft(depth),
                slow.perft(depth),
                "{dark} / {light} depth {depth}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_playouts(choices in prop::collection::vec(any::<u32>(), 200)) {
        let mut g = OrbitGame::new();
        let cap = ORBIT_SETUP.ply_cap as usize;
        for (ply, choice) in choices.iter().enumerate() {
            if g.outcome().is_some() {
                break;
            }
            prop_assert!(ply < cap);
            let moves = g.legal_moves();
            prop_assert!(!moves.is_empty());
            prop_assert_eq!(moves.len(), Slow::from_game(&g).children().len());
            let counts = [g.position().count(Dark), g.position().count(Light)];
            for m in &moves {
                prop_assert!(m.captures.len() <= 1);
                let mut next = g.clone();
                prop_assert!(next.play(m).is_ok(), "{} does not play", m);
                let after = [next.position().count(Dark), next.position().count(Light)];
                prop_assert!(after[0] <= counts[0] && after[1] <= counts[1]);
                let lost = next.position().captured;
                prop_assert_eq!(
                    usize::from(lost[0]) + usize::from(lost[1])
                        - usize::from(g.position().captured[0])
                        - usize::from(g.position().captured[1]),
                    m.captures.len()
                );
            }
            let m = &moves[*choice as usize % moves.len()];
            g.play(m).expect("listed move plays");
        }
        prop_assert!(g.outcome().is_some());
        prop_assert!(g.ply() <= ORBIT_SETUP.ply_cap);
        let out = g.outcome().expect("over");
        prop_assert!(g.legal_moves().is_empty());
        match out.winner {
            Some(c) => prop_assert!(out.points[c.index()] > out.points[c.opponent().index()]),
            None => prop_assert_eq!(out.points[0], out.points[1]),
        }
    }
}
