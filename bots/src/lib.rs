//! Computer opponents: four levels of a checkers engine for every rule set,
//! pure and synchronous like the rules engine it sits beside (no I/O, no
//! async, no wire format).
//!
//! - [`level`]: [`Level`] and what distinguishes the levels;
//! - `search`: iterative-deepening PVS with a transposition table, move
//!   ordering and a capture quiescence search;
//! - [`eval`]: the hand-set evaluation and its weights per rule set (the
//!   lower levels' and the first Executive's);
//! - [`book`]: the Executive's opening book per rule set;
//! - [`tuned`]: the Executive's evaluation, features times weights fitted
//!   to self-play games (`weights`), and [`endgame`], its knowledge of
//!   king endings;
//! - [`hash`]: Zobrist keys of positions;
//! - [`rng`]: the seeded generator behind deliberate imperfection;
//! - [`arena`]: whole games between two bots, for the strength ladder;
//! - [`space`] and [`orbit`]: the same four levels for Space Mode and the
//!   orbit game, over one generic search (`tree`) that each game plugs
//!   into with a small trait;
//! - [`ladder`]: every level against the level below, for `jumpgate-engine ladder`;
//! - [`versus`]: the Executive against its previous version, for
//!   `jumpgate-engine versus`;
//! - `timing`: the Executive's time management.
//!
//! The easy levels stray on purpose, from a seed, so with the same seed and
//! game they choose the same move; the lower three levels stop on node
//! budgets, not on the clock, so they are deterministic unless the time
//! budget runs out first. The Executive thinks until its time budget.

pub mod arena;
pub mod book;
pub mod endgame;
pub mod eval;
pub mod hash;
pub mod ladder;
pub mod level;
pub mod orbit;
pub mod rng;
mod search;
pub mod space;
mod table;
pub mod texel;
mod timing;
mod tree;
pub mod tuned;
pub mod versus;
mod weights;

use std::time::{Duration, Instant};

use jumpgate_rules::with_rules;
use jumpgate_rules::{Game, Move, Position, Rules, VariantGame, variant_game};
use level::Profile;
pub use level::{Level, UnknownLevel};
pub use orbit::choose_orbit_move;
use rng::SplitMix64;
use search::{History, Limits, Searcher};
pub use space::choose_space_move;
use timing::{IterationPlan, Meter};

pub use search::{MATE, SearchFeatures};

/// Nodes a ranked Executive searches a move. Chosen at or above what the
/// timed Executive reaches in 1 s (`--executive-ms` 1000) on the 2-core
/// machine its strength was measured on: 2.86–2.92 million nodes a move
/// at about 2.9 million a second, load average 0.05
/// (`bots/results/ranked-nodes-measure-1s-russian-partial.txt`), so a
/// ranked game is never weaker than a quiet hour's 1 s game, and never
/// depends on the load or the hardware.
pub const RANKED_EXECUTIVE_NODES: u64 = 3_000_000;

/// The clock of a ranked search: far beyond what its node budget takes
/// (about 1 s here), so that on any machine the nodes, not the clock, end it.
pub const RANKED_SAFETY_CAP: Duration = Duration::from_secs(30);

/// How a bot plays: its level, its time budget per move and its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BotConfig {
    pub level: Level,
    /// The Executive's thinking time per move; for the other levels only a
    /// safety cap, since their node budgets end the search long before.
    pub time_budget: Duration,
    /// Seeds the deliberate imperfection of the easy levels.
    pub seed: u64,
    /// Caps the nodes searched per move below the level's own budget (for
    /// tests and quick games); `None` keeps the level's budget. The
    /// Executive then plans its iterations by nodes instead of time, which
    /// makes it deterministic.
    pub node_limit: Option<u64>,
    /// Which Executive plays (the other levels have one version each).
    pub executive: ExecutiveVersion,
    /// Weights for the current Executive instead of its own, to try a fit
    /// before it is written into the crate (`jumpgate-engine versus
    /// --weights`).
    pub weights: Option<&'static tuned::TunedWeights>,
    /// Search refinements for the current Executive instead of its own, to
    /// try a combination (`jumpgate-engine versus --search`).
    pub search: Option<SearchFeatures>,
}

/// The Executive's versions in draughts: the current one, and the first
/// one frozen so that matches can measure what changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExecutiveVersion {
    /// The second version with a search that spends its whole budget
    /// ([`SearchFeatures::CURRENT`]) and, in Russian, American and
    /// Brazilian, the second fit of the evaluation (men by square).
    #[default]
    Current,
    /// The first Executive: no new iteration after half the budget, the
    /// lower levels' hand-set evaluation.
    V1,
    /// The second: time management that spends the budget, a hard stop,
    /// the Executive's own evaluation and opening book, over the first
    /// version's search.
    V2,
}

impl ExecutiveVersion {
    pub fn name(self) -> &'static str {
        match self {
            ExecutiveVersion::Current => "current",
            ExecutiveVersion::V1 => "v1",
            ExecutiveVersion::V2 => "v2",
        }
    }
}

impl std::str::FromStr for ExecutiveVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<ExecutiveVersion, String> {
        [
            ExecutiveVersion::Current,
            ExecutiveVersion::V1,
            ExecutiveVersion::V2,
        ]
        .into_iter()
        .find(|v| v.name() == s.trim().to_ascii_lowercase())
        .ok_or_else(|| format!("unknown Executive version {s:?} (current, v1, v2)"))
    }
}

impl BotConfig {
    /// The default budget per move.
    pub const DEFAULT_TIME_BUDGET: Duration = Duration::from_secs(1);

    pub fn new(level: Level) -> BotConfig {
        BotConfig {
            level,
            time_budget: Self::DEFAULT_TIME_BUDGET,
            seed: 0,
            node_limit: None,
            executive: ExecutiveVersion::Current,
            weights: None,
            search: None,
        }
    }

    pub fn with_search(self, search: SearchFeatures) -> BotConfig {
        BotConfig {
            search: Some(search),
            ..self
        }
    }

    pub fn with_weights(self, weights: &'static tuned::TunedWeights) -> BotConfig {
        BotConfig {
            weights: Some(weights),
            ..self
        }
    }

    pub fn with_executive(self, executive: ExecutiveVersion) -> BotConfig {
        BotConfig { executive, ..self }
    }

    pub fn with_seed(self, seed: u64) -> BotConfig {
        BotConfig { seed, ..self }
    }

    /// The Executive of ranked games: [`RANKED_EXECUTIVE_NODES`] nodes a
    /// move, the same book and endgame knowledge as the timed one, and a
    /// clock far past what that takes (a safety cap only), so its play is
    /// the same on a busy server, a quiet one or a slower machine.
    pub fn ranked_executive() -> BotConfig {
        BotConfig::new(Level::Executive)
            .with_node_limit(RANKED_EXECUTIVE_NODES)
            .with_time_budget(RANKED_SAFETY_CAP)
    }

    pub fn with_node_limit(self, node_limit: u64) -> BotConfig {
        BotConfig {
            node_limit: Some(node_limit),
            ..self
        }
    }

    pub fn with_time_budget(self, time_budget: Duration) -> BotConfig {
        BotConfig {
            time_budget,
            ..self
        }
    }
}

/// What a search found, for logs and the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SearchInfo {
    /// Deepest completed iteration in plies (0: the move was forced).
    pub depth: u32,
    pub nodes: u64,
    /// The chosen move's score for the side to move (a man is 100; beyond
    /// `MATE - 1000` a forced win, below its negation a forced loss).
    pub score: i32,
    pub elapsed: Duration,
}

/// The bot's move in this game, or `None` when the game is over.
pub fn choose_move(game: &Game, config: &BotConfig) -> Option<Move> {
    think(game, config).map(|(m, _)| m)
}

/// Like [`choose_move`], with what the search saw.
pub fn think(game: &Game, config: &BotConfig) -> Option<(Move, SearchInfo)> {
    let started = Instant::now();
    let legal = game.legal_moves();
    match legal {
        [] => None,
        [only] => Some((*only, SearchInfo::default())),
        _ => {
            let (chosen, mut info) =
                with_rules!(game.rule_set(), R => think_for::<R>(game, config, started));
            info.elapsed = started.elapsed();
            // Hand back the game's own entry for that result.
            let m = legal
                .iter()
                .find(|m| m.result_key() == chosen.result_key())
                .copied()
                .unwrap_or(legal[0]);
            Some((m, info))
        }
    }
}

/// Hashes of the positions since the last capture or man move, current last:
/// the only ones that can repeat.
fn reversible_history(game: &Game) -> Vec<u64> {
    let mut pos = *game.initial_position();
    let mut all = vec![hash::zobrist(&pos)];
    for m in game.moves() {
        pos.play_unchecked(m);
        all.push(hash::zobrist(&pos));
    }
    let keep = game.plies_without_progress() as usize + 1;
    all.split_off(all.len().saturating_sub(keep))
}

/// The bot's move in a game of any rule set, in its stored form
/// ([`jumpgate_rules::MoveInfo::stored`]); `None` when the game is over.
pub fn choose_stored(game: &VariantGame, config: &BotConfig) -> Option<String> {
    match game {
        VariantGame::Draughts(g) => {
            choose_move(g, config).map(|m| variant_game::stored_draughts(&m))
        }
        VariantGame::Space(g) => {
            space::choose_space_move(g, config).map(|m| variant_game::stored_space(&m))
        }
        VariantGame::Orbit(g) => {
            orbit::choose_orbit_move(g, config).map(|m| variant_game::stored_orbit(&m))
        }
    }
}

/// How far one search may go: its node budget and its two clocks.
pub(crate) struct Budget {
    pub max_nodes: u64,
    /// The search stops here.
    pub deadline: Instant,
    /// No new iteration starts after this.
    pub soft_deadline: Instant,
}

impl Budget {
    pub(crate) fn new(profile: &Profile, config: &BotConfig, started: Instant) -> Budget {
        let deadline = started + config.time_budget;
        let soft_deadline = if profile.timed {
            // An iteration takes several times the previous one: starting
            // one after half the budget rarely finishes.
            started + config.time_budget.mul_f64(0.5)
        } else {
            deadline
        };
        Budget {
            max_nodes: config
                .node_limit
                .map_or(profile.max_nodes, |n| n.min(profile.max_nodes)),
            deadline,
            soft_deadline,
        }
    }
}

/// The root move to play, by index, from the scores of every root move
/// (fewer when not even one ply finished): a random one on a deliberate
/// `stray` or without complete scores, else the best after `noise`, which
/// never hides a forced win or loss.
pub(crate) fn pick_root(
    scores: &[i32],
    moves: usize,
    stray: bool,
    noise: i32,
    rng: &mut SplitMix64,
) -> usize {
    if stray || scores.len() != moves {
        return rng.below(moves as u64) as usize;
    }
    let mut best = 0;
    let mut best_noisy = i32::MIN;
    for (i, &s) in scores.iter().enumerate() {
        let noisy = if s.abs() > search::MATE_BOUND {
            s
        } else {
            s + rng.spread(noise)
        };
        if noisy > best_noisy {
            best_noisy = noisy;
            best = i;
        }
    }
    best
}

/// The move `search` picks among `legal` (by index, given at least two),
/// timed; none without legal moves, the only one without a search.
pub(crate) fn choose_among<M>(
    mut legal: Vec<M>,
    search: impl FnOnce(&[M], Instant) -> (usize, SearchInfo),
) -> Option<(M, SearchInfo)> {
    let started = Instant::now();
    match legal.len() {
        0 => None,
        1 => legal.pop().map(|m| (m, SearchInfo::default())),
        _ => {
            let (index, mut info) = search(&legal, started);
            info.elapsed = started.elapsed();
            Some((legal.swap_remove(index), info))
        }
    }
}

/// The current Executive's iteration plan: by nodes when it has a node
/// limit, else by the clock, a little short of the budget so that the
/// reply, not only the search, fits in it.
fn executive_plan(config: &BotConfig, started: Instant) -> IterationPlan {
    match config.node_limit {
        Some(nodes) => IterationPlan::new(Meter::Nodes, nodes),
        None => {
            let margin = (config.time_budget / 50).min(Duration::from_millis(20));
            IterationPlan::wall(started, config.time_budget.saturating_sub(margin))
        }
    }
}

/// The current Executive's transposition table: about a slot for every
/// four nodes it expects to search (some four million a second), between
/// the first Executive's 2^18 slots and 2^21.
fn executive_table_bits(config: &BotConfig) -> u32 {
    let nodes = match config.node_limit {
        Some(n) => n,
        None => (config.time_budget.as_secs_f64() * 4e6) as u64,
    };
    (nodes / 4).max(1).ilog2().clamp(18, 21)
}

fn think_for<R: Rules>(game: &Game, config: &BotConfig, started: Instant) -> (Move, SearchInfo) {
    let profile = config.level.profile();
    let budget = Budget::new(&profile, config, started);
    let executive = (config.level == Level::Executive).then_some(config.executive);
    // The second version and the current one share all but the search
    // and, in Russian, American and Brazilian, the evaluation's weights.
    let since_v2 = matches!(
        executive,
        Some(ExecutiveVersion::Current | ExecutiveVersion::V2)
    );
    let features = match executive {
        Some(ExecutiveVersion::Current) => config.search.unwrap_or(SearchFeatures::CURRENT),
        _ => SearchFeatures::NONE,
    };
    let limits = if since_v2 {
        Limits {
            max_depth: profile.max_depth,
            max_nodes: budget.max_nodes,
            deadline: None,
            soft_deadline: None,
            plan: Some(executive_plan(config, started)),
            features,
        }
    } else {
        Limits {
            max_depth: profile.max_depth,
            max_nodes: budget.max_nodes,
            deadline: Some(budget.deadline),
            soft_deadline: Some(budget.soft_deadline),
            plan: None,
            features,
        }
    };
    let pos: Position = *game.position();
    let quiet_plies = game.plies_without_progress();
    // `--weights` tries a fit for the current version; every other
    // version since V2 evaluates with its own, V1 and the lower levels
    // with the hand-set weights.
    let fitted = config.weights.or(tuned::TunedWeights::of_version(
        config.executive,
        game.rule_set(),
    ));
    let weights = match fitted {
        Some(w) if since_v2 => search::Evaluation::Tuned(w),
        _ => search::Evaluation::HandSet(eval::Weights::for_rule_set(game.rule_set())),
    };
    let history = History {
        hashes: reversible_history(game),
    };
    let legal = game.legal_moves();
    if since_v2 && let Some(m) = book::choose(game.rule_set(), &pos, legal, config.seed) {
        return (m, SearchInfo::default());
    }
    let table_bits = if since_v2 {
        executive_table_bits(config)
    } else {
        profile.table_bits
    };
    let mut searcher = Searcher::<R>::new(weights, limits, table_bits, history);

    if profile.noise == 0 && profile.stray_percent == 0 {
        let found = searcher.deepen(&pos, quiet_plies);
        let info = SearchInfo {
            depth: found.map_or(0, |r| r.depth),
            nodes: searcher.nodes,
            score: found.map_or(0, |r| r.score),
            elapsed: Duration::ZERO,
        };
        return (found.map_or(legal[0], |r| r.best), info);
    }

    // Mix the seed with the position and the move number, so a game does not
    // repeat the same "mistake" pattern and the same game replays exactly.
    let mut rng = SplitMix64::new(
        config.seed ^ hash::zobrist(&pos) ^ (game.moves().len() as u64).rotate_left(32),
    );
    let stray = rng.chance(profile.stray_percent);
    let (scores, depth) = searcher.score_all(&pos, quiet_plies, legal);
    let mut info = SearchInfo {
        depth,
        nodes: searcher.nodes,
        score: 0,
        elapsed: Duration::ZERO,
    };
    let index = pick_root(&scores, legal.len(), stray, profile.noise, &mut rng);
    info.score = scores.get(index).copied().unwrap_or(0);
    (legal[index], info)
}

#[cfg(test)]
mod ranked_tests {
    use super::*;

    #[test]
    fn the_ranked_executive_searches_a_fixed_node_budget_the_clock_cannot_cut() {
        let config = BotConfig::ranked_executive();
        assert_eq!(config.level, Level::Executive);
        assert_eq!(config.node_limit, Some(RANKED_EXECUTIVE_NODES));
        assert_eq!(config.executive, ExecutiveVersion::Current);
        assert!(config.time_budget >= RANKED_SAFETY_CAP);
    }
}
