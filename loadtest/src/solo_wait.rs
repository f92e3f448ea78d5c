//! `solo-wait`: how long do people playing the computer wait for its moves, and how
//! many computer moves a second does a deployment serve?
//!
//! For each player count, a fresh deployment: one Jumpgate instance (in memory, or on
//! a Redis of our own with `--workers N` `jumpgate bot-worker` processes beside it),
//! then that many guests, each in a practice game against the Executive, answering
//! every computer move after `--think-ms` with its first legal move. A wait is from
//! the human move's `ack` to the `solo_state` carrying the computer's reply.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jumpgate_harness::{BotWorkerProcess, RedisServer};
use jumpgate_protocol::{BotLevel, RuleSet};
use serde::Serialize;
use tokio::time::Instant;

use crate::bench::start_jumpgate;
use crate::cluster::start_redis;
use crate::driver::SoloLoad;

/// Options of `jumpgate-loadtest solo-wait`.
#[derive(Debug, Clone, clap::Args)]
pub struct SoloWaitArgs {
    /// The `jumpgate` binary (server and workers).
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// The `redis-server` binary, when a Redis is started.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Player counts, one fresh deployment each.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 10, 30, 100])]
    pub players: Vec<usize>,
    /// `jumpgate bot-worker` processes (a Redis is started when above 0).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Searches at once per worker.
    #[arg(long, default_value_t = 1)]
    pub worker_threads: usize,
    /// Start a Redis and run the instance on it even with no workers.
    #[arg(long)]
    pub redis: bool,
    /// Pass `--bot-threads N` to the instance (its default: cores − 1).
    #[arg(long)]
    pub bot_threads: Option<usize>,
    /// The instance's `--executive-ms`.
    #[arg(long, default_value_t = 1000)]
    pub executive_ms: u64,
    /// How long each player thinks before answering the computer, ms.
    #[arg(long, default_value_t = 0)]
    pub think_ms: u64,
    /// The rule set played: `american` has an opening book (some replies are
    /// instant), `space` has none (every reply is a search).
    #[arg(long, default_value = "american")]
    pub rule_set: String,
    /// How long each player count runs, seconds (after its players have started).
    #[arg(long, default_value_t = 40.0)]
    pub duration: f64,
    /// Pin the instance with `taskset -c CPUS`.
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// Pin worker i to the i-th of these CPUs (comma-separated, cycled).
    #[arg(long, value_delimiter = ',')]
    pub worker_cpus: Vec<String>,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// One player count's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SoloWaitRow {
    pub players: usize,
    /// Games that started.
    pub running: u64,
    /// Computer moves during the run.
    pub replies: u64,
    /// Computer moves a second.
    pub replies_per_s: f64,
    /// Waits for the computer, seconds.
    pub wait_p50_s: Option<f64>,
    pub wait_p90_s: Option<f64>,
    pub wait_p99_s: Option<f64>,
    /// Drivers that failed, and the first failure.
    pub errors: u64,
    pub first_error: Option<String>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct SoloWaitReport {
    pub workers: usize,
    pub worker_threads: usize,
    pub redis: bool,
    pub bot_threads: String,
    pub executive_ms: u64,
    pub think_ms: u64,
    /// The rule set played.
    pub rule_set: String,
    pub duration_s: f64,
    pub rows: Vec<SoloWaitRow>,
}

/// Starts `count` `jumpgate bot-worker` processes of `threads` searches each on
/// `redis_url`, worker i pinned to the i-th of `cpus` (cycled) when any are given.
pub async fn start_workers(
    jumpgate: &std::path::Path,
    redis_url: &str,
    count: usize,
    threads: usize,
    cpus: &[String],
) -> Result<Vec<BotWorkerProcess>, String> {
    let mut workers = Vec::new();
    for i in 0..count {
        let pin = (!cpus.is_empty()).then(|| cpus[i % cpus.len()].as_str());
        workers.push(
            BotWorkerProcess::start_with(
                jumpgate,
                &format!("loadtest-worker-{i}"),
                redis_url,
                threads,
                &[],
                pin,
            )
            .await?,
        );
    }
    Ok(workers)
}

/// Runs every player count and prints the table.
pub async fn solo_wait(args: &SoloWaitArgs) -> Result<SoloWaitReport, String> {
    if args.players.iter().any(|&n| !(1..=2000).contains(&n)) {
        return Err("--players must be between 1 and 2000".into());
    }
    if !(1.0..=600.0).contains(&args.duration) {
        return Err("--duration must be between 1 and 600 seconds".into());
    }
    if args.workers > 16 {
        return Err("--workers must be at most 16".into());
    }
    let rule_set = RuleSet::ALL
        .iter()
        .copied()
        .find(|rs| rs.as_str() == args.rule_set.trim().to_ascii_lowercase())
        .ok_or_else(|| format!("--rule-set: unknown rule set {:?}", args.rule_set))?;
    let redis = args.redis || args.workers > 0;
    let mut rows = Vec::new();
    for &players in &args.players {
        rows.push(one_count(args, redis, rule_set, players).await?);
    }
    let report = SoloWaitReport {
        workers: args.workers,
        worker_threads: args.worker_threads,
        redis,
        bot_threads: args
            .bot_threads
            .map_or_else(|| "server default".to_owned(), |n| n.to_string()),
        executive_ms: args.executive_ms,
        think_ms: args.think_ms,
        rule_set: rule_set.as_str().to_owned(),
        duration_s: args.duration,
        rows,
    };
    print_table(&report);
    Ok(report)
}

async fn one_count(
    args: &SoloWaitArgs,
    redis: bool,
    rule_set: RuleSet,
    players: usize,
) -> Result<SoloWaitRow, String> {
    let redis_server: Option<RedisServer> = if redis {
        Some(start_redis(&args.redis_server, false, None).await?)
    } else {
        None
    };
    let mut extra = vec!["--executive-ms".to_owned(), args.executive_ms.to_string()];
    if let Some(n) = args.bot_threads {
        extra.extend(["--bot-threads".to_owned(), n.to_string()]);
    }
    if let Some(r) = &redis_server {
        extra.extend(["--redis-url".to_owned(), r.url()]);
    }
    let server = start_jumpgate(
        "jumpgate",
        &args.jumpgate,
        args.server_cpus.as_deref(),
        &extra,
    )
    .await?;
    let mut workers = Vec::new();
    if let Some(r) = &redis_server {
        workers = start_workers(
            &args.jumpgate,
            &r.url(),
            args.workers,
            args.worker_threads,
            &args.worker_cpus,
        )
        .await?;
        // The instance admits games once it has read the workers' heartbeats
        // (every 2 s while no game waits).
        tokio::time::sleep(Duration::from_millis(2_500)).await;
    }
    let url = format!("ws://{}/ws", server.addr);
    eprintln!(
        "solo-wait: {players} players, {} workers, {:.0} s",
        args.workers, args.duration
    );
    let load = SoloLoad::start(
        &url,
        players,
        BotLevel::Executive,
        rule_set,
        Duration::from_millis(args.think_ms),
    );
    let counters = load.counters();
    load.wait_busy(0, Duration::from_secs(30)).await;
    let before = counters.bot_moves.load(Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(args.duration)).await;
    let replies = counters.bot_moves.load(Ordering::Relaxed) - before;
    let seconds = started.elapsed().as_secs_f64();
    let counters = load.stop().await;
    let waits = counters.bot_wait_us();
    let pick = |q: f64| waits.as_ref().map(|h| h.value_at_quantile(q) as f64 / 1e6);
    drop(workers);
    drop(server);
    drop(redis_server);
    Ok(SoloWaitRow {
        players,
        running: counters.running.load(Ordering::Relaxed),
        replies,
        replies_per_s: replies as f64 / seconds,
        wait_p50_s: pick(0.5),
        wait_p90_s: pick(0.9),
        wait_p99_s: pick(0.99),
        errors: counters.errors.load(Ordering::Relaxed),
        first_error: counters.first_error(),
    })
}

fn print_table(report: &SoloWaitReport) {
    let secs = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |s| format!("{s:.2} s"));
    println!(
        "solo-wait: {} workers × {} threads, redis {}, instance --bot-threads {}, \
         --executive-ms {}, {}, think {} ms, {:.0} s each",
        report.workers,
        report.worker_threads,
        report.redis,
        report.bot_threads,
        report.executive_ms,
        report.rule_set,
        report.think_ms,
        report.duration_s
    );
    println!("| players | computer replies/s | wait p50 | p90 | p99 | errors |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for row in &report.rows {
        println!(
            "| {} | {:.2} | {} | {} | {} | {} |",
            row.players,
            row.replies_per_s,
            secs(row.wait_p50_s),
            secs(row.wait_p90_s),
            secs(row.wait_p99_s),
            row.errors
        );
    }
}
