//! Orbit game opponents: the four levels over [`OrbitGame`], with a small
//! alpha-beta search of their own.
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
use std::time::{Duration, Instant};

use super::level::{Level, Profile};
use super::rng::SplitMix64;
use super::search::{INFINITY, MATE_BOUND};
use super::space::Table;
use super::{BotConfig, Budget, MATE, SearchInfo, pick_root};
use jumpgate_rules::orbit::{OrbitColor, OrbitGame, OrbitMove, OrbitMoveKind, OrbitSquare, score};

const MAX_PLY: usize = 64;
/// How often (in nodes) the clock is read.
const CLOCK_EVERY: u64 = 256;

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
    let mut search = Search {
        max_depth: profile.max_depth.min(MAX_PLY as u32 - 4),
        max_nodes: budget.max_nodes,
        deadline: budget.deadline,
        soft_deadline: budget.soft_deadline,
        killers: [[None; 2]; MAX_PLY],
        table: Table::new(profile.table_bits),
        root: game.turn(),
        nodes: 0,
        stopped: false,
    };

    if profile.noise == 0 && profile.stray_percent == 0 {
        let (index, score, depth) = search.deepen(game, legal);
        let info = SearchInfo {
            depth,
            nodes: search.nodes,
            score,
            elapsed: Duration::ZERO,
        };
        return (index, info);
    }

    let mut rng =
        SplitMix64::new(config.seed ^ position_hash(game) ^ u64::from(game.ply()).rotate_left(32));
    let stray = rng.chance(profile.stray_percent);
    let (scores, depth) = search.score_all(game, legal);
    let mut info = SearchInfo {
        depth,
        nodes: search.nodes,
        score: 0,
        elapsed: Duration::ZERO,
    };
    let index = pick_root(&scores, legal.len(), stray, profile.noise, &mut rng);
    info.score = scores.get(index).copied().unwrap_or(0);
    (index, info)
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

fn key_of(m: &OrbitMove) -> MoveKey {
    (m.from, m.to, m.kind)
}

struct Search {
    max_depth: u32,
    max_nodes: u64,
    deadline: Instant,
    soft_deadline: Instant,
    killers: [[Option<MoveKey>; 2]; MAX_PLY],
    table: Table,
    /// The side the search plays for (draws cost it [`CONTEMPT`]).
    root: OrbitColor,
    nodes: u64,
    stopped: bool,
}

impl Search {
    fn count_node(&mut self) -> bool {
        self.nodes += 1;
        if self.nodes >= self.max_nodes
            || (self.nodes.is_multiple_of(CLOCK_EVERY) && Instant::now() >= self.deadline)
        {
            self.stopped = true;
        }
        self.stopped
    }

    /// The child's score from the parent's side: negated only when the turn
    /// changed (a side without moves passes).
    fn child_score(
        &mut self,
        parent: &OrbitGame,
        child: &OrbitGame,
        depth: i32,
        alpha: i32,
        beta: i32,
        ply: usize,
    ) -> i32 {
        if child.turn() == parent.turn() {
            self.negamax(child, depth, alpha, beta, ply)
        } else {
            -self.negamax(child, depth, -beta, -alpha, ply)
        }
    }

    fn deepen(&mut self, root: &OrbitGame, moves: &[OrbitMove]) -> (usize, i32, u32) {
        let mut order: Vec<usize> = (0..moves.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.rank(&moves[i], 0)));
        let children: Vec<OrbitGame> = moves.iter().map(|m| after(root, m)).collect();
        let mut best = (order[0], 0, 0);
        for depth in 1..=self.max_depth {
            if depth > 1 && Instant::now() >= self.soft_deadline {
                break;
            }
            let d = depth as i32 - 1;
            let mut alpha = -INFINITY;
            let mut found: Option<(usize, i32)> = None;
            for (n, &i) in order.iter().enumerate() {
                let next = &children[i];
                let score = if n == 0 {
                    self.child_score(root, next, d, alpha, INFINITY, 1)
                } else {
                    let probe = self.child_score(root, next, d, alpha, alpha + 1, 1);
                    if probe > alpha && !self.stopped {
                        self.child_score(root, next, d, alpha, INFINITY, 1)
                    } else {
                        probe
                    }
                };
                if self.stopped {
                    break;
                }
                if score > alpha {
                    alpha = score;
                    found = Some((i, score));
                }
            }
            if let Some((i, score)) = found {
                best = (i, score, depth);
                order.retain(|&j| j != i);
                order.insert(0, i);
            }
            if self.stopped || alpha.abs() > MATE_BOUND {
                break;
            }
        }
        best
    }

    fn score_all(&mut self, root: &OrbitGame, moves: &[OrbitMove]) -> (Vec<i32>, u32) {
        let children: Vec<OrbitGame> = moves.iter().map(|m| after(root, m)).collect();
        let mut scores = Vec::new();
        let mut reached = 0;
        for depth in 1..=self.max_depth {
            let mut these = Vec::with_capacity(moves.len());
            for next in &children {
                let s = self.child_score(root, next, depth as i32 - 1, -INFINITY, INFINITY, 1);
                if self.stopped {
                    break;
                }
                these.push(s);
            }
            if self.stopped {
                break;
            }
            scores = these;
            reached = depth;
            if Instant::now() >= self.soft_deadline {
                break;
            }
        }
        (scores, reached)
    }

    fn rank(&self, m: &OrbitMove, ply: usize) -> i32 {
        let killers = self.killers[ply.min(MAX_PLY - 1)];
        let key = key_of(m);
        if !m.captures.is_empty() {
            500_000 + 1_000 * m.captures.len() as i32
        } else if killers[0] == Some(key) {
            300_000
        } else if killers[1] == Some(key) {
            299_000
        } else {
            // Onto the inner orbit first, back out last.
            match m.to {
                OrbitSquare::Inner(_) => 100 + i32::from(m.boosts),
                OrbitSquare::C => 50,
                OrbitSquare::Outer(_) => 0,
            }
        }
    }

    fn negamax(
        &mut self,
        game: &OrbitGame,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        ply: usize,
    ) -> i32 {
        if self.count_node() {
            return 0;
        }
        if game.outcome().is_some() || depth <= 0 || ply >= MAX_PLY - 1 {
            return value(game, ply, self.root);
        }
        let key = table_key(game);
        let entry = self.table.probe(key);
        if let Some(s) = Table::cutoff(entry, depth, alpha, beta, ply) {
            return s;
        }
        let moves = game.legal_moves();
        let order = Table::order(entry, moves.len(), |i| self.rank(&moves[i], ply));
        let child_depth = if moves.len() == 1 { depth } else { depth - 1 };
        let alpha_in = alpha;
        let mut best = -INFINITY;
        let mut best_index = order[0].1;
        for (i, &(_, index)) in order.iter().enumerate() {
            let m = &moves[index];
            let next = after(game, m);
            let score = if i == 0 {
                self.child_score(game, &next, child_depth, alpha, beta, ply + 1)
            } else {
                let probe = self.child_score(game, &next, child_depth, alpha, alpha + 1, ply + 1);
                if probe > alpha && probe < beta && !self.stopped {
                    self.child_score(game, &next, child_depth, alpha, beta, ply + 1)
                } else {
                    probe
                }
            };
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                best_index = index;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        if m.captures.is_empty() {
                            let slot = &mut self.killers[ply.min(MAX_PLY - 1)];
                            let key = key_of(m);
                            if slot[0] != Some(key) {
                                slot[1] = slot[0];
                                slot[0] = Some(key);
                            }
                        }
                        break;
                    }
                }
            }
        }
        self.table
            .record(key, depth, best, alpha_in, beta, best_index, ply);
        best
    }
}
