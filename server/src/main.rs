//! The `jumpgate` binary: parses the command line and hands over to the
//! library. `serve` runs the server; `perft` counts move trees.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use jumpgate_server::rules::{Position, RuleSet, fen, perft};

#[derive(Debug, Parser)]
#[command(
    name = "jumpgate",
    version,
    about = "Jumpgate: a realtime checkers lobby server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the lobby server.
    Serve(Box<jumpgate_server::config::ServeConfig>),
    /// Count the leaves of the move tree from a position (single-threaded).
    Perft(PerftArgs),
}

#[derive(Debug, clap::Args)]
struct PerftArgs {
    /// Rule set: american, brazilian, russian, spanish, italian, thai.
    #[arg(long, default_value = "american")]
    variant: RuleSet,
    /// Plies to search.
    #[arg(long)]
    depth: u32,
    /// Start from this PDN FEN instead of the rule set's start position.
    #[arg(long)]
    fen: Option<String>,
    /// Count capture paths with the same origin, destination and captured
    /// set once per node.
    #[arg(long)]
    unique: bool,
    /// Also print the count below each first move.
    #[arg(long)]
    divide: bool,
}

fn run_perft(args: &PerftArgs) -> Result<(), String> {
    let rs = args.variant;
    let pos = match &args.fen {
        Some(text) => fen::parse(rs, text).map_err(|e| format!("bad FEN: {e}"))?,
        None => Position::start(rs),
    };
    if args.divide {
        let game = jumpgate_server::rules::Game::from_position(rs, pos);
        for (m, n) in perft::divide(rs, &pos, args.depth, args.unique) {
            println!("{} {n}", game.move_text(&m));
        }
    }
    let started = Instant::now();
    let leaves = perft::perft(rs, &pos, args.depth, args.unique);
    let secs = started.elapsed().as_secs_f64();
    let rate = if secs > 0.0 {
        leaves as f64 / secs
    } else {
        0.0
    };
    println!(
        "perft {rs} depth {} {}: {leaves} leaves in {secs:.3} s ({:.1} M leaves/s)",
        args.depth,
        if args.unique { "unique" } else { "paths" },
        rate / 1e6
    );
    Ok(())
}

fn serve(config: &jumpgate_server::config::ServeConfig) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if config.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let settings = jumpgate_server::config::Settings::from_config(config, addr)?;
        tracing::info!(
            listen = %addr,
            public_url = %settings.public_url,
            move_clock_ms = settings.move_clock.as_millis() as u64,
            break_ms = settings.break_time.as_millis() as u64,
            token_secret = "<redacted>",
            redis = settings.redis_url.is_some(),
            metrics_listen = ?settings.metrics_listen,
            shutdown_grace_ms = settings.shutdown_grace.as_millis() as u64,
            resume_grace_ms = settings.resume_grace.as_millis() as u64,
            shard = ?settings.shard,
            "jumpgate listening"
        );
        tracing::warn!(
            "no Redis configured: lobbies live in memory and will not survive a restart"
        );
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let sigterm = async {
                match term.as_mut() {
                    Some(term) => {
                        term.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = sigterm => {}
            }
            tracing::info!("shutting down");
        };
        jumpgate_server::run(listener, settings, shutdown)
            .await
            .map_err(|e| e.to_string())
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(config) => serve(config),
        Command::Perft(args) => run_perft(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate: {message}");
            ExitCode::from(2)
        }
    }
}
