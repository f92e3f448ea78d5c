//! The engine tools behind the `jumpgate-engine` binary: perft counts,
//! the strength ladder, Executive matches, self-play data, weight fitting
//! and opening books.
//!
//! They live in a crate of their own, not in `jumpgate-bots`, because the
//! rules and bots crates are pure (no I/O, no async, no wire format, and
//! the test command checks their dependency trees) and Cargo has no
//! dependencies for a binary alone: a binary in the bots crate would make
//! the library depend on clap and indicatif too. Here the tools read and
//! write files, parse the command line and draw progress on a terminal;
//! the computations stay in the bots and rules crates.
//!
//! Results go to standard output; progress (a bar with the time left) goes
//! to standard error, and only when that is a terminal (see [`progress`]).
//! The server binary keeps `jumpgate perft` as an alias of [`perft::run`].

pub mod book;
pub mod ladder;
pub mod perft;
pub mod progress;
pub mod tuning;
pub mod versus;

use clap::Subcommand;

/// The tools, one subcommand each.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Count the leaves of the move tree from a position (single-threaded).
    Perft(perft::PerftArgs),
    /// Play the computer levels against each other and print their scores.
    Ladder(ladder::LadderArgs),
    /// Play the Executive against its previous version and print the score.
    Versus(versus::VersusArgs),
    /// Write self-play positions with their games' results, for `tune`.
    Selfplay(tuning::SelfplayArgs),
    /// Fit the Executive's evaluation weights to `selfplay` positions and
    /// print them as Rust for bots/src/weights.rs.
    Tune(tuning::TuneArgs),
    /// Build the Executive's opening book of a rule set (bots/book/).
    Book(book::BookArgs),
}

impl Command {
    /// Runs the tool; an error is a message for the user.
    pub fn run(&self) -> Result<(), String> {
        match self {
            Self::Perft(args) => perft::run(args),
            Self::Ladder(args) => ladder::run(args),
            Self::Versus(args) => versus::run(args),
            Self::Selfplay(args) => tuning::run_selfplay(args),
            Self::Tune(args) => tuning::run_tune(args),
            Self::Book(args) => book::run(args),
        }
    }
}

/// `count` over `secs` seconds, as a rate (0 for no time at all).
pub(crate) fn per_second(count: u64, secs: f64) -> f64 {
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}
