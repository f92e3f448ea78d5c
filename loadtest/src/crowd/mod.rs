//! `bench --crowd N`: N greeted protocol 2 connections held open on Jumpgate from
//! several loopback source addresses while the latency phase runs a second time, to
//! show what one instance holds: the server's memory per crowd connection, and the
//! move round trip without and with the crowd.
//!
//! Each crowd connection is a TCP socket bound to its source address (127.0.0.2,
//! 127.0.0.3, …: about 28,000 ephemeral ports each, so at most
//! [`MAX_PER_SOURCE`] connections an address), upgraded with the
//! `jumpgate.v2.msgpack` subprotocol, greeted with `hello`, and then read by one
//! small task until the crowd is dropped, so that the server's pings get their
//! pongs (tungstenite answers them while reading) and nothing piles up in the
//! kernel. A connection the server closes while the crowd is held is counted.
//!
//! The crowd is a bare `WebSocketStream` with a 512-byte read buffer, not the
//! protocol crate's `Client` (8 KiB read buffer, traffic counters): 100,000 of them
//! are held by the load tester too. [`raise_fd_limit`] makes room for them in the
//! load tester and, by inheritance, in the server it starts.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::{ClientMessage, Encoding, ProtocolVersion, ServerMessage, Subprotocol};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout_at};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::Uri;
use tokio_tungstenite::tungstenite::http::header::{HeaderValue, SEC_WEBSOCKET_PROTOCOL};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::driver::PATIENCE;

mod phase;
mod report;

pub use phase::{CrowdLatency, run_crowd};
pub use report::{CrowdSource, CrowdSummary};

/// The largest `--crowd`.
pub const MAX_CROWD: usize = 200_000;
/// Crowd connections from one source address: under the ~28,000 ephemeral ports
/// (32768–60999) one address has towards one server port.
pub const MAX_PER_SOURCE: usize = 25_000;
/// Crowd connections from one source address without `--crowd-sources`. The kernel
/// picks the port of a `bind(address, 0)` by probing the range for a free one, which
/// slows down as the address's ports fill: one run of 17,500 from a single address
/// (not kept) was greeted at 1,475/s; the kept runs from four addresses
/// (`loadtest/results/crowd-17k-run*.json`, `greeted_per_second`) at 2,000–15,400/s.
pub const DEFAULT_PER_SOURCE: usize = 5_000;
/// Crowd connections being connected and greeted at once: well under the server's
/// listen backlog (tokio's 1024, within `net.core.somaxconn`), so that no SYN waits
/// for a retransmission.
pub const CONNECTS_IN_FLIGHT: usize = 256;
/// File descriptors a process of a `bench` run needs beside the crowd and the latency
/// phase's two connections a game while the crowd is open (the idle phase's
/// connections are closed by then, the saturation phase comes after): the
/// server's reserve (`listener::FD_RESERVE` and `HTTP_HEADROOM`, 1,152) and
/// margin for the runtime, logs and stray connections.
pub const FDS_BESIDE_CROWD: u64 = 2_048;
/// Connections the server is allowed beside the crowd and the games (its
/// `--max-connections` is the sum).
pub const CONNECTIONS_BESIDE_CROWD: usize = 256;
/// How long the crowd stays open, at least, after its last connection is greeted
/// (`--crowd-hold`): past two ping intervals (20 s each), so that a crowd that did
/// not answer pings would be closed and counted.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(45);
/// The read buffer of a crowd connection: the `welcome` fits; a larger frame grows it
/// for itself.
const CROWD_READ_BUFFER: usize = 512;
/// What the crowd's `hello` says it is.
const CROWD_CLIENT_NAME: &str = "jumpgate-loadtest crowd";

/// What `--crowd` and `--crowd-sources` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrowdPlan {
    /// Connections to hold.
    pub count: usize,
    /// The loopback addresses they come from, in turn.
    pub sources: Vec<Ipv4Addr>,
    /// How long the crowd stays open at least after the last connection is greeted.
    pub hold: Duration,
}

impl CrowdPlan {
    /// Checks `count` (1 to [`MAX_CROWD`]) and `sources` (comma-separated loopback
    /// IPv4 addresses, each holding at most [`MAX_PER_SOURCE`]); without `sources`,
    /// 127.0.0.2, 127.0.0.3, … one per [`DEFAULT_PER_SOURCE`] connections.
    pub fn new(count: usize, sources: Option<&str>) -> Result<CrowdPlan, String> {
        if !(1..=MAX_CROWD).contains(&count) {
            return Err(format!("--crowd must be between 1 and {MAX_CROWD}"));
        }
        let needed = count.div_ceil(MAX_PER_SOURCE);
        let sources = match sources {
            None => default_sources(count.div_ceil(DEFAULT_PER_SOURCE)),
            Some(list) => parse_sources(list)?,
        };
        if sources.len() < needed {
            return Err(format!(
                "--crowd {count} needs at least {needed} source addresses (at most \
                 {MAX_PER_SOURCE} connections each: the ephemeral ports of one address), \
                 not {}",
                sources.len()
            ));
        }
        Ok(CrowdPlan {
            count,
            sources,
            hold: DEFAULT_HOLD,
        })
    }

    /// The same crowd, held `hold` at least after it is open.
    pub fn held_for(mut self, hold: Duration) -> CrowdPlan {
        self.hold = hold;
        self
    }

    /// The source address of the `i`-th crowd connection: the sources in turn.
    fn source_of(&self, i: usize) -> usize {
        i % self.sources.len()
    }

    /// The file-descriptor limit the load tester and the server each need for this
    /// crowd beside `games` games.
    pub fn fd_limit(&self, games: usize) -> u64 {
        (self.count + 2 * games) as u64 + FDS_BESIDE_CROWD
    }

    /// The server's `--max-connections` for this crowd beside `games` games.
    pub fn max_connections(&self, games: usize) -> usize {
        self.count + 2 * games + CONNECTIONS_BESIDE_CROWD
    }
}

/// 127.0.0.2, 127.0.0.3, …: `count` of them.
fn default_sources(count: usize) -> Vec<Ipv4Addr> {
    (0..count)
        .map(|i| Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 0, 0, 2)) + i as u32))
        .collect()
}

/// `--crowd-sources`: loopback IPv4 addresses, comma-separated, no repeats.
fn parse_sources(list: &str) -> Result<Vec<Ipv4Addr>, String> {
    let mut sources = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let ip: Ipv4Addr = word
            .parse()
            .map_err(|_| format!("--crowd-sources: {word:?} is not an IPv4 address"))?;
        if !ip.is_loopback() {
            return Err(format!(
                "--crowd-sources: refusing {ip}: the load tester only connects from \
                 loopback addresses (127.0.0.0/8)"
            ));
        }
        if sources.contains(&ip) {
            return Err(format!("--crowd-sources: {ip} is listed twice"));
        }
        sources.push(ip);
    }
    if sources.is_empty() {
        return Err("--crowd-sources: no address given".into());
    }
    Ok(sources)
}

/// Raises this process's `RLIMIT_NOFILE`, soft and (when needed, which takes root
/// with `CAP_SYS_RESOURCE`) hard, to what `plan` beside `games` games needs
/// ([`CrowdPlan::fd_limit`]); the servers it starts afterwards inherit it. Returns
/// the soft limit now in force.
pub fn raise_fd_limit(plan: &CrowdPlan, games: usize) -> Result<u64, String> {
    let wanted = plan.fd_limit(games);
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE)
        .map_err(|e| format!("cannot read the file-descriptor limit: {e}"))?;
    if soft >= wanted {
        return Ok(soft);
    }
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    if let Some(nr_open) = nr_open.filter(|max| *max < wanted) {
        return Err(format!(
            "the crowd needs {wanted} file descriptors, over the kernel's fs.nr_open \
             ({nr_open}); raise it with `sysctl fs.nr_open={wanted}` or ask for a smaller --crowd"
        ));
    }
    rlimit::setrlimit(rlimit::Resource::NOFILE, wanted, hard.max(wanted)).map_err(|e| {
        let fits = hard.saturating_sub(wanted - plan.count as u64);
        format!(
            "cannot raise the file-descriptor limit to {wanted} for the crowd (soft {soft}, \
             hard {hard}): {e}; raising the hard limit takes root with CAP_SYS_RESOURCE \
             (a container may drop it: see CapEff in /proc/self/status); raise `ulimit -Hn` \
             before starting, or ask for a crowd of at most {fits}"
        )
    })?;
    eprintln!("file-descriptor limit raised from {soft} (hard {hard}) to {wanted}");
    Ok(wanted)
}

/// The counts the crowd's tasks keep.
#[derive(Debug, Default)]
struct CrowdCounters {
    /// Connections greeted (their `welcome` read).
    greeted: AtomicU64,
    /// Connections that could not be opened or greeted.
    failed: AtomicU64,
    /// Greeted connections that ended before the crowd was dropped.
    closed: AtomicU64,
    /// Pings the server sent the crowd (each answered with a pong while reading).
    pings: AtomicU64,
    /// The first failure to open.
    first_error: Mutex<Option<String>>,
    /// Why the first greeted connection ended.
    first_close: Mutex<Option<String>>,
}

impl CrowdCounters {
    fn note(slot: &Mutex<Option<String>>, what: String) {
        let mut slot = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.get_or_insert(what);
    }
}

/// The crowd while it is held: one reading task per connection, all aborted (their
/// sockets closed) when this is dropped.
#[derive(Debug)]
pub struct Crowd {
    tasks: JoinSet<()>,
    counters: Arc<CrowdCounters>,
    greeted_from: Vec<Arc<AtomicU64>>,
    sources: Vec<Ipv4Addr>,
    /// When the first connection was started.
    pub started: Instant,
    /// How long opening all of them took.
    pub open_time: Duration,
}

impl Crowd {
    /// Connections greeted so far.
    pub fn greeted(&self) -> u64 {
        self.counters.greeted.load(Ordering::Relaxed)
    }

    /// Connections that failed to open.
    pub fn failed(&self) -> u64 {
        self.counters.failed.load(Ordering::Relaxed)
    }

    /// Greeted connections that ended while the crowd was held.
    pub fn closed(&self) -> u64 {
        self.counters.closed.load(Ordering::Relaxed)
    }

    /// Pings the server sent the crowd so far.
    pub fn pings(&self) -> u64 {
        self.counters.pings.load(Ordering::Relaxed)
    }

    /// The first failure to open, if any.
    pub fn first_error(&self) -> Option<String> {
        self.counters.first_error.lock().ok()?.clone()
    }

    /// Why the first greeted connection ended, if one did.
    pub fn first_close(&self) -> Option<String> {
        self.counters.first_close.lock().ok()?.clone()
    }

    /// Connections greeted from each source address.
    pub fn per_source(&self) -> Vec<CrowdSource> {
        self.sources
            .iter()
            .zip(&self.greeted_from)
            .map(|(ip, greeted)| CrowdSource {
                address: ip.to_string(),
                greeted: greeted.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Closes every connection and waits until their tasks are gone.
    pub async fn close(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Opens the crowd of `plan` on the server at `url` (`ws://HOST:PORT/ws`), at most
/// [`CONNECTS_IN_FLIGHT`] being set up at once, and returns once every connection is
/// greeted or has failed.
pub async fn open_crowd(url: &str, plan: &CrowdPlan) -> Result<Crowd, String> {
    let server = socket_addr_of(url)?;
    let counters = Arc::new(CrowdCounters::default());
    let greeted_from: Vec<Arc<AtomicU64>> = plan.sources.iter().map(|_| Arc::default()).collect();
    let permits = Arc::new(Semaphore::new(CONNECTS_IN_FLIGHT));
    let mut tasks = JoinSet::new();
    let started = Instant::now();
    let mut last_report = started;
    for i in 0..plan.count {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let source = plan.source_of(i);
        let (ip, from) = (plan.sources[source], greeted_from[source].clone());
        let (url, task_counters) = (url.to_owned(), counters.clone());
        tasks.spawn(async move {
            let limit = Instant::now() + PATIENCE;
            // Boxed: the handshake's state is freed once greeted, instead of
            // sizing the task that holds the connection afterwards.
            let greeted = Box::pin(greet_from(ip, server, &url, limit)).await;
            match greeted {
                Ok(socket) => {
                    task_counters.greeted.fetch_add(1, Ordering::Relaxed);
                    from.fetch_add(1, Ordering::Relaxed);
                    drop(permit);
                    hold(socket, &task_counters).await;
                }
                Err(e) => {
                    task_counters.failed.fetch_add(1, Ordering::Relaxed);
                    CrowdCounters::note(&task_counters.first_error, e);
                    drop(permit);
                }
            }
        });
        if last_report.elapsed() >= Duration::from_secs(2) {
            last_report = Instant::now();
            eprintln!(
                "  crowd: {:>4.0}s {} of {} greeted, errors {}",
                started.elapsed().as_secs_f64(),
                counters.greeted.load(Ordering::Relaxed),
                plan.count,
                counters.failed.load(Ordering::Relaxed),
            );
        }
    }
    // Every permit back: nothing is being set up any more.
    let _all = permits
        .acquire_many(CONNECTS_IN_FLIGHT as u32)
        .await
        .map_err(|e| e.to_string())?;
    let crowd = Crowd {
        tasks,
        counters,
        greeted_from,
        sources: plan.sources.clone(),
        started,
        open_time: started.elapsed(),
    };
    eprintln!(
        "  crowd: {} greeted in {:.1}s, errors {}{}",
        crowd.greeted(),
        crowd.open_time.as_secs_f64(),
        crowd.failed(),
        crowd
            .first_error()
            .map_or(String::new(), |e| format!(" (first: {e})"))
    );
    Ok(crowd)
}

/// Reads `socket` until it ends, counting pings (tungstenite queues each pong and
/// writes it on the next read); an end is a closed crowd connection.
async fn hold(mut socket: WebSocketStream<TcpStream>, counters: &CrowdCounters) {
    let why = loop {
        match socket.next().await {
            Some(Ok(Message::Ping(_))) => {
                counters.pings.fetch_add(1, Ordering::Relaxed);
            }
            Some(Ok(Message::Close(frame))) => break format!("closed by the server: {frame:?}"),
            Some(Ok(_)) => {}
            Some(Err(e)) => break format!("read failed: {e}"),
            None => break "the stream ended".to_owned(),
        }
    };
    counters.closed.fetch_add(1, Ordering::Relaxed);
    CrowdCounters::note(&counters.first_close, why);
}

/// A TCP connection from `source` to `server`, upgraded with the protocol 2
/// MessagePack subprotocol and greeted with `hello` (its `welcome` read).
async fn greet_from(
    source: Ipv4Addr,
    server: SocketAddr,
    url: &str,
    limit: Instant,
) -> Result<WebSocketStream<TcpStream>, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    // Ports in TIME_WAIT from an earlier run's crowd may be bound again.
    socket
        .set_reuseaddr(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    socket
        .bind(SocketAddr::new(IpAddr::V4(source), 0))
        .map_err(|e| format!("bind {source}: {e}"))?;
    let stream = timeout_at(limit, socket.connect(server))
        .await
        .map_err(|_| format!("connecting from {source} timed out"))?
        .map_err(|e| format!("connect from {source}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    let subprotocol = Subprotocol::new(ProtocolVersion::V2, Encoding::MsgPack).name();
    let mut request = url.into_client_request().map_err(|e| e.to_string())?;
    request.headers_mut().insert(
        SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(subprotocol),
    );
    let config = WebSocketConfig::default().read_buffer_size(CROWD_READ_BUFFER);
    let (mut socket, response) = timeout_at(
        limit,
        tokio_tungstenite::client_async_with_config(request, stream, Some(config)),
    )
    .await
    .map_err(|_| format!("upgrade from {source} timed out"))?
    .map_err(|e| format!("upgrade from {source}: {e}"))?;
    let chosen = response.headers().get(SEC_WEBSOCKET_PROTOCOL);
    if chosen.is_none_or(|chosen| chosen.as_bytes() != subprotocol.as_bytes()) {
        return Err(format!(
            "the server did not choose {subprotocol}: {chosen:?}"
        ));
    }
    let hello = ClientMessage::Hello {
        seq: 1,
        protocol: ProtocolVersion::V2.number(),
        token: None,
        client: CROWD_CLIENT_NAME.to_owned(),
        name: None,
    };
    let frame = match codec::encode_client(Encoding::MsgPack, &hello) {
        Frame::Binary(bytes) => Message::binary(bytes),
        Frame::Text(text) => Message::text(text),
    };
    timeout_at(limit, socket.send(frame))
        .await
        .map_err(|_| "sending hello timed out".to_owned())?
        .map_err(|e| format!("sending hello: {e}"))?;
    loop {
        let message = timeout_at(limit, socket.next())
            .await
            .map_err(|_| "no welcome in time".to_owned())?
            .ok_or("closed before the welcome")?
            .map_err(|e| format!("reading the welcome: {e}"))?;
        let payload = match message {
            Message::Binary(bytes) => bytes,
            Message::Close(frame) => return Err(format!("closed before the welcome: {frame:?}")),
            _ => continue,
        };
        match codec::decode_server(Encoding::MsgPack, &payload) {
            Ok(ServerMessage::Welcome { .. }) => return Ok(socket),
            Ok(ServerMessage::Error { code, message, .. }) => {
                return Err(format!("hello refused: {code} {message}"));
            }
            // Anything else before the welcome (or of a type this build does not
            // know) is skipped.
            Ok(_) | Err(_) => {}
        }
    }
}

/// The server's address from a `ws://HOST:PORT/…` URL on loopback.
fn socket_addr_of(url: &str) -> Result<SocketAddr, String> {
    crate::net::require_loopback_url(url)?;
    let uri: Uri = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
    let host = uri.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse().map_err(|e| format!("{url}: host: {e}"))?
    };
    if !ip.is_ipv4() {
        return Err(format!(
            "{url}: the crowd connects from IPv4 loopback addresses, so the server must be on one"
        ));
    }
    Ok(SocketAddr::new(ip, uri.port_u16().unwrap_or(80)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sources_hold_at_most_5000_each() {
        let plan = CrowdPlan::new(100_000, None).unwrap();
        let expected: Vec<Ipv4Addr> = (2..=21).map(|d| Ipv4Addr::new(127, 0, 0, d)).collect();
        assert_eq!(plan.sources, expected);
        assert_eq!(CrowdPlan::new(100_001, None).unwrap().sources.len(), 21);
        let largest = CrowdPlan::new(MAX_CROWD, None).unwrap().sources;
        assert_eq!(largest.last(), Some(&Ipv4Addr::new(127, 0, 0, 41)));
        assert_eq!(CrowdPlan::new(300, None).unwrap().sources.len(), 1);
        assert_eq!(plan.source_of(0), 0);
        assert_eq!(plan.source_of(5), 5);
        assert_eq!(plan.source_of(20), 0);
    }

    #[test]
    fn sources_must_be_loopback_and_enough() {
        let plan = CrowdPlan::new(300, Some("127.0.0.2, 127.0.0.3")).unwrap();
        assert_eq!(plan.sources.len(), 2);
        assert!(CrowdPlan::new(300, Some("10.0.0.2")).is_err());
        assert!(CrowdPlan::new(300, Some("::1")).is_err());
        assert!(CrowdPlan::new(300, Some("127.0.0.2,127.0.0.2")).is_err());
        assert!(CrowdPlan::new(300, Some("")).is_err());
        assert!(CrowdPlan::new(60_000, Some("127.0.0.2,127.0.0.3")).is_err());
        assert!(CrowdPlan::new(0, None).is_err());
        assert!(CrowdPlan::new(MAX_CROWD + 1, None).is_err());
        assert!(CrowdPlan::new(MAX_CROWD, None).is_ok());
    }

    #[test]
    fn server_address_from_the_url() {
        assert_eq!(
            socket_addr_of("ws://127.0.0.1:8080/ws").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            socket_addr_of("ws://localhost:9/ws").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert!(socket_addr_of("ws://10.1.1.1:80/ws").is_err());
        assert!(socket_addr_of("ws://[::1]:80/ws").is_err());
    }
}
