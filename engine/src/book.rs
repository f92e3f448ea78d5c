//! `book`: builds a rule set's opening book for the Executive
//! (`jumpgate_bots::book::build`) and writes it where the bots crate
//! embeds it (bots/book/<rule set>.bin).

use std::path::PathBuf;
use std::time::Instant;

use jumpgate_rules::RuleSet;

use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct BookArgs {
    #[arg(long)]
    pub rule_set: RuleSet,
    /// Plies from the start within which every move is followed.
    #[arg(long, default_value_t = 2)]
    pub full_plies: usize,
    /// Plies from the start within which book moves are followed.
    #[arg(long, default_value_t = 6)]
    pub max_plies: usize,
    /// Nodes searched per position (all its moves scored together).
    #[arg(long, default_value_t = 1_000_000)]
    pub nodes: u64,
    /// The file to write (bots/book/<rule set>.bin).
    #[arg(long)]
    pub out: PathBuf,
}

/// Builds the book, writes it to `--out` and prints its size.
pub fn run(args: &BookArgs) -> Result<(), String> {
    let started = Instant::now();
    // How many positions the book will have is known only at the end: the
    // counter shows those done and the pace, with no time left.
    let progress = Progress::counter("positions");
    let bytes = jumpgate_bots::book::build(
        args.rule_set,
        args.full_plies,
        args.max_plies,
        args.nodes,
        |done| progress.set(done as u64),
    );
    progress.finish();
    std::fs::write(&args.out, &bytes).map_err(|e| format!("{}: {e}", args.out.display()))?;
    println!(
        "{}: {} book moves in {:.0} s",
        args.rule_set.name(),
        bytes.len() / 12,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
