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

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use jumpgate_protocol::client::{Client, ClientError};
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::{
    ClientMessage, Color, DecodeError, Encoding, ErrorCode, FrameKind, Phase, RoomState, RuleSet,
    ServerMessage,
};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, sleep_until, timeout_at};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::bench::start_jumpgate_logging;
use crate::driver::{PATIENCE, new_histogram};
use crate::net;
use crate::procs::Spawned;

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
/// Between the starts of two half-open connections: 4,000 a second.
const HALF_OPEN_PACE: Duration = Duration::from_micros(250);
/// Connections being opened at once.
const OPEN_CONCURRENCY: usize = 64;
/// Half of a WebSocket upgrade request head: the blank line never comes.
const HALF_HEAD: &[u8] = b"GET /ws HTTP/1.1\r\nHost: jumpgate\r\nUpgrade: websocket\r\n";
/// The innocent players' address (the default source address).
const INNOCENT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
/// The flooder's (first) address; with `--flood-addresses N`, 127.0.0.2 … 127.0.0.N+1.
const FLOODER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// The one address of the one-address part.
const LONE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
/// Pings a flooder connection hands its socket before one flush.
const FLOOD_BATCH: u64 = 256;
/// The flooder's socket send buffer, bytes (the kernel doubles it). On a network the
/// flooder's send buffers are on its own host; on loopback they would be on this one,
/// and Linux's default (up to `tcp_wmem` max, 4 MiB, per connection) lets a few
/// hundred flooding connections exhaust the host's TCP memory (`tcp_mem`), which
/// stalls every TCP connection on it, the innocent game's too.
const FLOOD_SEND_BUFFER: u32 = 64 * 1024;
/// The longest the flood may take to fill the socket buffers before the measured
/// window starts anyway.
const FLOOD_WARM_UP_LIMIT: Duration = Duration::from_secs(15);

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

/// The kernel's memory in TCP buffers, all sockets of the host, KiB (`mem` of the
/// `TCP:` line of `/proc/net/sockstat`, in pages).
fn tcp_memory_kib() -> Option<u64> {
    let sockstat = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    parse_tcp_pages(&sockstat).map(|pages| pages * 4)
}

fn parse_tcp_pages(sockstat: &str) -> Option<u64> {
    let line = sockstat.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "mem")?;
    words.next()?.parse().ok()
}

/// How many connections the host's listen queues have dropped since boot
/// (`TcpExt: ListenOverflows` in `/proc/net/netstat`).
fn listen_overflows() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    parse_listen_overflows(&netstat)
}

fn parse_listen_overflows(netstat: &str) -> Option<u64> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let column = names
        .split_whitespace()
        .position(|name| name == "ListenOverflows")?;
    values.split_whitespace().nth(column)?.parse().ok()
}

/// The value of the sample `name` (with its labels, if any) in Prometheus text.
fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// The `i`-th address of the crowd: 127.0.1.1 … 127.0.1.250, 127.0.2.1, …
pub fn crowd_address(i: usize) -> Ipv4Addr {
    let i = u32::try_from(i).unwrap_or(u32::MAX).min(250 * 250 - 1);
    Ipv4Addr::new(127, 0, (1 + i / 250) as u8, (1 + i % 250) as u8)
}

/// A TCP connection to `server` from the loopback address `from`.
async fn tcp_from(from: Ipv4Addr, server: SocketAddr) -> Result<TcpStream, String> {
    tcp_from_with(from, server, None).await
}

/// [`tcp_from`], with the socket's send buffer set to `send_buffer` bytes when given.
async fn tcp_from_with(
    from: Ipv4Addr,
    server: SocketAddr,
    send_buffer: Option<u32>,
) -> Result<TcpStream, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    if let Some(bytes) = send_buffer {
        socket
            .set_send_buffer_size(bytes)
            .map_err(|e| format!("SO_SNDBUF: {e}"))?;
    }
    socket
        .bind(SocketAddr::new(IpAddr::V4(from), 0))
        .map_err(|e| format!("bind {from}: {e}"))?;
    socket
        .connect(server)
        .await
        .map_err(|e| format!("connect from {from}: {e}"))
}

/// A WebSocket from `from`, upgraded but not greeted. An upgrade answered 429 (the
/// address's HTTP rate) is tried again until `limit`.
async fn open_ws(from: Ipv4Addr, target: &Target, limit: Instant) -> Result<Client, String> {
    loop {
        let stream = timeout_at(limit, tcp_from(from, target.addr))
            .await
            .map_err(|_| format!("connecting from {from} timed out"))??;
        match timeout_at(
            limit,
            Client::connect_on(stream, &target.ws_url(), Encoding::MsgPack),
        )
        .await
        {
            Err(_) => return Err(format!("upgrade from {from} timed out")),
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(ClientError::Refused { status: 429 })) if Instant::now() < limit => {
                sleep(Duration::from_millis(250)).await;
            }
            Ok(Err(e)) => return Err(format!("upgrade from {from}: {e}")),
        }
    }
}

/// Sends a whole upgrade request from `from` and returns the answer's status and head.
async fn raw_upgrade(from: Ipv4Addr, server: SocketAddr) -> Result<(u16, String), String> {
    let exchange = async {
        let mut stream = tcp_from(from, server).await?;
        let request = format!(
            "GET /ws HTTP/1.1\r\nHost: {server}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Protocol: jumpgate.v1.msgpack\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
            let n = stream.read(&mut byte).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!(
                    "closed before answering ({} bytes of head)",
                    head.len()
                ));
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no status in {head:?}"))?;
        Ok((status, head))
    };
    tokio::time::timeout(PATIENCE, exchange)
        .await
        .map_err(|_| "no answer to the upgrade".to_owned())?
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

// ---------------------------------------------------------------------------
// 1. The cap

/// `/healthz` timed on one listener.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HealthProbe {
    /// Requests sent (one connection each).
    pub requests: usize,
    /// Answered `200`.
    pub ok: usize,
    /// Request to answer, microseconds.
    pub p50_us: Option<u64>,
    /// 99th percentile.
    pub p99_us: Option<u64>,
    /// Slowest.
    pub max_us: Option<u64>,
}

async fn probe_health(addr: SocketAddr, requests: usize) -> HealthProbe {
    let mut times = Vec::with_capacity(requests);
    let mut ok = 0;
    for _ in 0..requests {
        let started = Instant::now();
        let answer = net::http_get(addr, "/healthz").await;
        times.push(micros(started, Instant::now()));
        ok += usize::from(answer.is_some_and(|a| a.status == 200));
    }
    times.sort_unstable();
    HealthProbe {
        requests,
        ok,
        p50_us: quantile(&times, 0.5),
        p99_us: quantile(&times, 0.99),
        max_us: times.last().copied(),
    }
}

/// The cap part, measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CapSummary {
    /// The server's `--max-connections`.
    pub max_connections: usize,
    /// Source addresses the connections came from.
    pub addresses: usize,
    /// Connections opened and greeted.
    pub greeted: usize,
    /// Connections that failed.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Seconds it took to open and greet them all.
    pub open_seconds: f64,
    /// The server's `jumpgate_connections_open` at the cap.
    pub server_connections_open: Option<f64>,
    /// The status of one more upgrade, from another address.
    pub one_more_status: Option<u16>,
    /// Its `Retry-After`.
    pub one_more_retry_after: Option<String>,
    /// Why it could not be tried.
    pub one_more_error: Option<String>,
    /// `/healthz` on the public listener at the cap.
    pub healthz_public: HealthProbe,
    /// `/healthz` on the internal listener at the cap.
    pub healthz_internal: HealthProbe,
    /// The server's `VmRSS` before, KiB.
    pub rss_before_kib: Option<u64>,
    /// At the cap.
    pub rss_at_cap_kib: Option<u64>,
    /// (at the cap − before) / greeted.
    pub kib_per_connection: Option<f64>,
}

/// Opens `max_connections` greeted WebSockets, `per_address` from each crowd
/// address, then tries one more and times `/healthz` on both listeners.
pub async fn measure_cap(target: &Target, config: &EdgeConfig) -> CapSummary {
    let n = config.max_connections;
    let addresses = n.div_ceil(config.per_address);
    let mut summary = CapSummary {
        max_connections: n,
        addresses,
        rss_before_kib: target.rss(),
        ..CapSummary::default()
    };
    let started = Instant::now();
    let hard = started + Duration::from_secs(60) + Duration::from_millis(20) * n as u32;
    let permits = Arc::new(Semaphore::new(OPEN_CONCURRENCY));
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let (permits, target) = (permits.clone(), *target);
        let from = crowd_address(i / config.per_address);
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            let limit = (Instant::now() + PATIENCE).min(hard);
            let mut client = open_ws(from, &target, limit).await?;
            timeout_at(limit, client.greet(None, "jumpgate-loadtest edge"))
                .await
                .map_err(|_| format!("no welcome from {from} in time"))?
                .map_err(|e| format!("hello from {from}: {e}"))?;
            Ok::<Client, String>(client)
        });
    }
    let mut held = Vec::with_capacity(n);
    while let Some(joined) = tasks.join_next().await {
        match joined.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(client) => held.push(client),
            Err(e) => {
                summary.errors += 1;
                summary.first_error.get_or_insert(e);
            }
        }
    }
    summary.greeted = held.len();
    summary.open_seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "  cap: {} of {n} greeted in {:.1} s from {addresses} addresses, {} errors",
        held.len(),
        summary.open_seconds,
        summary.errors
    );
    sleep(Duration::from_millis(500)).await;
    summary.rss_at_cap_kib = target.rss();
    summary.kib_per_connection =
        per_connection_kib(summary.rss_before_kib, summary.rss_at_cap_kib, held.len());
    summary.server_connections_open = target.metric("jumpgate_connections_open").await;
    match raw_upgrade(crowd_address(addresses), target.addr).await {
        Ok((status, head)) => {
            summary.one_more_status = Some(status);
            summary.one_more_retry_after = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("retry-after")
                    .then(|| v.trim().to_owned())
            });
        }
        Err(e) => summary.one_more_error = Some(e),
    }
    summary.healthz_public = probe_health(target.addr, config.healthz_requests).await;
    if let Some(internal) = target.metrics {
        summary.healthz_internal = probe_health(internal, config.healthz_requests).await;
    }
    drop(held);
    summary
}

// ---------------------------------------------------------------------------
// 2. Deadlines

/// What became of one connection the server was expected to close.
#[derive(Debug, Clone)]
struct Ending {
    /// From the moment it was ready (head half sent, or upgraded) to its close.
    after: Option<Duration>,
    /// How it ended: "end of stream", "reset", "close 1008 no hello in time", …
    how: String,
}

/// Connections left to a deadline, measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeadlineSummary {
    /// What was opened.
    pub what: String,
    /// Connections asked for.
    pub connections: usize,
    /// Source addresses they came from.
    pub addresses: usize,
    /// Connections that were opened (and, for WebSockets, upgraded).
    pub opened: usize,
    /// Connections that could not be opened.
    pub errors: u64,
    /// The first such failure.
    pub first_error: Option<String>,
    /// Seconds from the first connection to the last one opened.
    pub open_seconds: f64,
    /// The server's deadline, milliseconds.
    pub deadline_ms: u64,
    /// The server's `VmRSS` before, KiB.
    pub rss_before_kib: Option<u64>,
    /// With all of them open, KiB.
    pub rss_after_kib: Option<u64>,
    /// (after − before) / opened.
    pub kib_per_connection: Option<f64>,
    /// Whether that reading came before the first connection's deadline.
    pub rss_read_before_deadline: bool,
    /// Connections the host's listen queues dropped meanwhile (`ListenOverflows` of
    /// `/proc/net/netstat`, all listeners of the host); their clients try again 1 s,
    /// 3 s, … later.
    pub listen_overflows: Option<u64>,
    /// Closed by the server before half the deadline: at accept.
    pub closed_early: usize,
    /// Closed by the server from half the deadline on.
    pub closed_at_deadline: usize,
    /// Still open when the wait ended (deadline + 10 s).
    pub still_open: usize,
    /// How they ended, counted.
    pub endings: BTreeMap<String, usize>,
    /// Close time of those closed at the deadline, from ready, ms: least.
    pub closed_after_min_ms: Option<u64>,
    /// Median.
    pub closed_after_p50_ms: Option<u64>,
    /// Most.
    pub closed_after_max_ms: Option<u64>,
}

/// Waits for `stream` to be closed by the server, until `limit`.
async fn await_close(mut stream: TcpStream, ready: Instant, limit: Instant) -> Ending {
    let mut buf = [0u8; 512];
    loop {
        match timeout_at(limit, stream.read(&mut buf)).await {
            Err(_) => {
                return Ending {
                    after: None,
                    how: "still open".into(),
                };
            }
            Ok(Ok(0)) => {
                return Ending {
                    after: Some(ready.elapsed()),
                    how: "end of stream".into(),
                };
            }
            Ok(Err(e)) => {
                let how = if e.kind() == std::io::ErrorKind::ConnectionReset {
                    "reset".into()
                } else {
                    format!("read error: {e}")
                };
                return Ending {
                    after: Some(ready.elapsed()),
                    how,
                };
            }
            // An answer: note it and wait on for the close.
            Ok(Ok(_)) => {}
        }
    }
}

/// Waits for the server to close an un-greeted WebSocket, until `limit`.
async fn await_ws_close(mut client: Client, ready: Instant, limit: Instant) -> Ending {
    loop {
        match timeout_at(limit, client.recv()).await {
            Err(_) => {
                return Ending {
                    after: None,
                    how: "still open".into(),
                };
            }
            Ok(Err(ClientError::Closed { code, reason })) => {
                return Ending {
                    after: Some(ready.elapsed()),
                    how: format!("close {code} {reason}").trim_end().to_owned(),
                };
            }
            Ok(Err(e)) => {
                return Ending {
                    after: Some(ready.elapsed()),
                    how: format!("error: {e}"),
                };
            }
            Ok(Ok(_)) => {}
        }
    }
}

/// How the deadline part opens its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abuse {
    /// TCP, half an upgrade request head, then silence.
    HalfOpen,
    /// A WebSocket upgrade, then silence (no `hello`).
    Ungreeted,
}

/// Opens `count` connections of kind `abuse`, the `i`-th from source address
/// `from(i)`, reads the server's memory once all are open, and waits for the
/// server to close each (up to `deadline` + 10 s).
pub async fn measure_deadline(
    target: &Target,
    abuse: Abuse,
    count: usize,
    from: impl Fn(usize) -> Ipv4Addr,
    deadline: Duration,
) -> DeadlineSummary {
    let what = match abuse {
        Abuse::HalfOpen => "half-open (half an upgrade head)",
        Abuse::Ungreeted => "WebSocket without hello",
    };
    let addresses: std::collections::HashSet<Ipv4Addr> = (0..count).map(&from).collect();
    let mut summary = DeadlineSummary {
        what: what.into(),
        connections: count,
        addresses: addresses.len(),
        deadline_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        rss_before_kib: target.rss(),
        ..DeadlineSummary::default()
    };
    let started = Instant::now();
    let open_limit = started + PATIENCE + Duration::from_millis(10) * count as u32;
    let wait_limit = open_limit + deadline + Duration::from_secs(10);
    let permits = Arc::new(Semaphore::new(OPEN_CONCURRENCY));
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<Result<Instant, String>>();
    let mut tasks = JoinSet::new();
    let overflows_before = listen_overflows();
    for i in 0..count {
        let (permits, target, ready_tx) = (permits.clone(), *target, ready_tx.clone());
        let ip = from(i);
        // A half-open connection is ready as soon as the kernel has it, before the
        // server accepts it; unpaced, thousands arrive faster than the server takes
        // them from its listen queue, and the queue overflows.
        let not_before = match abuse {
            Abuse::HalfOpen => started + HALF_OPEN_PACE * u32::try_from(i).unwrap_or(u32::MAX),
            Abuse::Ungreeted => started,
        };
        tasks.spawn(async move {
            sleep_until(not_before).await;
            let permit = permits.acquire_owned().await.ok()?;
            let ready_limit = (Instant::now() + PATIENCE).min(open_limit);
            match abuse {
                Abuse::HalfOpen => {
                    let opened = timeout_at(ready_limit, tcp_from(ip, target.addr))
                        .await
                        .unwrap_or_else(|_| Err("connecting timed out".into()));
                    drop(permit);
                    let mut stream = match opened {
                        Ok(stream) => stream,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return None;
                        }
                    };
                    let ready = Instant::now();
                    let _ = ready_tx.send(Ok(ready));
                    drop(ready_tx);
                    // Closed at accept: the write may already fail.
                    if let Err(e) = stream.write_all(HALF_HEAD).await {
                        return Some(Ending {
                            after: Some(ready.elapsed()),
                            how: format!("write failed: {}", e.kind()),
                        });
                    }
                    Some(await_close(stream, ready, wait_limit).await)
                }
                Abuse::Ungreeted => {
                    let opened = open_ws(ip, &target, ready_limit).await;
                    drop(permit);
                    let client = match opened {
                        Ok(client) => client,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return None;
                        }
                    };
                    let ready = Instant::now();
                    let _ = ready_tx.send(Ok(ready));
                    drop(ready_tx);
                    Some(await_ws_close(client, ready, wait_limit).await)
                }
            }
        });
    }
    drop(ready_tx);
    let mut first_ready: Option<Instant> = None;
    let mut last_ready = started;
    while let Ok(Some(ready)) = timeout_at(open_limit, ready_rx.recv()).await {
        match ready {
            Ok(at) => {
                summary.opened += 1;
                first_ready = Some(first_ready.map_or(at, |f| f.min(at)));
                last_ready = last_ready.max(at);
            }
            Err(e) => {
                summary.errors += 1;
                summary.first_error.get_or_insert(e);
            }
        }
    }
    summary.open_seconds = last_ready
        .saturating_duration_since(first_ready.unwrap_or(started))
        .as_secs_f64();
    // Let the server take in the last ones.
    sleep(Duration::from_millis(200)).await;
    summary.listen_overflows = listen_overflows()
        .zip(overflows_before)
        .map(|(after, before)| after.saturating_sub(before));
    summary.rss_after_kib = target.rss();
    summary.rss_read_before_deadline = first_ready.is_some_and(|f| f + deadline > Instant::now());
    summary.kib_per_connection = per_connection_kib(
        summary.rss_before_kib,
        summary.rss_after_kib,
        summary.opened,
    );
    eprintln!(
        "  {what}: {} of {count} open in {:.1} s from {} addresses; waiting for the deadline",
        summary.opened, summary.open_seconds, summary.addresses
    );
    let mut late = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let Ok(Some(ending)) = joined else { continue };
        *summary.endings.entry(ending.how.clone()).or_default() += 1;
        match ending.after {
            None => summary.still_open += 1,
            Some(after) if after < deadline / 2 => summary.closed_early += 1,
            Some(after) => {
                summary.closed_at_deadline += 1;
                late.push(u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
            }
        }
    }
    late.sort_unstable();
    summary.closed_after_min_ms = late.first().copied();
    summary.closed_after_p50_ms = quantile(&late, 0.5);
    summary.closed_after_max_ms = late.last().copied();
    summary
}

// ---------------------------------------------------------------------------
// 3. The flood

/// A greeted player in the innocent game, with the newest state of its lobby.
#[derive(Debug)]
struct Seat {
    client: Client,
    id: String,
    code: Option<String>,
    state: Option<RoomState>,
}

impl Seat {
    async fn connect(target: &Target, limit: Instant) -> Result<Seat, String> {
        let stream = timeout_at(limit, tcp_from(INNOCENT, target.addr))
            .await
            .map_err(|_| "connecting timed out".to_owned())??;
        let url = target.ws_url();
        let connecting = Client::connect_on(stream, &url, Encoding::MsgPack);
        let mut client = timeout_at(limit, connecting)
            .await
            .map_err(|_| "connecting timed out".to_owned())?
            .map_err(|e| format!("connecting: {e}"))?;
        let greeting = timeout_at(limit, client.greet(None, "jumpgate-loadtest edge"))
            .await
            .map_err(|_| "no welcome in time".to_owned())?
            .map_err(|e| format!("hello: {e}"))?;
        Ok(Seat {
            client,
            id: greeting.identity.id,
            code: None,
            state: None,
        })
    }

    fn absorb(&mut self, message: ServerMessage) -> Result<(), String> {
        match message {
            ServerMessage::State(state) => {
                if self.code.as_deref().is_none_or(|code| code == state.code) {
                    self.state = Some(state);
                }
                Ok(())
            }
            ServerMessage::Error {
                seq: None,
                code,
                message,
            } => Err(format!("server error: {code} {message}")),
            ServerMessage::Shutdown { .. } => Err("the server is shutting down".into()),
            _ => Ok(()),
        }
    }

    /// Sends a request and waits for its `ack`; returns when it came.
    async fn request(
        &mut self,
        build: impl FnOnce(u32) -> ClientMessage,
        limit: Instant,
    ) -> Result<Instant, String> {
        let seq = self.client.next_seq();
        let message = build(seq);
        let kind = message.kind();
        self.client
            .send(&message)
            .await
            .map_err(|e| e.to_string())?;
        let mut others = Vec::new();
        let answer = timeout_at(limit, self.client.answer(seq, |m| others.push(m))).await;
        let at = Instant::now();
        for message in others {
            self.absorb(message)?;
        }
        match answer {
            Err(_) => Err(format!("no answer to {kind} within {PATIENCE:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(Ok(()))) => Ok(at),
            Ok(Ok(Err(refusal))) => Err(format!("{kind} refused: {refusal}")),
        }
    }

    /// Reads until the stored state satisfies `pred`.
    async fn state_until(
        &mut self,
        pred: impl Fn(&RoomState) -> bool,
        limit: Instant,
    ) -> Result<(), String> {
        loop {
            if self.state.as_ref().is_some_and(&pred) {
                return Ok(());
            }
            match timeout_at(limit, self.client.recv()).await {
                Err(_) => return Err(format!("no state in time ({PATIENCE:?})")),
                Ok(Ok(message)) => self.absorb(message)?,
                Ok(Err(ClientError::Decode(DecodeError::UnknownType { .. }))) => {}
                Ok(Err(e)) => return Err(e.to_string()),
            }
        }
    }
}

/// Whether `host_id` is to play, and what, in `state`; `None` when no game is on.
fn next_move(state: &RoomState, host_id: &str) -> Option<(bool, String)> {
    let game = state.game.as_ref()?;
    if state.phase != Phase::Playing || game.result.is_some() {
        return None;
    }
    let seat = if game.turn == Color::Dark {
        usize::from(game.dark_seat)
    } else {
        1 - usize::from(game.dark_seat).min(1)
    };
    let host = state
        .players
        .get(seat)
        .and_then(Option::as_ref)
        .is_some_and(|p| p.id == host_id);
    let notation = game.legal_moves.first()?.notation.clone();
    Some((host, notation))
}

/// Two players in one American lobby (series of 1), from 127.0.0.1.
#[derive(Debug)]
struct Duel {
    host: Seat,
    guest: Seat,
}

fn playing(state: &RoomState) -> bool {
    state.phase == Phase::Playing && state.game.as_ref().is_some_and(|g| g.result.is_none())
}

impl Duel {
    async fn open(target: &Target) -> Result<Duel, String> {
        let limit = Instant::now() + PATIENCE;
        let mut host = Seat::connect(target, limit).await?;
        let mut guest = Seat::connect(target, limit).await?;
        host.request(
            |seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::American,
                series_length: 1,
                invite_only: false,
                stake: None,
            },
            limit,
        )
        .await?;
        host.state_until(|_| true, limit).await?;
        let code = host.state.as_ref().map(|s| s.code.clone());
        host.code.clone_from(&code);
        guest.code.clone_from(&code);
        let join = code.unwrap_or_default();
        guest
            .request(
                |seq| ClientMessage::JoinLobby {
                    seq,
                    code: join,
                    invite: None,
                },
                limit,
            )
            .await?;
        guest.state_until(playing, limit).await?;
        host.state_until(playing, limit).await?;
        Ok(Duel { host, guest })
    }

    /// Both call a rematch (no new room: the per-identity room rate stays out of it)
    /// and wait for the new game.
    async fn rematch(&mut self) -> Result<(), String> {
        let limit = Instant::now() + PATIENCE;
        let version = self.host.state.as_ref().map_or(0, |s| s.version);
        for seat in [&mut self.host, &mut self.guest] {
            seat.request(|seq| ClientMessage::Rematch { seq }, limit)
                .await?;
        }
        let fresh = |s: &RoomState| playing(s) && s.version > version;
        self.host.state_until(fresh, limit).await?;
        self.guest.state_until(fresh, limit).await
    }

    /// Plays `moves` moves, one every `gap` (open loop: each round trip counts from
    /// its intended send time), both players seeing each move before the next.
    async fn play(&mut self, moves: usize, gap: Duration) -> Result<Played, String> {
        let mut played = Played {
            latency_us: new_histogram(),
            rematches: 0,
            seconds: 0.0,
        };
        let started = Instant::now();
        let hard = started + gap * (moves as u32) * 4 + Duration::from_secs(60);
        let mut next = Instant::now() + gap;
        let mut done = 0;
        while done < moves {
            if Instant::now() > hard {
                return Err(format!("hard stop after {done} moves"));
            }
            let state = self.host.state.as_ref().ok_or("no state")?;
            let Some((host_moves, notation)) = next_move(state, &self.host.id) else {
                self.rematch().await?;
                played.rematches += 1;
                // Setting up the next game is not a move.
                next = next.max(Instant::now() + gap);
                continue;
            };
            let version = state.version;
            sleep_until(next).await;
            let intended = next;
            next += gap;
            let (mover, other) = if host_moves {
                (&mut self.host, &mut self.guest)
            } else {
                (&mut self.guest, &mut self.host)
            };
            let limit = Instant::now() + PATIENCE;
            let acked = mover
                .request(
                    |seq| ClientMessage::Move {
                        seq,
                        notation: Some(notation),
                        path: None,
                    },
                    limit,
                )
                .await?;
            played.latency_us.saturating_record(micros(intended, acked));
            done += 1;
            mover.state_until(|s| s.version > version, limit).await?;
            let seen = mover.state.as_ref().map_or(version, |s| s.version);
            other.state_until(|s| s.version >= seen, limit).await?;
        }
        played.seconds = started.elapsed().as_secs_f64();
        Ok(played)
    }
}

/// What one phase of play brought back.
#[derive(Debug)]
struct Played {
    latency_us: Histogram<u64>,
    rematches: u64,
    seconds: f64,
}

/// One phase of the innocent game.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlaySummary {
    /// "quiet" or "under flood".
    pub label: String,
    /// Moves acknowledged.
    pub moves: u64,
    /// Seconds the phase took.
    pub seconds: f64,
    /// New games started by rematch.
    pub rematches: u64,
    /// `move` → `ack` from the intended send time, microseconds.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
    /// The server's CPU time during the phase, ms.
    pub server_cpu_ms: Option<u64>,
    /// That as a share of one core.
    pub server_cpu_share: Option<f64>,
    /// The load tester's own CPU time during the phase, ms.
    pub client_cpu_ms: Option<u64>,
    /// Flood messages the server answered during the phase (`ack` or `error`).
    pub flood_answered: u64,
    /// Of those, `rate_limited` refusals (the connection's own 40 a second).
    pub flood_refused: u64,
    /// `jumpgate_messages_throttled_total` went up by this much.
    pub throttled: Option<f64>,
}

impl PlaySummary {
    /// Flood messages answered per second.
    pub fn flood_answered_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.flood_answered as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// What the flooder's connections counted.
#[derive(Debug, Default)]
struct FloodCounters {
    /// Pings handed to the sockets.
    sent: AtomicU64,
    /// `ack`s received.
    acks: AtomicU64,
    /// `error`s received.
    refused: AtomicU64,
    /// How connections ended, when they did.
    endings: Mutex<BTreeMap<String, usize>>,
}

impl FloodCounters {
    fn ended(&self, how: String) {
        *self
            .endings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(how)
            .or_default() += 1;
    }

    fn answered(&self) -> (u64, u64) {
        let refused = self.refused.load(Ordering::Relaxed);
        (self.acks.load(Ordering::Relaxed) + refused, refused)
    }
}

type WsStream = tokio_tungstenite::WebSocketStream<TcpStream>;

fn binary(message: &ClientMessage) -> Message {
    match codec::encode_client(Encoding::MsgPack, message) {
        Frame::Binary(bytes) => Message::binary(bytes),
        Frame::Text(text) => Message::text(text),
    }
}

/// A greeted MessagePack WebSocket from `from`, as a bare stream (its two halves go to
/// two tasks). Upgrades answered 429 are tried again until `limit`.
async fn open_flooder(from: Ipv4Addr, target: &Target, limit: Instant) -> Result<WsStream, String> {
    let mut ws = loop {
        let connecting = tcp_from_with(from, target.addr, Some(FLOOD_SEND_BUFFER));
        let stream = timeout_at(limit, connecting)
            .await
            .map_err(|_| "connecting timed out".to_owned())??;
        let mut request = target
            .ws_url()
            .into_client_request()
            .map_err(|e| e.to_string())?;
        request.headers_mut().insert(
            SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(Encoding::MsgPack.subprotocol()),
        );
        let config = tungstenite::protocol::WebSocketConfig::default().read_buffer_size(8 * 1024);
        match timeout_at(
            limit,
            tokio_tungstenite::client_async_with_config(request, stream, Some(config)),
        )
        .await
        {
            Err(_) => return Err("upgrade timed out".into()),
            Ok(Ok((ws, _))) => break ws,
            Ok(Err(tungstenite::Error::Http(response)))
                if response.status().as_u16() == 429 && Instant::now() < limit =>
            {
                sleep(Duration::from_millis(250)).await;
            }
            Ok(Err(e)) => return Err(format!("upgrade: {e}")),
        }
    };
    let hello = ClientMessage::Hello {
        seq: 1,
        protocol: jumpgate_protocol::PROTOCOL_VERSION,
        token: None,
        client: "jumpgate-loadtest edge flooder".into(),
        name: None,
    };
    ws.send(binary(&hello)).await.map_err(|e| e.to_string())?;
    loop {
        let frame = timeout_at(limit, ws.next())
            .await
            .map_err(|_| "no welcome in time".to_owned())?
            .ok_or("closed before welcome")?
            .map_err(|e| e.to_string())?;
        if let Message::Binary(bytes) = frame
            && let Ok(ServerMessage::Welcome { .. }) =
                codec::decode_server_frame(Encoding::MsgPack, FrameKind::Binary, &bytes)
        {
            return Ok(ws);
        }
    }
}

/// Sends pings as fast as the socket takes them until `stop`, and counts what comes
/// back, in two tasks.
fn flood(
    ws: WsStream,
    counters: Arc<FloodCounters>,
    stop: watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) {
    let (mut sink, mut stream) = ws.split();
    let (mut stop_send, mut stop_recv) = (stop.clone(), stop);
    let sending = counters.clone();
    tasks.spawn(async move {
        let mut seq = 1u32;
        loop {
            let batch = async {
                for _ in 0..FLOOD_BATCH {
                    seq = seq.wrapping_add(1);
                    sink.feed(binary(&ClientMessage::Ping { seq })).await?;
                }
                sink.flush().await
            };
            tokio::select! {
                _ = stop_send.wait_for(|s| *s) => return,
                sent = batch => match sent {
                    Ok(()) => {
                        sending.sent.fetch_add(FLOOD_BATCH, Ordering::Relaxed);
                    }
                    Err(e) => {
                        sending.ended(format!("send failed: {e}"));
                        return;
                    }
                },
            }
        }
    });
    tasks.spawn(async move {
        loop {
            let frame = tokio::select! {
                _ = stop_recv.wait_for(|s| *s) => return,
                frame = stream.next() => frame,
            };
            match frame {
                None => {
                    counters.ended("end of stream".into());
                    return;
                }
                Some(Err(e)) => {
                    counters.ended(format!("read failed: {e}"));
                    return;
                }
                Some(Ok(Message::Close(frame))) => {
                    counters.ended(frame.map_or("close (no code)".into(), |f| {
                        format!("close {} {}", u16::from(f.code), f.reason.as_str())
                    }));
                    return;
                }
                Some(Ok(Message::Binary(bytes))) => {
                    match codec::decode_server_frame(Encoding::MsgPack, FrameKind::Binary, &bytes) {
                        Ok(ServerMessage::Ack { .. }) => {
                            counters.acks.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(ServerMessage::Error { code, .. }) => {
                            counters.refused.fetch_add(1, Ordering::Relaxed);
                            if code != ErrorCode::RateLimited {
                                counters.ended(format!("refused: {code}"));
                            }
                        }
                        _ => {}
                    }
                }
                Some(Ok(_)) => {}
            }
        }
    });
}

/// The flood part, measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FloodSummary {
    /// The innocent game alone.
    pub quiet: Option<PlaySummary>,
    /// The innocent game while the flood runs.
    pub flooded: Option<PlaySummary>,
    /// The innocent game again once the flooder has closed its connections.
    pub quiet_after: Option<PlaySummary>,
    /// Flooder connections asked for, over all its addresses.
    pub flood_connections: usize,
    /// Addresses it floods from.
    pub flood_addresses: usize,
    /// Flooder connections opened and greeted.
    pub flood_greeted: usize,
    /// The first flooder that could not be opened.
    pub flood_open_error: Option<String>,
    /// Seconds from starting the flood until the sockets stopped taking pings (or the
    /// limit), before the measured phase.
    pub warm_up_s: f64,
    /// Pings the flooder's sockets had taken when the measured phase began.
    pub sent_before_phase: u64,
    /// Pings they had taken when it ended.
    pub sent_after_phase: u64,
    /// The host's kernel memory in TCP buffers before the game, KiB (4 KiB pages).
    pub tcp_memory_before_kib: Option<u64>,
    /// The same once the flood had filled the buffers.
    pub tcp_memory_during_kib: Option<u64>,
    /// How flooder connections ended during the run, counted.
    pub flood_endings: BTreeMap<String, usize>,
    /// Under flood p99 / quiet p99.
    pub p99_ratio: Option<f64>,
    /// Failures that stopped a phase.
    pub failures: Vec<String>,
}

async fn play_phase(
    label: &str,
    duel: &mut Duel,
    target: &Target,
    config: &EdgeConfig,
    flood: Option<&FloodCounters>,
) -> Result<PlaySummary, String> {
    eprintln!(
        "  innocent game, {label}: {} moves, one every {} ms",
        config.moves, config.move_gap_ms
    );
    let me = std::process::id();
    let (server_cpu, client_cpu) = (target.cpu(), net::cpu_time(me));
    let throttled = target.metric("jumpgate_messages_throttled_total").await;
    let answered = flood.map_or((0, 0), FloodCounters::answered);
    let played = duel
        .play(config.moves, Duration::from_millis(config.move_gap_ms))
        .await?;
    let answered_after = flood.map_or((0, 0), FloodCounters::answered);
    let throttled_after = target.metric("jumpgate_messages_throttled_total").await;
    let ms = |before: Option<Duration>, after: Option<Duration>| {
        Some(u64::try_from(after?.saturating_sub(before?).as_millis()).unwrap_or(u64::MAX))
    };
    let server_cpu_ms = ms(server_cpu, target.cpu());
    let h = &played.latency_us;
    Ok(PlaySummary {
        label: label.into(),
        moves: h.len(),
        seconds: played.seconds,
        rematches: played.rematches,
        p50_us: h.value_at_quantile(0.5),
        p90_us: h.value_at_quantile(0.9),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
        server_cpu_ms,
        server_cpu_share: server_cpu_ms.map(|ms| ms as f64 / 1000.0 / played.seconds),
        client_cpu_ms: ms(client_cpu, net::cpu_time(me)),
        flood_answered: answered_after.0 - answered.0,
        flood_refused: answered_after.1 - answered.1,
        throttled: throttled_after.zip(throttled).map(|(a, b)| a - b),
    })
}

/// The innocent game quiet, then under a flood from [`FLOODER`], then quiet again.
pub async fn measure_flood(target: &Target, config: &EdgeConfig) -> FloodSummary {
    let mut summary = FloodSummary {
        flood_connections: config.flood_connections * config.flood_addresses,
        flood_addresses: config.flood_addresses,
        ..FloodSummary::default()
    };
    summary.tcp_memory_before_kib = tcp_memory_kib();
    let mut duel = match Duel::open(target).await {
        Ok(duel) => duel,
        Err(e) => {
            summary.failures.push(format!("opening the game: {e}"));
            return summary;
        }
    };
    match play_phase("quiet", &mut duel, target, config, None).await {
        Ok(quiet) => summary.quiet = Some(quiet),
        Err(e) => summary.failures.push(format!("quiet: {e}")),
    }

    eprintln!(
        "  flood: {} connections from each of {} addresses from {FLOODER}",
        config.flood_connections, config.flood_addresses
    );
    let counters = Arc::new(FloodCounters::default());
    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();
    // Past its burst of 40, an address gets 20 upgrades a second.
    let limit = Instant::now() + PATIENCE + Duration::from_secs(3) * config.flood_addresses as u32;
    // Every connection is greeted before any floods: once the flood runs, the
    // address's rate holds back new connections' `hello` too.
    let mut flooders = Vec::new();
    let addresses = (0..config.flood_addresses).map(|i| {
        let [a, b, c, d] = FLOODER.octets();
        Ipv4Addr::new(a, b, c, d + u8::try_from(i).unwrap_or(0))
    });
    let connections = addresses.flat_map(|ip| std::iter::repeat_n(ip, config.flood_connections));
    for ip in connections {
        match open_flooder(ip, target, limit).await {
            Ok(ws) => flooders.push(ws),
            Err(e) => {
                summary.flood_open_error.get_or_insert(e);
            }
        }
    }
    summary.flood_greeted = flooders.len();
    for ws in flooders {
        flood(ws, counters.clone(), stopped.clone(), &mut tasks);
    }
    // The flood is steady once the sockets stop taking pings: the server reads only
    // what the address's rate allows, and the rest waits in the buffers.
    let warm = Instant::now();
    let mut last = counters.sent.load(Ordering::Relaxed);
    loop {
        sleep(Duration::from_millis(250)).await;
        let now = counters.sent.load(Ordering::Relaxed);
        let steady = now.saturating_sub(last) <= FLOOD_BATCH * 4 && now > 0;
        last = now;
        if steady || warm.elapsed() >= FLOOD_WARM_UP_LIMIT {
            break;
        }
    }
    summary.warm_up_s = warm.elapsed().as_secs_f64();
    summary.sent_before_phase = counters.sent.load(Ordering::Relaxed);
    summary.tcp_memory_during_kib = tcp_memory_kib();
    eprintln!(
        "  flood: {} greeted, {} pings taken by the sockets in {:.1} s of warm-up",
        summary.flood_greeted, summary.sent_before_phase, summary.warm_up_s
    );
    match play_phase("under flood", &mut duel, target, config, Some(&counters)).await {
        Ok(flooded) => summary.flooded = Some(flooded),
        Err(e) => summary.failures.push(format!("under flood: {e}")),
    }
    summary.sent_after_phase = counters.sent.load(Ordering::Relaxed);
    let _ = stop.send(true);
    let _ = tokio::time::timeout(PATIENCE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    drop(tasks);
    // The flooder's connections are closed now; the same game once more, quiet, tells
    // the flood's cost apart from the machine's load changing meanwhile.
    sleep(Duration::from_secs(1)).await;
    match play_phase("quiet after", &mut duel, target, config, None).await {
        Ok(quiet) => summary.quiet_after = Some(quiet),
        Err(e) => summary.failures.push(format!("quiet after: {e}")),
    }
    summary.flood_endings = counters
        .endings
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    summary.p99_ratio = match (&summary.quiet, &summary.flooded) {
        (Some(q), Some(f)) if q.p99_us > 0 => Some(f.p99_us as f64 / q.p99_us as f64),
        _ => None,
    };
    summary
}

// ---------------------------------------------------------------------------
// The report

/// The deadline part: both kinds over many addresses, and one address's share.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeadlinesSummary {
    /// Half-open connections over many addresses.
    pub half_open: Option<DeadlineSummary>,
    /// Un-greeted WebSockets over many addresses.
    pub ungreeted: Option<DeadlineSummary>,
    /// Half-open connections from one address.
    pub one_address: Option<DeadlineSummary>,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeFigure {
    /// What is measured.
    pub figure: String,
    /// The measurement, in words and numbers.
    pub value: String,
    /// The goal.
    pub goal: String,
    /// Whether it is met; absent when there is no goal or nothing was measured.
    pub met: Option<bool>,
}

/// The whole `edge` run.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeReport {
    /// The settings.
    pub config: EdgeConfig,
    /// The cap part.
    pub cap: Option<CapSummary>,
    /// The deadline part.
    pub deadlines: Option<DeadlinesSummary>,
    /// The flood part.
    pub flood: Option<FloodSummary>,
    /// Servers that could not start, and the like.
    pub failures: Vec<String>,
    /// Warnings and errors the servers logged (count, and the first lines).
    pub server_log: Vec<String>,
    /// The table rows.
    pub figures: Vec<EdgeFigure>,
}

fn us(v: Option<u64>) -> String {
    v.map_or("?".into(), |v| {
        if v >= 10_000 {
            format!("{:.1} ms", v as f64 / 1000.0)
        } else {
            format!("{v} µs")
        }
    })
}

fn kib(v: Option<f64>) -> String {
    v.map_or("?".into(), |v| format!("{v:.1} KiB"))
}

impl EdgeReport {
    fn figures(&mut self) {
        let mut rows = Vec::new();
        let mut row = |figure: String, value: String, goal: &str, met: Option<bool>| {
            rows.push(EdgeFigure {
                figure,
                value,
                goal: goal.into(),
                met,
            });
        };
        if let Some(c) = &self.cap {
            row(
                format!(
                    "greeted WebSockets held at `--max-connections {}`",
                    c.max_connections
                ),
                format!(
                    "{} (server gauge {}), {} addresses, {} errors",
                    c.greeted,
                    c.server_connections_open
                        .map_or("?".into(), |v| format!("{v:.0}")),
                    c.addresses,
                    c.errors
                ),
                "all",
                Some(c.greeted == c.max_connections),
            );
            row(
                "one more upgrade at the cap".into(),
                match (c.one_more_status, &c.one_more_error) {
                    (Some(s), _) => format!(
                        "HTTP {s}, Retry-After {}",
                        c.one_more_retry_after.as_deref().unwrap_or("none")
                    ),
                    (None, Some(e)) => format!("failed: {e}"),
                    (None, None) => "?".into(),
                },
                "HTTP 503",
                c.one_more_status.map(|s| s == 503),
            );
            for (name, probe) in [
                ("public", &c.healthz_public),
                ("internal", &c.healthz_internal),
            ] {
                row(
                    format!("`/healthz` at the cap, {name} listener: p50 / max"),
                    format!(
                        "{} / {} ({} of {} answered 200)",
                        us(probe.p50_us),
                        us(probe.max_us),
                        probe.ok,
                        probe.requests
                    ),
                    "every request 200",
                    (probe.requests > 0).then_some(probe.ok == probe.requests),
                );
            }
            row(
                "server RSS at the cap (per greeted connection)".into(),
                format!(
                    "{} MiB ({})",
                    c.rss_at_cap_kib
                        .map_or("?".into(), |v| format!("{:.1}", v as f64 / 1024.0)),
                    kib(c.kib_per_connection)
                ),
                "≤ 16 KiB per connection",
                c.kib_per_connection.map(|k| k <= 16.0),
            );
        }
        if let Some(d) = &self.deadlines {
            for (name, part) in [
                ("half-open connection", &d.half_open),
                ("WebSocket without `hello`", &d.ungreeted),
            ] {
                let Some(s) = part else { continue };
                row(
                    format!("memory per {name}"),
                    format!("{} ({} open)", kib(s.kib_per_connection), s.opened),
                    "",
                    None,
                );
                let ms = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
                row(
                    format!("{name}s closed at the {} ms deadline", s.deadline_ms),
                    format!(
                        "{} of {} (after {}–{} ms, p50 {}); early {}, still open {}",
                        s.closed_at_deadline,
                        s.opened,
                        ms(s.closed_after_min_ms),
                        ms(s.closed_after_max_ms),
                        ms(s.closed_after_p50_ms),
                        s.closed_early,
                        s.still_open
                    ),
                    "all",
                    (s.opened > 0).then_some(s.closed_at_deadline == s.opened),
                );
            }
            if let Some(s) = &d.one_address {
                row(
                    format!("{} half-open connections from one address", s.connections),
                    format!(
                        "{} kept until the deadline, {} closed at accept, {} still open",
                        s.closed_at_deadline, s.closed_early, s.still_open
                    ),
                    "64 kept, the rest closed at accept",
                    Some(
                        s.closed_at_deadline == DEFAULT_PER_ADDRESS_CAP.min(s.opened)
                            && s.closed_early + s.closed_at_deadline == s.opened,
                    ),
                );
            }
        }
        if let Some(f) = &self.flood {
            if let (Some(q), Some(u)) = (&f.quiet, &f.flooded) {
                row(
                    "innocent move round trip p50: quiet / under flood".into(),
                    format!("{} / {}", us(Some(q.p50_us)), us(Some(u.p50_us))),
                    "",
                    None,
                );
                row(
                    "innocent move round trip p99: quiet / under flood".into(),
                    format!(
                        "{} / {} ({})",
                        us(Some(q.p99_us)),
                        us(Some(u.p99_us)),
                        f.p99_ratio.map_or("?".into(), |r| format!("{r:.2}×"))
                    ),
                    "≤ 1.5× quiet",
                    f.p99_ratio.map(|r| r <= 1.5),
                );
                row(
                    "innocent move round trip max: quiet / under flood".into(),
                    format!("{} / {}", us(Some(q.max_us)), us(Some(u.max_us))),
                    "",
                    None,
                );
                if let Some(a) = &f.quiet_after {
                    row(
                        "innocent move round trip p50 / p99, quiet again after the flood".into(),
                        format!("{} / {}", us(Some(a.p50_us)), us(Some(a.p99_us))),
                        "",
                        None,
                    );
                }
                row(
                    format!(
                        "flood messages answered ({} connections from {} address{})",
                        f.flood_greeted,
                        f.flood_addresses,
                        if f.flood_addresses == 1 { "" } else { "es" }
                    ),
                    format!(
                        "{:.0}/s ({} rate_limited)",
                        u.flood_answered_per_second(),
                        u.flood_refused
                    ),
                    "≈ 100/s per address (the address's rate)",
                    None,
                );
                let cpu = |p: &PlaySummary| {
                    p.server_cpu_share
                        .map_or("?".into(), |s| format!("{:.1}%", s * 100.0))
                };
                row(
                    "server CPU: quiet / under flood (share of one core)".into(),
                    format!("{} / {}", cpu(q), cpu(u)),
                    "",
                    None,
                );
            }
            for failure in &f.failures {
                row("flood part failed".into(), failure.clone(), "", Some(false));
            }
        }
        self.figures = rows;
    }

    /// The table, as Markdown.
    pub fn table(&self) -> String {
        let mut out = String::from("| figure | measured | goal | met? |\n|---|---|---|---|\n");
        for f in &self.figures {
            let met = match f.met {
                Some(true) => "yes",
                Some(false) => "no",
                None => "—",
            };
            let goal = if f.goal.is_empty() { "—" } else { &f.goal };
            out.push_str(&format!(
                "| {} | {} | {goal} | {met} |\n",
                f.figure, f.value
            ));
        }
        out
    }

    /// Details under the table.
    pub fn details(&self) -> String {
        let mut out = String::new();
        let opt = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
        if let Some(c) = &self.cap {
            out.push_str(&format!(
                "cap: {} greeted in {:.1} s from {} addresses; VmRSS {} → {} KiB; errors {}{}; \
                 healthz µs public p50 {} p99 {} max {}, internal p50 {} p99 {} max {}\n",
                c.greeted,
                c.open_seconds,
                c.addresses,
                opt(c.rss_before_kib),
                opt(c.rss_at_cap_kib),
                c.errors,
                c.first_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(" (first: {e})")),
                opt(c.healthz_public.p50_us),
                opt(c.healthz_public.p99_us),
                opt(c.healthz_public.max_us),
                opt(c.healthz_internal.p50_us),
                opt(c.healthz_internal.p99_us),
                opt(c.healthz_internal.max_us),
            ));
        }
        if let Some(d) = &self.deadlines {
            for s in [&d.half_open, &d.ungreeted, &d.one_address]
                .into_iter()
                .flatten()
            {
                out.push_str(&format!(
                    "{}: {} of {} opened in {:.1} s from {} addresses (errors {}{}; listen queue \
                     overflows {}); VmRSS {} → {} KiB{}; endings {:?}\n",
                    s.what,
                    s.opened,
                    s.connections,
                    s.open_seconds,
                    s.addresses,
                    s.errors,
                    s.first_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(", first: {e}")),
                    opt(s.listen_overflows),
                    opt(s.rss_before_kib),
                    opt(s.rss_after_kib),
                    if s.rss_read_before_deadline {
                        ""
                    } else {
                        " (read after the first deadline: some had closed)"
                    },
                    s.endings,
                ));
            }
        }
        if let Some(f) = &self.flood {
            for p in [&f.quiet, &f.flooded, &f.quiet_after].into_iter().flatten() {
                out.push_str(&format!(
                    "{}: {} moves in {:.1} s ({} rematches); round trip µs p50 {} p90 {} p99 {} \
                     max {}; server CPU {} ms, load tester CPU {} ms; flood answered {} ({} \
                     rate_limited), throttled {}\n",
                    p.label,
                    p.moves,
                    p.seconds,
                    p.rematches,
                    p.p50_us,
                    p.p90_us,
                    p.p99_us,
                    p.max_us,
                    opt(p.server_cpu_ms),
                    opt(p.client_cpu_ms),
                    p.flood_answered,
                    p.flood_refused,
                    p.throttled.map_or("?".into(), |t| format!("{t:.0}")),
                ));
            }
            out.push_str(&format!(
                "flooder: {} of {} connections greeted{}; warm-up {:.1} s; pings taken by its \
                 sockets: {} before the phase, {} after; kernel TCP memory {} → {} KiB; \
                 endings {:?}\n",
                f.flood_greeted,
                f.flood_connections,
                f.flood_open_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(" (first failure: {e})")),
                f.warm_up_s,
                f.sent_before_phase,
                f.sent_after_phase,
                opt(f.tcp_memory_before_kib),
                opt(f.tcp_memory_during_kib),
                f.flood_endings,
            ));
        }
        for line in &self.server_log {
            out.push_str(&format!("server log: {line}\n"));
        }
        for failure in &self.failures {
            out.push_str(&format!("failed: {failure}\n"));
        }
        out
    }
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
    child: Spawned,
    target: Target,
}

async fn start(
    args: &EdgeArgs,
    name: &str,
    overrides: &[(&str, String)],
) -> Result<Started, String> {
    let metrics = net::free_loopback_addr().map_err(|e| e.to_string())?;
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
        pid: child.pid,
    };
    // The internal listener comes up just after the public one.
    let limit = Instant::now() + PATIENCE;
    while net::http_get(metrics, "/healthz").await.is_none() && Instant::now() < limit {
        sleep(Duration::from_millis(50)).await;
    }
    eprintln!("{name}: {} (pid {:?})", child.addr, child.pid);
    Ok(Started { child, target })
}

async fn stop(started: Started, log: &mut Vec<String>) {
    let transcript = started.child.transcript();
    if transcript.warnings + transcript.errors > 0 {
        log.push(format!(
            "{}: {} warnings, {} errors; first: {}",
            started.child.name,
            transcript.warnings,
            transcript.errors,
            transcript.first_notable.join(" / ")
        ));
    }
    started.child.stop().await;
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
    fn crowd_addresses_are_distinct_and_on_loopback() {
        assert_eq!(crowd_address(0), Ipv4Addr::new(127, 0, 1, 1));
        assert_eq!(crowd_address(249), Ipv4Addr::new(127, 0, 1, 250));
        assert_eq!(crowd_address(250), Ipv4Addr::new(127, 0, 2, 1));
        let all: std::collections::HashSet<_> = (0..18_000).map(crowd_address).collect();
        assert_eq!(all.len(), 18_000);
        assert!(all.iter().all(|ip| ip.is_loopback()));
    }

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
    fn reads_tcp_memory() {
        let sockstat = "sockets: used 143\nTCP: inuse 125 orphan 0 tw 25 alloc 125 mem 59284\n\
                        UDP: inuse 0 mem 0\n";
        assert_eq!(parse_tcp_pages(sockstat), Some(59284));
        assert_eq!(parse_tcp_pages("UDP: inuse 0 mem 3\n"), None);
    }

    #[test]
    fn reads_listen_overflows() {
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\n\
                       TcpExt: 0 1252 1260\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(parse_listen_overflows(netstat), Some(1252));
        assert_eq!(parse_listen_overflows("IpExt: a\nIpExt: 1\n"), None);
    }

    #[test]
    fn quantiles_of_sorted_values() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1, 2, 3], 0.5), Some(2));
        assert_eq!(quantile(&[1, 2, 3], 1.0), Some(3));
    }
}
