//! `bench`: starts the servers, runs every phase against Jumpgate and the echo baseline,
//! stops the servers, and writes the table, JSON and SVG.
//!
//! Order: idle connections (memory), then the open-loop latency phase, then the
//! closed-loop saturation phase, each first on Jumpgate with players of every protocol
//! asked for (`--protocol`, both by default) and then on echo; last the saturation
//! phase on a second Jumpgate with Redis, when `--redis-url` is given, again per
//! protocol.
//!
//! With `--crowd N` ([`crowd`](crate::crowd)), after the latency phases, the protocol 2
//! latency phase runs once more, then N greeted protocol 2 connections are opened from
//! several loopback source addresses and the phase runs again with them held.
//!
//! The players are raw `jumpgate_protocol::client::Client`s, not the SDK's `Session`:
//! a session's driver task would add a channel hop and a task switch to every round
//! trip measured (see the top of [`driver`](crate::driver)).

use std::path::{Path, PathBuf};
use std::time::Duration;

use jumpgate_protocol::{ProtocolVersion, RuleSet};

use crate::crowd::{self, CrowdLatency, CrowdPlan};
use crate::driver::{self, Games, Kind, MAX_RATE_PER_GAME, MIN_SEND_GAP, Pace};
use crate::net;
use crate::report::{IdleSummary, PhaseSummary, ProtocolRun, RedisSide, Report, RunConfig, Side};
use jumpgate_harness::{JumpgateOptions, JumpgateProcess, Output, ProcessSpec, ServerProcess};

/// Options of `jumpgate-loadtest bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Drive this already running Jumpgate server (ws://127.0.0.1:PORT/ws) instead of
    /// starting one. Its memory is measured only with --server-pid.
    #[arg(long, env = "JUMPGATE_LOADTEST_SERVER")]
    pub server: Option<String>,
    /// Process id of the --server, to read its memory.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Drive this already running echo server instead of starting one.
    #[arg(long, env = "JUMPGATE_LOADTEST_ECHO")]
    pub echo: Option<String>,
    /// Process id of the --echo server, to read its memory.
    #[arg(long)]
    pub echo_pid: Option<u32>,
    /// Concurrent games in the latency phase (each two connections).
    #[arg(long, env = "JUMPGATE_LOADTEST_GAMES", default_value_t = 50)]
    pub games: usize,
    /// Open-loop move rate of the latency phase, moves a second over all games (at
    /// most 60 per game, to stay under the server's per-connection rate limit).
    #[arg(long, env = "JUMPGATE_LOADTEST_RATE", default_value_t = 1000.0)]
    pub rate: f64,
    /// Concurrent games in the closed-loop saturation phase.
    #[arg(long, env = "JUMPGATE_LOADTEST_SAT_GAMES", default_value_t = 400)]
    pub sat_games: usize,
    /// Length of each timed phase, in seconds.
    #[arg(long, env = "JUMPGATE_LOADTEST_DURATION", default_value_t = 10.0)]
    pub duration: f64,
    /// Idle connections to open on each server for the memory figure, per protocol.
    #[arg(long, env = "JUMPGATE_LOADTEST_IDLE", default_value_t = 8_000)]
    pub idle: usize,
    /// Also run the saturation phase on a second Jumpgate started with
    /// `--redis-url URL`, and compare it with the in-memory store.
    #[arg(long, env = "JUMPGATE_LOADTEST_REDIS_URL")]
    pub redis_url: Option<String>,
    /// Pin the servers with `taskset -c CPUS`, e.g. 0.
    #[arg(long, env = "JUMPGATE_LOADTEST_SERVER_CPUS")]
    pub server_cpus: Option<String>,
    /// Pin the load tester itself with `taskset -a -p -c CPUS`, e.g. 1.
    #[arg(long, env = "JUMPGATE_LOADTEST_CLIENT_CPUS")]
    pub client_cpus: Option<String>,
    /// The rule set the games play (american, brazilian, russian, spanish,
    /// italian, thai, space, orbit).
    #[arg(long, env = "JUMPGATE_LOADTEST_RULE_SET", default_value = "american")]
    pub rule_set: String,
    /// The protocol the players speak (MessagePack): 1, 2, or both (every Jumpgate
    /// phase runs once per protocol, v1 first, in the same run).
    #[arg(long, env = "JUMPGATE_LOADTEST_PROTOCOL", default_value = "both")]
    pub protocol: String,
    /// Also hold this many greeted protocol 2 connections on Jumpgate (at most
    /// 200,000; 0: none) and run the protocol 2 latency phase without and with them;
    /// needs protocol 2 in --protocol. Raises the file-descriptor limit (hard too,
    /// as root) for them; the server started inherits it.
    #[arg(long, env = "JUMPGATE_LOADTEST_CROWD", default_value_t = 0)]
    pub crowd: usize,
    /// The loopback IPv4 addresses the crowd connects from, comma-separated, at most
    /// 25,000 connections each (default: 127.0.0.2, 127.0.0.3, … one per 5,000
    /// connections: the kernel's choice of a source port slows down as an address's
    /// ports fill).
    #[arg(long, env = "JUMPGATE_LOADTEST_CROWD_SOURCES")]
    pub crowd_sources: Option<String>,
    /// Seconds the crowd stays open at least after its last connection is greeted
    /// (the latency phase with it included): past two of the server's 20 s ping
    /// intervals, a crowd that did not answer pings would have been closed.
    #[arg(long, env = "JUMPGATE_LOADTEST_CROWD_HOLD", default_value_t = 45.0)]
    pub crowd_hold: f64,
    /// Seconds between two timed phases on the same Jumpgate server, so that the
    /// previous phase's lobbies (their players gone, a series break of 8 s
    /// running) are done before the next phase's clock starts.
    #[arg(long, env = "JUMPGATE_LOADTEST_SETTLE", default_value_t = 10.0)]
    pub settle: f64,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
    /// Write the latency percentile plot as SVG here.
    #[arg(long)]
    pub out_svg: Option<PathBuf>,
}

/// The load to apply, independent of how the servers were found.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Games in the latency phase.
    pub games: usize,
    /// Moves a second in the latency phase.
    pub rate: f64,
    /// Games in the saturation phase.
    pub sat_games: usize,
    /// Each timed phase.
    pub duration: Duration,
    /// Idle connections per server.
    pub idle: usize,
    /// What the games play.
    pub rule_set: RuleSet,
    /// The protocols the players speak, each phase once per protocol in this order.
    pub protocols: Vec<ProtocolVersion>,
    /// The crowd held during a second protocol 2 latency phase, if any.
    pub crowd: Option<CrowdPlan>,
    /// The pause between two timed phases on the same Jumpgate server.
    pub settle: Duration,
}

impl BenchConfig {
    /// Checks the bounds that keep a run finite and under the server's rate limit.
    pub fn new(
        games: usize,
        rate: f64,
        sat_games: usize,
        duration_s: f64,
        idle: usize,
        rule_set: &str,
        protocol: &str,
    ) -> Result<BenchConfig, String> {
        let rule_set = RuleSet::ALL
            .iter()
            .copied()
            .find(|rs| rs.as_str() == rule_set.trim().to_ascii_lowercase())
            .ok_or_else(|| format!("--rule-set: unknown rule set {rule_set:?}"))?;
        if !(1..=5000).contains(&games) || !(1..=5000).contains(&sat_games) {
            return Err("--games and --sat-games must be between 1 and 5000".into());
        }
        if !(0.1..=600.0).contains(&duration_s) {
            return Err("--duration must be between 0.1 and 600 seconds".into());
        }
        let protocols = parse_protocols(protocol)?;
        if idle * protocols.len() > MAX_IDLE {
            return Err(format!(
                "--idle is at most {} with {} protocol(s) (file descriptors: the idle \
                 connections of every protocol are open at once)",
                MAX_IDLE / protocols.len(),
                protocols.len()
            ));
        }
        if rate.is_nan() || rate <= 0.0 || rate / games as f64 > MAX_RATE_PER_GAME {
            return Err(format!(
                "--rate must be positive and at most {MAX_RATE_PER_GAME} moves/s per game \
                 ({:.0} for {games} games), so that each connection stays under the server's \
                 rate limit of 40 messages/s; add games instead",
                MAX_RATE_PER_GAME * games as f64
            ));
        }
        Ok(BenchConfig {
            games,
            rate,
            sat_games,
            duration: Duration::from_secs_f64(duration_s),
            idle,
            rule_set,
            protocols,
            crowd: None,
            settle: Duration::ZERO,
        })
    }

    /// The same load with `settle` between two timed phases on one Jumpgate server.
    pub fn settled_for(mut self, settle: Duration) -> BenchConfig {
        self.settle = settle;
        self
    }

    /// Adds a crowd of `count` connections (none for 0) from `sources` (see
    /// [`CrowdPlan::new`]); it needs protocol 2 among the protocols.
    pub fn with_crowd(
        mut self,
        count: usize,
        sources: Option<&str>,
        hold: Duration,
    ) -> Result<BenchConfig, String> {
        if count == 0 {
            if sources.is_some() {
                return Err("--crowd-sources needs --crowd".into());
            }
            self.crowd = None;
            return Ok(self);
        }
        if !self.protocols.contains(&ProtocolVersion::V2) {
            return Err("--crowd needs protocol 2 (--protocol 2 or both)".into());
        }
        self.crowd = Some(CrowdPlan::new(count, sources)?.held_for(hold));
        Ok(self)
    }

    /// `--max-connections` for the Jumpgate servers `bench` starts: room for the
    /// crowd and the latency phase's games beside it (the idle phase's connections
    /// are closed before the crowd opens).
    fn max_connections(&self) -> usize {
        self.crowd
            .as_ref()
            .map_or(0, |plan| plan.max_connections(self.games))
            .max(MAX_CONNECTIONS)
    }

    fn run_config(&self) -> RunConfig {
        RunConfig {
            games: self.games,
            rate: self.rate,
            sat_games: self.sat_games,
            duration_s: self.duration.as_secs_f64(),
            idle: self.idle,
            rule_set: self.rule_set.as_str().to_owned(),
            move_frame_bytes: driver::move_frame_len(1),
            // Two connections per game, each at most one message per gap.
            saturation_cap: self.sat_games as f64 * 2.0 / MIN_SEND_GAP.as_secs_f64(),
        }
    }
}

/// The most idle connections open at once, over all protocols: under the load tester's
/// and the server's file-descriptor limits (20,000 here; the server keeps some in
/// reserve, see `fit_to_fd_limit`), and under the `--max-connections` the servers
/// `bench` starts are given ([`MAX_CONNECTIONS`]).
const MAX_IDLE: usize = 16_000;

/// `--max-connections` of the Jumpgate servers `bench` starts without a crowd (a crowd
/// adds its own count): the idle phases' 16,000 and the games'. Given explicitly so
/// that a run does not depend on the server's default.
const MAX_CONNECTIONS: usize = 17_000;

/// `--protocol`: "1", "2" or "both" (v1 first).
fn parse_protocols(protocol: &str) -> Result<Vec<ProtocolVersion>, String> {
    match protocol.trim() {
        "both" => Ok(ProtocolVersion::ALL.to_vec()),
        number => number
            .parse()
            .ok()
            .and_then(ProtocolVersion::from_number)
            .map(|version| vec![version])
            .ok_or_else(|| format!("--protocol: 1, 2 or both, not {number:?}")),
    }
}

/// A server to drive.
#[derive(Debug, Clone)]
pub struct Target {
    /// `ws://…/ws`.
    pub url: String,
    /// Its process, for memory readings.
    pub pid: Option<u32>,
}

/// The Redis-backed server, if any.
#[derive(Debug, Clone)]
pub enum RedisTarget {
    /// No `--redis-url`.
    NotRequested,
    /// It was asked for but could not start.
    Failed(String),
    /// Running.
    Ready(Target),
}

/// Runs every phase and builds the report. Phases that fail are noted in the report;
/// the others still run.
///
/// Each phase runs on Jumpgate once per protocol of the config, then on echo, before
/// the next phase starts, so that the protocols and the baseline see the machine in
/// the same state.
pub async fn run_all(
    jumpgate: &Target,
    echo: &Target,
    redis: &RedisTarget,
    config: &BenchConfig,
) -> Report {
    let mut runs: Vec<(ProtocolVersion, Side)> = config
        .protocols
        .iter()
        .map(|protocol| (*protocol, Side::default()))
        .collect();
    let mut echo_side = Side::default();
    let mut crowd_summary = None;
    let idle_limit = Duration::from_secs(30).max(config.duration * 3);
    let games = |count: usize, protocol: ProtocolVersion| Games {
        count,
        rule_set: config.rule_set,
        protocol,
    };
    if config.idle > 0 {
        // Each protocol's connections stay open while the next protocol's are
        // measured: the server's allocator keeps freed memory, and connections opened
        // into it would look free.
        let mut held = Vec::new();
        for (protocol, side) in &mut runs {
            eprintln!(
                "phase: {} idle v{} connections on Jumpgate ({})",
                config.idle,
                protocol.number(),
                jumpgate.url
            );
            let (stats, open) = driver::run_idle(
                Kind::Jumpgate,
                *protocol,
                &jumpgate.url,
                config.idle,
                jumpgate.pid,
                idle_limit,
            )
            .await;
            side.idle = Some(IdleSummary::from(stats));
            held.push(open);
        }
        eprintln!(
            "  closing {} idle connections",
            held.iter()
                .map(driver::IdleConnections::count)
                .sum::<usize>()
        );
        drop(held);
        eprintln!(
            "phase: {} idle connections on echo ({})",
            config.idle, echo.url
        );
        let (stats, _open) = driver::run_idle(
            Kind::Echo,
            ProtocolVersion::V1,
            &echo.url,
            config.idle,
            echo.pid,
            idle_limit,
        )
        .await;
        echo_side.idle = Some(IdleSummary::from(stats));
    }
    let mut phases_run = false;
    for (pace, name, count) in [
        (Pace::Open { rate: config.rate }, "latency", config.games),
        (Pace::Closed, "saturated", config.sat_games),
    ] {
        for (protocol, side) in &mut runs {
            let label = format!("{name} jumpgate v{}", protocol.number());
            if std::mem::replace(&mut phases_run, true) {
                // The previous phase's lobbies finish on this same server first.
                tokio::time::sleep(config.settle).await;
            }
            eprintln!(
                "phase: {label}: {count} games, {pace:?}, {:?}",
                config.duration
            );
            let result = driver::run_phase(
                &label,
                Kind::Jumpgate,
                &jumpgate.url,
                games(count, *protocol),
                pace,
                config.duration,
            )
            .await;
            match result {
                Ok(stats) => {
                    let summary = Some(PhaseSummary::from(&stats));
                    match pace {
                        Pace::Open { .. } => side.latency = summary,
                        Pace::Closed => side.saturated = summary,
                    }
                }
                Err(e) => side.failures.push(e),
            }
        }
        let label = format!("{name} echo");
        eprintln!(
            "phase: {label}: {count} pairs, {pace:?}, {:?}",
            config.duration
        );
        match driver::run_phase(
            &label,
            Kind::Echo,
            &echo.url,
            games(count, ProtocolVersion::V1),
            pace,
            config.duration,
        )
        .await
        {
            Ok(stats) => {
                let summary = Some(PhaseSummary::from(&stats));
                match pace {
                    Pace::Open { .. } => echo_side.latency = summary,
                    Pace::Closed => echo_side.saturated = summary,
                }
            }
            Err(e) => echo_side.failures.push(e),
        }
        if let (Pace::Open { rate }, Some(plan)) = (pace, &config.crowd) {
            let latency = CrowdLatency {
                games: games(config.games, ProtocolVersion::V2),
                rate,
                duration: config.duration,
                settle: config.settle,
            };
            crowd_summary =
                Some(crowd::run_crowd(&jumpgate.url, jumpgate.pid, plan, latency).await);
        }
    }
    let mut protocol_runs = Vec::new();
    for (protocol, side) in runs {
        let redis = match redis {
            RedisTarget::NotRequested => RedisSide {
                status: "not measured (no --redis-url)".into(),
                saturated: None,
            },
            RedisTarget::Failed(why) => RedisSide {
                status: format!("not measured: {why}"),
                saturated: None,
            },
            RedisTarget::Ready(target) => {
                let label = format!("saturated redis v{}", protocol.number());
                eprintln!(
                    "phase: {label}: {} games, closed loop, {:?}",
                    config.sat_games, config.duration
                );
                match driver::run_phase(
                    &label,
                    Kind::Jumpgate,
                    &target.url,
                    games(config.sat_games, protocol),
                    Pace::Closed,
                    config.duration,
                )
                .await
                {
                    Ok(stats) => RedisSide {
                        status: "measured".into(),
                        saturated: Some(PhaseSummary::from(&stats)),
                    },
                    Err(e) => RedisSide {
                        status: format!("not measured: {e}"),
                        saturated: None,
                    },
                }
            }
        };
        protocol_runs.push(ProtocolRun {
            protocol: protocol.number(),
            jumpgate: side,
            redis,
        });
    }
    let mut report = Report::new(config.run_config(), protocol_runs, echo_side);
    report.crowd = crowd_summary;
    report
}

/// Starts the Jumpgate server binary `program` on a free loopback port, under
/// `taskset -c cpus` when given, with `extra` arguments after `serve --listen ADDR`.
pub(crate) async fn start_jumpgate(
    name: &str,
    program: &Path,
    cpus: Option<&str>,
    extra: &[String],
) -> Result<JumpgateProcess, String> {
    start_jumpgate_logging(name, program, cpus, extra, "error").await
}

/// [`start_jumpgate`] with the server's `RUST_LOG` set to `log`. The harness turns
/// the per-client limits off (every simulated client shares one loopback address,
/// so they would measure themselves, not the server); the `edge` subcommand sets
/// the ones it measures through `extra`.
pub(crate) async fn start_jumpgate_logging(
    name: &str,
    program: &Path,
    cpus: Option<&str>,
    extra: &[String],
    log: &str,
) -> Result<JumpgateProcess, String> {
    start_jumpgate_with_cap(name, program, cpus, extra, log, MAX_CONNECTIONS).await
}

/// [`start_jumpgate_logging`] with `JUMPGATE_MAX_CONNECTIONS` set to `max_connections`.
async fn start_jumpgate_with_cap(
    name: &str,
    program: &Path,
    cpus: Option<&str>,
    extra: &[String],
    log: &str,
    max_connections: usize,
) -> Result<JumpgateProcess, String> {
    let mut options = JumpgateOptions::new(name, program);
    options.args = extra.to_vec();
    options.cpus = cpus.map(str::to_owned);
    options.env = vec![
        // Moves never time out during a run.
        ("JUMPGATE_MOVE_CLOCK_MS".into(), "600000".into()),
        (
            "JUMPGATE_TOKEN_SECRET".into(),
            "jumpgate-loadtest-token-secret-0123456789".into(),
        ),
        ("RUST_LOG".into(), log.to_owned()),
        // Memory unless a run names its Redis (`--redis-url` in `extra`)
        // or its data directory.
        ("JUMPGATE_MEMORY".into(), "true".into()),
        (
            "JUMPGATE_MAX_CONNECTIONS".into(),
            max_connections.to_string(),
        ),
    ];
    JumpgateProcess::start_with(&options).await
}

async fn start_echo(args: &BenchArgs) -> Result<ServerProcess, String> {
    let addr = net::free_loopback_addr();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let argv = vec![
        "echo-server".to_owned(),
        "--listen".to_owned(),
        addr.to_string(),
    ];
    let spec = ProcessSpec {
        name: "echo server",
        program: &exe,
        args: &argv,
        envs: &[],
        cpus: args.server_cpus.as_deref(),
        output: Output::Capture,
    };
    ServerProcess::start(&spec, addr).await
}

/// The whole `bench` command: returns the report after stopping every child.
pub async fn bench(args: &BenchArgs) -> Result<Report, String> {
    let config = BenchConfig::new(
        args.games,
        args.rate,
        args.sat_games,
        args.duration,
        args.idle,
        &args.rule_set,
        &args.protocol,
    )?
    .with_crowd(
        args.crowd,
        args.crowd_sources.as_deref(),
        Duration::try_from_secs_f64(args.crowd_hold)
            .map_err(|_| "--crowd-hold: seconds, 0 or more")?,
    )?
    .settled_for(
        Duration::try_from_secs_f64(args.settle)
            .ok()
            .filter(|d| *d <= Duration::from_secs(600))
            .ok_or("--settle: seconds, 0 to 600")?,
    );
    if let Some(plan) = &config.crowd {
        // Before any server starts: they inherit it.
        crowd::raise_fd_limit(plan, config.games)?;
    }
    let max_connections = config.max_connections();
    let mut jumpgates = Vec::new();
    let mut echo_child = None;
    let jumpgate = match &args.server {
        Some(url) => {
            net::require_loopback_url(url)?;
            Target {
                url: url.clone(),
                pid: args.server_pid,
            }
        }
        None => {
            let child = start_jumpgate_with_cap(
                "jumpgate",
                &args.jumpgate,
                args.server_cpus.as_deref(),
                &[],
                "error",
                max_connections,
            )
            .await?;
            let target = Target {
                url: child.ws_url(),
                pid: Some(child.pid()),
            };
            jumpgates.push(child);
            target
        }
    };
    let echo = match &args.echo {
        Some(url) => {
            net::require_loopback_url(url)?;
            Target {
                url: url.clone(),
                pid: args.echo_pid,
            }
        }
        None => {
            let child = start_echo(args).await?;
            let target = Target {
                url: child.ws_url(),
                pid: Some(child.pid()),
            };
            echo_child = Some(child);
            target
        }
    };
    let redis = match &args.redis_url {
        None => RedisTarget::NotRequested,
        Some(url) => {
            let extra = ["--redis-url".to_owned(), url.clone()];
            match start_jumpgate(
                "jumpgate with Redis",
                &args.jumpgate,
                args.server_cpus.as_deref(),
                &extra,
            )
            .await
            {
                Ok(child) => {
                    let target = Target {
                        url: child.ws_url(),
                        pid: Some(child.pid()),
                    };
                    jumpgates.push(child);
                    RedisTarget::Ready(target)
                }
                Err(e) => RedisTarget::Failed(e),
            }
        }
    };
    eprintln!(
        "jumpgate at {} (pid {:?}), echo at {} (pid {:?})",
        jumpgate.url, jumpgate.pid, echo.url, echo.pid
    );
    let report = run_all(&jumpgate, &echo, &redis, &config).await;
    // Killed and reaped.
    drop((jumpgates, echo_child));
    Ok(report)
}
