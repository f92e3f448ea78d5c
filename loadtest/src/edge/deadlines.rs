//! Part 2, deadlines: half-open and un-greeted connections left to the server's
//! deadlines, and the memory they hold meanwhile.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use jumpgate_protocol::client::{Client, ClientError};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, sleep_until, timeout_at};

use super::socket::{listen_overflows, open_ws, tcp_from};
use super::{OPEN_CONCURRENCY, Target, per_connection_kib, quantile};
use crate::driver::PATIENCE;

/// Between the starts of two half-open connections: 4,000 a second.
const HALF_OPEN_PACE: Duration = Duration::from_micros(250);
/// Half of a WebSocket upgrade request head: the blank line never comes.
const HALF_HEAD: &[u8] = b"GET /ws HTTP/1.1\r\nHost: jumpgate\r\nUpgrade: websocket\r\n";

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
