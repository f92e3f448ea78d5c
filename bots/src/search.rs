//! The search: iterative deepening over principal-variation alpha-beta with
//! a transposition table, move ordering (table move, captures, killers,
//! history), a quiescence search that follows mandatory captures, and draws
//! by repetition on the search path or by the rule set's no-progress count.
//!
//! Generic over [`Rules`], like move generation, so each rule set gets its
//! own specialised search.

use std::marker::PhantomData;
use std::time::Instant;

use super::eval::Weights;
use super::hash::zobrist;
use super::table::{Bound, Entry, MoveKey, TransTable};
use super::timing::IterationPlan;
use super::tuned::TunedWeights;
use jumpgate_rules::movegen::{dedup_results, has_capture, legal_moves};
use jumpgate_rules::{Move, Position, Rules};

/// A won position: the side to move wins in `MATE - score` plies.
pub const MATE: i32 = 30_000;
/// Above every score a search can return.
pub(super) const INFINITY: i32 = 32_000;
/// Scores beyond this are wins or losses, not evaluations.
pub(super) const MATE_BOUND: i32 = MATE - 1_000;
const MAX_PLY: usize = 128;
/// How often (in nodes) the clock is read.
const CLOCK_EVERY: u64 = 1_024;

/// When the search must stop.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub max_depth: u32,
    pub max_nodes: u64,
    /// Hard stop, checked every [`CLOCK_EVERY`] nodes.
    pub deadline: Option<Instant>,
    /// No new iteration starts after this.
    pub soft_deadline: Option<Instant>,
    /// The Executive's time management: another iteration starts only if
    /// it is likely to finish, and the plan's budget is a hard stop.
    pub plan: Option<IterationPlan>,
}

/// Where the game stands before the search: the hashes of the positions
/// since the last irreversible move (the current one last).
#[derive(Clone, Debug)]
pub(crate) struct History {
    pub hashes: Vec<u64>,
}

/// Which evaluation a search uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Evaluation {
    /// The lower levels' and the first Executive's.
    HandSet(Weights),
    /// The current Executive's, with its endgame knowledge.
    Tuned(&'static TunedWeights),
}

impl Evaluation {
    fn evaluate<R: Rules>(&self, pos: &Position) -> i32 {
        match self {
            Evaluation::HandSet(w) => super::eval::evaluate::<R>(pos, w),
            Evaluation::Tuned(w) => super::tuned::evaluate::<R>(pos, w),
        }
    }
}

/// The result of one completed (or interrupted) iteration at the root.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RootResult {
    pub best: Move,
    pub score: i32,
    pub depth: u32,
}

pub(crate) struct Searcher<R: Rules> {
    weights: Evaluation,
    limits: Limits,
    table: TransTable,
    killers: [[Option<MoveKey>; 2]; MAX_PLY],
    /// Indexed by origin and destination square.
    history: Vec<[i32; 64]>,
    /// Hashes of the game since the last irreversible move, then the path.
    hashes: Vec<u64>,
    buffers: Vec<Vec<Move>>,
    pub nodes: u64,
    stopped: bool,
    root_best: Option<(Move, i32)>,
    _rules: PhantomData<R>,
}

/// Win and loss scores count plies from the root; the table stores them
/// counted from the node.
pub(super) fn score_to_table(score: i32, ply: usize) -> i32 {
    if score > MATE_BOUND {
        score + ply as i32
    } else if score < -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

pub(super) fn score_from_table(score: i32, ply: usize) -> i32 {
    if score > MATE_BOUND {
        score - ply as i32
    } else if score < -MATE_BOUND {
        score + ply as i32
    } else {
        score
    }
}

/// True when `m` neither captures nor moves a man: only such moves can lead
/// back to an earlier position.
fn is_reversible(pos: &Position, m: &Move) -> bool {
    !m.is_capture() && pos.kings().contains(m.from())
}

impl<R: Rules> Searcher<R> {
    pub(crate) fn new(
        weights: Evaluation,
        limits: Limits,
        table_bits: u32,
        history: History,
    ) -> Self {
        Searcher {
            weights,
            limits,
            table: TransTable::new(table_bits),
            killers: [[None; 2]; MAX_PLY],
            history: vec![[0; 64]; 64],
            hashes: history.hashes,
            buffers: (0..=MAX_PLY).map(|_| Vec::with_capacity(32)).collect(),
            nodes: 0,
            stopped: false,
            root_best: None,
            _rules: PhantomData,
        }
    }

    /// Iterative deepening with a principal-variation search at the root.
    /// Returns the deepest result. An iteration cut off by the hard stop
    /// counts only as far as it proved something: the first root move it
    /// searches is the last complete iteration's best, so its best move is
    /// that one unless another move was searched to the end and beat it.
    pub(crate) fn deepen(&mut self, root: &Position, quiet_plies: u32) -> Option<RootResult> {
        let mut result: Option<RootResult> = None;
        for depth in 1..=self.limits.max_depth {
            if depth > 1 && self.past(self.limits.soft_deadline) {
                break;
            }
            if depth > 1
                && let Some(plan) = &self.limits.plan
                && !plan.may_start(plan.ticks(self.nodes))
            {
                break;
            }
            let before = self.limits.plan.as_ref().map(|p| p.ticks(self.nodes));
            self.root_best = None;
            let score = self.negamax(root, depth as i32, -INFINITY, INFINITY, 0, quiet_plies);
            if let Some((best, best_score)) = self.root_best {
                let score = if self.stopped { best_score } else { score };
                result = Some(RootResult { best, score, depth });
            }
            if self.stopped || score.abs() > MATE_BOUND {
                break;
            }
            if let (Some(plan), Some(before)) = (&mut self.limits.plan, before) {
                let now = plan.ticks(self.nodes);
                plan.completed(now.saturating_sub(before));
            }
        }
        result
    }

    /// Scores every root move with a full window, deepening one ply at a
    /// time; the easy levels pick among these scores with some noise.
    /// Returns the scores of the deepest complete iteration.
    pub(crate) fn score_all(
        &mut self,
        root: &Position,
        quiet_plies: u32,
        moves: &[Move],
    ) -> (Vec<i32>, u32) {
        let mut scores: Vec<i32> = vec![0; moves.len()];
        let mut reached = 0;
        for depth in 1..=self.limits.max_depth {
            let mut these = Vec::with_capacity(moves.len());
            for m in moves {
                let child = root.after(m);
                let qp = if is_reversible(root, m) {
                    quiet_plies + 1
                } else {
                    0
                };
                self.hashes.push(zobrist(&child));
                let s = -self.negamax(&child, depth as i32 - 1, -INFINITY, INFINITY, 1, qp);
                self.hashes.pop();
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
            if self.past(self.limits.soft_deadline) {
                break;
            }
        }
        (scores, reached)
    }

    fn past(&self, instant: Option<Instant>) -> bool {
        instant.is_some_and(|t| Instant::now() >= t)
    }

    fn count_node(&mut self) -> bool {
        self.nodes += 1;
        if self.nodes >= self.limits.max_nodes
            || (self.nodes.is_multiple_of(CLOCK_EVERY)
                && (self.past(self.limits.deadline)
                    || self
                        .limits
                        .plan
                        .as_ref()
                        .is_some_and(|p| p.out_of_time(p.ticks(self.nodes)))))
        {
            self.stopped = true;
        }
        self.stopped
    }

    /// A repetition of an earlier position with the same side to move,
    /// within the run of reversible plies.
    fn repeats(&self, quiet_plies: u32) -> bool {
        let n = self.hashes.len();
        let current = self.hashes[n - 1];
        let reach = (quiet_plies as usize).min(n - 1);
        (2..=reach)
            .step_by(2)
            .any(|back| self.hashes[n - 1 - back] == current)
    }

    fn order(&self, moves: &mut [Move], table_move: Option<MoveKey>, ply: usize) {
        let killers = self.killers[ply.min(MAX_PLY - 1)];
        moves.sort_by_cached_key(|m| {
            let key = MoveKey::of(m);
            let rank = if table_move == Some(key) {
                1_000_000
            } else if m.is_capture() {
                500_000 + 1_000 * m.captured().count() as i32 + 100 * m.kings_taken() as i32
            } else if m.crowns() {
                400_000
            } else if killers[0] == Some(key) {
                300_000
            } else if killers[1] == Some(key) {
                299_000
            } else {
                self.history[m.from().index()][m.to().index()].min(200_000)
            };
            std::cmp::Reverse(rank)
        });
    }

    fn negamax(
        &mut self,
        pos: &Position,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        ply: usize,
        quiet_plies: u32,
    ) -> i32 {
        if self.count_node() {
            return 0;
        }
        if ply > 0 && (quiet_plies >= R::NO_PROGRESS_DRAW_PLIES || self.repeats(quiet_plies)) {
            return 0;
        }
        if ply >= MAX_PLY - 1 {
            return self.weights.evaluate::<R>(pos);
        }
        if depth <= 0 {
            return self.quiesce(pos, alpha, beta, ply);
        }

        let key = *self.hashes.last().expect("the current position is hashed");
        let entry = self.table.probe(key);
        if let Some(e) = entry
            && ply > 0
            && e.depth >= depth
        {
            let s = score_from_table(e.score, ply);
            match e.bound {
                Bound::Exact => return s,
                Bound::Lower if s >= beta => return s,
                Bound::Upper if s <= alpha => return s,
                _ => {}
            }
        }

        let mut moves = std::mem::take(&mut self.buffers[ply]);
        legal_moves::<R>(pos, &mut moves);
        dedup_results(&mut moves);
        if moves.is_empty() {
            self.buffers[ply] = moves;
            return -(MATE - ply as i32);
        }
        self.order(&mut moves, entry.and_then(|e| e.best), ply);

        // A forced reply costs no depth: tactics in checkers are long chains
        // of forced moves.
        let child_depth = if moves.len() == 1 { depth } else { depth - 1 };
        let alpha_in = alpha;
        let mut best_score = -INFINITY;
        let mut best_move: Option<MoveKey> = None;
        for (i, m) in moves.iter().enumerate() {
            let child = pos.after(m);
            let qp = if is_reversible(pos, m) {
                quiet_plies + 1
            } else {
                0
            };
            self.hashes.push(zobrist(&child));
            let score = if i == 0 {
                -self.negamax(&child, child_depth, -beta, -alpha, ply + 1, qp)
            } else {
                let probe = -self.negamax(&child, child_depth, -alpha - 1, -alpha, ply + 1, qp);
                if probe > alpha && probe < beta {
                    -self.negamax(&child, child_depth, -beta, -alpha, ply + 1, qp)
                } else {
                    probe
                }
            };
            self.hashes.pop();
            if self.stopped {
                self.buffers[ply] = moves;
                return 0;
            }
            if score > best_score {
                best_score = score;
                best_move = Some(MoveKey::of(m));
                if ply == 0 {
                    self.root_best = Some((*m, score));
                }
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        if !m.is_capture() {
                            self.reward(m, ply, depth);
                        }
                        break;
                    }
                }
            }
        }
        self.buffers[ply] = moves;

        let bound = if best_score >= beta {
            Bound::Lower
        } else if best_score > alpha_in {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.table.store(Entry {
            key,
            depth,
            score: score_to_table(best_score, ply),
            bound,
            best: best_move,
        });
        best_score
    }

    fn reward(&mut self, m: &Move, ply: usize, depth: i32) {
        let key = MoveKey::of(m);
        let slot = &mut self.killers[ply.min(MAX_PLY - 1)];
        if slot[0] != Some(key) {
            slot[1] = slot[0];
            slot[0] = Some(key);
        }
        let h = &mut self.history[m.from().index()][m.to().index()];
        *h = (*h + depth * depth).min(100_000);
    }

    /// Follows mandatory captures to a quiet position, then evaluates. A
    /// side that must capture cannot "stand pat": it has no other move.
    fn quiesce(&mut self, pos: &Position, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        if pos.pieces(pos.turn()).is_empty() {
            return -(MATE - ply as i32);
        }
        if ply >= MAX_PLY - 1 || !has_capture::<R>(pos) {
            return self.weights.evaluate::<R>(pos);
        }
        let mut moves = std::mem::take(&mut self.buffers[ply]);
        legal_moves::<R>(pos, &mut moves);
        dedup_results(&mut moves);
        self.order(&mut moves, None, ply);
        let mut best = -INFINITY;
        for m in moves.iter() {
            if self.count_node() {
                break;
            }
            // Captures are irreversible and quiescence never checks for
            // repetition, so the path of hashes is left alone here.
            let score = -self.quiesce(&pos.after(m), -beta, -alpha, ply + 1);
            if self.stopped {
                break;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        break;
                    }
                }
            }
        }
        self.buffers[ply] = moves;
        if self.stopped {
            return 0;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Weights;
    use crate::hash::zobrist;
    use jumpgate_rules::variant::Russian;
    use jumpgate_rules::{Bitboard, Color, RuleSet, Setup, Square};

    fn limits(max_depth: u32) -> Limits {
        Limits {
            max_depth,
            max_nodes: u64::MAX,
            deadline: None,
            soft_deadline: None,
            plan: None,
        }
    }

    fn searcher(hashes: Vec<u64>) -> Searcher<Russian> {
        Searcher::new(
            Evaluation::HandSet(Weights::for_rule_set(RuleSet::Russian)),
            limits(4),
            10,
            History { hashes },
        )
    }

    /// One Dark king on a1 against three Light kings, Dark to move.
    fn king_against_three() -> Position {
        let dark = Square::new(0).bb();
        let light: Bitboard = [63, 61, 47].into_iter().map(Square::new).collect();
        Position::from_setup(Setup {
            by_color: [dark, light],
            kings: dark | light,
            turn: Color::Dark,
        })
        .unwrap()
    }

    #[test]
    fn the_no_progress_limit_scores_a_draw() {
        let pos = king_against_three();
        let fresh = searcher(vec![zobrist(&pos)]).deepen(&pos, 0).unwrap();
        assert!(fresh.score < -200, "{fresh:?}");
        let limit = Russian::NO_PROGRESS_DRAW_PLIES - 1;
        let last = searcher(vec![zobrist(&pos)]).deepen(&pos, limit).unwrap();
        assert_eq!(last.score, 0, "{last:?}");
    }

    #[test]
    fn repetition_counts_only_within_reversible_plies() {
        let s = searcher(vec![7, 8, 7]);
        assert!(s.repeats(2));
        assert!(!s.repeats(1));
        assert!(!searcher(vec![7, 8, 9]).repeats(2));
    }

    /// A plan by nodes makes the Executive's time management exact: the
    /// same search stops at the same node with the same move, within the
    /// budget, after several complete iterations.
    #[test]
    fn a_node_plan_stops_deterministically_within_its_budget() {
        use crate::timing::{IterationPlan, Meter};
        let pos = Position::start(RuleSet::Russian);
        let run = |budget: u64| {
            let limits = Limits {
                max_depth: 64,
                max_nodes: u64::MAX,
                deadline: None,
                soft_deadline: None,
                plan: Some(IterationPlan::new(Meter::Nodes, budget)),
            };
            let weights = Evaluation::HandSet(Weights::for_rule_set(RuleSet::Russian));
            let history = History {
                hashes: vec![zobrist(&pos)],
            };
            let mut s = Searcher::<Russian>::new(weights, limits, 14, history);
            let found = s.deepen(&pos, 0).expect("a move");
            (MoveKey::of(&found.best), found.depth, s.nodes)
        };
        let first = run(40_000);
        assert_eq!(first, run(40_000));
        let (_, depth, nodes) = first;
        assert!(nodes <= 40_000 + CLOCK_EVERY, "{nodes}");
        assert!(depth >= 5, "{depth}");
        let (_, deeper, _) = run(400_000);
        assert!(deeper > depth);
    }

    #[test]
    fn mate_scores_survive_the_table() {
        for ply in [0, 3, 17] {
            for score in [MATE - 5, -(MATE - 9), 120, -40] {
                assert_eq!(score_from_table(score_to_table(score, ply), ply), score);
            }
        }
    }
}
