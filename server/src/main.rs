//! The `jumpgate` binary: parses the command line and hands over to the
//! library. `serve` runs the server; `migrate` copies a store into an
//! empty one (`jumpgate_store::migrate`); `bot-worker` searches the
//! computer's moves for a deployment on Redis; `perft` counts move trees, an
//! alias of `jumpgate-engine perft` (the other engine tools are in that
//! binary alone: ladder, versus, selfplay, tune, book).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Every message builds and drops a state's many small strings and vectors;
/// mimalloc serves them faster than glibc's allocator (see loadtest/README.md).
#[cfg(not(feature = "count-allocations"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Built to count allocations (`--features count-allocations`, for
/// `jumpgate-loadtest allocs`): the system allocator, counted, so
/// `/metrics` can say how many allocations the process has made. The
/// count is the code's, whichever allocator serves it; never a release
/// build's allocator.
#[cfg(feature = "count-allocations")]
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

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
    /// Copy everything from one store into an empty one: a data directory
    /// to Redis, or Redis to a data directory. Stop every server on the
    /// source first. The copy is read back and compared before it reports
    /// success; on any mismatch it exits non-zero.
    Migrate(MigrateArgs),
    /// Count the leaves of the move tree from a position (single-threaded).
    Perft(jumpgate_engine::perft::PerftArgs),
    /// Search the computer's moves for every instance on a Redis: takes
    /// search jobs from the deployment's job stream, any number of these
    /// on any machine (see README, "Solo play").
    BotWorker(BotWorkerArgs),
}

/// `jumpgate bot-worker --redis-url URL`.
#[derive(Debug, clap::Args)]
struct BotWorkerArgs {
    /// The instances' Redis (one Redis, or a cluster's seeds as for serve).
    #[arg(long, env = "JUMPGATE_REDIS_URL", hide_env_values = true)]
    redis_url: String,
    /// Searches at once (default: one per core).
    #[arg(long, env = "JUMPGATE_BOT_THREADS")]
    threads: Option<usize>,
    /// Its name in the job stream's consumer group and heartbeats; unique
    /// per process (default: host name and process id).
    #[arg(long, env = "JUMPGATE_WORKER_NAME")]
    name: Option<String>,
    /// Timeout of every Redis command, in milliseconds.
    #[arg(long, env = "JUMPGATE_REDIS_TIMEOUT_MS", default_value_t = 2_000)]
    redis_timeout_ms: u64,
    /// A job pending this long (its searcher died or froze) is taken over,
    /// in milliseconds; the same as the instances' --search-reclaim-ms.
    #[arg(long, env = "JUMPGATE_SEARCH_RECLAIM_MS", default_value_t = 10_000)]
    search_reclaim_ms: u64,
    /// Serve GET /metrics here (Prometheus text).
    #[arg(long, env = "JUMPGATE_METRICS_LISTEN")]
    metrics_listen: Option<std::net::SocketAddr>,
}

fn bot_worker(args: &BotWorkerArgs) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "worker".to_owned());
    let settings = jumpgate_server::SearcherSettings {
        redis_url: args.redis_url.clone(),
        redis_timeout: std::time::Duration::from_millis(args.redis_timeout_ms.max(1)),
        threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1),
        name: args
            .name
            .clone()
            .unwrap_or_else(|| format!("{host}-{}", std::process::id())),
        reclaim_after: std::time::Duration::from_millis(args.search_reclaim_ms.max(100)),
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let stop = shutdown_signal();
        jumpgate_server::serve_worker(settings, args.metrics_listen, stop).await
    })
}

/// Completes on SIGTERM or Ctrl-C. The SIGTERM handler is installed when
/// this is called (inside the runtime), not when it is first polled, so a
/// signal that comes while the work starts is not lost.
fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
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
    }
}

/// `jumpgate migrate --from SOURCE --to DESTINATION`.
#[derive(Debug, clap::Args)]
struct MigrateArgs {
    /// What to copy: a data directory (holding jumpgate.db), or a Redis
    /// URL (redis://HOST:PORT/DB or rediss://…). A directory must not be in
    /// use by a running server; a Redis must have no live instance.
    #[arg(long, value_name = "DIR_OR_URL")]
    from: String,
    /// Where to copy it: a new data directory or one without rows in its
    /// data file (other files may be there), or an empty
    /// Redis database (no jg* key in it), by URL.
    #[arg(long, value_name = "DIR_OR_URL")]
    to: String,
    /// Copy from a Redis even though an instance heartbeat (jg:alive:*)
    /// is current (an instance that was killed, whose heartbeat has not
    /// expired yet). Never use it while an instance runs.
    #[arg(long)]
    force: bool,
    /// Idempotency keys decided longer ago than this are not copied (the
    /// server's --idempotency-window-secs; they are forgotten anyway).
    #[arg(long, env = "JUMPGATE_IDEMPOTENCY_WINDOW_SECS", default_value_t = 30 * 86_400)]
    idempotency_window_secs: u64,
    /// Copying into a data directory: the guest-token secret the Redis
    /// instances run with (their --token-secret), written to the
    /// directory's token-secret file so that guests keep their seats.
    #[arg(long, env = "JUMPGATE_TOKEN_SECRET", hide_env_values = true)]
    token_secret: Option<String>,
}

fn migrate(args: &MigrateArgs) -> Result<(), String> {
    use jumpgate_server::store::migrate::{Location, MigrateOptions, migrate_reporting};
    let options = MigrateOptions {
        force: args.force,
        window: jumpgate_server::store::idempotency::IdempotencyWindow {
            ms: args.idempotency_window_secs.max(1).saturating_mul(1_000),
        },
    };
    let (from, to) = (
        Location::from_arg(&args.from)?,
        Location::from_arg(&args.to)?,
    );
    let secret = args.token_secret.as_deref().map(str::trim);
    if let (Location::DataDir(_), Some(secret)) = (&to, secret)
        && secret.len() < jumpgate_server::config::MIN_SECRET_BYTES
    {
        return Err("--token-secret is too short to be the instances' secret".into());
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let summary = runtime
        .block_on(migrate_reporting(&from, &to, options, |step| {
            eprintln!("jumpgate migrate: {step}…");
        }))
        .map_err(|e| e.to_string())?;
    println!("{summary}");
    println!("{}", guest_tokens(&from, &to, secret)?);
    Ok(())
}

/// Guests hold tokens signed with the source's secret, which is not in
/// the store: what keeps their seats on the destination (written, or said).
fn guest_tokens(
    from: &jumpgate_server::store::migrate::Location,
    to: &jumpgate_server::store::migrate::Location,
    secret: Option<&str>,
) -> Result<String, String> {
    use jumpgate_server::config::TOKEN_SECRET_FILE;
    use jumpgate_server::store::migrate::Location;
    match (from, to) {
        (Location::DataDir(dir), _) => {
            let kept = dir.join(TOKEN_SECRET_FILE);
            Ok(if kept.is_file() {
                format!(
                    "guests' tokens are signed with {}: start every instance with --token-secret \"$(cat {})\" (or JUMPGATE_TOKEN_SECRET), or guests lose their seats",
                    kept.display(),
                    kept.display()
                )
            } else {
                "guests' tokens are signed with the source server's --token-secret: start the \
                 destination with the same one, or guests lose their seats"
                    .to_owned()
            })
        }
        (Location::Redis(_), Location::DataDir(dir)) => {
            let kept = dir.join(TOKEN_SECRET_FILE);
            match secret {
                Some(secret) if !kept.exists() => {
                    let mut options = std::fs::OpenOptions::new();
                    options.write(true).create_new(true);
                    #[cfg(unix)]
                    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                    let failed =
                        |e: std::io::Error| format!("cannot write {}: {e}", kept.display());
                    let mut file = options.open(&kept).map_err(failed)?;
                    std::io::Write::write_all(&mut file, secret.as_bytes()).map_err(failed)?;
                    file.sync_all().map_err(failed)?;
                    Ok(format!(
                        "wrote the instances' guest-token secret to {}: guests keep their seats",
                        kept.display()
                    ))
                }
                Some(_) => Ok(format!(
                    "{} already exists and was left as it is: guests whose tokens were signed \
                     with another secret lose their seats",
                    kept.display()
                )),
                None => Ok(format!(
                    "guests' tokens are signed with the instances' --token-secret, which is not \
                     in Redis: run migrate again with --token-secret, or start the server with \
                     it, or guests lose their seats (a server on {} makes a new one)",
                    dir.display()
                )),
            }
        }
        (Location::Redis(_), Location::Redis(_)) => Ok(
            "guests' tokens are signed with the instances' --token-secret: start the \
             destination's instances with the same one"
                .to_owned(),
        ),
    }
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
        jumpgate_server::run(listener, settings, shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(config) => serve(config),
        Command::Migrate(args) => migrate(args),
        Command::Perft(args) => jumpgate_engine::perft::run(args),
        Command::BotWorker(args) => bot_worker(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("jumpgate: {message}");
            ExitCode::from(2)
        }
    }
}
