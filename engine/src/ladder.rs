//! `ladder`: every computer level against the level below it in each rule
//! set (the games are `jumpgate_bots::ladder`'s), with the upper level's
//! score per pairing.

use std::time::{Duration, Instant};

use jumpgate_bots::ladder::{self, LadderConfig};
use jumpgate_rules::Variant;

use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct LadderArgs {
    /// Games per pairing and rule set (rounded up to an even number: each
    /// opening is played with both colours).
    #[arg(long, default_value_t = 16)]
    pub games: usize,
    /// Only these rule sets, comma-separated: the six draughts rule sets,
    /// space (Space Mode), orbit (the orbit game). Default: all eight.
    #[arg(long, value_delimiter = ',')]
    pub rule_set: Vec<Variant>,
    /// The Executive's time per move in the ladder, in milliseconds (the
    /// server default is 1000; smaller keeps the ladder short).
    #[arg(long, default_value_t = 100)]
    pub executive_ms: u64,
    /// Games played at once.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Plies after which a game is scored as a draw.
    #[arg(long, default_value_t = 300)]
    pub ply_cap: usize,
    /// Seeds the openings and the bots.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Plays the ladder and prints a row per rule set and pairing.
pub fn run(args: &LadderArgs) -> Result<(), String> {
    let config = LadderConfig {
        games: args.games,
        rule_sets: if args.rule_set.is_empty() {
            Variant::ALL.to_vec()
        } else {
            args.rule_set.clone()
        },
        executive: Duration::from_millis(args.executive_ms),
        threads: args.threads.max(1),
        ply_cap: args.ply_cap,
        seed: args.seed,
    };
    println!(
        "ladder: {} games per pairing, openings of 2-4 random plies, ply cap {}, \
         Executive at {} ms per move (server default 1000 ms), {} threads, seed {}",
        config.games_per_pairing(),
        args.ply_cap,
        args.executive_ms,
        config.threads,
        args.seed
    );
    let started = Instant::now();
    let progress = Progress::bar(ladder::total_games(&config) as u64, "games");
    let rows = ladder::run_reporting(&config, || progress.step());
    progress.finish();
    println!(
        "{:<10} {:<21} {:>5} {:>4} {:>4} {:>4} {:>7} {:>6}",
        "rule set", "pairing", "games", "W", "D", "L", "score", "capped"
    );
    let weak = rows.iter().filter(|r| r.score() < 75.0).count();
    for row in &rows {
        println!(
            "{:<10} {:<21} {:>5} {:>4} {:>4} {:>4} {:>6.1}% {:>6}",
            row.rule_set.name(),
            format!("{} v {}", row.upper.title(), row.lower.title()),
            row.games,
            row.wins,
            row.draws,
            row.losses,
            row.score(),
            row.capped
        );
    }
    println!(
        "{} of {} pairings below the 75% goal; {:.0} s",
        weak,
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
