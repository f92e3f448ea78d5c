//! The computer opponents in Space Mode and the orbit game: every level only
//! plays legal moves, the lower levels are reproducible from their seed, and
//! the stronger levels take a simple win when one is on the board.

use std::time::Duration;

use jumpgate_bots::{BotConfig, Level, arena, choose_orbit_move, choose_space_move};
use jumpgate_rules::orbit::{OrbitColor, OrbitGame, OrbitPosition, OrbitSquare};
use jumpgate_rules::space::SpaceGame;
use jumpgate_rules::{Bitboard, Color, Position, Setup, Square};

/// Small budgets so the whole file stays quick in the dev profile.
fn quick(level: Level, seed: u64) -> BotConfig {
    BotConfig::new(level)
        .with_seed(seed)
        .with_node_limit(300)
        .with_time_budget(Duration::from_millis(20))
}

/// A budget the node limits end long before, so the clock never decides.
fn unhurried(level: Level, seed: u64) -> BotConfig {
    BotConfig::new(level)
        .with_seed(seed)
        .with_node_limit(800)
        .with_time_budget(Duration::from_secs(30))
}

fn sq(name: &str) -> Square {
    let b = name.as_bytes();
    Square::from_coords(b[0] - b'a', b[1] - b'1').expect("a square")
}

fn bb(names: &[&str]) -> Bitboard {
    names.iter().map(|n| sq(n)).collect()
}

#[test]
fn every_level_plays_legal_space_moves() {
    for seed in 0..16u64 {
        let dark = Level::ALL[seed as usize % 4];
        let light = Level::ALL[(seed as usize / 2 + 1) % 4];
        let configs = [quick(dark, seed), quick(light, seed ^ 0xA5)];
        let mut game = arena::random_space_opening(seed, seed + 1, seed as usize % 4);
        for _ in 0..100 {
            let Some(m) = choose_space_move(&game, &configs[game.turn().index()]) else {
                assert!(game.outcome().is_some(), "no move in a live game");
                break;
            };
            assert!(game.legal_moves().contains(&m), "{m:?} is not listed");
            game.play(&m).expect("a listed move plays");
        }
    }
}

#[test]
fn every_level_plays_legal_orbit_moves() {
    for seed in 0..16u64 {
        let dark = Level::ALL[seed as usize % 4];
        let light = Level::ALL[(seed as usize / 2 + 1) % 4];
        let configs = [quick(dark, seed), quick(light, seed ^ 0xA5)];
        let mut game = arena::random_orbit_opening(seed, seed as usize % 5);
        for _ in 0..100 {
            let config = &configs[game.turn().index()];
            let Some(m) = choose_orbit_move(&game, config) else {
                assert!(game.outcome().is_some(), "no move in a live game");
                break;
            };
            assert!(game.legal_moves().contains(&m), "{m} is not listed");
            game.play(&m).expect("a listed move plays");
        }
    }
}

#[test]
fn finished_games_have_no_bot_move() {
    let mut game = OrbitGame::new();
    while game.outcome().is_none() {
        let m = choose_orbit_move(&game, &quick(Level::Tamer, 3)).expect("a live game");
        game.play(&m).expect("a listed move plays");
    }
    assert_eq!(choose_orbit_move(&game, &quick(Level::Warden, 3)), None);
}

#[test]
fn lower_levels_repeat_themselves_from_a_seed() {
    for level in [Level::Tamer, Level::Driver, Level::Warden] {
        for seed in 0..4u64 {
            let space = arena::random_space_opening(seed, seed, 3);
            let first = choose_space_move(&space, &unhurried(level, seed));
            let again = choose_space_move(&space, &unhurried(level, seed));
            assert_eq!(first, again, "{level} in Space Mode, seed {seed}");

            let orbit = arena::random_orbit_opening(seed, 4);
            let first = choose_orbit_move(&orbit, &unhurried(level, seed));
            let again = choose_orbit_move(&orbit, &unhurried(level, seed));
            assert_eq!(first, again, "{level} in the orbit game, seed {seed}");
        }
    }
}

/// Dark to move may take one man (g1xe3, after which Light takes b2 back)
/// or two (b2xd4xf6).
#[test]
fn space_bots_take_the_double_capture() {
    let position = Position::from_setup(Setup {
        by_color: [bb(&["b2", "g1"]), bb(&["c3", "e5", "f2"])],
        kings: Bitboard::EMPTY,
        turn: Color::Dark,
    })
    .expect("a valid position");
    let game = SpaceGame::from_parts(position, [sq("a7"), sq("h8")], [3, 3], 9).expect("valid");
    assert!(game.legal_moves().len() >= 2, "a choice of captures");
    for level in [Level::Driver, Level::Warden, Level::Executive] {
        let config = unhurried(level, 1).with_time_budget(Duration::from_secs(2));
        let m = choose_space_move(&game, &config).expect("a move");
        assert_eq!(m.captured.len(), 2, "{level} chose {m:?}");
    }
}

/// Dark has B1, B2, B3 and A4: A4-B4 puts all four in a row and wins.
#[test]
fn orbit_bots_complete_the_row() {
    use OrbitSquare::{Inner, Outer};
    let mut position = OrbitPosition::from_squares(
        &[Inner(1), Inner(2), Inner(3), Outer(4)],
        &[Outer(7), Outer(8), Outer(9), Outer(10)],
        OrbitColor::Dark,
    )
    .expect("a valid position");
    position.first_turn = [false; 2];
    let game = OrbitGame::from_position(position).expect("a live game");
    for level in [Level::Warden, Level::Executive] {
        let config = unhurried(level, 1).with_time_budget(Duration::from_secs(2));
        let m = choose_orbit_move(&game, &config).expect("a move");
        assert_eq!((m.from, m.to), (Outer(4), Inner(4)), "{level} chose {m}");
        let mut after = game.clone();
        after.play(&m).expect("a listed move plays");
        let outcome = after.outcome().expect("the row ends the game");
        assert_eq!(outcome.winner, Some(OrbitColor::Dark));
    }
}
