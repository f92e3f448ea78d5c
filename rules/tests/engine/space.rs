//! Space Mode: targeted positions, replay and undo, perft cross-checked by an
//! independent brute-force enumerator, and random playouts.

use std::collections::HashSet;

use jumpgate_rules::space::{SpaceError, SpaceGame, SpaceMove};
use jumpgate_rules::{Bitboard, Color, Position, Role, Setup};
use proptest::prelude::*;

fn sq(name: &str) -> jumpgate_rules::Square {
    let b = name.as_bytes();
    jumpgate_rules::Square::from_coords(b[0] - b'a', b[1] - b'1').expect("a square")
}

fn bb(names: &[&str]) -> Bitboard {
    names.iter().map(|n| sq(n)).collect()
}

fn position(dark: &[&str], light: &[&str], kings: &[&str], turn: Color) -> Position {
    Position::from_setup(Setup {
        by_color: [bb(dark), bb(light)],
        kings: bb(kings),
        turn,
    })
    .expect("a valid position")
}

fn game(
    dark: &[&str],
    light: &[&str],
    kings: &[&str],
    holes: [&str; 2],
    boosts: [u8; 2],
) -> SpaceGame {
    SpaceGame::from_parts(
        position(dark, light, kings, Color::Dark),
        [sq(holes[0]), sq(holes[1])],
        boosts,
        42,
    )
    .expect("valid parts")
}

fn path(names: &[&str]) -> Vec<jumpgate_rules::Square> {
    names.iter().map(|n| sq(n)).collect()
}

fn find(game: &SpaceGame, names: &[&str]) -> SpaceMove {
    let p = path(names);
    game.legal_moves()
        .into_iter()
        .find(|m| m.path == p)
        .unwrap_or_else(|| panic!("{names:?} is not listed: {:?}", game.legal_moves()))
}

#[test]
fn quiet_move_teleports() {
    let mut g = game(&["c3"], &["h8"], &[], ["d4", "f6"], [3, 3]);
    let m = find(&g, &["c3", "d4"]);
    assert_eq!(m.teleports, vec![(sq("d4"), sq("f6"))]);
    assert_eq!(m.to(), sq("f6"));
    g.play(&m).unwrap();
    assert_eq!(
        g.position().piece_at(sq("f6")),
        Some((Color::Dark, Role::Man))
    );
    assert_eq!(g.position().piece_at(sq("d4")), None);
}

#[test]
fn occupied_exit_leaves_piece_at_entrance() {
    let mut g = game(&["c3"], &["f6"], &[], ["d4", "f6"], [3, 3]);
    let m = find(&g, &["c3", "d4"]);
    assert!(m.teleports.is_empty());
    g.play(&m).unwrap();
    assert_eq!(
        g.position().piece_at(sq("d4")),
        Some((Color::Dark, Role::Man))
    );
}

#[test]
fn capture_chain_continues_from_exit() {
    let mut g = game(&["c3"], &["d4", "d2"], &[], ["e5", "c1"], [3, 3]);
    let moves = g.legal_moves();
    assert_eq!(moves.len(), 1, "{moves:?}");
    let m = &moves[0];
    assert_eq!(m.path, path(&["c3", "e5", "e3"]));
    assert_eq!(m.captured, path(&["d4", "d2"]));
    assert_eq!(m.teleports, vec![(sq("e5"), sq("c1"))]);
    assert_eq!(m.to(), sq("e3"));
    g.play_path(&path(&["c3", "e5", "e3"])).unwrap();
    assert_eq!(g.position().pieces(Color::Light), Bitboard::EMPTY);
    assert_eq!(
        g.position().piece_at(sq("e3")),
        Some((Color::Dark, Role::Man))
    );
}

#[test]
fn captured_pieces_block_the_exit_during_a_chain() {
    // c3xd4 lands on e5, whose exit is d4: the piece just jumped is still
    // on the board until the move ends, so the man stays on e5.
    let g = game(&["c3"], &["d4"], &[], ["e5", "d4"], [3, 3]);
    let m = find(&g, &["c3", "e5"]);
    assert!(m.teleports.is_empty());
    assert_eq!(m.to(), sq("e5"));
}

#[test]
fn crowning_is_checked_on_the_final_square() {
    // Teleported onto the far row: crowned.
    let mut g = game(&["c5"], &["h2"], &[], ["d6", "b8"], [3, 3]);
    let m = find(&g, &["c5", "d6"]);
    assert!(m.crowns);
    g.play(&m).unwrap();
    assert_eq!(
        g.position().piece_at(sq("b8")),
        Some((Color::Dark, Role::King))
    );

    // Stepped onto the far row but teleported away: not crowned.
    let mut g = game(&["g7"], &["h2"], &[], ["h8", "a1"], [3, 3]);
    let m = find(&g, &["g7", "h8"]);
    assert!(!m.crowns);
    g.play(&m).unwrap();
    assert_eq!(
        g.position().piece_at(sq("a1")),
        Some((Color::Dark, Role::Man))
    );
}

#[test]
fn crowning_mid_chain_after_teleport_ends_the_move() {
    // c3xe5 teleports to d8 (far row): crowned, and the chain stops even
    // though a king on d8 could jump e7.
    let g = game(&["c3"], &["d4", "e7"], &[], ["e5", "d8"], [3, 3]);
    let moves = g.legal_moves();
    assert_eq!(moves.len(), 1, "{moves:?}");
    assert!(moves[0].crowns);
    assert_eq!(moves[0].to(), sq("d8"));
    assert_eq!(moves[0].captured.len(), 1);
}

#[test]
fn men_boost_forward_kings_both_ways() {
    let g = game(&["c3", "d4"], &["h8"], &[], ["a5", "b6"], [3, 3]);
    let m = find(&g, &["c3", "e5"]);
    assert!(m.boost);
    // A man does not boost backwards.
    let g = game(&["e5", "d4"], &["h8"], &[], ["a5", "b6"], [3, 3]);
    assert!(
        g.legal_moves()
            .iter()
            .all(|m| m.path != path(&["e5", "c3"]))
    );
    // A king does.
    let mut g = game(&["e5", "d4"], &["h8"], &["e5"], ["a5", "b6"], [3, 3]);
    let m = find(&g, &["e5", "c3"]);
    assert!(m.boost);
    g.play(&m).unwrap();
    assert_eq!(
        g.position().piece_at(sq("c3")),
        Some((Color::Dark, Role::King))
    );
    assert_eq!(
        g.position().piece_at(sq("d4")),
        Some((Color::Dark, Role::Man))
    );
    assert_eq!(g.boosts_left(Color::Dark), 2);
}

#[test]
fn boost_landing_on_a_wormhole_teleports() {
    let g = game(&["c3", "d4"], &["h8"], &[], ["e5", "a7"], [3, 3]);
    let m = find(&g, &["c3", "e5"]);
    assert!(m.boost);
    assert_eq!(m.to(), sq("a7"));
}

#[test]
fn no_boost_while_a_capture_is_mandatory() {
    let mut g = game(&["c3", "d4"], &["b4"], &[], ["a7", "b8"], [3, 3]);
    assert!(g.legal_moves().iter().all(|m| !m.boost));
    assert!(g.legal_moves().iter().all(|m| !m.captured.is_empty()));
    assert_eq!(
        g.play_path(&path(&["c3", "e5"])),
        Err(SpaceError::CaptureMandatory)
    );
    assert_eq!(g.boosts_left(Color::Dark), 3);
    assert!(g.moves().is_empty());
}

#[test]
fn charges_are_spent_only_by_boosts() {
    let mut g = game(
        &["c3", "d4", "a1"],
        &["h8", "g7"],
        &[],
        ["a5", "b6"],
        [3, 3],
    );
    g.play_path(&path(&["a1", "b2"])).unwrap();
    assert_eq!(g.boosts_left(Color::Dark), 3);
    g.play_path(&path(&["g7", "f6"])).unwrap();
    g.play_path(&path(&["c3", "e5"])).unwrap();
    assert_eq!(g.boosts_left(Color::Dark), 2);
    assert_eq!(g.boosts_left(Color::Light), 3);

    let mut g = game(&["c3", "d4"], &["h8"], &[], ["a5", "b6"], [0, 3]);
    assert!(g.legal_moves().iter().all(|m| !m.boost));
    assert_eq!(
        g.play_path(&path(&["c3", "e5"])),
        Err(SpaceError::NoBoostsLeft)
    );
}

#[test]
fn wormholes_relocate_after_light_moves_only() {
    let mut g = SpaceGame::new(5);
    let initial = g.wormholes();
    assert_eq!(initial[0].rank(), 3);
    assert_eq!(initial[1].rank(), 4);
    for ply in 0..30 {
        let Some(m) = g.legal_moves().into_iter().next() else {
            break;
        };
        let before = g.wormholes();
        let mover = g.turn();
        g.play(&m).unwrap();
        let after = g.wormholes();
        if mover == Color::Dark {
            assert_eq!(before, after, "ply {ply}");
        }
        assert_ne!(after[0], after[1]);
        for w in after {
            assert!(w.is_playable());
            if mover == Color::Light {
                assert_eq!(g.position().piece_at(w), None, "ply {ply}");
            }
        }
    }
    // And they do move: the expected squares from the seed.
    let mut g = SpaceGame::new(1);
    let bf = Bf::new(1);
    assert_eq!(holes(&g), bf.holes);
    let m = g.legal_moves()[0].clone();
    g.play(&m).unwrap();
    let m = g.legal_moves()[0].clone();
    g.play(&m).unwrap();
    let mut expect = Bf {
        board: board_of(g.position()),
        dark: true,
        holes: bf.holes,
        boosts: [3, 3],
        rng: bf.rng,
    };
    expect.relocate();
    assert_eq!(holes(&g), expect.holes);
}

#[test]
fn replay_reproduces_wormholes() {
    let mut g = SpaceGame::new(99);
    let mut paths = Vec::new();
    let mut seen = vec![(g.wormholes(), *g.position())];
    for i in 0..40usize {
        let moves = g.legal_moves();
        if moves.is_empty() {
            break;
        }
        let m = moves[(i * 7) % moves.len()].clone();
        g.play(&m).unwrap();
        paths.push(m.path.clone());
        seen.push((g.wormholes(), *g.position()));
    }
    for n in 0..=paths.len() {
        let r = SpaceGame::replay(99, &paths[..n]).unwrap();
        assert_eq!((r.wormholes(), *r.position()), seen[n]);
    }
    let r = SpaceGame::replay(99, &paths).unwrap();
    assert_eq!(r.boosts_left(Color::Dark), g.boosts_left(Color::Dark));
    assert_eq!(r.boosts_left(Color::Light), g.boosts_left(Color::Light));
    // A bad path is reported with its ply.
    let mut bad = paths.clone();
    bad.insert(0, path(&["a1", "b2"]));
    assert!(matches!(
        SpaceGame::replay(99, &bad),
        Err(SpaceError::Replay { ply: 0, .. })
    ));
}

#[test]
fn undo_restores_wormholes_and_charges() {
    let mut g = SpaceGame::new(3);
    let w0 = g.wormholes();
    let boost = g
        .legal_moves()
        .into_iter()
        .find(|m| m.boost)
        .expect("a boost at the start");
    g.play(&boost).unwrap();
    assert_eq!(g.boosts_left(Color::Dark), 2);
    let w1 = g.wormholes();
    let reply = g.legal_moves()[0].clone();
    g.play(&reply).unwrap();
    let w2 = g.wormholes();
    let next = g.legal_moves()[0].clone();
    assert!(g.undo());
    assert_eq!(g.wormholes(), w1);
    assert_eq!(g.boosts_left(Color::Dark), 2);
    // Replaying the same move gives the same relocation.
    g.play(&reply).unwrap();
    assert_eq!(g.wormholes(), w2);
    assert!(g.legal_moves().contains(&next));
    assert!(g.undo());
    assert!(g.undo());
    assert_eq!(g.wormholes(), w0);
    assert_eq!(g.boosts_left(Color::Dark), 3);
    assert_eq!(*g.position(), *SpaceGame::new(3).position());
    assert!(!g.undo());
}

#[test]
fn refused_moves_leave_the_game_unchanged() {
    let mut g = SpaceGame::new(8);
    let before = (*g.position(), g.wormholes());
    assert_eq!(
        g.play_path(&path(&["d4", "e5"])),
        Err(SpaceError::EmptySquare(sq("d4")))
    );
    assert_eq!(
        g.play_path(&path(&["b6", "a5"])),
        Err(SpaceError::NotYourPiece(sq("b6")))
    );
    assert_eq!(g.play_path(&path(&["c3"])), Err(SpaceError::EmptyPath));
    assert_eq!(
        g.play_path(&path(&["c3", "c4"])),
        Err(SpaceError::IllegalMove)
    );
    assert_eq!((*g.position(), g.wormholes()), before);
}

// ---------------------------------------------------------------------------
// An independent brute-force enumerator: 8×8 array, results as boards.

const PERFT_1: [u64; 5] = [1, 13, 125, 1_211, 9_057];

type Board = [i8; 64];

fn board_of(p: &Position) -> Board {
    let mut b = [0i8; 64];
    for (i, cell) in b.iter_mut().enumerate() {
        let s = jumpgate_rules::Square::new(i as u8);
        *cell = match p.piece_at(s) {
            None => 0,
            Some((Color::Dark, Role::Man)) => 1,
            Some((Color::Dark, Role::King)) => 2,
            Some((Color::Light, Role::Man)) => -1,
            Some((Color::Light, Role::King)) => -2,
        };
    }
    b
}

fn holes(g: &SpaceGame) -> [usize; 2] {
    let [a, b] = g.wormholes();
    [a.index(), b.index()]
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e3779b97f4a7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

#[derive(Clone)]
struct Bf {
    board: Board,
    dark: bool,
    holes: [usize; 2],
    boosts: [u8; 2],
    rng: u64,
}

fn dark_square(i: usize) -> bool {
    (i / 8 + i % 8).is_multiple_of(2)
}

impl Bf {
    fn new(seed: u64) -> Bf {
        let mut board = [0i8; 64];
        for (i, cell) in board.iter_mut().enumerate() {
            if dark_square(i) {
                if i / 8 < 3 {
                    *cell = 1;
                } else if i / 8 > 4 {
                    *cell = -1;
                }
            }
        }
        let mut rng = seed;
        let row3: Vec<usize> = (24..32).filter(|&i| dark_square(i)).collect();
        let row4: Vec<usize> = (32..40).filter(|&i| dark_square(i)).collect();
        let a = row3[(splitmix(&mut rng) % 4) as usize];
        let b = row4[(splitmix(&mut rng) % 4) as usize];
        Bf {
            board,
            dark: true,
            holes: [a, b],
            boosts: [3, 3],
            rng,
        }
    }

    fn relocate(&mut self) {
        let mut empty: Vec<usize> = (0..64)
            .filter(|&i| dark_square(i) && self.board[i] == 0)
            .collect();
        let a = empty.remove((splitmix(&mut self.rng) % empty.len() as u64) as usize);
        let b = empty.remove((splitmix(&mut self.rng) % empty.len() as u64) as usize);
        self.holes = [a, b];
    }

    fn exit(&self, i: usize) -> Option<usize> {
        if i == self.holes[0] {
            Some(self.holes[1])
        } else if i == self.holes[1] {
            Some(self.holes[0])
        } else {
            None
        }
    }

    fn sign(&self) -> i8 {
        if self.dark { 1 } else { -1 }
    }

    fn dirs(&self, piece: i8) -> Vec<(i32, i32)> {
        let fwd = i32::from(self.sign());
        if piece.abs() == 2 {
            vec![(1, 1), (-1, 1), (1, -1), (-1, -1)]
        } else {
            vec![(1, fwd), (-1, fwd)]
        }
    }

    fn far(&self, i: usize) -> bool {
        i / 8 == if self.dark { 7 } else { 0 }
    }

    fn step(i: usize, (df, dr): (i32, i32)) -> Option<usize> {
        let f = (i % 8) as i32 + df;
        let r = (i / 8) as i32 + dr;
        ((0..8).contains(&f) && (0..8).contains(&r)).then(|| (r * 8 + f) as usize)
    }

    /// Distinct results: (board after, charges after).
    fn results(&self) -> HashSet<(Board, [u8; 2])> {
        let mut out = HashSet::new();
        let s = self.sign();
        for origin in 0..64 {
            let piece = self.board[origin];
            if piece * s <= 0 {
                continue;
            }
            let mut lifted = self.board;
            lifted[origin] = 0;
            self.jumps(&lifted, origin, piece, &mut Vec::new(), &mut out);
        }
        if !out.is_empty() {
            return out;
        }
        let side = usize::from(!self.dark);
        for origin in 0..64 {
            let piece = self.board[origin];
            if piece * s <= 0 {
                continue;
            }
            let mut lifted = self.board;
            lifted[origin] = 0;
            for d in self.dirs(piece) {
                let Some(a) = Bf::step(origin, d) else {
                    continue;
                };
                let mut land = None;
                let mut boosts = self.boosts;
                if lifted[a] == 0 {
                    land = Some(a);
                } else if lifted[a] * s > 0
                    && self.boosts[side] > 0
                    && let Some(b) = Bf::step(a, d)
                    && lifted[b] == 0
                {
                    land = Some(b);
                    boosts[side] -= 1;
                }
                let Some(mut at) = land else { continue };
                if let Some(e) = self.exit(at)
                    && lifted[e] == 0
                {
                    at = e;
                }
                let mut after = lifted;
                after[at] = if self.far(at) { 2 * s } else { piece };
                out.insert((after, boosts));
            }
        }
        out
    }

    fn jumps(
        &self,
        lifted: &Board,
        at: usize,
        piece: i8,
        taken: &mut Vec<usize>,
        out: &mut HashSet<(Board, [u8; 2])>,
    ) {
        let s = self.sign();
        let mut any = false;
        for d in self.dirs(piece) {
            let Some(v) = Bf::step(at, d) else { continue };
            let Some(l) = Bf::step(v, d) else { continue };
            if lifted[v] * s >= 0 || taken.contains(&v) || lifted[l] != 0 {
                continue;
            }
            any = true;
            taken.push(v);
            let mut to = l;
            if let Some(e) = self.exit(l)
                && lifted[e] == 0
            {
                to = e;
            }
            if piece.abs() == 1 && self.far(to) {
                self.finish(lifted, to, 2 * s, taken, out);
            } else {
                self.jumps(lifted, to, piece, taken, out);
            }
            taken.pop();
        }
        if !any && !taken.is_empty() {
            self.finish(lifted, at, piece, taken, out);
        }
    }

    fn finish(
        &self,
        lifted: &Board,
        at: usize,
        piece: i8,
        taken: &[usize],
        out: &mut HashSet<(Board, [u8; 2])>,
    ) {
        let mut after = *lifted;
        for &t in taken {
            after[t] = 0;
        }
        after[at] = piece;
        out.insert((after, self.boosts));
    }

    fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        self.results()
            .into_iter()
            .map(|(board, boosts)| {
                let mut child = Bf {
                    board,
                    dark: !self.dark,
                    holes: self.holes,
                    boosts,
                    rng: self.rng,
                };
                if !self.dark {
                    child.relocate();
                }
                child.perft(depth - 1)
            })
            .sum()
    }
}

#[test]
fn brute_force_start_matches_the_game() {
    let g = SpaceGame::new(1);
    let bf = Bf::new(1);
    assert_eq!(board_of(g.position()), bf.board);
    assert_eq!(holes(&g), bf.holes);
}

#[test]
fn perft_from_seed_1() {
    let g = SpaceGame::new(1);
    let bf = Bf::new(1);
    for (depth, &expected) in PERFT_1.iter().enumerate() {
        let depth = depth as u32;
        assert_eq!(bf.perft(depth), expected, "brute force, depth {depth}");
        assert_eq!(g.perft(depth), expected, "game, depth {depth}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_playouts(seed in any::<u64>(), choices in prop::collection::vec(any::<usize>(), 1..120)) {
        let mut g = SpaceGame::new(seed);
        let mut pieces = g.position().occupied().count();
        for choice in choices {
            if g.outcome().is_some() {
                prop_assert!(g.legal_moves().is_empty());
                break;
            }
            let moves = g.legal_moves();
            prop_assert!(!moves.is_empty());
            // The list agrees with the brute force.
            let side = usize::from(g.turn() == Color::Light);
            let bf = Bf {
                board: board_of(g.position()),
                dark: g.turn() == Color::Dark,
                holes: holes(&g),
                boosts: [g.boosts_left(Color::Dark), g.boosts_left(Color::Light)],
                rng: 0,
            };
            prop_assert_eq!(bf.results().len(), moves.len());
            for m in &moves {
                let mut copy = g.clone();
                prop_assert_eq!(copy.play(m), Ok(()));
                prop_assert!(copy.position().occupied().count() <= pieces);
                let spent = usize::from(m.boost);
                prop_assert_eq!(
                    usize::from(copy.boosts_left(g.turn())) + spent,
                    usize::from(bf.boosts[side])
                );
                prop_assert!(copy.undo());
                prop_assert_eq!(copy.position(), g.position());
                prop_assert_eq!(copy.wormholes(), g.wormholes());
            }
            let m = &moves[choice % moves.len()];
            g.play(m).unwrap();
            let now = g.position().occupied().count();
            prop_assert!(now <= pieces);
            pieces = now;
            for c in [Color::Dark, Color::Light] {
                prop_assert!(g.boosts_left(c) <= 3);
            }
        }
    }
}
