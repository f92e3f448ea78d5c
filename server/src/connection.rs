//! One task per WebSocket connection: decodes client messages, speaks for
//! the connection to its room, and writes what the room sends back. A slow
//! reader is dropped; a flooding one is refused, then closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::SinkExt;
use jumpgate_protocol as wire;
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, ServerMessage};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::{Duration, Instant};

use crate::AppState;
use crate::code::RoomCode;
use crate::identity::Identity;
use crate::lobby::{Action, LobbyOptions};
use crate::outbound::{ConnId, Member, Outbound, to_ws};
use crate::room::{RoomCommand, RoomHandle};
use crate::wire_view;

/// Close codes (RFC 6455).
const CLOSE_GOING_AWAY: u16 = 1001;
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
const CLOSE_POLICY: u16 = 1008;
/// The most queued messages written before one flush.
const MAX_WRITE_BATCH: usize = 16;

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

struct Connection {
    id: ConnId,
    encoding: Encoding,
    state: Arc<AppState>,
    identity: Option<Identity>,
    room: Option<RoomHandle>,
    /// The seq of a `leave` sent to the room and not yet confirmed.
    leaving: Option<u32>,
    solo: Option<crate::solo::SoloHandle>,
    out_tx: mpsc::Sender<Outbound>,
    kick: Arc<Notify>,
    window_start: Instant,
    window_count: u32,
}

enum Flow {
    Continue,
    Close(u16, &'static str),
}

/// Serves one connection, inside a `conn` span (id, encoding).
pub async fn serve(socket: WebSocket, encoding: Encoding, state: Arc<AppState>) {
    use tracing::Instrument;
    let id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
    let span = tracing::debug_span!("conn", id, encoding = ?encoding);
    state.live_connections.send_modify(|n| *n += 1);
    serve_inner(socket, encoding, state.clone(), id)
        .instrument(span)
        .await;
    state.live_connections.send_modify(|n| *n -= 1);
}

async fn serve_inner(mut socket: WebSocket, encoding: Encoding, state: Arc<AppState>, id: ConnId) {
    let metrics = &crate::metrics::METRICS;
    metrics.connections_open.inc();
    tracing::debug!("connection opened");
    let (out_tx, mut out_rx) = mpsc::channel(state.settings.outbound_queue);
    let mut conn = Connection {
        id,
        encoding,
        state: state.clone(),
        identity: None,
        room: None,
        leaving: None,
        solo: None,
        out_tx,
        kick: Arc::new(Notify::new()),
        window_start: Instant::now(),
        window_count: 0,
    };
    let mut shutdown = state.shutdown.subscribe();
    let kick = conn.kick.clone();
    let close = loop {
        tokio::select! {
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { break None };
                match conn.on_frame(&mut socket, message).await {
                    Flow::Continue => {}
                    Flow::Close(code, reason) => break Some((code, reason)),
                }
            }
            Some(outbound) = out_rx.recv() => {
                // Write everything already queued, then flush once: a move's `ack`
                // and the `state` after it leave in one write, not two packets.
                let mut next = Some(outbound);
                let mut written = 0;
                let mut ok = true;
                while let Some(outbound) = next.take() {
                    let frame = conn.frame_for(outbound);
                    if socket.feed(frame).await.is_err() {
                        ok = false;
                        break;
                    }
                    written += 1;
                    if written < MAX_WRITE_BATCH {
                        next = out_rx.try_recv().ok();
                    }
                }
                if !ok || socket.flush().await.is_err() {
                    break None;
                }
            }
            () = kick.notified() => break Some((CLOSE_POLICY, "too slow to keep up")),
            _ = shutdown.changed() => {
                let notice = ServerMessage::Shutdown {
                    reason: "the server is restarting".into(),
                    reconnect_after_ms: 1000,
                };
                let _ = socket.send(to_ws(wire::codec::encode_server(encoding, &notice))).await;
                break Some((CLOSE_GOING_AWAY, "server restarting"));
            }
        }
    };
    metrics.connections_open.dec();
    tracing::debug!(close = ?close.map(|(code, _)| code), "connection closed");
    if let Some(solo) = conn.solo.take() {
        let _ = solo
            .commands
            .send(crate::solo::SoloCommand::Detach { conn: conn.id })
            .await;
    }
    if let Some(room) = conn.room.take() {
        let _ = room
            .commands
            .send(RoomCommand::Disconnect { conn: conn.id })
            .await;
    }
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

impl Connection {
    /// The frame for one queued message, noting a confirmed `leave` on the way.
    fn frame_for(&mut self, outbound: Outbound) -> Message {
        match outbound {
            Outbound::Shared(shared) => shared.get(self.encoding).clone(),
            Outbound::Direct(message) => {
                // The room confirms a leave with its `ack` (then `left`): only
                // then is this connection out of it, so a message sent right
                // after the ack meets no lobby.
                let confirms_leave = match &*message {
                    ServerMessage::Left { .. } => true,
                    ServerMessage::Ack { seq } => self.leaving == Some(*seq),
                    _ => false,
                };
                if confirms_leave {
                    self.room = None;
                    self.leaving = None;
                }
                to_ws(wire::codec::encode_server(self.encoding, &message))
            }
        }
    }

    async fn send(&self, socket: &mut WebSocket, message: &ServerMessage) {
        let _ = socket
            .send(to_ws(wire::codec::encode_server(self.encoding, message)))
            .await;
    }

    async fn refuse(&self, socket: &mut WebSocket, seq: Option<u32>, code: ErrorCode, msg: &str) {
        self.send(socket, &ServerMessage::error(seq, code, msg))
            .await;
    }

    async fn on_frame(&mut self, socket: &mut WebSocket, message: Message) -> Flow {
        let payload: &[u8] = match &message {
            Message::Text(text) => text.as_bytes(),
            Message::Binary(bytes) => bytes,
            Message::Close(_) => return Flow::Close(1000, "bye"),
            Message::Ping(_) | Message::Pong(_) => return Flow::Continue,
        };
        // Rate limit: a one-second window.
        let now = Instant::now();
        if now.duration_since(self.window_start) >= Duration::from_secs(1) {
            self.window_start = now;
            self.window_count = 0;
        }
        self.window_count += 1;
        if self.window_count > self.state.settings.flood_per_second {
            return Flow::Close(CLOSE_POLICY, "flooding");
        }
        if self.window_count > self.state.settings.rate_per_second {
            self.refuse(socket, None, ErrorCode::RateLimited, "slow down")
                .await;
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
            self.refuse(socket, None, ErrorCode::MalformedMessage, msg)
                .await;
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
                self.refuse(socket, e.seq(), e.code(), &e.to_string()).await;
                return Flow::Continue;
            }
        };
        self.on_message(socket, client_message).await
    }

    async fn on_message(&mut self, socket: &mut WebSocket, message: ClientMessage) -> Flow {
        let seq = message.seq();
        if let ClientMessage::Hello {
            protocol, token, ..
        } = &message
        {
            if self.identity.is_some() {
                self.refuse(
                    socket,
                    Some(seq),
                    ErrorCode::AlreadyGreeted,
                    "hello was already sent",
                )
                .await;
                return Flow::Continue;
            }
            if *protocol != wire::PROTOCOL_VERSION {
                let text = format!(
                    "protocol {protocol} is not supported; this server speaks {}",
                    wire::PROTOCOL_VERSION
                );
                self.refuse(socket, Some(seq), ErrorCode::UnsupportedVersion, &text)
                    .await;
                return Flow::Close(CLOSE_PROTOCOL_ERROR, "unsupported protocol version");
            }
            let ids = &self.state.identities;
            let (identity, token) = match token {
                Some(token) => match ids.verify(token) {
                    Ok(identity) => (identity, token.clone()),
                    Err(e) => {
                        // The reason only: never the token.
                        tracing::info!(reason = %e, "hello refused: invalid token");
                        self.refuse(socket, Some(seq), ErrorCode::InvalidToken, &e.to_string())
                            .await;
                        return Flow::Continue;
                    }
                },
                None => ids.new_guest(),
            };
            let welcome = ServerMessage::Welcome {
                server_version: env!("CARGO_PKG_VERSION").to_owned(),
                protocols: vec![wire::PROTOCOL_VERSION],
                identity: wire::Identity {
                    id: identity.id.clone(),
                    name: identity.name.clone(),
                    guest: identity.guest,
                },
                token,
            };
            tracing::debug!(identity = %identity.id, guest = identity.guest, "greeted");
            self.identity = Some(identity);
            self.send(socket, &welcome).await;
            return Flow::Continue;
        }
        let Some(identity) = self.identity.clone() else {
            self.refuse(
                socket,
                Some(seq),
                ErrorCode::HelloRequired,
                "send hello first",
            )
            .await;
            return Flow::Continue;
        };
        match message {
            ClientMessage::Hello { .. } => unreachable!("handled above"),
            ClientMessage::Ping { seq } => {
                self.send(socket, &ServerMessage::Ack { seq }).await;
            }
            ClientMessage::CreateLobby {
                seq,
                rule_set,
                series_length,
                invite_only,
                stake,
            } => {
                if self.room.is_some() {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::AlreadyInLobby,
                        "leave your lobby first",
                    )
                    .await;
                    return Flow::Continue;
                }
                if !wire::SERIES_LENGTHS.contains(&series_length) {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::InvalidOptions,
                        "series_length must be 1, 3, 5 or 7",
                    )
                    .await;
                    return Flow::Continue;
                }
                let stake = stake.unwrap_or(0);
                if stake != 0 && !(10..=1000).contains(&stake) {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::InvalidOptions,
                        "stake must be 0 (free) or 10 to 1,000 Bold Points",
                    )
                    .await;
                    return Flow::Continue;
                }
                if stake > 0 && identity.guest {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::AccountRequired,
                        "guests play free lobbies only: sign in to play for Bold Points",
                    )
                    .await;
                    return Flow::Continue;
                }
                let options = LobbyOptions {
                    rule_set: wire_view::rule_set_from_wire(rule_set),
                    series_length,
                    invite_only,
                    stake,
                };
                let (handle, invite) = self.state.create_room(options, &identity);
                self.enter(socket, handle, seq, invite, false, identity)
                    .await;
            }
            ClientMessage::JoinLobby { seq, code, invite } => {
                self.join(socket, seq, code, invite, false, identity).await;
            }
            ClientMessage::Watch { seq, code, invite } => {
                self.join(socket, seq, code, invite, true, identity).await;
            }
            ClientMessage::StartSolo {
                seq,
                rule_set,
                mode,
                level,
                ranked,
            } => {
                self.start_solo(socket, seq, identity, rule_set, mode, level, ranked)
                    .await;
            }
            ClientMessage::ResumeSolo { seq } => {
                if self.room.is_some() {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::AlreadyInLobby,
                        "leave your lobby first",
                    )
                    .await;
                    return Flow::Continue;
                }
                match self.state.solo_of(&identity.id) {
                    Some(handle) => self.attach_solo(socket, handle, seq).await,
                    None => {
                        self.refuse(
                            socket,
                            Some(seq),
                            ErrorCode::NoGameInProgress,
                            "you have no unfinished solo game",
                        )
                        .await;
                    }
                }
            }
            ClientMessage::Leave { seq } if self.room.is_none() && self.solo.is_some() => {
                if let Some(solo) = self.solo.take() {
                    let _ = solo
                        .commands
                        .send(crate::solo::SoloCommand::Detach { conn: self.id })
                        .await;
                    self.send(socket, &ServerMessage::Ack { seq }).await;
                }
            }
            ClientMessage::Move {
                seq,
                notation,
                path,
            } if self.room.is_none() && self.solo.is_some() => {
                self.tell_solo(crate::solo::SoloCommand::Move {
                    conn: self.id,
                    seq,
                    notation,
                    path,
                })
                .await;
            }
            ClientMessage::Undo { seq } => {
                if self.solo.is_some() {
                    self.tell_solo(crate::solo::SoloCommand::Undo { conn: self.id, seq })
                        .await;
                } else {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::NoGameInProgress,
                        "undo is for solo games",
                    )
                    .await;
                }
            }
            ClientMessage::Resign { seq } if self.room.is_none() && self.solo.is_some() => {
                self.tell_solo(crate::solo::SoloCommand::Resign { conn: self.id, seq })
                    .await;
            }
            ClientMessage::Resync { seq, .. } if self.room.is_none() && self.solo.is_some() => {
                self.tell_solo(crate::solo::SoloCommand::Resync { conn: self.id, seq })
                    .await;
            }
            ClientMessage::Leave { seq } => match self.room.clone() {
                Some(room) => {
                    self.leaving = Some(seq);
                    let _ = room
                        .commands
                        .send(RoomCommand::Leave {
                            conn: self.id,
                            seq,
                            out: self.out_tx.clone(),
                        })
                        .await;
                }
                None => {
                    self.refuse(
                        socket,
                        Some(seq),
                        ErrorCode::NotInLobby,
                        "you are not in a lobby",
                    )
                    .await;
                }
            },
            other => {
                let action = match other {
                    ClientMessage::Move { notation, path, .. } => Action::Move { notation, path },
                    ClientMessage::OfferDraw { .. } => Action::OfferDraw,
                    ClientMessage::AcceptDraw { .. } => Action::AcceptDraw,
                    ClientMessage::DeclineDraw { .. } => Action::DeclineDraw,
                    ClientMessage::Resign { .. } => Action::Resign,
                    ClientMessage::NextRound { .. } => Action::NextRound,
                    ClientMessage::Rematch { .. } => Action::Rematch,
                    ClientMessage::EndMatch { .. } => Action::EndMatch,
                    _ => Action::Resync,
                };
                match &self.room {
                    Some(room) => {
                        let command = RoomCommand::Act {
                            conn: self.id,
                            seq,
                            action,
                        };
                        if room.commands.send(command).await.is_err() {
                            self.room = None;
                            self.refuse(
                                socket,
                                Some(seq),
                                ErrorCode::NotInLobby,
                                "the lobby has closed",
                            )
                            .await;
                        }
                    }
                    None => {
                        self.refuse(
                            socket,
                            Some(seq),
                            ErrorCode::NotInLobby,
                            "you are not in a lobby",
                        )
                        .await;
                    }
                }
            }
        }
        Flow::Continue
    }

    async fn tell_solo(&mut self, command: crate::solo::SoloCommand) {
        if let Some(solo) = &self.solo
            && solo.commands.send(command).await.is_err()
        {
            self.solo = None;
        }
    }

    async fn attach_solo(
        &mut self,
        socket: &mut WebSocket,
        handle: crate::solo::SoloHandle,
        seq: u32,
    ) {
        let attach = crate::solo::SoloCommand::Attach {
            conn: self.id,
            out: self.out_tx.clone(),
            seq,
        };
        if handle.commands.send(attach).await.is_ok() {
            self.solo = Some(handle);
        } else {
            self.refuse(
                socket,
                Some(seq),
                ErrorCode::NoGameInProgress,
                "that game has closed",
            )
            .await;
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn start_solo(
        &mut self,
        socket: &mut WebSocket,
        seq: u32,
        identity: Identity,
        rule_set: wire::RuleSet,
        mode: wire::SoloMode,
        level: Option<wire::BotLevel>,
        ranked: bool,
    ) {
        if self.room.is_some() {
            self.refuse(
                socket,
                Some(seq),
                ErrorCode::AlreadyInLobby,
                "leave your lobby first",
            )
            .await;
            return;
        }
        // A ranked game in progress must be finished (or resigned) first; a
        // practice game is simply replaced.
        if let Some(existing) = self.state.solo_of(&identity.id) {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let asked = existing
                .commands
                .send(crate::solo::SoloCommand::CloseIfPractice { reply: tx })
                .await;
            if asked.is_ok() && rx.await == Ok(false) {
                self.refuse(
                    socket,
                    Some(seq),
                    ErrorCode::NotNow,
                    "you have a ranked game in progress: resume_solo to finish it, or resign it",
                )
                .await;
                return;
            }
        }
        let record = match crate::solo::new_record(
            self.state.settings.shard,
            &identity,
            wire_view::rule_set_from_wire(rule_set),
            mode,
            level,
            ranked,
        ) {
            Ok(r) => r,
            Err(refusal) => {
                self.refuse(socket, Some(seq), refusal.code, &refusal.message)
                    .await;
                return;
            }
        };
        if let Some(old) = self.solo.take() {
            let _ = old
                .commands
                .send(crate::solo::SoloCommand::Detach { conn: self.id })
                .await;
        }
        match self.state.spawn_solo(record) {
            Ok(handle) => self.attach_solo(socket, handle, seq).await,
            Err(e) => {
                self.refuse(socket, Some(seq), ErrorCode::InternalError, &e)
                    .await;
            }
        }
    }

    async fn join(
        &mut self,
        socket: &mut WebSocket,
        seq: u32,
        code: String,
        invite: Option<String>,
        watch: bool,
        identity: Identity,
    ) {
        if self.room.is_some() {
            self.refuse(
                socket,
                Some(seq),
                ErrorCode::AlreadyInLobby,
                "leave your lobby first",
            )
            .await;
            return;
        }
        let handle = RoomCode::parse(&code).and_then(|c| self.state.room(&c));
        let Some(handle) = handle else {
            self.refuse(
                socket,
                Some(seq),
                ErrorCode::UnknownLobby,
                "no lobby has that code",
            )
            .await;
            return;
        };
        self.enter(socket, handle, seq, invite, watch, identity)
            .await;
    }

    async fn enter(
        &mut self,
        socket: &mut WebSocket,
        handle: RoomHandle,
        seq: u32,
        invite: Option<String>,
        watch: bool,
        identity: Identity,
    ) {
        let (reply_tx, reply_rx) = oneshot::channel();
        let command = RoomCommand::Enter {
            member: Member {
                conn: self.id,
                identity,
                out: self.out_tx.clone(),
                kick: self.kick.clone(),
            },
            seq,
            invite,
            watch,
            reply: reply_tx,
        };
        if handle.commands.send(command).await.is_err() {
            self.refuse(
                socket,
                Some(seq),
                ErrorCode::UnknownLobby,
                "the lobby has closed",
            )
            .await;
            return;
        }
        match reply_rx.await {
            Ok(Ok(())) => self.room = Some(handle),
            Ok(Err(refusal)) => {
                self.refuse(socket, Some(seq), refusal.code, &refusal.message)
                    .await;
            }
            Err(_) => {
                self.refuse(
                    socket,
                    Some(seq),
                    ErrorCode::UnknownLobby,
                    "the lobby has closed",
                )
                .await;
            }
        }
    }
}
