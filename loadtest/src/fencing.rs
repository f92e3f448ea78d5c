//! `bench-fencing`: what fenced ownership costs a move, by running the same load on a
//! Redis-backed server built with it (`--jumpgate`) and one built without it
//! (`--baseline`, e.g. commit 77e2b6c built in a separate worktree).
//!
//! Every run starts its own `redis-server` (append-only file on, fsync every second)
//! and one server with `--redis-url`, then runs the two Jumpgate phases of `bench` on
//! it: the open-loop latency phase (`--games` games at `--rate` moves/s, `move` →
//! `ack` from the intended send time) and the closed-loop saturated phase
//! (`--sat-games` games). Runs alternate between the two binaries, the first of each
//! round swapping (baseline, current, current, baseline, …) so that a machine that
//! slows down over time weighs on both alike. The table gives every run and the
//! ratio of the medians, current ÷ baseline. The CPU time the server and
//! `redis-server` spend per move in the saturated phase (from `/proc/PID/stat`,
//! sampled every 100 ms) is shown too: less noisy than the rates, and it shows
//! where fencing's extra work (in the write script) lands.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::bench::{BenchConfig, start_jumpgate};
use crate::cluster::RedisServer;
use crate::driver::{self, Kind, Pace};
use crate::net;
use crate::report::PhaseSummary;

/// The goal: the fenced server keeps this share of the baseline's throughput, and its
/// latency stays within the inverse of it.
pub const GOAL_RATIO: f64 = 0.9;

/// Options of `jumpgate-loadtest bench-fencing`.
#[derive(Debug, Clone, clap::Args)]
pub struct FencingArgs {
    /// The `jumpgate` binary with fenced ownership.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// The `jumpgate` binary to compare with (built before fencing).
    #[arg(long)]
    pub baseline: PathBuf,
    /// Runs of each binary.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Concurrent games in the latency phase.
    #[arg(long, default_value_t = 50)]
    pub games: usize,
    /// Open-loop move rate of the latency phase, moves a second over all games.
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Concurrent games in the saturated phase.
    #[arg(long, default_value_t = 400)]
    pub sat_games: usize,
    /// Length of each phase, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Pin the servers with `taskset -c CPUS`, e.g. 0.
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// Pin redis-server with `taskset -c CPUS` (default: not pinned).
    #[arg(long)]
    pub redis_cpus: Option<String>,
    /// Pin the load tester itself with `taskset -a -p -c CPUS`, e.g. 1.
    #[arg(long)]
    pub client_cpus: Option<String>,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// Which binary a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Build {
    /// `--baseline`, without fencing.
    Baseline,
    /// `--jumpgate`, with fencing.
    Current,
}

impl Build {
    fn name(self) -> &'static str {
        match self {
            Build::Baseline => "without fencing",
            Build::Current => "with fencing",
        }
    }
}

/// One run of one binary.
#[derive(Debug, Clone, Serialize)]
pub struct FencingRun {
    /// 1, 2…
    pub round: usize,
    /// Which binary.
    pub build: Build,
    /// The open-loop phase.
    pub latency: Option<PhaseSummary>,
    /// The closed-loop phase.
    pub saturated: Option<PhaseSummary>,
    /// CPU time per move in the saturated phase's window, µs: the server's,
    /// redis-server's and the load tester's own.
    pub server_cpu_us_per_move: Option<f64>,
    pub redis_cpu_us_per_move: Option<f64>,
    pub client_cpu_us_per_move: Option<f64>,
    /// Why a phase or the run failed.
    pub failures: Vec<String>,
}

/// The comparison.
#[derive(Debug, Clone, Serialize)]
pub struct FencingReport {
    /// The binaries compared.
    pub current: String,
    pub baseline: String,
    /// The load.
    pub games: usize,
    pub rate: f64,
    pub sat_games: usize,
    pub duration_s: f64,
    /// Every run, in the order made.
    pub runs: Vec<FencingRun>,
}

/// The whole `bench-fencing` command.
pub async fn bench_fencing(args: &FencingArgs) -> Result<FencingReport, String> {
    let config = BenchConfig::new(
        args.games,
        args.rate,
        args.sat_games,
        args.duration,
        0,
        "american",
        "1",
    )?;
    if !(1..=10).contains(&args.rounds) {
        return Err("--rounds must be between 1 and 10".into());
    }
    for program in [&args.jumpgate, &args.baseline] {
        if !program.is_file() {
            return Err(format!("{}: no such binary", program.display()));
        }
    }
    let mut runs = Vec::new();
    for round in 1..=args.rounds {
        let order = if round % 2 == 1 {
            [Build::Baseline, Build::Current]
        } else {
            [Build::Current, Build::Baseline]
        };
        for build in order {
            let program = match build {
                Build::Baseline => &args.baseline,
                Build::Current => &args.jumpgate,
            };
            eprintln!("run {round}, {} ({})", build.name(), program.display());
            runs.push(one_run(round, build, program, args, &config).await);
        }
    }
    Ok(FencingReport {
        current: args.jumpgate.display().to_string(),
        baseline: args.baseline.display().to_string(),
        games: args.games,
        rate: args.rate,
        sat_games: args.sat_games,
        duration_s: args.duration,
        runs,
    })
}

async fn one_run(
    round: usize,
    build: Build,
    program: &Path,
    args: &FencingArgs,
    config: &BenchConfig,
) -> FencingRun {
    let mut run = FencingRun {
        round,
        build,
        latency: None,
        saturated: None,
        server_cpu_us_per_move: None,
        redis_cpu_us_per_move: None,
        client_cpu_us_per_move: None,
        failures: Vec::new(),
    };
    let redis = match RedisServer::start(&args.redis_server, true, args.redis_cpus.as_deref()).await
    {
        Ok(redis) => redis,
        Err(e) => {
            run.failures.push(e);
            return run;
        }
    };
    let extra = ["--redis-url".to_owned(), redis.url.clone()];
    let server =
        match start_jumpgate(build.name(), program, args.server_cpus.as_deref(), &extra).await {
            Ok(server) => server,
            Err(e) => {
                run.failures.push(e);
                redis.stop().await;
                return run;
            }
        };
    let url = server.ws_url();
    let sampler = CpuSampler::start(server.pid, redis.pid().into_iter().collect());
    let phases = [
        ("latency", Pace::Open { rate: config.rate }, config.games),
        ("saturated", Pace::Closed, config.sat_games),
    ];
    for (phase, pace, games) in phases {
        let label = format!("{phase} {}", build.name());
        match driver::run_phase(
            &label,
            Kind::Jumpgate,
            &url,
            driver::Games::v1(games, config.rule_set),
            pace,
            config.duration,
        )
        .await
        {
            Ok(stats) => {
                let summary = PhaseSummary::from(&stats);
                if phase == "latency" {
                    run.latency = Some(summary);
                } else {
                    let end = stats.window_start + config.duration;
                    if let Some(used) = sampler.used(stats.window_start, end) {
                        let per_move = |cpu: Duration| {
                            (stats.ops > 0).then(|| cpu.as_secs_f64() * 1e6 / stats.ops as f64)
                        };
                        run.server_cpu_us_per_move = used.server.and_then(per_move);
                        run.redis_cpu_us_per_move = used.redis.and_then(per_move);
                        run.client_cpu_us_per_move = used.client.and_then(per_move);
                    }
                    run.saturated = Some(summary);
                }
            }
            Err(e) => run.failures.push(e),
        }
    }
    server.stop().await;
    redis.stop().await;
    run
}

/// CPU time of the server, of Redis and of this process, read every 100 ms while a
/// run lasts.
pub(crate) struct CpuSampler {
    samples: Arc<Mutex<Vec<CpuSample>>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone, Copy)]
struct CpuSample {
    at: Instant,
    server: Option<Duration>,
    redis: Option<Duration>,
    client: Option<Duration>,
}

impl CpuSampler {
    /// Samples `server`, the sum over the `redis` processes (none if any cannot be
    /// read) and this process.
    pub(crate) fn start(server: Option<u32>, redis: Vec<u32>) -> CpuSampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let kept = samples.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                let at = tick.tick().await;
                let sample = CpuSample {
                    at,
                    server: server.and_then(net::cpu_time),
                    redis: (!redis.is_empty())
                        .then(|| {
                            redis
                                .iter()
                                .map(|pid| net::cpu_time(*pid))
                                .sum::<Option<Duration>>()
                        })
                        .flatten(),
                    client: net::cpu_time(std::process::id()),
                };
                kept.lock().unwrap_or_else(|e| e.into_inner()).push(sample);
            }
        });
        CpuSampler { samples, task }
    }

    /// CPU used from the first sample at or after `from` to the last at or before
    /// `to`.
    pub(crate) fn used(&self, from: Instant, to: Instant) -> Option<CpuUsed> {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let first = samples.iter().find(|s| s.at >= from)?;
        let last = samples.iter().rev().find(|s| s.at <= to)?;
        let delta = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        Some(CpuUsed {
            server: delta(first.server, last.server),
            redis: delta(first.redis, last.redis),
            client: delta(first.client, last.client),
        })
    }
}

/// CPU time used over a stretch, by process.
pub(crate) struct CpuUsed {
    pub(crate) server: Option<Duration>,
    pub(crate) redis: Option<Duration>,
    pub(crate) client: Option<Duration>,
}

impl Drop for CpuSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

impl FencingReport {
    fn figure(&self, build: Build, pick: Pick) -> Option<f64> {
        median(
            self.runs
                .iter()
                .filter(|r| r.build == build)
                .filter_map(pick)
                .collect(),
        )
    }

    /// Every run, then the medians and their ratio.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| run | server | move p50 | move p99 | saturated moves/s | server CPU per move | \
             Redis CPU per move | load tester CPU per move |\n\
             |---|---|---:|---:|---:|---:|---:|---:|\n",
        );
        let us = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.0} µs"));
        let rate = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.0}/s"));
        let cpu = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.1} µs"));
        for run in &self.runs {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                run.round,
                run.build.name(),
                us(p50(run)),
                us(p99(run)),
                rate(saturated(run)),
                cpu(run.server_cpu_us_per_move),
                cpu(run.redis_cpu_us_per_move),
                cpu(run.client_cpu_us_per_move),
            ));
        }
        out.push_str(
            "\n| figure (median of runs) | without fencing | with fencing | ratio | goal | met? |\n\
             |---|---:|---:|---:|---|---|\n",
        );
        let rows: [(&str, Pick, bool); 3] = [
            ("move round trip p50", p50, false),
            ("move round trip p99", p99, false),
            ("saturated moves/s", saturated, true),
        ];
        let cpu_rows: [(&str, Pick); 3] = [
            ("server CPU per saturated move", |r| {
                r.server_cpu_us_per_move
            }),
            ("Redis CPU per saturated move", |r| r.redis_cpu_us_per_move),
            ("load tester CPU per saturated move", |r| {
                r.client_cpu_us_per_move
            }),
        ];
        for (name, pick, higher_is_better) in rows {
            let base = self.figure(Build::Baseline, pick);
            let current = self.figure(Build::Current, pick);
            let ratio = match (current, base) {
                (Some(c), Some(b)) if b > 0.0 => Some(c / b),
                _ => None,
            };
            let (goal, met) = if higher_is_better {
                (format!("≥ {GOAL_RATIO}×"), ratio.map(|r| r >= GOAL_RATIO))
            } else {
                (
                    format!("≤ {:.2}×", 1.0 / GOAL_RATIO),
                    ratio.map(|r| r <= 1.0 / GOAL_RATIO),
                )
            };
            let show = if higher_is_better { rate } else { us };
            out.push_str(&format!(
                "| {name} | {} | {} | {} | {goal} | {} |\n",
                show(base),
                show(current),
                ratio.map_or("—".to_owned(), |r| format!("{r:.2}×")),
                match met {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "—",
                }
            ));
        }
        for (name, pick) in cpu_rows {
            let base = self.figure(Build::Baseline, pick);
            let current = self.figure(Build::Current, pick);
            let ratio = match (current, base) {
                (Some(c), Some(b)) if b > 0.0 => format!("{:.2}×", c / b),
                _ => "—".to_owned(),
            };
            out.push_str(&format!(
                "| {name} | {} | {} | {ratio} | — | — |\n",
                cpu(base),
                cpu(current)
            ));
        }
        out
    }

    /// Counts and errors of every phase.
    pub fn details(&self) -> String {
        let mut out = format!(
            "latency: {} games at {} moves/s open loop; saturated: {} games closed loop; \
             {} s per phase; with fencing: {}; without: {}\n",
            self.games, self.rate, self.sat_games, self.duration_s, self.current, self.baseline
        );
        for run in &self.runs {
            for phase in [&run.latency, &run.saturated].into_iter().flatten() {
                out.push_str(&format!(
                    "run {} {}: {} moves, {:.0}/s, p50 {} p90 {} p99 {} p99.9 {} max {} µs, \
                     errors {}{}\n",
                    run.round,
                    phase.label,
                    phase.ops,
                    phase.per_second,
                    phase.p50_us,
                    phase.p90_us,
                    phase.p99_us,
                    phase.p999_us,
                    phase.max_us,
                    phase.errors,
                    phase
                        .first_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(" (first: {e})")),
                ));
            }
            for failure in &run.failures {
                out.push_str(&format!(
                    "run {} {}: {failure}\n",
                    run.round,
                    run.build.name()
                ));
            }
        }
        out
    }
}

/// Reads one figure from a run.
type Pick = fn(&FencingRun) -> Option<f64>;

fn p50(run: &FencingRun) -> Option<f64> {
    run.latency
        .as_ref()
        .filter(|p| p.ops > 0)
        .map(|p| p.p50_us as f64)
}

fn p99(run: &FencingRun) -> Option<f64> {
    run.latency
        .as_ref()
        .filter(|p| p.ops > 0)
        .map(|p| p.p99_us as f64)
}

fn saturated(run: &FencingRun) -> Option<f64> {
    run.saturated
        .as_ref()
        .filter(|p| p.ops > 0)
        .map(|p| p.per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
    }
}
