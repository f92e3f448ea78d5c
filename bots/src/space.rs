//! Space Mode opponents: the four levels over [`SpaceGame`], searched by
//! the shared tree search ([`super::tree`]), since the bitboard search
//! knows nothing of wormholes and thruster boosts.
//!
//! The search walks the engine's own states rather than the game (one move
//! generation per node, no history to copy). It does not know where the
//! wormholes will go next, any more than a person does: its search uses
//! them until they move and imagines none after that, and never reads the
//! game's generator. Men, kings, tempo and the back rank are valued as
//! in American checkers ([`super::eval`]); on top come the thruster charges
//! and, for the side ahead in an endgame, closing in on the enemy so the
//! no-progress rule does not save a lost game.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use super::eval::{Weights, evaluate};
use super::level::{Level, Profile};
use super::tree::{Examined, Limits, Tree, TreeSearch};
use super::{BotConfig, Budget, MATE, SearchInfo};
use jumpgate_rules::space::{NO_PROGRESS_DRAW_PLIES, SpaceGame, SpaceMove, State};
use jumpgate_rules::variant::American;
use jumpgate_rules::{Color, Position, RuleSet, Square};

const MAX_PLY: usize = 96;
/// Per thruster charge left: a tempo move the opponent may lack.
const BOOST_VALUE: i32 = 10;
/// Per square of distance between a king of the side ahead and the nearest
/// enemy piece, once the board has thinned out.
const CHASE: i32 = 3;

/// What repetition compares.
type Key = (Position, [Square; 2], [u8; 2]);

/// The level's knobs for Space Mode: the draughts profile with smaller
/// node budgets, since a node here (a mailbox move generator) costs far more
/// than a bitboard node. The wormholes' next places are unknown to every
/// level, which makes depth worth less than in American checkers (against
/// a plain Warden the Executive scored 70-75% whether it thought 20, 100 or
/// 300 ms a move); a little noise in the Warden's choices keeps the levels
/// a clear step apart.
fn profile(level: Level) -> Profile {
    let base = level.profile();
    match level {
        Level::Tamer => Profile {
            max_nodes: 300,
            ..base
        },
        Level::Driver => Profile {
            max_nodes: 600,
            ..base
        },
        Level::Warden => Profile {
            max_nodes: 900,
            noise: 30,
            ..base
        },
        Level::Executive => base,
    }
}

/// The bot's move in this Space Mode game, or `None` when the game is over.
/// Always an element of [`SpaceGame::legal_moves`].
pub fn choose_space_move(game: &SpaceGame, config: &BotConfig) -> Option<SpaceMove> {
    think(game, config).map(|(m, _)| m)
}

/// Like [`choose_space_move`], with what the search saw.
pub(crate) fn think(game: &SpaceGame, config: &BotConfig) -> Option<(SpaceMove, SearchInfo)> {
    super::choose_among(game.legal_moves(), |legal, started| {
        think_about(game, config, legal, started)
    })
}

/// Picks among `legal` (at least two moves); returns the chosen index.
fn think_about(
    game: &SpaceGame,
    config: &BotConfig,
    legal: &[SpaceMove],
    started: Instant,
) -> (usize, SearchInfo) {
    let profile = profile(config.level);
    let budget = Budget::new(&profile, config, started);
    let state = game.state();
    let tree = SpaceTree {
        keys: game
            .reversible_states()
            .map(State::repetition_key)
            .collect(),
        weights: Weights::for_rule_set(RuleSet::American),
    };
    let mut search = TreeSearch::new(
        tree,
        Limits {
            max_depth: profile.max_depth.min(MAX_PLY as u32 - 8),
            max_nodes: budget.max_nodes,
            deadline: budget.deadline,
            soft_deadline: budget.soft_deadline,
            table_bits: profile.table_bits,
        },
    );
    let root = (state, game.quiet_plies());
    // Mix the seed with the state and the move number, so a game does not
    // repeat the same "mistake" pattern and the same game replays exactly.
    let seed = config.seed ^ state_hash(&root.0) ^ (game.moves().len() as u64).rotate_left(32);
    search.choose(&root, legal, &profile, seed)
}

fn state_hash(state: &State) -> u64 {
    let mut h = DefaultHasher::new();
    state.repetition_key().hash(&mut h);
    h.finish()
}

/// The transposition key: everything that decides the future, the
/// wormholes' generator included.
fn table_key(state: &State) -> u64 {
    let mut h = DefaultHasher::new();
    state.hash(&mut h);
    h.finish()
}

/// The state after `m` and the plies without progress there.
fn child(state: &State, m: &SpaceMove, quiet: u32) -> (State, u32) {
    let by_man = !state.position().kings().contains(m.from());
    let quiet = if by_man || !m.captured.is_empty() {
        0
    } else {
        quiet + 1
    };
    (state.after_foreseen(m), quiet)
}

/// The position's value for the side to move.
fn evaluate_state(state: &State, weights: &Weights) -> i32 {
    let pos = state.position();
    let us = pos.turn();
    let boosts = state.boosts();
    let mut score = evaluate::<American>(pos, weights);
    score += BOOST_VALUE * (i32::from(boosts[us.index()]) - i32::from(boosts[1 - us.index()]));
    score + chase(pos, us) - chase(pos, us.opposite())
}

/// For the side with more material in a thin endgame: how close its kings
/// stand to the enemy (so it goes and fetches them).
fn chase(pos: &Position, side: Color) -> i32 {
    let material = |c: Color| {
        let p = pos.pieces(c);
        (p & !pos.kings()).count() as i32 * 2 + (p & pos.kings()).count() as i32 * 3
    };
    let theirs = pos.pieces(side.opposite());
    if material(side) <= material(side.opposite()) || theirs.count() > 4 || theirs.is_empty() {
        return 0;
    }
    let mut score = 0;
    for king in pos.pieces(side) & pos.kings() {
        let nearest = theirs
            .into_iter()
            .map(|t| {
                let df = (i32::from(king.file()) - i32::from(t.file())).abs();
                let dr = (i32::from(king.rank()) - i32::from(t.rank())).abs();
                df.max(dr)
            })
            .min()
            .unwrap_or(0);
        score += CHASE * (7 - nearest);
    }
    score
}

/// A move's identity for the killer table: where from, where to, whether a
/// boost.
type MoveKey = (Square, Square, bool);

/// Space Mode for the search: a node is a state and its plies without
/// progress; repetition is checked against the states since the last
/// irreversible move, then the path.
struct SpaceTree {
    keys: Vec<Key>,
    weights: Weights,
}

impl SpaceTree {
    /// A repetition of an earlier state with the same side to move, within
    /// the run of reversible plies.
    fn repeats(&self, quiet: u32) -> bool {
        let n = self.keys.len();
        let current = &self.keys[n - 1];
        let reach = (quiet as usize).min(n - 1);
        (2..=reach)
            .step_by(2)
            .any(|back| &self.keys[n - 1 - back] == current)
    }
}

impl Tree for SpaceTree {
    type Node = (State, u32);
    type Move = SpaceMove;
    type Key = MoveKey;
    const MAX_PLY: usize = MAX_PLY;

    fn examine(&mut self, node: &(State, u32), depth: i32, ply: usize) -> Examined<SpaceMove> {
        let (state, quiet) = node;
        let moves = state.legal_moves();
        if moves.is_empty() {
            return Examined::Value(-(MATE - ply as i32));
        }
        if *quiet >= NO_PROGRESS_DRAW_PLIES || self.repeats(*quiet) {
            return Examined::Value(0);
        }
        // Below the horizon only the mandatory captures are followed.
        let captures = !moves[0].captured.is_empty();
        if ply >= MAX_PLY - 1 || (depth <= 0 && !captures) {
            return Examined::Value(evaluate_state(state, &self.weights));
        }
        Examined::Moves(moves)
    }

    fn moves(&self, node: &(State, u32)) -> Vec<SpaceMove> {
        node.0.legal_moves()
    }

    fn child(&self, node: &(State, u32), m: &SpaceMove) -> (State, u32) {
        child(&node.0, m, node.1)
    }

    fn enter(&mut self, child: &(State, u32)) {
        self.keys.push(child.0.repetition_key());
    }

    fn leave(&mut self) {
        self.keys.pop();
    }

    fn turn_changes(&self, _parent: &(State, u32), _child: &(State, u32)) -> bool {
        true
    }

    fn table_key(&self, node: &(State, u32)) -> u64 {
        table_key(&node.0)
    }

    fn key_of(m: &SpaceMove) -> MoveKey {
        (m.from(), m.to(), m.boost)
    }

    fn is_capture(m: &SpaceMove) -> bool {
        !m.captured.is_empty()
    }

    fn urgent(m: &SpaceMove) -> Option<i32> {
        if !m.captured.is_empty() {
            Some(500_000 + 1_000 * m.captured.len() as i32 + i32::from(m.crowns) * 100)
        } else if m.crowns {
            Some(400_000)
        } else {
            None
        }
    }

    fn quiet(m: &SpaceMove) -> i32 {
        // A charge spent is gone for good: try the plain steps first.
        if m.boost { 0 } else { 1 }
    }
}
