//! Fitting the Executive's evaluation weights to game outcomes ("Texel"
//! tuning): self-play games make positions labelled with how their game
//! ended, and the weights are moved to minimise the squared error between
//! each result and a logistic curve of the evaluation. Pure computation;
//! `jumpgate-engine selfplay` and `jumpgate-engine tune` read and write the
//! files.

use std::time::Duration;

use jumpgate_rules::movegen::has_capture;
use jumpgate_rules::{Color, Position, RuleSet, with_rules};

use crate::endgame::{self, Verdict};
use crate::rng::SplitMix64;
use crate::tuned::{FEATURES, TunedWeights, features};
use crate::{BotConfig, Level, arena};

/// A position and the result of the game it came from, for Dark (1 a
/// win, 0.5 a draw, 0 a loss).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub position: Position,
    pub dark_result: f64,
}

/// Self-play: `games` games of the Executive, evaluating with `weights`,
/// against itself on `nodes` nodes a move (deterministic), each from a
/// random opening of 4 to 9 plies drawn from `seed`. Returns the quiet
/// positions after the opening (no capture to make) with their game's
/// result.
pub fn self_play(
    rule_set: RuleSet,
    games: usize,
    seed: u64,
    nodes: u64,
    weights: &'static TunedWeights,
) -> Vec<Sample> {
    self_play_reporting(rule_set, games, seed, nodes, weights, |_| {})
}

/// [`self_play`], telling `games_done` the number of games played after
/// each one.
pub fn self_play_reporting(
    rule_set: RuleSet,
    games: usize,
    seed: u64,
    nodes: u64,
    weights: &'static TunedWeights,
    mut games_done: impl FnMut(usize),
) -> Vec<Sample> {
    let bot = BotConfig::new(Level::Executive)
        .with_node_limit(nodes)
        .with_time_budget(Duration::from_secs(600))
        .with_weights(weights);
    let mut rng = SplitMix64::new(seed ^ (rule_set as u64).rotate_left(40));
    let mut samples = Vec::new();
    for played in 1..=games {
        let opening = 4 + rng.below(6) as usize;
        let start = arena::random_opening(rule_set, rng.next_u64(), opening);
        let skip = start.moves().len();
        let (game, end) = arena::play_out(start, &bot, &bot, 300);
        let dark_result = match end.winner() {
            Some(Color::Dark) => 1.0,
            Some(Color::Light) => 0.0,
            None => 0.5,
        };
        let mut pos = *game.initial_position();
        for (i, m) in game.moves().iter().enumerate() {
            if i >= skip && is_quiet(rule_set, &pos) {
                samples.push(Sample {
                    position: pos,
                    dark_result,
                });
            }
            pos.play_unchecked(m);
        }
        games_done(played);
    }
    samples
}

/// A position whose static evaluation means something: no capture to
/// make, and no king ending that the endgame rules judge instead.
fn is_quiet(rule_set: RuleSet, pos: &Position) -> bool {
    with_rules!(rule_set, R => !has_capture::<R>(pos) && endgame::verdict::<R>(pos) == Verdict::Open)
}

/// What a fit did.
#[derive(Clone, Debug)]
pub struct Fit {
    pub weights: TunedWeights,
    /// The logistic curve's steepness: a result of 1/(1+e^(-k·score)).
    pub k: f64,
    /// Mean squared error before and after.
    pub error_before: f64,
    pub error_after: f64,
    pub samples: usize,
}

/// One sample as the fit sees it: the features split by phase, and the
/// result for the side to move.
struct Row {
    mg: [f64; FEATURES],
    eg: [f64; FEATURES],
    result: f64,
}

/// Fits the weights of `rule_set`, from `start`, to `samples`: first the
/// curve's steepness for the starting weights, then every weight by Adam
/// on the squared error over `steps` full passes. `prior` pulls the
/// weights back towards `start`: it adds `prior` times the sum of each
/// weight's squared distance from its start, in men, to the error, which
/// keeps features that the games say little about where they were.
pub fn fit(
    rule_set: RuleSet,
    samples: &[Sample],
    start: &TunedWeights,
    steps: usize,
    prior: f64,
) -> Fit {
    fit_reporting(rule_set, samples, start, steps, prior, |_| {})
}

/// [`fit`], telling `steps_done` the number of passes made after each one.
pub fn fit_reporting(
    rule_set: RuleSet,
    samples: &[Sample],
    start: &TunedWeights,
    steps: usize,
    prior: f64,
    mut steps_done: impl FnMut(usize),
) -> Fit {
    let rows: Vec<Row> = samples
        .iter()
        .filter(|s| is_quiet(rule_set, &s.position))
        .map(|s| {
            let f = with_rules!(rule_set, R => features::<R>(&s.position, start.start_men));
            let (full, emptied) = (f64::from(f.full), f64::from(f.emptied));
            let mut row = Row {
                mg: [0.0; FEATURES],
                eg: [0.0; FEATURES],
                result: match s.position.turn() {
                    Color::Dark => s.dark_result,
                    Color::Light => 1.0 - s.dark_result,
                },
            };
            for i in 0..FEATURES {
                let v = f64::from(f.values[i]);
                row.mg[i] = v * (full - emptied) / full;
                row.eg[i] = v * emptied / full;
            }
            row
        })
        .collect();
    let mut w: Vec<f64> = start
        .mg
        .iter()
        .chain(start.eg.iter())
        .map(|&x| f64::from(x))
        .collect();
    let w0 = w.clone();
    let k = best_k(&rows, &w);
    let error_before = error(&rows, &w, k);

    // Adam, full batch.
    let (rate, beta1, beta2, eps) = (1.0, 0.9, 0.999, 1e-8);
    let mut m = vec![0.0; 2 * FEATURES];
    let mut v = vec![0.0; 2 * FEATURES];
    for step in 1..=steps {
        let mut grad = vec![0.0; 2 * FEATURES];
        for row in &rows {
            let p = sigmoid(k * score(row, &w));
            let g = 2.0 * (p - row.result) * p * (1.0 - p) * k;
            for i in 0..FEATURES {
                grad[i] += g * row.mg[i];
                grad[FEATURES + i] += g * row.eg[i];
            }
        }
        let n = rows.len().max(1) as f64;
        for i in 0..2 * FEATURES {
            let g = grad[i] / n + 2.0 * prior * (w[i] - w0[i]) / 1e4;
            m[i] = beta1 * m[i] + (1.0 - beta1) * g;
            v[i] = beta2 * v[i] + (1.0 - beta2) * g * g;
            let m_hat = m[i] / (1.0 - beta1.powi(step as i32));
            let v_hat = v[i] / (1.0 - beta2.powi(step as i32));
            w[i] -= rate * m_hat / (v_hat.sqrt() + eps);
        }
        steps_done(step);
    }
    let mut weights = *start;
    for i in 0..FEATURES {
        weights.mg[i] = w[i].round() as i32;
        weights.eg[i] = w[FEATURES + i].round() as i32;
    }
    let rounded: Vec<f64> = weights
        .mg
        .iter()
        .chain(weights.eg.iter())
        .map(|&x| f64::from(x))
        .collect();
    Fit {
        weights,
        k,
        error_before,
        error_after: error(&rows, &rounded, k),
        samples: rows.len(),
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn score(row: &Row, w: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..FEATURES {
        s += w[i] * row.mg[i] + w[FEATURES + i] * row.eg[i];
    }
    s
}

fn error(rows: &[Row], w: &[f64], k: f64) -> f64 {
    let total: f64 = rows
        .iter()
        .map(|r| (r.result - sigmoid(k * score(r, w))).powi(2))
        .sum();
    total / rows.len().max(1) as f64
}

/// The steepness that fits `w` best, by golden-section search.
fn best_k(rows: &[Row], w: &[f64]) -> f64 {
    let (mut lo, mut hi) = (1e-4, 0.1);
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..40 {
        let a = hi - phi * (hi - lo);
        let b = lo + phi * (hi - lo);
        if error(rows, w, a) < error(rows, w, b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few tiny self-play games make samples, and the fit never ends
    /// worse than it started.
    #[test]
    fn the_fit_lowers_the_error() {
        let samples = self_play(
            RuleSet::American,
            6,
            5,
            400,
            TunedWeights::for_rule_set(RuleSet::American),
        );
        assert!(!samples.is_empty());
        let mut start = *TunedWeights::for_rule_set(RuleSet::American);
        start.mg[0] = 50;
        start.eg[0] = 50;
        let fit = fit(RuleSet::American, &samples, &start, 200, 0.0);
        assert!(fit.error_after <= fit.error_before + 1e-9, "{fit:?}");
        assert!(fit.samples > 0);
    }
}
