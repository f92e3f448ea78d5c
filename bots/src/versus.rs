//! The Executive against its previous version: balanced openings, each
//! played with both colours, at a fixed time or node budget per move, with
//! the time and nodes each side used. `jumpgate-engine versus` prints it; a
//! benchmark, never a test.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use jumpgate_rules::{Color, Game, RuleSet};

use crate::arena::GameEnd;
use crate::rng::SplitMix64;
use crate::tuned::TunedWeights;
use crate::{BotConfig, ExecutiveVersion, Level, SearchFeatures, arena, think};

/// What to play.
#[derive(Debug, Clone)]
pub struct VersusConfig {
    pub rule_sets: Vec<RuleSet>,
    /// Openings per rule set; each is played twice, once with each colour.
    pub openings: usize,
    /// Time per move for both sides.
    pub time_budget: Duration,
    /// The version the current Executive plays against.
    pub baseline: ExecutiveVersion,
    /// Plies after which a game is scored as a draw.
    pub ply_cap: usize,
    /// Seeds the openings.
    pub seed: u64,
    /// Games played at once.
    pub threads: usize,
    /// Weights for the current version instead of its own (one rule set).
    pub weights: Option<&'static TunedWeights>,
    /// Play both sides on this many nodes a move instead of the clock:
    /// compares evaluations and searches alone, whatever else runs on the
    /// machine.
    pub nodes: Option<u64>,
    /// Search refinements for the current version instead of its own.
    pub search: Option<SearchFeatures>,
    /// The baseline's own pace, when it differs from the current
    /// version's (which `nodes` or `time_budget` sets): for instance the
    /// current Executive on a node budget against itself on the clock.
    pub baseline_pace: Option<Pace>,
}

/// How long one side thinks a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Until this time is spent.
    Time(Duration),
    /// This many nodes, whatever the clock says.
    Nodes(u64),
}

impl Pace {
    /// The Executive `version` at this pace. On nodes the time budget is
    /// only a far-off cap: a node-limited Executive plans by nodes alone.
    fn bot(self, version: ExecutiveVersion) -> BotConfig {
        let bot = BotConfig::new(Level::Executive).with_executive(version);
        match self {
            Pace::Time(t) => bot.with_time_budget(t),
            Pace::Nodes(n) => bot
                .with_node_limit(n)
                .with_time_budget(Duration::from_secs(600)),
        }
    }
}

impl VersusConfig {
    /// The current version's pace.
    pub fn current_pace(&self) -> Pace {
        match self.nodes {
            Some(n) => Pace::Nodes(n),
            None => Pace::Time(self.time_budget),
        }
    }

    /// The baseline's pace: its own if given, else the current version's.
    pub fn baseline_pace(&self) -> Pace {
        self.baseline_pace.unwrap_or_else(|| self.current_pace())
    }
}

/// Random plies in an opening before the bots take over.
pub const OPENING_PLIES: usize = 4;
/// An opening is balanced when a quick search scores it within this many
/// hundredths of a man.
pub const BALANCED: i32 = 60;
/// Nodes of the quick search that judges an opening.
const JUDGE_NODES: u64 = 200_000;

/// One finished game, from the current version's side.
#[derive(Debug, Clone)]
pub struct VersusGame {
    pub rule_set: RuleSet,
    pub opening: usize,
    pub current_color: Color,
    /// 1.0 a win, 0.5 a draw, 0.0 a loss for the current version.
    pub score: f64,
    pub end: GameEnd,
    pub plies: usize,
    /// Time used and moves searched (forced moves do not count) per side:
    /// `[current, baseline]`.
    pub used: [Duration; 2],
    pub searched: [u32; 2],
    /// Nodes searched per side, and the moves and time of the searches
    /// behind them (book moves search no node and are left out here).
    pub nodes: [u64; 2],
    pub searching: [u32; 2],
    pub searching_used: [Duration; 2],
    /// Sum of the completed depths of the current version's searches.
    pub depth_sum: u64,
}

/// Balanced openings of a rule set: random [`OPENING_PLIES`]-ply starts
/// kept when a quick search finds neither side ahead.
pub fn balanced_openings(rule_set: RuleSet, seed: u64, count: usize) -> Vec<Game> {
    let judge = BotConfig::new(Level::Executive)
        .with_executive(ExecutiveVersion::V1)
        .with_node_limit(JUDGE_NODES)
        .with_time_budget(Duration::from_secs(60));
    let mut rng = SplitMix64::new(seed ^ rule_set as u64);
    let mut found = Vec::with_capacity(count);
    let mut tried = 0;
    while found.len() < count && tried < 100 * count.max(1) {
        tried += 1;
        let game = arena::random_opening(rule_set, rng.next_u64(), OPENING_PLIES);
        if game.outcome().is_some() || found.iter().any(|g: &Game| g.moves() == game.moves()) {
            continue;
        }
        let balanced = match think(&game, &judge) {
            Some((_, info)) => info.score.abs() <= BALANCED,
            None => false,
        };
        if balanced {
            found.push(game);
        }
    }
    found
}

/// Plays the match; `report` hears of each game as it ends.
pub fn run(config: &VersusConfig, report: impl Fn(&VersusGame) + Sync) -> Vec<VersusGame> {
    let mut jobs = Vec::new();
    for &rs in &config.rule_sets {
        for (i, opening) in balanced_openings(rs, config.seed, config.openings)
            .into_iter()
            .enumerate()
        {
            for color in [Color::Dark, Color::Light] {
                jobs.push((rs, i, opening.clone(), color));
            }
        }
    }
    let games = Mutex::new(Vec::with_capacity(jobs.len()));
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..config.threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((rs, opening, game, color)) = jobs.get(i) else {
                        break;
                    };
                    let played = play(config, *rs, *opening, game.clone(), *color);
                    report(&played);
                    games.lock().unwrap_or_else(|e| e.into_inner()).push(played);
                }
            });
        }
    });
    games.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn play(
    config: &VersusConfig,
    rule_set: RuleSet,
    opening: usize,
    mut game: Game,
    current_color: Color,
) -> VersusGame {
    let current = config.current_pace().bot(ExecutiveVersion::Current);
    let current = match config.weights {
        Some(w) => current.with_weights(w),
        None => current,
    };
    let current = match config.search {
        Some(s) => current.with_search(s),
        None => current,
    };
    let sides = [current, config.baseline_pace().bot(config.baseline)];
    let mut used = [Duration::ZERO; 2];
    let mut searched = [0u32; 2];
    let mut nodes = [0u64; 2];
    let mut searching = [0u32; 2];
    let mut searching_used = [Duration::ZERO; 2];
    let mut depth_sum = 0;
    let end = loop {
        if let Some(outcome) = game.outcome() {
            break match outcome.winner() {
                Some(c) => GameEnd::Won(c),
                None => GameEnd::Drawn,
            };
        }
        if game.moves().len() >= config.ply_cap {
            break GameEnd::Capped;
        }
        let side = usize::from(game.turn() != current_color);
        let started = Instant::now();
        let (m, info) = think(&game, &sides[side]).expect("an unfinished game has a move");
        if game.legal_moves().len() > 1 {
            let elapsed = started.elapsed();
            used[side] += elapsed;
            searched[side] += 1;
            if info.nodes > 0 {
                nodes[side] += info.nodes;
                searching[side] += 1;
                searching_used[side] += elapsed;
            }
            if side == 0 {
                depth_sum += u64::from(info.depth);
            }
        }
        game.play(&m).expect("bots play legal moves");
    };
    let score = match end.winner() {
        Some(c) if c == current_color => 1.0,
        Some(_) => 0.0,
        None => 0.5,
    };
    VersusGame {
        rule_set,
        opening,
        current_color,
        score,
        end,
        plies: game.moves().len(),
        used,
        searched,
        nodes,
        searching,
        searching_used,
        depth_sum,
    }
}

/// The Elo difference a score (0 to 1) stands for; infinite at 0 or 1.
pub fn elo(score: f64) -> f64 {
    -400.0 * (1.0 / score - 1.0).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_keeps_the_current_pace_unless_given_its_own() {
        let mut config = VersusConfig {
            rule_sets: vec![RuleSet::Russian],
            openings: 0,
            time_budget: Duration::from_millis(1000),
            baseline: ExecutiveVersion::Current,
            ply_cap: 300,
            seed: 1,
            threads: 1,
            weights: None,
            nodes: Some(5_000),
            search: None,
            baseline_pace: None,
        };
        assert_eq!(config.current_pace(), Pace::Nodes(5_000));
        assert_eq!(config.baseline_pace(), Pace::Nodes(5_000));
        config.baseline_pace = Some(Pace::Time(Duration::from_millis(1000)));
        assert_eq!(config.current_pace(), Pace::Nodes(5_000));
        assert_eq!(
            config.baseline_pace(),
            Pace::Time(Duration::from_millis(1000))
        );
        let timed = config.baseline_pace().bot(ExecutiveVersion::Current);
        assert_eq!(timed.node_limit, None);
        assert_eq!(timed.time_budget, Duration::from_millis(1000));
    }

    #[test]
    fn elo_is_zero_at_half_and_grows_with_the_score() {
        assert!(elo(0.5).abs() < 1e-9);
        assert!((elo(0.64) - 100.0).abs() < 1.0);
        assert!(elo(0.4) < 0.0);
    }
}
