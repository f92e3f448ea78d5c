//! The strength ladder: each level plays the level below it in every rule
//! set, from seeded random openings, both colours of each opening, and
//! reports the upper level's score. `jumpgate-engine ladder` prints it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jumpgate_rules::{Color, Variant, VariantGame};

use crate::rng::SplitMix64;
use crate::{BotConfig, Level, arena};

/// What to play.
#[derive(Debug, Clone)]
pub struct LadderConfig {
    /// Games per pairing and rule set (rounded up to an even number: each
    /// opening is played with both colours).
    pub games: usize,
    pub rule_sets: Vec<Variant>,
    /// The Executive's time per move.
    pub executive: Duration,
    /// Games played at once.
    pub threads: usize,
    /// Plies after which a game is scored as a draw.
    pub ply_cap: usize,
    /// Seeds the openings and the bots.
    pub seed: u64,
}

impl LadderConfig {
    pub fn games_per_pairing(&self) -> usize {
        self.games.max(1).div_ceil(2) * 2
    }
}

/// One pairing in one rule set, from the upper level's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LadderRow {
    pub rule_set: Variant,
    pub upper: Level,
    pub lower: Level,
    pub games: usize,
    pub wins: usize,
    pub draws: usize,
    pub losses: usize,
    /// Games scored as draws for reaching the ply cap.
    pub capped: usize,
}

impl LadderRow {
    /// The upper level's score in percent (a draw counts half).
    pub fn score(&self) -> f64 {
        100.0 * (self.wins as f64 + self.draws as f64 / 2.0) / self.games as f64
    }
}

/// The pairings, upper level first.
pub const PAIRINGS: [(Level, Level); 3] = [
    (Level::Driver, Level::Tamer),
    (Level::Warden, Level::Driver),
    (Level::Executive, Level::Warden),
];

/// Plays the whole ladder on `config.threads` threads.
pub fn run(config: &LadderConfig) -> Vec<LadderRow> {
    run_reporting(config, || {})
}

/// Games the ladder of `config` plays in all.
pub fn total_games(config: &LadderConfig) -> usize {
    config.rule_sets.len() * PAIRINGS.len() * config.games_per_pairing()
}

/// [`run`], calling `game_done` as each game ends (from the thread that
/// played it), so that a caller can show how far the ladder has come.
pub fn run_reporting(config: &LadderConfig, game_done: impl Fn() + Sync) -> Vec<LadderRow> {
    let rule_sets = &config.rule_sets;
    let games = config.games_per_pairing();
    let mix = |parts: &[u64]| {
        parts
            .iter()
            .fold(SplitMix64::new(config.seed), |mut acc, &p| {
                SplitMix64::new(acc.next_u64() ^ p)
            })
            .next_u64()
    };
    // (rule set, pairing, game): game 2k and 2k+1 share opening k.
    let jobs: Vec<(usize, usize, usize)> = (0..rule_sets.len())
        .flat_map(|r| (0..PAIRINGS.len()).flat_map(move |p| (0..games).map(move |g| (r, p, g))))
        .collect();
    // Upper level's [wins, draws, losses, capped] per (rule set, pairing).
    let tally = Mutex::new(vec![[0usize; 4]; rule_sets.len() * PAIRINGS.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..config.threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(r, p, g)) = jobs.get(i) else { break };
                    let kind = rule_sets[r];
                    let (upper, lower) = PAIRINGS[p];
                    let opening = (g / 2) as u64;
                    let opening_seed = mix(&[r as u64, opening]);
                    let opening_plies = 2 + (opening % 3) as usize;
                    let bot = |level: Level, side: u64| {
                        BotConfig::new(level)
                            .with_seed(mix(&[r as u64, p as u64, g as u64, side]))
                            .with_time_budget(config.executive)
                    };
                    let upper_color = if g % 2 == 0 {
                        Color::Dark
                    } else {
                        Color::Light
                    };
                    let (dark, light) = if upper_color == Color::Dark {
                        (bot(upper, 0), bot(lower, 1))
                    } else {
                        (bot(lower, 0), bot(upper, 1))
                    };
                    let end = match kind {
                        Variant::Draughts(rs) => {
                            let game = arena::random_opening(rs, opening_seed, opening_plies);
                            arena::play_out(game, &dark, &light, config.ply_cap).1
                        }
                        Variant::Space => {
                            // Both colours of an opening share its wormholes.
                            let game = arena::random_space_opening(
                                mix(&[r as u64, opening, 1]),
                                opening_seed,
                                opening_plies,
                            );
                            let game = VariantGame::Space(game);
                            arena::play_out_variant(game, &dark, &light, config.ply_cap).1
                        }
                        Variant::Orbit => {
                            let game = arena::random_orbit_opening(opening_seed, opening_plies);
                            let game = VariantGame::Orbit(game);
                            arena::play_out_variant(game, &dark, &light, config.ply_cap).1
                        }
                    };
                    let column = match end.winner() {
                        Some(c) if c == upper_color => 0,
                        Some(_) => 2,
                        None => 1,
                    };
                    let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
                    let row = &mut tally[r * PAIRINGS.len() + p];
                    row[column] += 1;
                    if end == arena::GameEnd::Capped {
                        row[3] += 1;
                    }
                    drop(tally);
                    game_done();
                }
            });
        }
    });
    let tally = tally.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut rows = Vec::new();
    for (r, rule_set) in rule_sets.iter().enumerate() {
        for (p, (upper, lower)) in PAIRINGS.iter().enumerate() {
            let [wins, draws, losses, capped] = tally[r * PAIRINGS.len() + p];
            rows.push(LadderRow {
                rule_set: *rule_set,
                upper: *upper,
                lower: *lower,
                games,
                wins,
                draws,
                losses,
                capped,
            });
        }
    }
    rows
}
