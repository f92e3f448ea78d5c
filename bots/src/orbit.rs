//! Orbit game opponents: the four levels over [`OrbitGame`], searched by the
//! shared tree search ([`super::tree`]).
//!
//! A player without moves passes inside the engine, so a child position may
//! have the same side to move as its parent: the search negates a score only
//! when the turn actually changes. A finished game is worth its points
//! difference, a win far more than any evaluation, and a draw costs the
//! searching side a little (contempt), so it plays on for the win. Before
//! the end, the
//! evaluation is the points the position would score now, plus pieces on
//! the inner orbit, the longest inner row and material.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use super::level::{Level, Profile};
use super::tree::{Examined, Limits, Tree, TreeSearch};
use super::{BotConfig, Budget, MATE, SearchInfo};
use jumpgate_rules::orbit::{OrbitColor, OrbitGame, OrbitMove, OrbitMoveKind, OrbitSquare, score};

const MAX_PLY: usize = 64;

/// Evaluation weights; a point of the game's own scoring is 100.
const POINT: i32 = 100;
const INNER: i32 = 12;
const ROW: i32 = 18;
const PIECE: i32 = 25;
/// What a draw costs the searching side: every level plays for the win, so
/// a stronger bot does not settle for early 2-2 endings.
const CONTEMPT: i32 = 40;

/// The level's knobs for the orbit game. Its tree is small and its
/// tactics short, so the node budgets are smaller than in draughts, and the
/// Tamer looks a single ply ahead: otherwise neighbouring levels play too
/// alike for the ladder.
fn profile(level: Level) -> Profile {
    let base = level.profile();
    match level {
        Level::Tamer => Profile {
            max_depth: 1,
            max_nodes: 1_000,
            ..base
        },
        Level::Driver => Profile {
            max_nodes: 1_500,
            ..base
        },
        Level::Warden => Profile {
            max_nodes: 4_000,
            ..base
        },
        Level::Executive => base,
    }
}

/// The bot's move in this orbit game, or `None` when the game is over.
/// Always an element of [`OrbitGame::legal_moves`].
pub fn choose_orbit_move(game: &OrbitGame, config: &BotConfig) -> Option<OrbitMove> {
    think(game, config).map(|(m, _)| m)
}

/// Like [`choose_orbit_move`], with what the search saw.
pub(crate) fn think(game: &OrbitGame, config: &BotConfig) -> Option<(OrbitMove, SearchInfo)> {
    super::choose_among(game.legal_moves(), |legal, started| {
        think_about(game, config, legal, started)
    })
}

fn think_about(
    game: &OrbitGame,
    config: &BotConfig,
    legal: &[OrbitMove],
    started: Instant,
) -> (usize, SearchInfo) {
    let profile = profile(config.level);
    let budget = Budget::new(&profile, config, started);
    let mut search = TreeSearch::new(
        OrbitTree { root: game.turn() },
        Limits {
            max_depth: profile.max_depth.min(MAX_PLY as u32 - 4),
            max_nodes: budget.max_nodes,
            deadline: budget.deadline,
            soft_deadline: budget.soft_deadline,
            table_bits: profile.table_bits,
        },
    );
    // The seed mixes in the position and the ply, so a game does not
    // repeat the same "mistake" pattern and the same game replays exactly.
    let seed = config.seed ^ position_hash(game) ^ u64::from(game.ply()).rotate_left(32);
    search.choose(game, legal, &profile, seed)
}

/// A stable hash of who stands where, for seeding.
fn position_hash(game: &OrbitGame) -> u64 {
    let pos = game.position();
    OrbitSquare::all().fold(u64::from(pos.turn == OrbitColor::Light), |h, sq| {
        let piece = match pos.get(sq) {
            None => 0,
            Some(OrbitColor::Dark) => 1,
            Some(OrbitColor::Light) => 2,
        };
        h.wrapping_mul(3).wrapping_add(piece)
    })
}

/// The transposition key: the position and the ply count (the game ends
/// at a ply cap).
fn table_key(game: &OrbitGame) -> u64 {
    let mut h = DefaultHasher::new();
    game.position().hash(&mut h);
    game.ply().hash(&mut h);
    h.finish()
}

/// The game after `m`, a move listed for `game`.
fn after(game: &OrbitGame, m: &OrbitMove) -> OrbitGame {
    let mut next = game.clone();
    next.play_listed(m);
    next
}

/// The value of a finished game or of a position for the side to move,
/// `ply` plies below the root.
fn value(game: &OrbitGame, ply: usize, root: OrbitColor) -> i32 {
    let me = game.turn();
    let (my, their) = (me.index(), me.opponent().index());
    if let Some(outcome) = game.outcome() {
        let diff = outcome.points[my] as i32 - outcome.points[their] as i32;
        // A quicker win (or slower loss) is better; a bigger margin too.
        return match outcome.winner {
            None if me == root => -CONTEMPT,
            None => CONTEMPT,
            Some(w) if w == me => MATE - 100 - ply as i32 + diff,
            Some(_) => -(MATE - 100 - ply as i32) + diff,
        };
    }
    let pos = game.position();
    let points = score(pos);
    let side = |c: OrbitColor| {
        pos.inner_count(c) as i32 * INNER
            + pos.longest_inner_row(c) as i32 * ROW
            + pos.count(c) as i32 * PIECE
    };
    POINT * (points[my] as i32 - points[their] as i32) + side(me) - side(me.opponent())
}

/// A move's identity for the killer table.
type MoveKey = (OrbitSquare, OrbitSquare, OrbitMoveKind);

/// The orbit game for the search: a node is the game itself (it knows
/// its ply count and outcome); a side without moves passes, so a move may
/// leave the same side to move.
struct OrbitTree {
    /// The side the search plays for (draws cost it [`CONTEMPT`]).
    root: OrbitColor,
}

impl Tree for OrbitTree {
    type Node = OrbitGame;
    type Move = OrbitMove;
    type Key = MoveKey;
    const MAX_PLY: usize = MAX_PLY;

    fn examine(&mut self, game: &OrbitGame, depth: i32, ply: usize) -> Examined<OrbitMove> {
        if game.outcome().is_some() || depth <= 0 || ply >= MAX_PLY - 1 {
            Examined::Value(value(game, ply, self.root))
        } else {
            Examined::Later
        }
    }

    fn moves(&self, game: &OrbitGame) -> Vec<OrbitMove> {
        game.legal_moves()
    }

    fn child(&self, game: &OrbitGame, m: &OrbitMove) -> OrbitGame {
        after(game, m)
    }

    fn turn_changes(&self, parent: &OrbitGame, child: &OrbitGame) -> bool {
        child.turn() != parent.turn()
    }

    fn table_key(&self, game: &OrbitGame) -> u64 {
        table_key(game)
    }

    fn key_of(m: &OrbitMove) -> MoveKey {
        (m.from, m.to, m.kind)
    }

    fn is_capture(m: &OrbitMove) -> bool {
        !m.captures.is_empty()
    }

    fn urgent(m: &OrbitMove) -> Option<i32> {
        (!m.captures.is_empty()).then(|| 500_000 + 1_000 * m.captures.len() as i32)
    }

    fn quiet(m: &OrbitMove) -> i32 {
        // Onto the inner orbit first, back out last.
        match m.to {
            OrbitSquare::Inner(_) => 100 + i32::from(m.boosts),
            OrbitSquare::C => 50,
            OrbitSquare::Outer(_) => 0,
        }
    }
}
