//! Space Mode opponents: the four levels over [`SpaceGame`], with a small
//! alpha-beta search of their own, since the bitboard search knows nothing
//! of wormholes and thruster boosts.
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
use std::time::{Duration, Instant};

use super::eval::{Weights, evaluate};
use super::level::{Level, Profile};
use super::rng::SplitMix64;
use super::search::{INFINITY, MATE_BOUND, score_from_table, score_to_table};
use super::table::Bound;
use super::{BotConfig, Budget, MATE, SearchInfo, pick_root};
use jumpgate_rules::space::{NO_PROGRESS_DRAW_PLIES, SpaceGame, SpaceMove, State};
use jumpgate_rules::variant::American;
use jumpgate_rules::{Color, Position, RuleSet, Square};

const MAX_PLY: usize = 96;
/// How often (in nodes) the clock is read.
const CLOCK_EVERY: u64 = 256;
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
    let mut search = Search {
        max_depth: profile.max_depth.min(MAX_PLY as u32 - 8),
        max_nodes: budget.max_nodes,
        deadline: budget.deadline,
        soft_deadline: budget.soft_deadline,
        keys: game
            .reversible_states()
            .map(State::repetition_key)
            .collect(),
        killers: [[None; 2]; MAX_PLY],
        table: Table::new(profile.table_bits),
        weights: Weights::for_rule_set(RuleSet::American),
        nodes: 0,
        stopped: false,
    };
    let quiet = game.quiet_plies();

    if profile.noise == 0 && profile.stray_percent == 0 {
        let (index, score, depth) = search.deepen(&state, quiet, legal);
        let info = SearchInfo {
            depth,
            nodes: search.nodes,
            score,
            elapsed: Duration::ZERO,
        };
        return (index, info);
    }

    // Mix the seed with the state and the move number, so a game does not
    // repeat the same "mistake" pattern and the same game replays exactly.
    let mut rng = SplitMix64::new(
        config.seed ^ state_hash(&state) ^ (game.moves().len() as u64).rotate_left(32),
    );
    let stray = rng.chance(profile.stray_percent);
    let (scores, depth) = search.score_all(&state, quiet, legal);
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

/// One remembered search result; the best move is its index in the
/// position's generated move list, which is the same every time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub key: u64,
    pub depth: i32,
    pub score: i32,
    pub bound: Bound,
    pub best: u8,
}

/// A fixed-size transposition table for the Space Mode and orbit searches
/// (the draughts table remembers draughts moves).
#[derive(Debug)]
pub(crate) struct Table {
    slots: Vec<Option<Slot>>,
    mask: usize,
}

impl Table {
    /// A table of `2^bits` slots.
    pub(crate) fn new(bits: u32) -> Table {
        let len = 1usize << bits;
        Table {
            slots: vec![None; len],
            mask: len - 1,
        }
    }

    pub(crate) fn probe(&self, key: u64) -> Option<Slot> {
        self.slots[key as usize & self.mask].filter(|e| e.key == key)
    }

    /// Keeps the deeper result for the same position; a new position takes
    /// the slot.
    pub(crate) fn store(&mut self, slot: Slot) {
        let old = &mut self.slots[slot.key as usize & self.mask];
        if !matches!(old, Some(o) if o.key == slot.key && o.depth > slot.depth) {
            *old = Some(slot);
        }
    }

    /// The order to search `count` moves in: the table's best move first,
    /// then by `rank`, highest first; as `(-rank, index)` pairs.
    pub(crate) fn order(
        entry: Option<Slot>,
        count: usize,
        rank: impl Fn(usize) -> i32,
    ) -> Vec<(i32, usize)> {
        let table_move = entry.map(|e| usize::from(e.best));
        let mut order: Vec<(i32, usize)> = (0..count)
            .map(|i| {
                let rank = if Some(i) == table_move {
                    1_000_000
                } else {
                    rank(i)
                };
                (-rank, i)
            })
            .collect();
        order.sort_unstable();
        order
    }

    /// A usable score for this window at this depth, if the table has one.
    pub(crate) fn cutoff(
        entry: Option<Slot>,
        depth: i32,
        alpha: i32,
        beta: i32,
        ply: usize,
    ) -> Option<i32> {
        let e = entry.filter(|e| e.depth >= depth)?;
        let s = score_from_table(e.score, ply);
        match e.bound {
            Bound::Exact => Some(s),
            Bound::Lower if s >= beta => Some(s),
            Bound::Upper if s <= alpha => Some(s),
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &mut self,
        key: u64,
        depth: i32,
        best_score: i32,
        alpha_in: i32,
        beta: i32,
        best: usize,
        ply: usize,
    ) {
        let bound = if best_score >= beta {
            Bound::Lower
        } else if best_score > alpha_in {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.store(Slot {
            key,
            depth,
            score: score_to_table(best_score, ply),
            bound,
            best: u8::try_from(best).unwrap_or(u8::MAX),
        });
    }
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

fn key_of(m: &SpaceMove) -> MoveKey {
    (m.from(), m.to(), m.boost)
}

struct Search {
    max_depth: u32,
    max_nodes: u64,
    deadline: Instant,
    soft_deadline: Instant,
    /// Repetition keys since the last irreversible move, then the path.
    keys: Vec<Key>,
    killers: [[Option<MoveKey>; 2]; MAX_PLY],
    table: Table,
    weights: Weights,
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

    /// Iterative deepening; the previous iteration's best move is searched
    /// first. Returns the best index, its score and the depth reached.
    fn deepen(&mut self, root: &State, quiet: u32, moves: &[SpaceMove]) -> (usize, i32, u32) {
        let mut order: Vec<usize> = (0..moves.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.rank(&moves[i], 0)));
        let mut best = (order[0], 0, 0);
        for depth in 1..=self.max_depth {
            if depth > 1 && Instant::now() >= self.soft_deadline {
                break;
            }
            let mut alpha = -INFINITY;
            let mut found: Option<(usize, i32)> = None;
            for (n, &i) in order.iter().enumerate() {
                let (next, q) = child(root, &moves[i], quiet);
                self.keys.push(next.repetition_key());
                let score = if n == 0 {
                    -self.negamax(&next, depth as i32 - 1, -INFINITY, -alpha, 1, q)
                } else {
                    let probe = -self.negamax(&next, depth as i32 - 1, -alpha - 1, -alpha, 1, q);
                    if probe > alpha && !self.stopped {
                        -self.negamax(&next, depth as i32 - 1, -INFINITY, -alpha, 1, q)
                    } else {
                        probe
                    }
                };
                self.keys.pop();
                if self.stopped {
                    break;
                }
                if score > alpha {
                    alpha = score;
                    found = Some((i, score));
                }
            }
            // An interrupted iteration still searched its best move first,
            // so anything it found better is trustworthy.
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

    /// Scores every root move with a full window, one ply deeper per round;
    /// returns the scores of the deepest complete round.
    fn score_all(&mut self, root: &State, quiet: u32, moves: &[SpaceMove]) -> (Vec<i32>, u32) {
        let mut scores = Vec::new();
        let mut reached = 0;
        for depth in 1..=self.max_depth {
            let mut these = Vec::with_capacity(moves.len());
            for m in moves {
                let (next, q) = child(root, m, quiet);
                self.keys.push(next.repetition_key());
                let s = -self.negamax(&next, depth as i32 - 1, -INFINITY, INFINITY, 1, q);
                self.keys.pop();
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

    fn rank(&self, m: &SpaceMove, ply: usize) -> i32 {
        let killers = self.killers[ply.min(MAX_PLY - 1)];
        let key = key_of(m);
        if !m.captured.is_empty() {
            500_000 + 1_000 * m.captured.len() as i32 + i32::from(m.crowns) * 100
        } else if m.crowns {
            400_000
        } else if killers[0] == Some(key) {
            300_000
        } else if killers[1] == Some(key) {
            299_000
        } else if m.boost {
            // A charge spent is gone for good: try the plain steps first.
            0
        } else {
            1
        }
    }

    fn negamax(
        &mut self,
        state: &State,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        ply: usize,
        quiet: u32,
    ) -> i32 {
        if self.count_node() {
            return 0;
        }
        let moves = state.legal_moves();
        if moves.is_empty() {
            return -(MATE - ply as i32);
        }
        if quiet >= NO_PROGRESS_DRAW_PLIES || self.repeats(quiet) {
            return 0;
        }
        let captures = !moves[0].captured.is_empty();
        if ply >= MAX_PLY - 1 || (depth <= 0 && !captures) {
            return evaluate_state(state, &self.weights);
        }
        let key = table_key(state);
        let entry = self.table.probe(key);
        if let Some(s) = Table::cutoff(entry, depth, alpha, beta, ply) {
            return s;
        }
        let order = Table::order(entry, moves.len(), |i| self.rank(&moves[i], ply));
        // A forced reply costs no depth, and below the horizon only the
        // mandatory captures are followed.
        let child_depth = if moves.len() == 1 || depth <= 0 {
            depth
        } else {
            depth - 1
        };
        let alpha_in = alpha;
        let mut best = -INFINITY;
        let mut best_index = order[0].1;
        for (i, &(_, index)) in order.iter().enumerate() {
            let m = &moves[index];
            let (next, q) = child(state, m, quiet);
            self.keys.push(next.repetition_key());
            let score = if i == 0 {
                -self.negamax(&next, child_depth, -beta, -alpha, ply + 1, q)
            } else {
                let probe = -self.negamax(&next, child_depth, -alpha - 1, -alpha, ply + 1, q);
                if probe > alpha && probe < beta && !self.stopped {
                    -self.negamax(&next, child_depth, -beta, -alpha, ply + 1, q)
                } else {
                    probe
                }
            };
            self.keys.pop();
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                best_index = index;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        if m.captured.is_empty() {
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
