//! The `jumpgate-engine` binary: parses the command line and runs one of
//! the engine tools of the `jumpgate_engine` library.

use std::process::ExitCode;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "jumpgate-engine",
    version,
    about = "Jumpgate's engine tools: perft, the strength ladder, matches, self-play, tuning, opening books"
)]
struct Cli {
    #[command(subcommand)]
    command: jumpgate_engine::Command,
}

fn main() -> ExitCode {
    match Cli::parse().command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate-engine: {message}");
            ExitCode::from(2)
        }
    }
}
