//! Whole games between two bots, for the strength ladder: a seeded random
//! opening, then the bots alternate until the engine's own rules end the
//! game or a ply cap calls it a draw.

use super::rng::SplitMix64;
use super::{BotConfig, choose_move};
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
