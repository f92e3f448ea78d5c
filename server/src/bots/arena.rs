//! Whole games between two bots, for the strength ladder: a seeded random
//! opening, then the bots alternate until the engine's own rules end the
//! game or a ply cap calls it a draw. The draughts rule sets, Space Mode and
//! the orbit game each have their own pair of functions.

use super::rng::SplitMix64;
use super::{BotConfig, choose_move, choose_orbit_move, choose_space_move};
use crate::rules::orbit::{OrbitColor, OrbitGame};
use crate::rules::space::SpaceGame;
use crate::rules::{Color, Game, RuleSet};

/// How a bot game ended, from the rules or by the ply cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameEnd {
    Won(Color),
    Drawn,
    /// The ply cap was reached: scored as a draw.
    Capped,
}

impl GameEnd {
    pub fn winner(self) -> Option<Color> {
        match self {
            GameEnd::Won(c) => Some(c),
            GameEnd::Drawn | GameEnd::Capped => None,
        }
    }
}

/// A game started with `plies` uniformly random legal moves chosen from
/// `seed` (fewer if the game ends first).
pub fn random_opening(rule_set: RuleSet, seed: u64, plies: usize) -> Game {
    let mut rng = SplitMix64::new(seed);
    let mut game = Game::new(rule_set);
    for _ in 0..plies {
        let legal = game.legal_moves();
        if legal.is_empty() {
            break;
        }
        let m = legal[rng.below(legal.len() as u64) as usize];
        game.play(&m).expect("a listed move plays");
    }
    game
}

/// Plays `game` to its end: `dark` moves for the first player, `light` for
/// the second. Returns the finished game and how it ended.
pub fn play_out(
    mut game: Game,
    dark: &BotConfig,
    light: &BotConfig,
    ply_cap: usize,
) -> (Game, GameEnd) {
    loop {
        if let Some(outcome) = game.outcome() {
            let end = match outcome.winner() {
                Some(c) => GameEnd::Won(c),
                None => GameEnd::Drawn,
            };
            return (game, end);
        }
        if game.moves().len() >= ply_cap {
            return (game, GameEnd::Capped);
        }
        let config = match game.turn() {
            Color::Dark => dark,
            Color::Light => light,
        };
        let m = choose_move(&game, config).expect("an unfinished game has a move");
        game.play(&m).expect("bots play legal moves");
    }
}

/// A Space Mode game with wormholes from `game_seed`, started with `plies`
/// uniformly random legal moves chosen from `opening_seed`.
pub fn random_space_opening(game_seed: u64, opening_seed: u64, plies: usize) -> SpaceGame {
    let mut rng = SplitMix64::new(opening_seed);
    let mut game = SpaceGame::new(game_seed);
    for _ in 0..plies {
        let legal = game.legal_moves();
        if legal.is_empty() {
            break;
        }
        let m = &legal[rng.below(legal.len() as u64) as usize];
        game.play(m).expect("a listed move plays");
    }
    game
}

/// Plays a Space Mode game to its end, as [`play_out`] does.
pub fn play_out_space(
    mut game: SpaceGame,
    dark: &BotConfig,
    light: &BotConfig,
    ply_cap: usize,
) -> (SpaceGame, GameEnd) {
    loop {
        if let Some(outcome) = game.outcome() {
            let end = match outcome.winner() {
                Some(c) => GameEnd::Won(c),
                None => GameEnd::Drawn,
            };
            return (game, end);
        }
        if game.moves().len() >= ply_cap {
            return (game, GameEnd::Capped);
        }
        let config = match game.turn() {
            Color::Dark => dark,
            Color::Light => light,
        };
        let m = choose_space_move(&game, config).expect("an unfinished game has a move");
        game.play(&m).expect("bots play legal moves");
    }
}

/// An orbit game started with `plies` uniformly random legal moves chosen
/// from `seed` (fewer if the game ends first).
pub fn random_orbit_opening(seed: u64, plies: usize) -> OrbitGame {
    let mut rng = SplitMix64::new(seed);
    let mut game = OrbitGame::new();
    for _ in 0..plies {
        let legal = game.legal_moves();
        if legal.is_empty() {
            break;
        }
        let m = &legal[rng.below(legal.len() as u64) as usize];
        game.play(m).expect("a listed move plays");
    }
    game
}

/// Plays an orbit game to its end (the engine has its own ply cap), as
/// [`play_out`] does; Dark is the orbit game's first player.
pub fn play_out_orbit(
    mut game: OrbitGame,
    dark: &BotConfig,
    light: &BotConfig,
    ply_cap: usize,
) -> (OrbitGame, GameEnd) {
    loop {
        if let Some(outcome) = game.outcome() {
            let end = match outcome.winner {
                Some(OrbitColor::Dark) => GameEnd::Won(Color::Dark),
                Some(OrbitColor::Light) => GameEnd::Won(Color::Light),
                None => GameEnd::Drawn,
            };
            return (game, end);
        }
        if game.ply() as usize >= ply_cap {
            return (game, GameEnd::Capped);
        }
        let config = match game.turn() {
            OrbitColor::Dark => dark,
            OrbitColor::Light => light,
        };
        let m = choose_orbit_move(&game, config).expect("an unfinished game has a move");
        game.play(&m).expect("bots play legal moves");
    }
}
