//! Part 3, the flood: the innocent game quiet, then while other addresses flood pings
//! from many connections, then quiet again.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, FrameKind, ServerMessage};
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, timeout_at};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL;
use tokio_tungstenite::tungstenite::{self, Message};

use super::game::{Duel, PlaySummary};
use super::socket::{tcp_from_with, tcp_memory_kib};
use super::{EdgeConfig, Target};
use crate::driver::PATIENCE;
use crate::net;

/// The flooder's (first) address; with `--flood-addresses N`, 127.0.0.2 … 127.0.0.N+1.
const FLOODER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
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
