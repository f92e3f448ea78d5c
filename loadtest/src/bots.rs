//! `bench-bots`: does human play stay fast while the computer thinks?
//!
//! One Jumpgate server; the open-loop latency phase of `bench` (human-vs-human games,
//! `move` → `ack`) runs twice on it: first alone, then with `--bot-games` solo games
//! against the Executive running at the same time, each driven by a loop that plays its
//! first legal move as soon as it is the human's turn, so the server's bounded bot pool
//! never runs dry. The goal: p50 and p99 with the bots within 1.2× of those without.
//! With `--workers N` the searches run on `jumpgate bot-worker` processes on a Redis
//! of their own, and the server searches nothing itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jumpgate_protocol::BotLevel;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::bench::start_jumpgate;
use crate::cluster::start_redis;
use crate::driver::{self, Kind, MAX_RATE_PER_GAME, Pace, SoloCounters, SoloLoad};
use crate::net;
use crate::report::PhaseSummary;
use crate::solo_wait::start_workers;

/// The goal: human move latency with the bots at most this many times that without.
pub const GOAL_RATIO: f64 = 1.2;

/// Options of `jumpgate-loadtest bench-bots`.
#[derive(Debug, Clone, clap::Args)]
pub struct BotsArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Drive this already running Jumpgate server (ws://127.0.0.1:PORT/ws) instead of
    /// starting one; start it with JUMPGATE_MOVE_CLOCK_MS=600000.
    #[arg(long, env = "JUMPGATE_LOADTEST_SERVER")]
    pub server: Option<String>,
    /// Human-vs-human games in the latency phases (each two connections).
    #[arg(long, env = "JUMPGATE_LOADTEST_GAMES", default_value_t = 50)]
    pub games: usize,
    /// Open-loop move rate of the latency phases, moves a second over all games.
    #[arg(long, env = "JUMPGATE_LOADTEST_RATE", default_value_t = 1000.0)]
    pub rate: f64,
    /// Solo games against the Executive running during the second latency phase.
    #[arg(long, env = "JUMPGATE_LOADTEST_BOT_GAMES", default_value_t = 50)]
    pub bot_games: usize,
    /// Length of each latency phase, in seconds.
    #[arg(long, env = "JUMPGATE_LOADTEST_DURATION", default_value_t = 10.0)]
    pub duration: f64,
    /// Pass `--bot-threads N` to the started server (its default: cores − 1).
    #[arg(long, env = "JUMPGATE_LOADTEST_BOT_THREADS")]
    pub bot_threads: Option<usize>,
    /// Pass `--executive-ms MS` to the started server (its default: 1000).
    #[arg(long, env = "JUMPGATE_LOADTEST_EXECUTIVE_MS")]
    pub executive_ms: Option<u64>,
    /// Pin the server with `taskset -c CPUS`, e.g. 0.
    #[arg(long, env = "JUMPGATE_LOADTEST_SERVER_CPUS")]
    pub server_cpus: Option<String>,
    /// Search on this many `jumpgate bot-worker` processes instead of the
    /// server's own threads: a Redis is started, the server runs on it with
    /// `--bot-threads 0` (unless `--bot-threads` says otherwise).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Searches at once per worker.
    #[arg(long, default_value_t = 1)]
    pub worker_threads: usize,
    /// Pin worker i to the i-th of these CPUs (comma-separated, cycled).
    #[arg(long, value_delimiter = ',')]
    pub worker_cpus: Vec<String>,
    /// Run the workers at this nice value (`renice`), e.g. 19 so that they
    /// take only the CPU time the cores they share leave over.
    #[arg(long)]
    pub worker_nice: Option<i32>,
    /// Pin the Redis (when workers run) with `taskset -c CPUS`.
    #[arg(long)]
    pub redis_cpus: Option<String>,
    /// The `redis-server` binary, when workers run.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Pin the load tester itself with `taskset -a -p -c CPUS`, e.g. 1.
    #[arg(long, env = "JUMPGATE_LOADTEST_CLIENT_CPUS")]
    pub client_cpus: Option<String>,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// The load of a `bench-bots` run.
#[derive(Debug, Clone, Serialize)]
pub struct BotsConfig {
    /// Human-vs-human games in each latency phase.
    pub games: usize,
    /// Moves a second over those games, open loop.
    pub rate: f64,
    /// Solo games against the Executive during the second phase.
    pub bot_games: usize,
    /// Each latency phase, seconds.
    pub duration_s: f64,
    /// How long to wait, before the second phase, for every bot game to be waiting
    /// for the computer, seconds.
    pub warm_up_s: f64,
}

impl BotsConfig {
    /// Checks the bounds that keep a run finite and under the server's rate limit.
    pub fn new(
        games: usize,
        rate: f64,
        bot_games: usize,
        duration_s: f64,
    ) -> Result<BotsConfig, String> {
        if !(1..=5000).contains(&games) {
            return Err("--games must be between 1 and 5000".into());
        }
        if !(1..=2000).contains(&bot_games) {
            return Err("--bot-games must be between 1 and 2000".into());
        }
        if !(0.1..=600.0).contains(&duration_s) {
            return Err("--duration must be between 0.1 and 600 seconds".into());
        }
        if rate.is_nan() || rate <= 0.0 || rate / games as f64 > MAX_RATE_PER_GAME {
            return Err(format!(
                "--rate must be positive and at most {MAX_RATE_PER_GAME} moves/s per game \
                 ({:.0} for {games} games); add games instead",
                MAX_RATE_PER_GAME * games as f64
            ));
        }
        Ok(BotsConfig {
            games,
            rate,
            bot_games,
            duration_s,
            warm_up_s: 10.0,
        })
    }

    fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.duration_s)
    }
}

/// The bot games, during the phase that ran with them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SoloSummary {
    /// Bot games asked for.
    pub games: usize,
    /// Bot games that started.
    pub running: u64,
    /// Whether every running game was waiting for the computer at once before the
    /// phase started.
    pub all_thinking_before: bool,
    /// Seconds from the start of the second phase (its set-up included) to its end.
    pub seconds: f64,
    /// Moves the computer played in that time.
    pub bot_moves: u64,
    /// Moves played for the human side in that time.
    pub human_moves: u64,
    /// Bot games finished (and restarted) in that time.
    pub finished: u64,
    /// Games waiting for the computer at once, sampled every 20 ms: least.
    pub thinking_min: u64,
    /// Mean of the samples.
    pub thinking_mean: f64,
    /// Most.
    pub thinking_max: u64,
    /// Solo human moves' `move` → `ack`, microseconds, p50 (whole bot run).
    pub move_ack_p50_us: Option<u64>,
    /// p99 of the same.
    pub move_ack_p99_us: Option<u64>,
    /// Bot drivers that failed.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct BotsFigure {
    /// What is measured.
    pub figure: String,
    /// Without bot games, microseconds.
    pub without_bots_us: Option<f64>,
    /// With them, microseconds.
    pub with_bots_us: Option<f64>,
    /// with / without.
    pub ratio: Option<f64>,
    /// The goal, in words.
    pub goal: String,
    /// Whether it is met; absent when not measured.
    pub met: Option<bool>,
}

/// The whole `bench-bots` run.
#[derive(Debug, Clone, Serialize)]
pub struct BotsReport {
    /// The load.
    pub config: BotsConfig,
    /// What the started server was told about its bot pool ("server default" when
    /// nothing), for the record.
    pub server_bot_threads: String,
    /// Likewise for the Executive's time budget.
    pub server_executive_ms: String,
    /// The latency phase alone.
    pub without_bots: Option<PhaseSummary>,
    /// The latency phase with the bot games.
    pub with_bots: Option<PhaseSummary>,
    /// The bot games.
    pub solo: SoloSummary,
    /// Phases that could not run.
    pub failures: Vec<String>,
    /// The table rows.
    pub figures: Vec<BotsFigure>,
}

/// Samples how many games wait for the computer until told to stop.
fn sample_thinking(counters: Arc<SoloCounters>) -> (oneshot::Sender<()>, SamplerHandle) {
    let (stop, mut stopped) = oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        let (mut min, mut max, mut sum, mut n) = (u64::MAX, 0u64, 0u64, 0u64);
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                _ = tick.tick() => {
                    let v = counters.thinking.load(Ordering::Relaxed);
                    min = min.min(v);
                    max = max.max(v);
                    sum += v;
                    n += 1;
                }
            }
        }
        if n == 0 {
            (0, 0, 0.0)
        } else {
            (min, max, sum as f64 / n as f64)
        }
    });
    (stop, handle)
}

/// Reads one percentile of a phase.
type Pick = fn(&PhaseSummary) -> u64;

type SamplerHandle = tokio::task::JoinHandle<(u64, u64, f64)>;

/// Runs both latency phases against `url` (the second with the bot games) and builds
/// the report. `server_bot_threads` and `server_executive_ms` only label it.
pub async fn run_bots(
    url: &str,
    config: &BotsConfig,
    server_bot_threads: String,
    server_executive_ms: String,
) -> BotsReport {
    let mut failures = Vec::new();
    let open = Pace::Open { rate: config.rate };
    let phase = |label: &'static str| {
        eprintln!(
            "phase: {label}: {} games, {} /s open loop, {:?}",
            config.games,
            config.rate,
            config.duration()
        );
        driver::run_phase(
            label,
            Kind::Jumpgate,
            url,
            driver::Games::v1(config.games, jumpgate_protocol::RuleSet::American),
            open,
            config.duration(),
        )
    };
    let without_bots = match phase("latency without bots").await {
        Ok(stats) => Some(PhaseSummary::from(&stats)),
        Err(e) => {
            failures.push(e);
            None
        }
    };

    eprintln!(
        "phase: starting {} solo games against the Executive",
        config.bot_games
    );
    let load = SoloLoad::start(
        url,
        config.bot_games,
        BotLevel::Executive,
        jumpgate_protocol::RuleSet::American,
        Duration::ZERO,
    );
    let counters = load.counters();
    let all_thinking_before = load
        .wait_busy(
            config.bot_games as u64,
            Duration::from_secs_f64(config.warm_up_s),
        )
        .await;
    eprintln!(
        "  bot games: {} running, {} waiting for the computer, errors {}",
        counters.running.load(Ordering::Relaxed),
        counters.thinking.load(Ordering::Relaxed),
        counters.errors.load(Ordering::Relaxed)
    );
    let before = (
        counters.bot_moves.load(Ordering::Relaxed),
        counters.human_moves.load(Ordering::Relaxed),
        counters.finished.load(Ordering::Relaxed),
    );
    let (stop_sampler, sampler) = sample_thinking(counters.clone());
    let started = Instant::now();
    let with_bots = match phase("latency with bots").await {
        Ok(stats) => Some(PhaseSummary::from(&stats)),
        Err(e) => {
            failures.push(e);
            None
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let after = (
        counters.bot_moves.load(Ordering::Relaxed),
        counters.human_moves.load(Ordering::Relaxed),
        counters.finished.load(Ordering::Relaxed),
    );
    let _ = stop_sampler.send(());
    let (thinking_min, thinking_max, thinking_mean) = sampler.await.unwrap_or_default();
    let counters = load.stop().await;
    let acks = counters.move_ack_us().filter(|h| !h.is_empty());
    let solo = SoloSummary {
        games: config.bot_games,
        running: counters.running.load(Ordering::Relaxed),
        all_thinking_before,
        seconds,
        bot_moves: after.0 - before.0,
        human_moves: after.1 - before.1,
        finished: after.2 - before.2,
        thinking_min,
        thinking_mean,
        thinking_max,
        move_ack_p50_us: acks.as_ref().map(|h| h.value_at_quantile(0.5)),
        move_ack_p99_us: acks.as_ref().map(|h| h.value_at_quantile(0.99)),
        errors: counters.errors.load(Ordering::Relaxed),
        first_error: counters.first_error(),
    };
    BotsReport::new(
        config.clone(),
        server_bot_threads,
        server_executive_ms,
        without_bots,
        with_bots,
        solo,
        failures,
    )
}

impl BotsReport {
    /// Fills in the figures.
    pub fn new(
        config: BotsConfig,
        server_bot_threads: String,
        server_executive_ms: String,
        without_bots: Option<PhaseSummary>,
        with_bots: Option<PhaseSummary>,
        solo: SoloSummary,
        failures: Vec<String>,
    ) -> BotsReport {
        let pick = |p: &Option<PhaseSummary>, f: Pick| {
            p.as_ref().filter(|p| p.ops > 0).map(|p| f(p) as f64)
        };
        let rows: [(&str, Pick); 2] = [
            ("human move round trip p50", |p| p.p50_us),
            ("human move round trip p99", |p| p.p99_us),
        ];
        let figures = rows
            .into_iter()
            .map(|(figure, f)| {
                let (without, with) = (pick(&without_bots, f), pick(&with_bots, f));
                let ratio = match (without, with) {
                    (Some(a), Some(b)) if a > 0.0 => Some(b / a),
                    _ => None,
                };
                BotsFigure {
                    figure: figure.into(),
                    without_bots_us: without,
                    with_bots_us: with,
                    ratio,
                    goal: format!("≤ {GOAL_RATIO}× without bots"),
                    met: ratio.map(|r| r <= GOAL_RATIO),
                }
            })
            .collect();
        BotsReport {
            config,
            server_bot_threads,
            server_executive_ms,
            without_bots,
            with_bots,
            solo,
            failures,
            figures,
        }
    }

    /// The table, as Markdown.
    pub fn table(&self) -> String {
        let mut out = format!(
            "| figure | without bots | with {} bot games | ratio | goal | met? |\n\
             |---|---:|---:|---:|---|---|\n",
            self.config.bot_games
        );
        let value = |v: Option<f64>| v.map_or("not measured".into(), |v| format!("{v:.0} µs"));
        for f in &self.figures {
            let ratio = f.ratio.map_or("—".into(), |r| format!("{r:.2}×"));
            let met = match f.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "—",
            };
            out.push_str(&format!(
                "| {} | {} | {} | {ratio} | {} | {met} |\n",
                f.figure,
                value(f.without_bots_us),
                value(f.with_bots_us),
                f.goal
            ));
        }
        out
    }

    /// Details under the table: both phases, the bot games, failures.
    pub fn details(&self) -> String {
        let c = &self.config;
        let s = &self.solo;
        let mut out = format!(
            "latency phases: {} human games at {} moves/s open loop, {} s each; server bot \
             threads: {}, Executive budget: {}\n",
            c.games, c.rate, c.duration_s, self.server_bot_threads, self.server_executive_ms
        );
        for p in [&self.without_bots, &self.with_bots].into_iter().flatten() {
            out.push_str(&format!(
                "{}: {} moves in {:.1} s = {:.0}/s over {} games; round trip µs p50 {} p90 {} \
                 p99 {} p99.9 {} max {}; lobbies {}; errors {}{}\n",
                p.label,
                p.ops,
                p.seconds,
                p.per_second,
                p.games,
                p.p50_us,
                p.p90_us,
                p.p99_us,
                p.p999_us,
                p.max_us,
                p.lobbies,
                p.errors,
                p.first_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(" (first: {e})")),
            ));
        }
        let per_s = |n: u64| {
            if s.seconds > 0.0 {
                n as f64 / s.seconds
            } else {
                0.0
            }
        };
        out.push_str(&format!(
            "bot games: {} of {} running ({} waiting for the computer before the phase); \
             during the phase ({:.1} s with set-up): {} bot moves ({:.1}/s), {} human \
             moves, {} games finished; waiting for the computer at once: min {} mean \
             {:.1} max {}; solo move ack µs p50 {} p99 {}; errors {}{}\n",
            s.running,
            s.games,
            if s.all_thinking_before {
                "all"
            } else {
                "not all"
            },
            s.seconds,
            s.bot_moves,
            per_s(s.bot_moves),
            s.human_moves,
            s.finished,
            s.thinking_min,
            s.thinking_mean,
            s.thinking_max,
            s.move_ack_p50_us.map_or("?".into(), |v| v.to_string()),
            s.move_ack_p99_us.map_or("?".into(), |v| v.to_string()),
            s.errors,
            s.first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})")),
        ));
        for failure in &self.failures {
            out.push_str(&format!("failed: {failure}\n"));
        }
        out
    }
}

/// The whole `bench-bots` command: returns the report after stopping the server.
pub async fn bench_bots(args: &BotsArgs) -> Result<BotsReport, String> {
    let config = BotsConfig::new(args.games, args.rate, args.bot_games, args.duration)?;
    let bot_threads = args
        .bot_threads
        .map_or("server default (cores − 1)".into(), |n| n.to_string());
    let executive_ms = args
        .executive_ms
        .map_or("server default (1000 ms)".into(), |ms| format!("{ms} ms"));
    match &args.server {
        Some(_) if args.workers > 0 => {
            Err("--workers starts its own server: leave out --server".into())
        }
        Some(url) => {
            net::require_loopback_url(url)?;
            let (bot_threads, executive_ms) = ("unknown".into(), "unknown".into());
            Ok(run_bots(url, &config, bot_threads, executive_ms).await)
        }
        None => {
            if args.workers > 16 {
                return Err("--workers must be at most 16".into());
            }
            let redis = if args.workers > 0 {
                Some(start_redis(&args.redis_server, false, args.redis_cpus.as_deref()).await?)
            } else {
                None
            };
            let mut extra = Vec::new();
            let workers_said = format!(
                "{} bot-worker processes × {} threads{}{}",
                args.workers,
                args.worker_threads,
                if args.worker_cpus.is_empty() {
                    String::new()
                } else {
                    format!(" on CPUs {}", args.worker_cpus.join(","))
                },
                args.worker_nice
                    .map_or(String::new(), |n| format!(" at nice {n}")),
            );
            let bot_threads = match (&redis, args.bot_threads) {
                (Some(_), None) => {
                    extra.extend(["--bot-threads".to_owned(), "0".to_owned()]);
                    format!("0, {workers_said}")
                }
                (Some(_), Some(n)) => format!("{n}, and {workers_said}"),
                (None, _) => bot_threads,
            };
            if let Some(n) = args.bot_threads {
                extra.extend(["--bot-threads".to_owned(), n.to_string()]);
            }
            if let Some(ms) = args.executive_ms {
                extra.extend(["--executive-ms".to_owned(), ms.to_string()]);
            }
            if let Some(r) = &redis {
                extra.extend(["--redis-url".to_owned(), r.url()]);
            }
            let child = start_jumpgate(
                "jumpgate",
                &args.jumpgate,
                args.server_cpus.as_deref(),
                &extra,
            )
            .await?;
            eprintln!("jumpgate at {} (pid {})", child.ws_url(), child.pid());
            let mut workers = Vec::new();
            if let Some(r) = &redis {
                workers = start_workers(
                    &args.jumpgate,
                    &r.url(),
                    args.workers,
                    args.worker_threads,
                    &args.worker_cpus,
                )
                .await?;
                if let Some(nice) = args.worker_nice {
                    for w in &workers {
                        renice(w.pid(), nice)?;
                    }
                }
                // The server admits games once it has read the workers'
                // heartbeats (every 2 s while no game waits).
                tokio::time::sleep(Duration::from_millis(2_500)).await;
            }
            let report = run_bots(&child.ws_url(), &config, bot_threads, executive_ms).await;
            drop(workers);
            child.stop();
            drop(redis);
            Ok(report)
        }
    }
}

/// Sets the nice value of every thread of a process with `renice` (on Linux
/// a thread's own; threads made later inherit it from the one making them).
fn renice(pid: u32, nice: i32) -> Result<(), String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|e| format!("cannot list the threads of {pid}: {e}"))?;
    let mut ids: Vec<String> = tasks
        .filter_map(|t| t.ok()?.file_name().into_string().ok())
        .collect();
    ids.sort();
    let status = std::process::Command::new("renice")
        .args(["-n", &nice.to_string(), "-p"])
        .args(&ids)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run renice: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "renice -n {nice} of process {pid} failed: {status}"
        ))
    }
}
