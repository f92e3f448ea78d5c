//! The network edge: one task per WebSocket connection. It reads frames,
//! applies the size and rate limits, decodes client messages and hands them
//! to its [`session`]; everything the connection is told — acks, errors,
//! states — leaves through its one bounded, ordered outbound queue. A slow
//! reader is dropped; a flooding one is refused, then closed. A frame the
//! WebSocket layer refuses is answered with its close code (1009 too big,
//! 1007 invalid UTF-8, 1002 any other protocol error) in a close frame.

mod session;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::SinkExt;
use jumpgate_protocol as wire;
use jumpgate_protocol::{Encoding, ErrorCode, ProtocolVersion, ServerMessage, Subprotocol};
use tokio::sync::{Notify, mpsc};
use tokio::time::{Duration, Instant};

use crate::app::App;
use crate::lifecycle::Lifecycle;
use crate::limits::{ClientAddr, HeldSlot};
use crate::outbound::{ConnId, Outbound, to_ws};
use session::Session;

/// Close codes (RFC 6455).
const CLOSE_GOING_AWAY: u16 = 1001;
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
const CLOSE_INVALID_DATA: u16 = 1007;
const CLOSE_POLICY: u16 = 1008;
const CLOSE_TOO_BIG: u16 = 1009;
const CLOSE_ROOM_MOVED: u16 = wire::CLOSE_ROOM_MOVED;
/// A held message's turn in its address's queue (see
/// `ClientLimits::message_turn`).
type HeldTurn = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The most queued messages written before one flush.
const MAX_WRITE_BATCH: usize = 16;

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

struct Connection {
    id: ConnId,
    encoding: Encoding,
    /// The protocol version its subprotocol names.
    version: ProtocolVersion,
    state: Arc<App>,
    session: Session,
    out_tx: mpsc::Sender<Outbound>,
    kick: Arc<Notify>,
    window_start: Instant,
    window_count: u32,
    /// The room or solo game named in the address (`/ws?room=…`), upper
    /// case: the only one this connection may have handed over to this
    /// instance.
    named_room: Option<String>,
    /// Who the client is, for the per-address limits.
    client: ClientAddr,
    /// This connection's place under its identity's cap, from `hello`.
    identity_slot: Option<HeldSlot<String>>,
}

enum Flow {
    Continue,
    Close(u16, &'static str),
}

/// Where a connection comes from and what it may do, decided before the
/// upgrade.
#[derive(Debug)]
pub struct Admission {
    /// The protocol version and encoding the client asked for.
    pub subprotocol: Subprotocol,
    /// The room named in the address (`/ws?room=…`), upper case.
    pub named_room: Option<String>,
    pub client: ClientAddr,
    /// Its place under `--max-connections` ...
    pub slot: ConnectionSlot,
    /// ... and under its address's cap.
    pub address_slot: HeldSlot<ClientAddr>,
}

/// Serves one connection, inside a `conn` span (id, encoding).
///
/// Not an `async fn`: the connection's future is built here, so that the
/// socket and the admission are stored in it once, not once more as this
/// function's own arguments (every idle connection holds that future).
pub fn serve(
    socket: WebSocket,
    state: Arc<App>,
    admission: Admission,
) -> impl std::future::Future<Output = ()> + Send {
    use tracing::Instrument;
    let id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
    let span = tracing::debug_span!("conn", id, subprotocol = %admission.subprotocol, client = %admission.client);
    let Admission {
        subprotocol,
        named_room,
        client,
        slot,
        address_slot,
    } = admission;
    serve_inner(
        socket,
        subprotocol,
        state,
        id,
        named_room,
        client,
        (slot, address_slot),
    )
    .instrument(span)
}

/// One of the `--max-connections` WebSocket connections, taken before the
/// upgrade is answered and given back when dropped (also when the upgrade
/// never completes).
#[derive(Debug)]
pub struct ConnectionSlot {
    lifecycle: Lifecycle,
}

impl ConnectionSlot {
    /// A slot, or `None` when `max` are taken.
    pub fn take(lifecycle: &Lifecycle, max: usize) -> Option<ConnectionSlot> {
        lifecycle.open_connection(max).then(|| ConnectionSlot {
            lifecycle: lifecycle.clone(),
        })
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.lifecycle.connection_closed();
    }
}

/// The connection's task; `slots` (its places under the connection caps)
/// are given back when it ends.
async fn serve_inner(
    mut socket: WebSocket,
    subprotocol: Subprotocol,
    state: Arc<App>,
    id: ConnId,
    named_room: Option<String>,
    client: ClientAddr,
    slots: (ConnectionSlot, HeldSlot<ClientAddr>),
) {
    let metrics = &crate::metrics::METRICS;
    metrics.connections_open.inc();
    tracing::debug!("connection opened");
    let (out_tx, mut out_rx) = mpsc::channel(state.settings.outbound_queue);
    let encoding = subprotocol.encoding;
    let mut conn = Connection {
        id,
        encoding,
        version: subprotocol.version,
        state: state.clone(),
        session: Session::Greeting,
        out_tx,
        kick: Arc::new(Notify::new()),
        window_start: Instant::now(),
        window_count: 0,
        named_room,
        client,
        identity_slot: None,
    };
    let mut shutdown = state.lifecycle.closing();
    let kick = conn.kick.clone();
    let settings = state.settings.clone();
    // The loop's one-shot waits are made once and polled where they are,
    // not made again (and dropped, which locks their waiter lists) on
    // every frame.
    let shutting_down = shutdown.wait();
    let kicked = kick.notified();
    let hello_late = tokio::time::sleep(settings.hello_timeout);
    tokio::pin!(shutting_down, kicked, hello_late);
    let mut last_heard = Instant::now();
    let mut pings = tokio::time::interval_at(
        Instant::now() + first_ping_after(settings.ping_interval),
        settings.ping_interval,
    );
    // A message held back while the client's address is over its rate,
    // with its turn in the address's queue: nothing more is read from this
    // connection until it is handled, so a flood backs up into the
    // client's own socket, not the server.
    let mut held: Option<(Message, HeldTurn)> = None;
    let close = loop {
        let greeting = matches!(conn.session, Session::Greeting);
        tokio::select! {
            incoming = socket.recv(), if held.is_none() => {
                let message = match incoming {
                    Some(Ok(message)) => message,
                    Some(Err(e)) => break refusal_close(e),
                    None => break None,
                };
                last_heard = Instant::now();
                let flow = match conn.throttle(message) {
                    Ok(message) => Box::pin(conn.on_frame(message, last_heard)).await,
                    Err(later) => {
                        held = Some(later);
                        Flow::Continue
                    }
                };
                if let Flow::Close(code, reason) = flow {
                    break Some((code, reason));
                }
            }
            () = async { held.as_mut().expect("a held message").1.as_mut().await }, if held.is_some() => {
                // Its turn came: the bucket gave it a token.
                let (message, _) = held.take().expect("a held message");
                last_heard = Instant::now();
                if let Flow::Close(code, reason) = Box::pin(conn.on_frame(message, last_heard)).await {
                    break Some((code, reason));
                }
            }
            Some(outbound) = out_rx.recv() => {
                // Write everything already queued, then flush once: a move's `ack`
                // and the event after it leave in one write, not two packets.
                // A client that stops reading is not waited for: the batch has
                // one deadline (a timer only once a write has to wait), so the
                // loop sees its kick too.
                let mut moved = false;
                let batch = async {
                    let mut next = Some(outbound);
                    let mut written = 0;
                    while let Some(outbound) = next.take() {
                        let Some(frame) = conn.frame_for(outbound) else {
                            moved = true;
                            break;
                        };
                        socket.feed(frame).await?;
                        written += 1;
                        if written < MAX_WRITE_BATCH {
                            next = out_rx.try_recv().ok();
                        }
                    }
                    socket.flush().await
                };
                if !matches!(tokio::time::timeout(settings.write_timeout, batch).await, Ok(Ok(()))) {
                    break None;
                }
                if moved {
                    break Some((CLOSE_ROOM_MOVED, "room moved"));
                }
            }
            () = &mut kicked => break Some((CLOSE_POLICY, "too slow to keep up")),
            () = &mut hello_late, if greeting => {
                break Some((CLOSE_POLICY, "no hello in time"));
            }
            _ = pings.tick() => {
                // Any frame counts as a sign of life, a pong included.
                if last_heard.elapsed() >= settings.ping_interval * 2 {
                    break Some((CLOSE_POLICY, "no answer to pings"));
                }
                let ping = tokio::time::timeout(
                    settings.write_timeout,
                    socket.send(Message::Ping(Vec::new().into())),
                )
                .await;
                if !matches!(ping, Ok(Ok(()))) {
                    break None;
                }
            }
            () = &mut shutting_down => break Some((CLOSE_GOING_AWAY, "server restarting")),
        }
    };
    // The closing steps live in their own boxed future: held inline, they
    // would make every idle connection's task as large as they are.
    Box::pin(finish(socket, conn, out_rx, close, encoding)).await;
    drop(slots);
}

/// What follows the connection's loop: queued messages, the notice and the
/// close frame are written, the session is left, the client's last frames
/// are drained.
async fn finish(
    mut socket: WebSocket,
    mut conn: Connection,
    mut out_rx: mpsc::Receiver<Outbound>,
    close: Option<(u16, &'static str)>,
    encoding: Encoding,
) {
    let metrics = &crate::metrics::METRICS;
    // Whatever was queued before a close is written first (a refusal that
    // explains it, say), within a short deadline.
    let mut room_moved = false;
    if close.is_some() {
        let pending = async {
            while let Ok(outbound) = out_rx.try_recv() {
                let Some(frame) = conn.frame_for(outbound) else {
                    room_moved = true;
                    continue;
                };
                if socket.feed(frame).await.is_err() {
                    return;
                }
            }
            let _ = socket.flush().await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), pending).await;
    }
    // At shutdown every room is handed over (its members' queues told so)
    // before connections are told the server stops, but the loop may see
    // the second before it read the first: a member of a room that moved
    // is told so, and comes back at once.
    let close = match close {
        Some((CLOSE_GOING_AWAY, _)) if room_moved => Some((CLOSE_ROOM_MOVED, "room moved")),
        other => other,
    };
    // A shutdown or a move is announced after everything queued before it.
    let notice = match close {
        Some((CLOSE_GOING_AWAY, _)) => Some(ServerMessage::Shutdown {
            reason: "the server is restarting".into(),
            reconnect_after_ms: 1000,
        }),
        // The room is handed over by now: come back at once.
        Some((CLOSE_ROOM_MOVED, _)) => Some(ServerMessage::Shutdown {
            reason: "the room moved to another server instance".into(),
            reconnect_after_ms: 0,
        }),
        _ => None,
    };
    if let Some(notice) = notice {
        let _ = socket
            .send(to_ws(wire::codec::encode_server(encoding, &notice)))
            .await;
    }
    metrics.connections_open.dec();
    tracing::debug!(close = ?close.map(|(code, _)| code), "connection closed");
    conn.leave_session().await;
    if let Some((code, reason)) = close {
        let _ = socket
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
        // Read (and drop) what the client still has in flight until it
        // answers the close, so the kernel does not reset the connection
        // and swallow our close frame.
        let drain = async {
            while let Some(Ok(message)) = socket.recv().await {
                if matches!(message, Message::Close(_)) {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
}

/// The close that answers a frame the WebSocket layer refused: 1009 for a
/// frame or message over the limit, 1007 for a text frame that is not UTF-8,
/// 1002 for any other breach of RFC 6455 (an unmasked frame, reserved bits
/// or opcodes, a fragmented or oversized control frame, a continuation out
/// of place). `None` when the connection itself failed (reset, I/O error):
/// nobody is left to read a close frame.
///
/// tungstenite stops reading after any of these; it can still write, so the
/// close frame goes out, and the connection is dropped without waiting for
/// the answer (RFC 6455 7.1.7, "Fail the WebSocket Connection").
fn refusal_close(error: axum::Error) -> Option<(u16, &'static str)> {
    use tungstenite::Error as E;
    use tungstenite::error::ProtocolError as P;
    let error = error.into_inner();
    let Some(error) = error.downcast_ref::<E>() else {
        tracing::debug!(%error, "websocket read failed");
        return None;
    };
    let close = match error {
        E::Capacity(_) => Some((CLOSE_TOO_BIG, "message too big")),
        E::Utf8(_) => Some((CLOSE_INVALID_DATA, "invalid UTF-8")),
        // The peer went away without a close frame: nothing to answer.
        E::Protocol(P::ResetWithoutClosingHandshake) => None,
        E::Protocol(_) | E::AttackAttempt => Some((CLOSE_PROTOCOL_ERROR, "protocol error")),
        _ => None,
    };
    tracing::debug!(%error, close = ?close.map(|(code, _)| code), "websocket frame refused");
    close
}

impl Connection {
    /// The frame for one queued message, noting a confirmed `leave` on the way.
    /// `None` for [`Outbound::Moved`], which closes the connection.
    fn frame_for(&mut self, outbound: Outbound) -> Option<Message> {
        Some(match outbound {
            Outbound::Moved => return None,
            Outbound::Shared(shared) => shared.get(self.encoding).clone(),
            Outbound::Direct(mut message) => {
                // Whoever wrote the refusal, it quotes only a short excerpt
                // of what the client sent, and stays small.
                if let ServerMessage::Error { message: text, .. } = &mut *message {
                    crate::outbound::bound_error_text(text);
                }
                // The room confirms a leave with its `ack` (then `left`): only
                // then is this connection out of it, so a message sent right
                // after the ack meets no lobby.
                if let Session::Lobby {
                    identity, leaving, ..
                } = &self.session
                {
                    let confirms_leave = match &*message {
                        ServerMessage::Left { .. } => true,
                        ServerMessage::Ack { seq } => *leaving == Some(*seq),
                        _ => false,
                    };
                    if confirms_leave {
                        self.session = Session::Idle {
                            identity: identity.clone(),
                        };
                    }
                }
                to_ws(wire::codec::encode_server(self.encoding, &message))
            }
        })
    }

    /// Queues a message for this connection, behind everything queued
    /// before it. A connection whose queue is full is too slow: it is
    /// dropped.
    fn reply(&self, message: ServerMessage) {
        if self
            .out_tx
            .try_send(Outbound::Direct(Box::new(message)))
            .is_err()
        {
            crate::metrics::METRICS.slow_consumers_dropped.inc();
            self.kick.notify_one();
        }
    }

    fn refuse(&self, seq: Option<u32>, code: ErrorCode, msg: &str) {
        self.reply(ServerMessage::error(seq, code, msg));
    }

    /// Lets a message through now, or holds it until the client's address
    /// is back under its message rate (its connections stop reading until
    /// then). Pings and pongs count too (a flood of them costs the server
    /// as much as one of messages); a close frame never waits.
    fn throttle(&self, message: Message) -> Result<Message, (Message, HeldTurn)> {
        if matches!(message, Message::Close(_)) {
            return Ok(message);
        }
        match self.state.limits.message(self.client) {
            Ok(()) => Ok(message),
            Err(_) => {
                crate::metrics::METRICS.messages_throttled.inc();
                Err((
                    message,
                    Box::pin(self.state.limits.message_turn(self.client)),
                ))
            }
        }
    }

    /// One frame read at `now`.
    async fn on_frame(&mut self, message: Message, now: Instant) -> Flow {
        let payload: &[u8] = match &message {
            Message::Text(text) => text.as_bytes(),
            Message::Binary(bytes) => bytes,
            Message::Close(_) => return Flow::Close(1000, "bye"),
            Message::Ping(_) | Message::Pong(_) => return Flow::Continue,
        };
        // Rate limit: a one-second window.
        if now.duration_since(self.window_start) >= Duration::from_secs(1) {
            self.window_start = now;
            self.window_count = 0;
        }
        self.window_count += 1;
        if self.window_count > self.state.settings.flood_per_second {
            return Flow::Close(CLOSE_POLICY, "flooding");
        }
        if self.window_count > self.state.settings.rate_per_second {
            self.refuse(None, ErrorCode::RateLimited, "slow down");
            return Flow::Continue;
        }
        let is_text = matches!(message, Message::Text(_));
        let expected_text = self.encoding == Encoding::Json;
        if is_text != expected_text {
            let msg = if expected_text {
                "this connection speaks JSON in text frames"
            } else {
                "this connection speaks MessagePack in binary frames"
            };
            self.refuse(None, ErrorCode::MalformedMessage, msg);
            return Flow::Continue;
        }
        let decoded = wire::codec::decode_client(self.encoding, payload);
        let client_message = match decoded {
            Ok(m) => m,
            Err(e) => {
                crate::metrics::METRICS
                    .decode_errors
                    .with_label_values(&[e.code().as_str()])
                    .inc();
                self.refuse(e.seq(), e.code(), &e.to_string());
                return Flow::Continue;
            }
        };
        self.on_message(client_message).await
    }
}

/// When a connection's first ping is due: at a random moment within the
/// first interval, so that connections opened together (a crowd
/// reconnecting after a restart) ping, and are answered, spread evenly over
/// the interval from the start instead of all in the same moment every
/// 20 s. A silent client is still closed within three intervals of its
/// last frame.
fn first_ping_after(interval: Duration) -> Duration {
    interval.mul_f64(rand::random_range(0.0..1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_pings_are_spread_over_the_first_interval() {
        let interval = Duration::from_secs(20);
        let firsts: Vec<Duration> = (0..200).map(|_| first_ping_after(interval)).collect();
        assert!(firsts.iter().all(|d| *d < interval), "{firsts:?}");
        // Spread, not one moment: 200 draws are not all in one half.
        let (low, high) = (firsts.iter().min().unwrap(), firsts.iter().max().unwrap());
        assert!(*high - *low > interval / 2, "{low:?}..{high:?}");
    }

    /// Every open connection holds its task's future for its whole life, so
    /// what the future keeps inline is paid per idle connection: message
    /// handling and the closing steps are boxed, to be allocated only while
    /// they run. 5.5 KB before they were; a bound well under that catches a
    /// large future inlined again.
    #[test]
    fn the_connection_future_stays_small() {
        fn future_size<F: std::future::Future>(
            _: fn(WebSocket, Arc<App>, Admission) -> F,
        ) -> usize {
            std::mem::size_of::<F>()
        }
        let size = future_size(serve);
        assert!(size <= 2560, "the connection's future takes {size} bytes");
    }
}
