//! The search: iterative deepening over principal-variation alpha-beta with
//! a transposition table, move ordering (table move, captures, killers,
//! history), a quiescence search that follows mandatory captures, and draws
//! by repetition on the search path or by the rule set's no-progress count.
//!
//! [`SearchFeatures`] switches refinements on: spending the whole time
//! budget (the current Executive's), and, tried and measured but left off
//! (bots/README.md), late move reductions, aspiration windows at the root,
//! a history penalty for quiet moves that failed, a two-slot table, a
//! threat extension at the horizon and more time when unsure. With none
//! (the lower levels and the frozen Executives) the search is exactly the
//! earlier one.
//!
//! Generic over [`Rules`], like move generation, so each rule set gets its
//! own specialised search.
//!
//! Longer than our usual module (about 890 lines): the refinements live
//! inside the one negamax loop they change, so they stay beside it, and a
//! quarter of the file is their tests.

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

/// Quiet moves searched at full depth before later ones are reduced.
const LMR_FULL_MOVES: usize = 4;
/// Depth below which nothing is reduced.
const LMR_MIN_DEPTH: i32 = 4;
/// Half-width of the first aspiration window, in hundredths of a man.
const ASPIRATION: i32 = 30;
/// Depth from which the root search starts with an aspiration window.
const ASPIRATION_MIN_DEPTH: u32 = 5;

/// Refinements of the search that the current Executive uses; all off is
/// the search the lower levels and the frozen Executives play with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SearchFeatures {
    /// Outside the principal variation, quiet moves late in the ordering
    /// are searched a ply (two when very late and deep) shallower with a
    /// null window, and again at full depth only if they beat alpha.
    /// Captures, crownings, killers and moves that give the opponent a
    /// capture are never reduced.
    pub late_move_reductions: bool,
    /// From depth 5 the root is searched in a window around the last
    /// iteration's score, widened to the full window when it fails.
    pub aspiration: bool,
    /// A quiet move that caused a cut-off also lowers the history of the
    /// quiet moves tried before it.
    pub history_penalty: bool,
    /// Table slots come in pairs: one keeps the deepest result, the other
    /// the latest.
    pub two_slot_table: bool,
    /// A quiet position at the horizon where the side to move has a piece
    /// en prise is searched one ply more instead of evaluated.
    pub threat_extension: bool,
    /// When the last iteration changed the best move or swung its score,
    /// another iteration starts on a smaller predicted share of the
    /// budget, so more of the budget goes to unclear moves.
    pub unsure_time: bool,
    /// Another iteration always starts while budget is left, and the hard
    /// stop ends it: with a fixed time a move, time left unused is lost,
    /// and a cut-off iteration never replaces the last complete one's
    /// move unless it proved a better one.
    pub whole_budget: bool,
}

impl SearchFeatures {
    /// The earlier search, unrefined.
    pub const NONE: SearchFeatures = SearchFeatures {
        late_move_reductions: false,
        aspiration: false,
        history_penalty: false,
        two_slot_table: false,
        threat_extension: false,
        unsure_time: false,
        whole_budget: false,
    };
    /// What the current Executive plays with: the others did not win
    /// their fixed-node matches against the second version (README).
    pub const CURRENT: SearchFeatures = SearchFeatures {
        whole_budget: true,
        ..SearchFeatures::NONE
    };
    /// Every refinement on, for tests.
    #[cfg(test)]
    const ALL: SearchFeatures = SearchFeatures {
        late_move_reductions: true,
        aspiration: true,
        history_penalty: true,
        two_slot_table: true,
        threat_extension: true,
        unsure_time: true,
        whole_budget: true,
    };

    /// The features named in a comma-separated list (`lmr`, `aspiration`,
    /// `history`, `table`, `threat`, `unsure`, `whole`; `none` for none), for trying
    /// combinations.
    pub fn parse(list: &str) -> Result<SearchFeatures, String> {
        let mut f = SearchFeatures::NONE;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "lmr" => f.late_move_reductions = true,
                "aspiration" => f.aspiration = true,
                "history" => f.history_penalty = true,
                "table" => f.two_slot_table = true,
                "threat" => f.threat_extension = true,
                "unsure" => f.unsure_time = true,
                "whole" => f.whole_budget = true,
                "none" => {}
                other => {
                    return Err(format!(
                        "unknown search feature {other:?} (lmr, aspiration, history, table, threat, unsure, whole, none)"
                    ));
                }
            }
        }
        Ok(f)
    }
}

/// A change of the root score between iterations, in hundredths of a man,
/// that makes the Executive unsure of its move.
const UNSURE_SWING: i32 = 25;

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
    pub features: SearchFeatures,
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
    /// The depth of the iteration under way.
    iteration_depth: u32,
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

/// How many plies to take off the `index`-th move (in search order) at
/// `depth`: none for what may be tactical (a capture, a crowning, a killer,
/// a move after which the opponent can capture), else one, two when the
/// move is very late in a deep search.
fn late_move_reduction<R: Rules>(
    m: &Move,
    child: &Position,
    killers: &[Option<MoveKey>; 2],
    index: usize,
    depth: i32,
) -> i32 {
    if m.is_capture() || m.crowns() {
        return 0;
    }
    let key = Some(MoveKey::of(m));
    if killers.contains(&key) || has_capture::<R>(child) {
        return 0;
    }
    if index >= 2 * LMR_FULL_MOVES + 2 && depth >= 6 {
        2
    } else {
        1
    }
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
            table: if limits.features.two_slot_table {
                TransTable::with_pairs(table_bits)
            } else {
                TransTable::new(table_bits)
            },
            limits,
            killers: [[None; 2]; MAX_PLY],
            history: vec![[0; 64]; 64],
            hashes: history.hashes,
            buffers: (0..=MAX_PLY).map(|_| Vec::with_capacity(32)).collect(),
            nodes: 0,
            stopped: false,
            root_best: None,
            iteration_depth: 0,
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
        // Whether the last iteration changed the best move or moved its
        // score by more than UNSURE_SWING.
        let mut unsure = false;
        for depth in 1..=self.limits.max_depth {
            if depth > 1 && self.past(self.limits.soft_deadline) {
                break;
            }
            if depth > 1
                && let Some(plan) = &self.limits.plan
            {
                let spent = plan.ticks(self.nodes);
                let go = if self.limits.features.whole_budget {
                    !plan.out_of_time(spent)
                } else if self.limits.features.unsure_time && unsure {
                    plan.may_start_unsure(spent)
                } else {
                    plan.may_start(spent)
                };
                if !go {
                    break;
                }
            }
            let before = self.limits.plan.as_ref().map(|p| p.ticks(self.nodes));
            let (mut low, mut high) = match result {
                Some(last)
                    if self.limits.features.aspiration
                        && depth >= ASPIRATION_MIN_DEPTH
                        && last.score.abs() < MATE_BOUND =>
                {
                    (last.score - ASPIRATION, last.score + ASPIRATION)
                }
                _ => (-INFINITY, INFINITY),
            };
            self.iteration_depth = depth;
            let score = loop {
                self.root_best = None;
                let score = self.negamax(root, depth as i32, low, high, 0, quiet_plies);
                if self.stopped {
                    break score;
                }
                // Outside the window the score is only a bound: search
                // again with that side of the window opened.
                if score <= low && low > -INFINITY {
                    low = -INFINITY;
                } else if score >= high && high < INFINITY {
                    high = INFINITY;
                } else {
                    break score;
                }
            };
            if let Some((best, best_score)) = self.root_best {
                let score = if self.stopped { best_score } else { score };
                unsure = result.is_some_and(|last| {
                    MoveKey::of(&last.best) != MoveKey::of(&best)
                        || (last.score - score).abs() > UNSURE_SWING
                });
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
        let depth = if depth > 0 {
            depth
        } else if self.threat_extends(pos, ply) {
            1
        } else {
            return self.quiesce(pos, alpha, beta, ply);
        };

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
        let reducing = self.limits.features.late_move_reductions
            && depth >= LMR_MIN_DEPTH
            && beta - alpha == 1
            && moves.len() > LMR_FULL_MOVES;
        let killers = self.killers[ply.min(MAX_PLY - 1)];
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
            let reduction = if reducing && i >= LMR_FULL_MOVES {
                late_move_reduction::<R>(m, &child, &killers, i, depth)
            } else {
                0
            };
            self.hashes.push(zobrist(&child));
            let score = if i == 0 {
                -self.negamax(&child, child_depth, -beta, -alpha, ply + 1, qp)
            } else {
                let mut probe = -self.negamax(
                    &child,
                    child_depth - reduction,
                    -alpha - 1,
                    -alpha,
                    ply + 1,
                    qp,
                );
                if reduction > 0 && probe > alpha && !self.stopped {
                    probe = -self.negamax(&child, child_depth, -alpha - 1, -alpha, ply + 1, qp);
                }
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
                // At the root a later move replaces the first only when it
                // beat alpha: with an aspiration window that failed low,
                // two upper bounds say nothing about which move is better.
                // (With the full window this is the same test.)
                if ply == 0 && (i == 0 || score > alpha) {
                    self.root_best = Some((*m, score));
                }
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        if !m.is_capture() {
                            self.reward(m, ply, depth);
                            if self.limits.features.history_penalty {
                                self.penalise(&moves[..i], depth);
                            }
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

    /// Whether a position at the horizon gets one more ply: the side to
    /// move has no capture but a piece the opponent could take, which the
    /// evaluation would only guess at. Bounded to twice the iteration's
    /// depth along a path.
    fn threat_extends(&self, pos: &Position, ply: usize) -> bool {
        self.limits.features.threat_extension
            && ply < 2 * self.iteration_depth as usize
            && crate::tuned::threatened::<R>(pos) > 0
            && !has_capture::<R>(pos)
    }

    /// Lowers the history of the quiet moves searched before a cut-off
    /// that did not cause it.
    fn penalise(&mut self, tried: &[Move], depth: i32) {
        for m in tried.iter().filter(|m| !m.is_capture()) {
            let h = &mut self.history[m.from().index()][m.to().index()];
            *h = (*h - depth * depth).max(-100_000);
        }
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
            features: SearchFeatures::NONE,
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
                features: SearchFeatures::NONE,
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
    fn search_features_parse_by_name() {
        assert_eq!(SearchFeatures::parse("none"), Ok(SearchFeatures::NONE));
        let some = SearchFeatures::parse("lmr, threat").unwrap();
        assert!(some.late_move_reductions && some.threat_extension);
        assert!(!some.aspiration && !some.history_penalty && !some.two_slot_table);
        assert!(SearchFeatures::parse("nullmove").is_err());
    }

    fn with_features(
        features: SearchFeatures,
        max_depth: u32,
        pos: &Position,
    ) -> Searcher<Russian> {
        let limits = Limits {
            features,
            ..limits(max_depth)
        };
        let weights = Evaluation::Tuned(crate::tuned::TunedWeights::for_rule_set(RuleSet::Russian));
        Searcher::new(
            weights,
            limits,
            16,
            History {
                hashes: vec![zobrist(pos)],
            },
        )
    }

    /// Russian, White (first to move) to play: a man on c3 with enemy men
    /// on d4 and e5; the d4 man can take it, and it cannot take d4.
    fn en_prise() -> Position {
        jumpgate_rules::fen::parse(RuleSet::Russian, "W:Wc3:Bd4,e5").unwrap()
    }

    #[test]
    fn the_threat_extension_takes_only_quiet_threatened_positions() {
        let features = SearchFeatures::parse("threat").unwrap();
        let mut s = with_features(features, 4, &en_prise());
        s.iteration_depth = 4;
        assert!(s.threat_extends(&en_prise(), 3));
        // Not beyond twice the iteration's depth along a path.
        assert!(!s.threat_extends(&en_prise(), 8));
        // Guarded from behind (b2), nothing is en prise.
        let guarded = jumpgate_rules::fen::parse(RuleSet::Russian, "W:Wc3,b2:Bd4,e5").unwrap();
        assert!(!s.threat_extends(&guarded, 3));
        // With a capture to make, quiescence already searches on.
        let capture = jumpgate_rules::fen::parse(RuleSet::Russian, "W:Wc3:Bd4").unwrap();
        assert!(!s.threat_extends(&capture, 3));
        // Off, never.
        let mut plain = with_features(SearchFeatures::NONE, 4, &en_prise());
        plain.iteration_depth = 4;
        assert!(!plain.threat_extends(&en_prise(), 3));
    }

    /// Every refinement on, the search still agrees with the plain one on
    /// a position it can see to the end: the lone man is lost either way,
    /// and both find the same score at the same depth.
    #[test]
    fn the_refined_search_scores_a_small_position_like_the_plain_one() {
        let pos = en_prise();
        let all = SearchFeatures::ALL;
        let plain = with_features(SearchFeatures::NONE, 9, &pos)
            .deepen(&pos, 0)
            .unwrap();
        let refined = with_features(all, 9, &pos).deepen(&pos, 0).unwrap();
        assert_eq!(plain.depth, refined.depth);
        assert!(plain.score < -MATE_BOUND, "{plain:?}");
        assert_eq!(plain.score, refined.score, "{plain:?} {refined:?}");
    }

    /// With the refinements on, the node plan is still deterministic, and
    /// the same budget reaches at least the plain search's depth; spending
    /// the whole budget runs to the hard stop, where the plain plan stops
    /// short when the next iteration would not fit.
    #[test]
    fn the_refined_search_is_deterministic_and_no_shallower() {
        use crate::timing::{IterationPlan, Meter};
        let pos = Position::start(RuleSet::Russian);
        let run_for = |features: SearchFeatures, budget: u64| {
            let limits = Limits {
                max_depth: 64,
                max_nodes: u64::MAX,
                deadline: None,
                soft_deadline: None,
                plan: Some(IterationPlan::new(Meter::Nodes, budget)),
                features,
            };
            let weights =
                Evaluation::Tuned(crate::tuned::TunedWeights::for_rule_set(RuleSet::Russian));
            let mut s = Searcher::<Russian>::new(
                weights,
                limits,
                16,
                History {
                    hashes: vec![zobrist(&pos)],
                },
            );
            let found = s.deepen(&pos, 0).expect("a move");
            (MoveKey::of(&found.best), found.depth, s.nodes)
        };
        let run = |features| run_for(features, 200_000);
        let plain = run(SearchFeatures::NONE);
        for features in [SearchFeatures::CURRENT, SearchFeatures::ALL] {
            let refined = run(features);
            assert_eq!(refined, run(features));
            assert!(refined.1 >= plain.1, "{features:?}");
        }
        let budgets = [30_000, 60_000, 100_000, 150_000, 200_000];
        let stopped_short = budgets
            .iter()
            .filter(|&&b| run_for(SearchFeatures::NONE, b).2 < b)
            .count();
        assert!(stopped_short > 0);
        for b in budgets {
            assert!(run_for(SearchFeatures::CURRENT, b).2 >= b, "{b}");
        }
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
