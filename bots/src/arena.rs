//! Whole games between two bots, for the strength ladder: a seeded random
//! opening, then the bots alternate until the engine's own rules end the
//! game or a ply cap calls it a draw. Each engine has its own opening
//! function; the draughts games play out on [`Game`], the others on
//! [`VariantGame`].

use super::rng::SplitMix64;
use super::{BotConfig, choose_move, choose_stored};
use jumpgate_rules::orbit::OrbitGame;
use jumpgate_rules::space::SpaceGame;
use jumpgate_rules::{Color, Game, RuleSet, VariantGame};

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
    random_moves(
        Game::new(rule_set),
        seed,
        plies,
        |g| g.legal_moves().to_vec(),
        |g, m| g.play(m).expect("a listed move plays"),
    )
}

/// `game` after `plies` uniformly random legal moves chosen from `seed`
/// (fewer if the game ends first).
fn random_moves<G, M>(
    mut game: G,
    seed: u64,
    plies: usize,
    legal_moves: impl Fn(&G) -> Vec<M>,
    play: impl Fn(&mut G, &M),
) -> G {
    let mut rng = SplitMix64::new(seed);
    for _ in 0..plies {
        let legal = legal_moves(&game);
        if legal.is_empty() {
            break;
        }
        play(&mut game, &legal[rng.below(legal.len() as u64) as usize]);
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
    random_moves(
        SpaceGame::new(game_seed),
        opening_seed,
        plies,
        SpaceGame::legal_moves,
        |g, m| g.play(m).expect("a listed move plays"),
    )
}

/// An orbit game started with `plies` uniformly random legal moves chosen
/// from `seed` (fewer if the game ends first).
pub fn random_orbit_opening(seed: u64, plies: usize) -> OrbitGame {
    random_moves(
        OrbitGame::new(),
        seed,
        plies,
        OrbitGame::legal_moves,
        |g, m| g.play(m).expect("a listed move plays"),
    )
}

/// Plays a game of any rule set to its end, as [`play_out`] does (the
/// orbit game also ends at its own ply cap).
pub fn play_out_variant(
    mut game: VariantGame,
    dark: &BotConfig,
    light: &BotConfig,
    ply_cap: usize,
) -> (VariantGame, GameEnd) {
    loop {
        if let Some(outcome) = game.outcome() {
            let end = match outcome.winner {
                Some(c) => GameEnd::Won(c),
                None => GameEnd::Drawn,
            };
            return (game, end);
        }
        if game.ply() as usize >= ply_cap {
            return (game, GameEnd::Capped);
        }
        let config = match game.turn() {
            Color::Dark => dark,
            Color::Light => light,
        };
        let m = choose_stored(&game, config).expect("an unfinished game has a move");
        game.play_stored(&m).expect("bots play legal moves");
    }
}
