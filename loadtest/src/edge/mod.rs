//! `edge`: the server's edge under abuse. Each part starts a release `jumpgate` of
//! its own with the limits it measures passed as flags (they win over the no-limit
//! environment [`start_jumpgate_logging`] sets), and measures:
//!
//! 1. **the cap**: `--max-connections` greeted WebSockets spread over many loopback
//!    source addresses (127.0.1.1, 127.0.1.2, …), one more upgrade (HTTP 503
//!    expected), `/healthz` latency on the public and the internal (metrics) listener
//!    meanwhile, and the server's memory at the cap;
//! 2. **deadlines**: memory per half-open connection (half a WebSocket upgrade request
//!    head, then nothing) and per upgraded WebSocket that never sends `hello`, whether
//!    each is closed at its deadline, and what one address gets when it opens many
//!    half-open connections;
//! 3. **a flood**: an innocent game's `move` → `ack` round trip from 127.0.0.1, quiet,
//!    then while 127.0.0.2 floods pings from many connections, then quiet again, with
//!    the server's default per-address limits.
//!
//! Every wait is bounded, every part has a hard stop, and everything stays on loopback.

mod cap;
mod deadlines;
mod flood;
mod game;
mod report;
pub(crate) mod socket;

pub use cap::{CapSummary, HealthProbe, measure_cap};
pub use deadlines::{Abuse, DeadlineSummary, measure_deadline};
pub use flood::{FloodSummary, measure_flood};
pub use game::PlaySummary;
pub use report::{DeadlinesSummary, EdgeFigure, EdgeReport};
pub use socket::crowd_address;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use tokio::time::{Instant, sleep};

use crate::bench::start_jumpgate_logging;
use crate::driver::PATIENCE;
use crate::net;
use jumpgate_harness::JumpgateProcess;

/// The server's per-address and per-identity limits at their defaults (`jumpgate
/// serve --help`), passed as flags so that they win over the no-limit environment.
const DEFAULT_LIMIT_FLAGS: &[(&str, &str)] = &[
    ("--max-connections-per-address", "64"),
    ("--max-connections-per-identity", "8"),
    ("--messages-per-second-per-address", "100"),
    ("--rooms-per-minute-per-address", "30"),
    ("--rooms-per-minute-per-identity", "10"),
    ("--http-requests-per-second-per-address", "20"),
];
/// The server's default cap on one address's connections (not upgraded, and
/// WebSockets, each).
const DEFAULT_PER_ADDRESS_CAP: usize = 64;
/// Connections being opened at once.
const OPEN_CONCURRENCY: usize = 64;
/// The one address of the one-address part.
const LONE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// Which parts to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Connections held at `--max-connections`.
    Cap,
    /// Half-open and un-greeted connections, and one address's share.
    Deadlines,
    /// An innocent game, quiet and under a flood.
    Flood,
}

/// Options of `jumpgate-loadtest edge`.
#[derive(Debug, Clone, clap::Args)]
pub struct EdgeArgs {
    /// The `jumpgate` server binary to start.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_JUMPGATE",
        default_value = "target/release/jumpgate"
    )]
    pub jumpgate: PathBuf,
    /// Which parts to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Part::Cap, Part::Deadlines, Part::Flood])]
    pub parts: Vec<Part>,
    /// The cap part: the server's `--max-connections`, all of them opened and greeted.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_MAX_CONNECTIONS",
        default_value_t = 5000
    )]
    pub max_connections: usize,
    /// Connections opened from each source address (127.0.1.1, 127.0.1.2, …): at most
    /// the server's per-address cap (64), and the server also counts upgrades against
    /// its HTTP rate (20 a second, bursts of 40).
    #[arg(long, env = "JUMPGATE_LOADTEST_PER_ADDRESS", default_value_t = 40)]
    pub per_address: usize,
    /// `/healthz` requests on each listener while at the cap.
    #[arg(long, default_value_t = 50)]
    pub healthz_requests: usize,
    /// The deadlines part: half-open connections, and then un-greeted WebSockets.
    #[arg(
        long,
        env = "JUMPGATE_LOADTEST_DEADLINE_CONNECTIONS",
        default_value_t = 2000
    )]
    pub deadline_connections: usize,
    /// The server's `--header-read-timeout-ms` in the deadlines part.
    #[arg(long, default_value_t = 3000)]
    pub header_read_timeout_ms: u64,
    /// The server's `--hello-timeout-ms` in the deadlines part.
    #[arg(long, default_value_t = 3000)]
    pub hello_timeout_ms: u64,
    /// The flood part: moves the innocent game plays in each phase.
    #[arg(long, default_value_t = 400)]
    pub moves: usize,
    /// The flood part: one move every this many milliseconds (alternating players).
    #[arg(long, default_value_t = 20)]
    pub move_gap_ms: u64,
    /// The flood part: connections the flooder holds from each of its addresses.
    #[arg(long, default_value_t = 60)]
    pub flood_connections: usize,
    /// The flood part: addresses the flooder floods from (127.0.0.2, 127.0.0.3, …).
    #[arg(long, default_value_t = 1)]
    pub flood_addresses: usize,
    /// Pin the servers with `taskset -c CPUS`, e.g. 0.
    #[arg(long, env = "JUMPGATE_LOADTEST_SERVER_CPUS")]
    pub server_cpus: Option<String>,
    /// Pin the load tester itself with `taskset -a -p -c CPUS`, e.g. 1.
    #[arg(long, env = "JUMPGATE_LOADTEST_CLIENT_CPUS")]
    pub client_cpus: Option<String>,
    /// Write the report as JSON here.
    #[arg(long)]
    pub out_json: Option<PathBuf>,
}

/// What an `edge` run was asked to do, checked.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeConfig {
    /// The parts run.
    pub parts: Vec<Part>,
    /// `--max-connections` of the cap part.
    pub max_connections: usize,
    /// Connections per source address.
    pub per_address: usize,
    /// `/healthz` requests per listener.
    pub healthz_requests: usize,
    /// Connections of each kind in the deadlines part.
    pub deadline_connections: usize,
    /// `--header-read-timeout-ms`.
    pub header_read_timeout_ms: u64,
    /// `--hello-timeout-ms`.
    pub hello_timeout_ms: u64,
    /// Moves per phase of the flood part.
    pub moves: usize,
    /// Milliseconds between two moves.
    pub move_gap_ms: u64,
    /// The flooder's connections per address.
    pub flood_connections: usize,
    /// The flooder's addresses.
    pub flood_addresses: usize,
}

impl EdgeConfig {
    /// Checks the bounds that keep a run finite and within the file descriptors.
    pub fn from_args(args: &EdgeArgs) -> Result<EdgeConfig, String> {
        if !(1..=18_000).contains(&args.max_connections) {
            return Err("--max-connections must be between 1 and 18000".into());
        }
        if !(1..=DEFAULT_PER_ADDRESS_CAP).contains(&args.per_address) {
            return Err(format!(
                "--per-address must be between 1 and {DEFAULT_PER_ADDRESS_CAP}"
            ));
        }
        if !(1..=1000).contains(&args.healthz_requests) {
            return Err("--healthz-requests must be between 1 and 1000".into());
        }
        if !(1..=9000).contains(&args.deadline_connections) {
            return Err("--deadline-connections must be between 1 and 9000".into());
        }
        for (flag, ms) in [
            ("--header-read-timeout-ms", args.header_read_timeout_ms),
            ("--hello-timeout-ms", args.hello_timeout_ms),
        ] {
            if !(100..=30_000).contains(&ms) {
                return Err(format!("{flag} must be between 100 and 30000"));
            }
        }
        if !(1..=10_000).contains(&args.moves) {
            return Err("--moves must be between 1 and 10000".into());
        }
        // Each player sends every other move: two gaps must keep it under the
        // server's 40 messages a second per connection.
        if !(15..=1000).contains(&args.move_gap_ms) {
            return Err("--move-gap-ms must be between 15 and 1000".into());
        }
        if !(1..=DEFAULT_PER_ADDRESS_CAP).contains(&args.flood_connections) {
            return Err(format!(
                "--flood-connections must be between 1 and {DEFAULT_PER_ADDRESS_CAP} (the \
                 server's per-address cap)"
            ));
        }
        if !(1..=100).contains(&args.flood_addresses) {
            return Err("--flood-addresses must be between 1 and 100".into());
        }
        let mut parts = args.parts.clone();
        parts.dedup();
        Ok(EdgeConfig {
            parts,
            max_connections: args.max_connections,
            per_address: args.per_address,
            healthz_requests: args.healthz_requests,
            deadline_connections: args.deadline_connections,
            header_read_timeout_ms: args.header_read_timeout_ms,
            hello_timeout_ms: args.hello_timeout_ms,
            moves: args.moves,
            move_gap_ms: args.move_gap_ms,
            flood_connections: args.flood_connections,
            flood_addresses: args.flood_addresses,
        })
    }
}

/// A server to measure: where it listens and, when known, its process.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The public listener.
    pub addr: SocketAddr,
    /// The internal listener (`--metrics-listen`), if any.
    pub metrics: Option<SocketAddr>,
    /// Its process, for memory and CPU readings.
    pub pid: Option<u32>,
}

impl Target {
    fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    fn rss(&self) -> Option<u64> {
        self.pid.and_then(net::vm_rss_kib)
    }

    fn cpu(&self) -> Option<Duration> {
        self.pid.and_then(net::cpu_time)
    }

    /// A counter or gauge from `/metrics` (the internal listener when there is one).
    async fn metric(&self, name: &str) -> Option<f64> {
        let answer = net::http_get(self.metrics.unwrap_or(self.addr), "/metrics").await?;
        metric_value(&answer.body, name)
    }
}

/// The value of the sample `name` (with its labels, if any) in Prometheus text.
fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

fn micros(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_micros()).unwrap_or(u64::MAX)
}

/// The value at quantile `q` of sorted `values`.
fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted.get(index.min(sorted.len() - 1)).copied()
}

fn per_connection_kib(before: Option<u64>, after: Option<u64>, n: usize) -> Option<f64> {
    let (before, after) = (before?, after?);
    (n > 0).then(|| after.saturating_sub(before) as f64 / n as f64)
}

/// The flags for a server with the default limits, `overrides` replacing some.
fn server_flags(overrides: &[(&str, String)]) -> Vec<String> {
    let mut flags: Vec<(String, String)> = DEFAULT_LIMIT_FLAGS
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    for (key, value) in overrides {
        match flags.iter_mut().find(|(k, _)| k == key) {
            Some(flag) => flag.1.clone_from(value),
            None => flags.push(((*key).to_owned(), value.clone())),
        }
    }
    flags.into_iter().flat_map(|(k, v)| [k, v]).collect()
}

/// A started server and how to reach it.
struct Started {
    child: JumpgateProcess,
    target: Target,
}

async fn start(
    args: &EdgeArgs,
    name: &str,
    overrides: &[(&str, String)],
) -> Result<Started, String> {
    let metrics = net::free_loopback_addr();
    let mut overrides = overrides.to_vec();
    overrides.push(("--metrics-listen", metrics.to_string()));
    // At WARN, so that what the edge logs (accept failures, say) reaches the report.
    let child = start_jumpgate_logging(
        name,
        &args.jumpgate,
        args.server_cpus.as_deref(),
        &server_flags(&overrides),
        "warn",
    )
    .await?;
    let target = Target {
        addr: child.addr,
        metrics: Some(metrics),
        pid: Some(child.pid()),
    };
    // The internal listener comes up just after the public one.
    let limit = Instant::now() + PATIENCE;
    while net::http_get(metrics, "/healthz").await.is_none() && Instant::now() < limit {
        sleep(Duration::from_millis(50)).await;
    }
    eprintln!("{name}: {} (pid {})", child.addr, child.pid());
    Ok(Started { child, target })
}

async fn stop(started: Started, log: &mut Vec<String>) {
    let transcript = started.child.transcript();
    if transcript.warnings + transcript.errors > 0 {
        log.push(format!(
            "{}: {} warnings, {} errors; first: {}",
            started.child.name(),
            transcript.warnings,
            transcript.errors,
            transcript.first_notable.join(" / ")
        ));
    }
    started.child.stop();
}

/// The whole `edge` command: every part asked for, each on a server of its own.
pub async fn edge(args: &EdgeArgs) -> Result<EdgeReport, String> {
    let config = EdgeConfig::from_args(args)?;
    let mut report = EdgeReport {
        config: config.clone(),
        cap: None,
        deadlines: None,
        flood: None,
        failures: Vec::new(),
        server_log: Vec::new(),
        figures: Vec::new(),
    };
    if config.parts.contains(&Part::Cap) {
        eprintln!(
            "part: {} greeted connections at --max-connections {}",
            config.max_connections, config.max_connections
        );
        // The held connections do not read, so they would not answer the server's
        // pings; the part ends long before this interval.
        let overrides = [
            ("--max-connections", config.max_connections.to_string()),
            ("--ping-interval-ms", "600000".to_owned()),
        ];
        match start(args, "jumpgate (cap)", &overrides).await {
            Ok(started) => {
                report.cap = Some(measure_cap(&started.target, &config).await);
                stop(started, &mut report.server_log).await;
            }
            Err(e) => report.failures.push(e),
        }
    }
    if config.parts.contains(&Part::Deadlines) {
        let overrides = [
            (
                "--header-read-timeout-ms",
                config.header_read_timeout_ms.to_string(),
            ),
            ("--hello-timeout-ms", config.hello_timeout_ms.to_string()),
        ];
        let header = Duration::from_millis(config.header_read_timeout_ms);
        let hello = Duration::from_millis(config.hello_timeout_ms);
        let n = config.deadline_connections;
        let per = config.per_address;
        let mut deadlines = DeadlinesSummary::default();
        let runs = [
            (Abuse::HalfOpen, false, header, "half-open"),
            (Abuse::Ungreeted, false, hello, "without hello"),
            (Abuse::HalfOpen, true, header, "half-open, one address"),
        ];
        for (abuse, lone, deadline, name) in runs {
            eprintln!("part: {n} connections {name}");
            let started = match start(args, &format!("jumpgate ({name})"), &overrides).await {
                Ok(started) => started,
                Err(e) => {
                    report.failures.push(e);
                    continue;
                }
            };
            let from = move |i: usize| {
                if lone { LONE } else { crowd_address(i / per) }
            };
            let summary = measure_deadline(&started.target, abuse, n, from, deadline).await;
            stop(started, &mut report.server_log).await;
            match (abuse, lone) {
                (_, true) => deadlines.one_address = Some(summary),
                (Abuse::HalfOpen, false) => deadlines.half_open = Some(summary),
                (Abuse::Ungreeted, false) => deadlines.ungreeted = Some(summary),
            }
        }
        report.deadlines = Some(deadlines);
    }
    if config.parts.contains(&Part::Flood) {
        eprintln!("part: an innocent game, quiet and under a flood");
        match start(args, "jumpgate (flood)", &[]).await {
            Ok(started) => {
                report.flood = Some(measure_flood(&started.target, &config).await);
                stop(started, &mut report.server_log).await;
            }
            Err(e) => report.failures.push(e),
        }
    }
    report.figures();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_replaced_not_repeated() {
        let flags = server_flags(&[
            ("--messages-per-second-per-address", "7".into()),
            ("--max-connections", "9".into()),
        ]);
        let joined = flags.join(" ");
        assert!(joined.contains("--messages-per-second-per-address 7"));
        assert!(!joined.contains("--messages-per-second-per-address 100"));
        assert!(joined.ends_with("--max-connections 9"));
        assert!(joined.contains("--max-connections-per-address 64"));
    }

    #[test]
    fn reads_metric_samples() {
        let text = "# HELP x y\njumpgate_connections_open 42\n\
                    jumpgate_edge_refusals_total{reason=\"websocket_cap\"} 3\n";
        assert_eq!(metric_value(text, "jumpgate_connections_open"), Some(42.0));
        assert_eq!(
            metric_value(
                text,
                "jumpgate_edge_refusals_total{reason=\"websocket_cap\"}"
            ),
            Some(3.0)
        );
        assert_eq!(metric_value(text, "jumpgate_connections"), None);
    }

    #[test]
    fn quantiles_of_sorted_values() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1, 2, 3], 0.5), Some(2));
        assert_eq!(quantile(&[1, 2, 3], 1.0), Some(3));
    }
}
