//! The `jumpgate` binary: parses the command line and hands over to the
//! library. `serve` runs the server; `perft` counts move trees; `ladder`
//! plays the computer opponents against each other.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use jumpgate_server::rules::orbit::OrbitGame;
use jumpgate_server::rules::space::{SpaceGame, SpaceMove};
use jumpgate_server::rules::{Position, Variant, fen, perft};

/// Every message builds and drops a state's many small strings and vectors;
/// mimalloc serves them faster than glibc's allocator (see loadtest/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Play the computer levels against each other and print their scores.
    Ladder(LadderArgs),
}

#[derive(Debug, clap::Args)]
struct PerftArgs {
    /// Rule set: american, brazilian, russian, spanish, italian, thai,
    /// space (Space Mode) or orbit (the orbit game).
    #[arg(long, default_value = "american")]
    variant: Variant,
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
    /// Space Mode only: the game's seed (it places the wormholes).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn run_perft(args: &PerftArgs) -> Result<(), String> {
    let rs = match args.variant {
        Variant::Draughts(rs) => rs,
        kind @ (Variant::Space | Variant::Orbit) => {
            if args.fen.is_some() || args.unique {
                return Err(format!(
                    "--fen and --unique are for the draughts rule sets, not {}",
                    kind.name()
                ));
            }
            return run_game_perft(kind, args);
        }
    };
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
    let rate = per_second(leaves, secs);
    println!(
        "perft {rs} depth {} {}: {leaves} leaves in {secs:.3} s ({:.1} M leaves/s)",
        args.depth,
        if args.unique { "unique" } else { "paths" },
        rate / 1e6
    );
    Ok(())
}

/// Perft for Space Mode and the orbit game, by their engines' own counts.
fn run_game_perft(kind: Variant, args: &PerftArgs) -> Result<(), String> {
    let started;
    let leaves;
    let what;
    match kind {
        Variant::Space => {
            let game = SpaceGame::new(args.seed);
            if args.divide && args.depth > 0 {
                for m in game.legal_moves() {
                    let mut next = game.clone();
                    next.play(&m).map_err(|e| e.to_string())?;
                    println!("{} {}", space_move_text(&m), next.perft(args.depth - 1));
                }
            }
            started = Instant::now();
            leaves = game.perft(args.depth);
            what = format!("results, seed {}", args.seed);
        }
        Variant::Orbit => {
            let game = OrbitGame::new();
            if args.divide && args.depth > 0 {
                for m in game.legal_moves() {
                    let mut next = game.clone();
                    next.play(&m).map_err(|e| e.to_string())?;
                    println!("{} {}", game.move_text(&m), next.perft(args.depth - 1));
                }
            }
            started = Instant::now();
            leaves = game.perft(args.depth);
            what = "moves".to_owned();
        }
        Variant::Draughts(_) => unreachable!("draughts perft is run_perft's"),
    }
    let secs = started.elapsed().as_secs_f64();
    let rate = per_second(leaves, secs);
    println!(
        "perft {} depth {} {what}: {leaves} leaves in {secs:.3} s ({:.1} M leaves/s)",
        kind.name(),
        args.depth,
        rate / 1e6
    );
    Ok(())
}

/// A Space Mode move as clicked: `c3-d4`, `c3xe5xg7`, a boost marked `^`.
fn space_move_text(m: &SpaceMove) -> String {
    let joint = if m.captured.is_empty() { "-" } else { "x" };
    let squares: Vec<String> = m.path.iter().map(|sq| format!("{sq:?}")).collect();
    let mut text = squares.join(joint);
    if m.boost {
        text.push('^');
    }
    text
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
            resume_batch = settings.resume_batch,
            instance = %settings.instance_id,
            accounts_issuer = ?settings.accounts.as_ref().map(|a| a.issuer.as_str()),
            accounts_audience = ?settings.accounts.as_ref().map(|a| a.audience.as_str()),
            account_keys = settings.accounts.as_ref().map_or(0, |a| a.hs256.len() + a.rs256.len() + a.eddsa.len()),
            initial_grant = settings.wallet_rules.initial_grant,
            daily_cap = settings.wallet_rules.daily_cap,
            admin_api = settings.admin_token.is_some(),
            admin_listen = ?settings.admin_listen,
            rank_thresholds = ?settings.rank_thresholds.0,
            ranked_ply_cap = settings.ranked_ply_cap,
            bot_threads = settings.bot_threads,
            executive_ms = settings.executive_budget.as_millis() as u64,
            tcp_nodelay = settings.tcp_nodelay,
            "jumpgate listening"
        );
        match &settings.redis_url {
            Some(_) => tracing::info!("lobbies, wallets, records and leaderboards are stored in Redis"),
            None => tracing::warn!(
                "no Redis configured (--redis-url): lobbies, wallets, records and leaderboards \
                 live in memory and will not survive a restart"
            ),
        }
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

#[derive(Debug, clap::Args)]
struct LadderArgs {
    /// Games per pairing and rule set (rounded up to an even number: each
    /// opening is played with both colours).
    #[arg(long, default_value_t = 16)]
    games: usize,
    /// Only these rule sets, comma-separated: the six draughts rule sets,
    /// space (Space Mode), orbit (the orbit game). Default: all eight.
    #[arg(long, value_delimiter = ',')]
    rule_set: Vec<Variant>,
    /// The Executive's time per move in the ladder, in milliseconds (the
    /// server default is 1000; smaller keeps the ladder short).
    #[arg(long, default_value_t = 100)]
    executive_ms: u64,
    /// Games played at once.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Plies after which a game is scored as a draw.
    #[arg(long, default_value_t = 300)]
    ply_cap: usize,
    /// Seeds the openings and the bots.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Plays each level against the level below in every rule set and prints
/// the upper level's score (the games are `jumpgate_bots::ladder`'s).
fn run_ladder(args: &LadderArgs) -> Result<(), String> {
    use jumpgate_server::bots::ladder::{self, LadderConfig};
    let config = LadderConfig {
        games: args.games,
        rule_sets: if args.rule_set.is_empty() {
            Variant::ALL.to_vec()
        } else {
            args.rule_set.clone()
        },
        executive: std::time::Duration::from_millis(args.executive_ms),
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
    let rows = ladder::run(&config);
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

/// `count` over `secs` seconds, as a rate (0 for no time at all).
fn per_second(count: u64, secs: f64) -> f64 {
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(config) => serve(config),
        Command::Perft(args) => run_perft(args),
        Command::Ladder(args) => run_ladder(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate: {message}");
            ExitCode::from(2)
        }
    }
}
