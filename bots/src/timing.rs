//! The Executive's time management: when iterative deepening may start
//! another iteration, and when a running one is cut off.
//!
//! Time is counted in ticks of a [`Meter`]: microseconds of the wall clock
//! when the Executive thinks to a time budget, or nodes searched when it is
//! given a node budget, which makes the same decisions deterministic (and
//! testable). An iteration starts only if the growth of the iterations so
//! far says its first root move will be searched within the budget; a hard
//! stop at the budget aborts whatever is running then.
//!
//! Why the first move and not the whole iteration: the search tries the
//! last iteration's best move first, with a full window, and the rest with
//! null windows; that first move takes about half an iteration's nodes
//! (median 49% over 102 iterations of more than 20,000 nodes, Russian, 1 s
//! a move). An iteration cut off after it has still proved the best move a
//! ply deeper, or found a better one, so it is not wasted; waiting for a
//! whole iteration to fit left the Executive using about 60% of its time.

use std::time::{Duration, Instant};

/// What a tick is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Meter {
    /// Microseconds since this instant.
    Wall(Instant),
    /// Nodes searched.
    Nodes,
}

/// Growth assumed from one iteration to the next before two iterations
/// have been timed (checkers trees grow by about three a ply).
const DEFAULT_GROWTH: f64 = 3.0;
/// Bounds on the measured growth: tiny early iterations and table hits
/// make single ratios noisy.
const MIN_GROWTH: f64 = 1.3;
const MAX_GROWTH: f64 = 4.0;
/// Iterations shorter than this many ticks say nothing about growth.
const NOISE_FLOOR: u64 = 200;
/// The share of an iteration that goes to its first root move.
const FIRST_MOVE_SHARE: f64 = 0.5;
/// What [`IterationPlan::may_start_unsure`] asks to fit instead.
const UNSURE_SHARE: f64 = 0.25;

/// Decides whether another iteration fits in the budget.
#[derive(Clone, Debug)]
pub(crate) struct IterationPlan {
    pub meter: Meter,
    /// Ticks the whole search may use; also the hard stop.
    pub budget: u64,
    /// Ticks each completed iteration took, in order.
    costs: Vec<u64>,
}

impl IterationPlan {
    pub(crate) fn new(meter: Meter, budget: u64) -> IterationPlan {
        IterationPlan {
            meter,
            budget,
            costs: Vec::new(),
        }
    }

    /// A wall-clock plan for `budget` from `started`.
    pub(crate) fn wall(started: Instant, budget: Duration) -> IterationPlan {
        let micros = u64::try_from(budget.as_micros()).unwrap_or(u64::MAX);
        IterationPlan::new(Meter::Wall(started), micros)
    }

    /// Ticks used so far, given the nodes searched.
    pub(crate) fn ticks(&self, nodes: u64) -> u64 {
        match self.meter {
            Meter::Wall(started) => {
                u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
            }
            Meter::Nodes => nodes,
        }
    }

    /// Records an iteration that ran to its end.
    pub(crate) fn completed(&mut self, cost: u64) {
        self.costs.push(cost);
    }

    /// The expected cost of the next iteration: the last one times the
    /// recent growth (the geometric mean of the last two ratios, which
    /// smooths the odd-even swing of alternating plies).
    pub(crate) fn next_cost(&self) -> u64 {
        let n = self.costs.len();
        let Some(&last) = self.costs.last() else {
            return 0;
        };
        let ratio = |i: usize| {
            let (a, b) = (self.costs[i - 1], self.costs[i]);
            (a >= NOISE_FLOOR).then(|| (b as f64 / a as f64).clamp(MIN_GROWTH, MAX_GROWTH))
        };
        let growth = match (n >= 2).then(|| ratio(n - 1)).flatten() {
            Some(r1) => match (n >= 3).then(|| ratio(n - 2)).flatten() {
                Some(r2) => (r1 * r2).sqrt(),
                None => r1,
            },
            None => DEFAULT_GROWTH,
        };
        (last.max(1) as f64 * growth).ceil() as u64
    }

    /// Whether an iteration started with `spent` ticks used is likely to
    /// search its first root move within the budget.
    pub(crate) fn may_start(&self, spent: u64) -> bool {
        self.may_start_sharing(spent, FIRST_MOVE_SHARE)
    }

    /// Like [`IterationPlan::may_start`] when the search is unsure of its
    /// move (the best move or its score changed in the last iteration):
    /// an iteration starts if a smaller share of it fits, since searching
    /// the other moves matters more then than proving the first one.
    pub(crate) fn may_start_unsure(&self, spent: u64) -> bool {
        self.may_start_sharing(spent, UNSURE_SHARE)
    }

    fn may_start_sharing(&self, spent: u64, share: f64) -> bool {
        let first_move = (self.next_cost() as f64 * share) as u64;
        spent.saturating_add(first_move) <= self.budget
    }

    /// Whether the hard stop has come.
    pub(crate) fn out_of_time(&self, spent: u64) -> bool {
        spent >= self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(budget: u64, costs: &[u64]) -> IterationPlan {
        let mut p = IterationPlan::new(Meter::Nodes, budget);
        for &c in costs {
            p.completed(c);
        }
        p
    }

    #[test]
    fn the_next_iteration_grows_like_the_last_ones() {
        // 1,000 then 3,000 then 9,000: the next is expected at 27,000,
        // its first move at 13,500.
        let p = plan(100_000, &[1_000, 3_000, 9_000]);
        assert_eq!(p.next_cost(), 27_000);
        assert!(p.may_start(13_000));
        assert!(p.may_start(86_500));
        assert!(!p.may_start(86_501));
    }

    #[test]
    fn odd_and_even_plies_are_averaged() {
        // Ratios 2 and 3.125: the geometric mean 2.5.
        let p = plan(1_000_000, &[1_000, 2_000, 6_250]);
        assert_eq!(p.next_cost(), 15_625);
    }

    #[test]
    fn growth_is_bounded_and_tiny_iterations_ignored() {
        // A table hit made the last iteration cheaper: at least 1.3 times.
        assert_eq!(plan(u64::MAX, &[5_000, 1_000]).next_cost(), 1_300);
        // An explosion is capped at four times.
        assert_eq!(plan(u64::MAX, &[1_000, 100_000]).next_cost(), 400_000);
        // Below the noise floor the default growth of three stands.
        assert_eq!(plan(u64::MAX, &[10, 900]).next_cost(), 2_700);
        assert_eq!(plan(u64::MAX, &[]).next_cost(), 0);
    }

    #[test]
    fn the_hard_stop_is_the_budget() {
        let p = plan(5_000, &[]);
        assert!(p.may_start(0));
        assert!(!p.out_of_time(4_999));
        assert!(p.out_of_time(5_000));
    }
}
