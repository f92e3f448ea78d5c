//! The `jumpgate` binary: parses the command line and hands over to the
//! library. `serve` runs the server; `perft` counts move trees, an alias
//! of `jumpgate-engine perft` (the other engine tools are in that binary
//! alone: ladder, versus, selfplay, tune, book).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Every message builds and drops a state's many small strings and vectors;
/// mimalloc serves them faster than glibc's allocator (see loadtest/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "jumpgate",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("JUMPGATE_BUILD_COMMIT"), ")"),
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
    Perft(jumpgate_engine::perft::PerftArgs),
}

/// An optional listen address for the start-up log: the address, or "off".
fn shown(addr: Option<std::net::SocketAddr>) -> String {
    addr.map_or_else(|| "off".to_owned(), |a| a.to_string())
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
            metrics_listen = %shown(settings.metrics_listen),
            shutdown_grace_ms = settings.shutdown_grace.as_millis() as u64,
            resume_grace_ms = settings.resume_grace.as_millis() as u64,
            resume_batch = settings.resume_batch,
            instance = %settings.instance_id,
            accounts_issuer = settings.accounts.as_ref().map_or("", |a| a.issuer.as_str()),
            accounts_audience = settings.accounts.as_ref().map_or("", |a| a.audience.as_str()),
            account_keys = settings.accounts.as_ref().map_or(0, |a| a.hs256.len() + a.rs256.len() + a.eddsa.len()),
            initial_grant = settings.wallet_rules.initial_grant,
            daily_cap = settings.wallet_rules.daily_cap,
            admin_api = settings.admin_token.is_some(),
            admin_listen = %shown(settings.admin_listen),
            rank_thresholds = %settings.rank_thresholds.0.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            ranked_ply_cap = settings.ranked_ply_cap,
            bot_threads = settings.bot_threads,
            executive_ms = settings.executive_budget.as_millis() as u64,
            tcp_nodelay = settings.tcp_nodelay,
            "jumpgate listening"
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
        Command::Perft(args) => jumpgate_engine::perft::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate: {message}");
            ExitCode::from(2)
        }
    }
}
