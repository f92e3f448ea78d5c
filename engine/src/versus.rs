//! `versus`: the current Executive against a frozen version of itself
//! (`jumpgate_bots::versus`), or against itself at another pace, a line per
//! game as it ends and the score, Elo, time and nodes used per rule set.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use jumpgate_bots::versus::{self, OPENING_PLIES, Pace, VersusConfig, VersusGame, elo};
use jumpgate_bots::{ExecutiveVersion, SearchFeatures};
use jumpgate_rules::RuleSet;

use crate::progress::Progress;
use crate::tuning::read_weights;

#[derive(Debug, clap::Args)]
pub struct VersusArgs {
    /// Rule sets, comma-separated (draughts only).
    #[arg(long, value_delimiter = ',', default_value = "russian")]
    pub rule_set: Vec<RuleSet>,
    /// Balanced openings per rule set, each played with both colours.
    #[arg(long, default_value_t = 12)]
    pub openings: usize,
    /// Time per move for both sides, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub ms: u64,
    /// Plies after which a game is scored as a draw.
    #[arg(long, default_value_t = 300)]
    pub ply_cap: usize,
    /// Seeds the openings.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Games played at once (1 keeps the timing fair on a busy machine).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Both sides search this many nodes a move instead of `--ms`: an
    /// evaluation-only comparison that the machine's load cannot skew.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Try these weights (a `tune` output) for the current Executive;
    /// only with one rule set.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// The version to play against: v1 or v2 (frozen), or current with
    /// `--baseline-ms` to play the current Executive at two paces.
    #[arg(long, default_value = "v1")]
    pub baseline: ExecutiveVersion,
    /// The baseline thinks this many milliseconds a move, whatever
    /// `--nodes` gives the current version: e.g. `--nodes N --baseline
    /// current --baseline-ms 1000` pits a node budget against the clock.
    #[arg(long)]
    pub baseline_ms: Option<u64>,
    /// Try these search refinements for the current Executive
    /// (comma-separated: lmr, aspiration, history, table, threat, unsure, whole; or none).
    #[arg(long, value_parser = SearchFeatures::parse)]
    pub search: Option<SearchFeatures>,
}

/// Plays the match, printing each game as it ends and then the totals.
pub fn run(args: &VersusArgs) -> Result<(), String> {
    let config = VersusConfig {
        rule_sets: args.rule_set.clone(),
        openings: args.openings,
        time_budget: Duration::from_millis(args.ms),
        baseline: args.baseline,
        ply_cap: args.ply_cap,
        seed: args.seed,
        threads: args.threads.max(1),
        nodes: args.nodes,
        search: args.search,
        baseline_pace: args
            .baseline_ms
            .map(|ms| Pace::Time(Duration::from_millis(ms))),
        weights: match &args.weights {
            Some(path) if args.rule_set.len() == 1 => {
                Some(&*Box::leak(Box::new(read_weights(path, args.rule_set[0])?)))
            }
            Some(_) => return Err("--weights needs exactly one --rule-set".into()),
            None => None,
        },
    };
    let base = match args.baseline {
        // Both sides are the current version: name the other by its role.
        ExecutiveVersion::Current => "baseline",
        v => v.name(),
    };
    let pace = match config.baseline_pace {
        None => describe(config.current_pace()),
        Some(theirs) => format!(
            "current {}, {base} {}",
            describe(config.current_pace()),
            describe(theirs)
        ),
    };
    println!(
        "versus: Executive (current) v Executive {}, {} balanced openings of {} random plies \
         per rule set, both colours, {pace}, ply cap {}, seed {}{}",
        args.baseline.name(),
        args.openings,
        OPENING_PLIES,
        args.ply_cap,
        args.seed,
        args.search
            .map_or(String::new(), |s| format!(", current's search {s:?}"))
    );
    let started = Instant::now();
    // At most this many games: a rule set may have fewer balanced
    // openings than asked for.
    let progress = Progress::bar((2 * args.openings * args.rule_set.len()) as u64, "games");
    let line = |g: &VersusGame| {
        progress.println(&format!(
            "{:<10} opening {:>2} current as {:<5} {:>3} {:>4} plies  ms/move current {:>4} {base} {:>4}  depth {:.1}  nodes/move current {:>8} {base} {:>8}",
            g.rule_set.name(),
            g.opening,
            g.current_color.name(),
            match g.score {
                1.0 => "1-0",
                0.0 => "0-1",
                _ => "½-½",
            },
            g.plies,
            g.used[0].as_millis() / u128::from(g.searched[0].max(1)),
            g.used[1].as_millis() / u128::from(g.searched[1].max(1)),
            g.depth_sum as f64 / f64::from(g.searched[0].max(1)),
            g.nodes[0] / u64::from(g.searching[0].max(1)),
            g.nodes[1] / u64::from(g.searching[1].max(1)),
        ));
        progress.step();
    };
    let games = versus::run(&config, line);
    progress.finish();
    for rs in &args.rule_set {
        let these: Vec<&VersusGame> = games.iter().filter(|g| g.rule_set == *rs).collect();
        summarise(rs.name(), base, &these);
    }
    if args.rule_set.len() > 1 {
        summarise("all", base, &games.iter().collect::<Vec<_>>());
    }
    println!("{:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// A pace as the header gives it.
fn describe(pace: Pace) -> String {
    match pace {
        Pace::Nodes(n) => format!("{n} nodes a move"),
        Pace::Time(t) => format!("{} ms a move", t.as_millis()),
    }
}

/// Prints a group of versus games: score, Elo, time and nodes used.
fn summarise(name: &str, base: &str, games: &[&VersusGame]) {
    let n = games.len();
    if n == 0 {
        return;
    }
    let points: f64 = games.iter().map(|g| g.score).sum();
    let wins = games.iter().filter(|g| g.score == 1.0).count();
    let losses = games.iter().filter(|g| g.score == 0.0).count();
    let per_move = |side: usize| {
        let used: f64 = games.iter().map(|g| g.used[side].as_secs_f64()).sum();
        let moves: u32 = games.iter().map(|g| g.searched[side]).sum();
        1000.0 * used / f64::from(moves.max(1))
    };
    // Over the moves that searched (not book moves): nodes a move, and
    // nodes a second of searching.
    let nodes = |side: usize| games.iter().map(|g| g.nodes[side]).sum::<u64>() as f64;
    let nodes_per_move = |side: usize| {
        let moves: u32 = games.iter().map(|g| g.searching[side]).sum();
        nodes(side) / f64::from(moves.max(1))
    };
    let nodes_per_second = |side: usize| {
        let used: f64 = games
            .iter()
            .map(|g| g.searching_used[side].as_secs_f64())
            .sum();
        nodes(side) / used.max(1e-9)
    };
    println!(
        "{name}: current {points:.1}/{n} = {:.1}% (+{wins} ={} -{losses}), Elo {:+.0}; \
         ms used a move: current {:.0}, {base} {:.0}; nodes a searched move: current {:.0}, \
         {base} {:.0}; nodes a second searching: current {:.0}, {base} {:.0}",
        100.0 * points / n as f64,
        n - wins - losses,
        elo(points / n as f64),
        per_move(0),
        per_move(1),
        nodes_per_move(0),
        nodes_per_move(1),
        nodes_per_second(0),
        nodes_per_second(1),
    );
}
