//! `bench-cluster`: saturated moves a second on a three-master Redis Cluster against
//! one Redis, in the same run (issue 19).
//!
//! Starts one `redis-server` and a Redis Cluster of `--masters` nodes (all with an
//! append-only file, fsync every second, Redis's default), and one `jumpgate serve`
//! on each (`--redis-url redis://…` and the cluster's seed list). Both servers run
//! for the whole command; each round runs `bench`'s closed-loop saturation phase
//! ([`driver::run_phase`] with [`Pace::Closed`]: `--sat-games` games, each move sent
//! as soon as the previous one is acknowledged) on one and then on the other, the
//! first of each round swapping (one Redis, cluster, cluster, one Redis, …) so that
//! a machine that slows down over time weighs on both alike. The table gives every
//! run, the medians and the ratio cluster ÷ one Redis. The CPU time each server and
//! its Redis (all nodes summed for the cluster) spend per move in the window is
//! sampled too: on a small machine every node shares the same cores, so the cluster
//! shows what its client and routing cost, not the capacity extra machines add.

use std::path::PathBuf;

use serde::Serialize;

use crate::bench::{BenchConfig, start_jumpgate};
use crate::cluster;
use crate::cpu::{CpuSampler, median};
use crate::driver::{self, Kind, Pace};
use crate::report::PhaseSummary;
use jumpgate_harness::{AppendOnly, ClusterOptions, RedisCluster, RedisOptions};

/// Options of `jumpgate-loadtest bench-cluster`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchClusterArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Concurrent games in the saturation phase (each two connections).
    #[arg(long, default_value_t = 400)]
    pub sat_games: usize,
    /// Length of each phase, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Runs on each store.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Masters of the Redis Cluster.
    #[arg(long, default_value_t = 3)]
    pub masters: usize,
    /// The games' rule set.
    #[arg(long, default_value = "american")]
    pub rule_set: String,
    /// Pin the servers with `taskset -c CPUS`.
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// Pin every redis-server with `taskset -c CPUS` (default: not pinned).
    #[arg(long)]
    pub redis_cpus: Option<String>,
    /// Pin the load tester itself with `taskset -a -p -c CPUS`.
    #[arg(long)]
    pub client_cpus: Option<String>,
    /// The `redis-server` binary.
    #[arg(long, default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// The `redis-cli` binary (creates the cluster).
    #[arg(long, default_value = "redis-cli")]
    pub redis_cli: PathBuf,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// Which store a server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// One `redis-server`.
    SingleRedis,
    /// A Redis Cluster.
    RedisCluster,
}

impl StoreKind {
    /// For tables and labels.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::SingleRedis => "one Redis",
            StoreKind::RedisCluster => "Redis Cluster",
        }
    }
}

/// A running Jumpgate on one of the stores.
#[derive(Debug, Clone)]
pub struct StoreTarget {
    pub store: StoreKind,
    /// `ws://…/ws`.
    pub url: String,
    /// The server's process, for CPU (`None` in-process).
    pub server_pid: Option<u32>,
    /// The store's processes, for CPU.
    pub redis_pids: Vec<u32>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The load (only `sat_games`, `duration` and `rule_set` are used).
    pub config: BenchConfig,
    /// Runs on each store.
    pub rounds: usize,
}

impl Plan {
    /// Checks the bounds.
    pub fn new(
        sat_games: usize,
        duration_s: f64,
        rounds: usize,
        rule_set: &str,
    ) -> Result<Plan, String> {
        let config = BenchConfig::new(1, 1.0, sat_games, duration_s, 0, rule_set, "1")?;
        if !(1..=10).contains(&rounds) {
            return Err("--rounds must be between 1 and 10".into());
        }
        Ok(Plan { config, rounds })
    }
}

/// One saturation run on one store.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterRun {
    /// 1, 2…
    pub round: usize,
    pub store: StoreKind,
    /// The closed-loop phase.
    pub saturated: Option<PhaseSummary>,
    /// CPU time per move in the window, µs: the server's, its Redis's (every node
    /// summed) and the load tester's.
    pub server_cpu_us_per_move: Option<f64>,
    pub redis_cpu_us_per_move: Option<f64>,
    pub client_cpu_us_per_move: Option<f64>,
    /// Why the run failed.
    pub failure: Option<String>,
}

/// One figure on both stores.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    pub figure: String,
    /// Median over the runs on one Redis.
    pub single: Option<f64>,
    /// Median over the runs on the cluster.
    pub cluster: Option<f64>,
    /// cluster ÷ single.
    pub ratio: Option<f64>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct BenchClusterReport {
    pub sat_games: usize,
    pub duration_s: f64,
    pub rule_set: String,
    pub masters: usize,
    /// The server's `--redis-url` on each.
    pub single_url: String,
    pub cluster_url: String,
    /// Every run, in the order made.
    pub runs: Vec<ClusterRun>,
    /// Moves/s, p50, p99 and CPU per move: medians and ratios.
    pub figures: Vec<Compared>,
}

/// Runs the plan on the two servers, alternating which goes first.
pub async fn measure(single: &StoreTarget, cluster: &StoreTarget, plan: &Plan) -> Vec<ClusterRun> {
    let mut runs = Vec::new();
    for round in 1..=plan.rounds {
        let order = if round % 2 == 1 {
            [single, cluster]
        } else {
            [cluster, single]
        };
        for target in order {
            runs.push(one_run(round, target, &plan.config).await);
        }
    }
    runs
}

async fn one_run(round: usize, target: &StoreTarget, config: &BenchConfig) -> ClusterRun {
    let mut run = ClusterRun {
        round,
        store: target.store,
        saturated: None,
        server_cpu_us_per_move: None,
        redis_cpu_us_per_move: None,
        client_cpu_us_per_move: None,
        failure: None,
    };
    let label = format!("saturated {}", target.store.name());
    eprintln!(
        "round {round}: {label}: {} games, closed loop, {:?}",
        config.sat_games, config.duration
    );
    let sampler = CpuSampler::start(target.server_pid, target.redis_pids.clone());
    match driver::run_phase(
        &label,
        Kind::Jumpgate,
        &target.url,
        driver::Games::v1(config.sat_games, config.rule_set),
        Pace::Closed,
        config.duration,
    )
    .await
    {
        Ok(stats) => {
            let end = stats.window_start + config.duration;
            if let Some(used) = sampler.used(stats.window_start, end) {
                let per_move = |cpu: std::time::Duration| {
                    (stats.ops > 0).then(|| cpu.as_secs_f64() * 1e6 / stats.ops as f64)
                };
                run.server_cpu_us_per_move = used.server.and_then(per_move);
                run.redis_cpu_us_per_move = used.redis.and_then(per_move);
                run.client_cpu_us_per_move = used.client.and_then(per_move);
            }
            run.saturated = Some(PhaseSummary::from(&stats));
        }
        Err(e) => run.failure = Some(e),
    }
    run
}

/// Reads one figure from a run.
type Pick = fn(&ClusterRun) -> Option<f64>;

fn sat(run: &ClusterRun) -> Option<&PhaseSummary> {
    run.saturated.as_ref().filter(|p| p.ops > 0)
}

const FIGURES: [(&str, Pick); 6] = [
    ("saturated moves/s", |r| sat(r).map(|p| p.per_second)),
    ("move round trip p50 (µs)", |r| {
        sat(r).map(|p| p.p50_us as f64)
    }),
    ("move round trip p99 (µs)", |r| {
        sat(r).map(|p| p.p99_us as f64)
    }),
    ("server CPU per move (µs)", |r| r.server_cpu_us_per_move),
    ("Redis CPU per move (µs)", |r| r.redis_cpu_us_per_move),
    ("load tester CPU per move (µs)", |r| {
        r.client_cpu_us_per_move
    }),
];

impl BenchClusterReport {
    /// Builds the report with its medians and ratios.
    pub fn new(
        plan: &Plan,
        masters: usize,
        single_url: String,
        cluster_url: String,
        runs: Vec<ClusterRun>,
    ) -> BenchClusterReport {
        let figures = FIGURES
            .iter()
            .map(|(name, pick)| {
                let of = |store| {
                    median(
                        runs.iter()
                            .filter(|r| r.store == store)
                            .filter_map(pick)
                            .collect(),
                    )
                };
                let (single, cluster) = (of(StoreKind::SingleRedis), of(StoreKind::RedisCluster));
                let ratio = match (cluster, single) {
                    (Some(c), Some(s)) if s > 0.0 => Some(c / s),
                    _ => None,
                };
                Compared {
                    figure: (*name).to_owned(),
                    single,
                    cluster,
                    ratio,
                }
            })
            .collect();
        BenchClusterReport {
            sat_games: plan.config.sat_games,
            duration_s: plan.config.duration.as_secs_f64(),
            rule_set: plan.config.rule_set.as_str().to_owned(),
            masters,
            single_url,
            cluster_url,
            runs,
            figures,
        }
    }

    /// Every run, then the medians and their ratio.
    pub fn table(&self) -> String {
        let num =
            |v: Option<f64>, digits: usize| v.map_or("—".to_owned(), |v| format!("{v:.digits$}"));
        let mut out = String::from(
            "| run | store | saturated moves/s | p50 µs | p99 µs | server CPU µs/move | \
             Redis CPU µs/move | load tester CPU µs/move |\n\
             |---|---|---:|---:|---:|---:|---:|---:|\n",
        );
        for run in &self.runs {
            let p = sat(run);
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                run.round,
                run.store.name(),
                num(p.map(|p| p.per_second), 0),
                num(p.map(|p| p.p50_us as f64), 0),
                num(p.map(|p| p.p99_us as f64), 0),
                num(run.server_cpu_us_per_move, 1),
                num(run.redis_cpu_us_per_move, 1),
                num(run.client_cpu_us_per_move, 1),
            ));
        }
        out.push_str(&format!(
            "\n| figure (median of runs) | one Redis | Redis Cluster ({} masters) | \
             cluster ÷ one |\n|---|---:|---:|---:|\n",
            self.masters
        ));
        for f in &self.figures {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                f.figure,
                num(f.single, 1),
                num(f.cluster, 1),
                f.ratio.map_or("—".to_owned(), |r| format!("{r:.2}×"))
            ));
        }
        out
    }

    /// The load, counts and errors of every run.
    pub fn details(&self) -> String {
        let mut out = format!(
            "{} games closed loop, {} s per run, {}; one Redis: {}; cluster: {}\n",
            self.sat_games, self.duration_s, self.rule_set, self.single_url, self.cluster_url
        );
        for run in &self.runs {
            if let Some(p) = &run.saturated {
                out.push_str(&format!(
                    "run {} {}: {} moves in {:.1} s, {:.0}/s, p50 {} p90 {} p99 {} p99.9 {} \
                     max {} µs, errors {}{}\n",
                    run.round,
                    run.store.name(),
                    p.ops,
                    p.seconds,
                    p.per_second,
                    p.p50_us,
                    p.p90_us,
                    p.p99_us,
                    p.p999_us,
                    p.max_us,
                    p.errors,
                    p.first_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(" (first: {e})")),
                ));
            }
            if let Some(failure) = &run.failure {
                out.push_str(&format!(
                    "run {} {}: {failure}\n",
                    run.round,
                    run.store.name()
                ));
            }
        }
        out
    }
}

/// The whole `bench-cluster` command: starts both stores and both servers, runs the
/// plan and stops everything.
pub async fn bench_cluster(args: &BenchClusterArgs) -> Result<BenchClusterReport, String> {
    let plan = Plan::new(args.sat_games, args.duration, args.rounds, &args.rule_set)?;
    if !args.jumpgate.is_file() {
        return Err(format!("{}: no such binary", args.jumpgate.display()));
    }
    let redis = cluster::start_redis(&args.redis_server, true, args.redis_cpus.as_deref()).await?;
    let cluster = RedisCluster::start_with(&ClusterOptions {
        masters: args.masters,
        node: RedisOptions {
            program: args.redis_server.clone(),
            append_only: AppendOnly::EverySecond,
            cpus: args.redis_cpus.clone(),
        },
        redis_cli: args.redis_cli.clone(),
    })
    .await?;
    eprintln!("one Redis at {}, cluster at {}", redis.url(), cluster.url());
    let cpus = args.server_cpus.as_deref();
    let single_server = start_jumpgate(
        "jumpgate on one Redis",
        &args.jumpgate,
        cpus,
        &["--redis-url".to_owned(), redis.url()],
    )
    .await?;
    let cluster_server = start_jumpgate(
        "jumpgate on a Redis Cluster",
        &args.jumpgate,
        cpus,
        &["--redis-url".to_owned(), cluster.url()],
    )
    .await?;
    let single = StoreTarget {
        store: StoreKind::SingleRedis,
        url: single_server.ws_url(),
        server_pid: Some(single_server.pid()),
        redis_pids: redis.pid().into_iter().collect(),
    };
    let on_cluster = StoreTarget {
        store: StoreKind::RedisCluster,
        url: cluster_server.ws_url(),
        server_pid: Some(cluster_server.pid()),
        redis_pids: cluster.pids(),
    };
    let runs = measure(&single, &on_cluster, &plan).await;
    let report = BenchClusterReport::new(&plan, args.masters, redis.url(), cluster.url(), runs);
    let transcripts = [single_server.transcript(), cluster_server.transcript()];
    single_server.stop();
    cluster_server.stop();
    redis.stop();
    cluster.stop();
    for (name, t) in ["one Redis", "Redis Cluster"].iter().zip(transcripts) {
        if t.errors > 0 {
            eprintln!(
                "warning: the server on {name} logged {} errors: {}",
                t.errors,
                t.first_notable.join(" / ")
            );
        }
    }
    Ok(report)
}
