//! A client that comes back by itself after a lost connection, a server restart or its
//! room moving to another server instance, as `PROTOCOL.md` section 10 describes.
//!
//! [`ReconnectingClient`] holds one [`Client`] at a time and keeps what the next one
//! needs: the address, encoding, token, `seq` counter, the room it is in and the
//! requests still waiting for an answer. When a connection ends in a way that means
//! "come back" (any close but 1002, 1007 and 1009, a dropped socket, a
//! `room_unavailable` refusal), it opens a new one naming the room (`/ws?room=CODE`),
//! sends `hello` with the kept token and the next `seq`, enters the room again and
//! re-sends the unanswered requests with their original `seq` and content. Its user learns of it from
//! [`Event::Reconnected`] and otherwise carries on receiving messages as before.

// Over 700 lines: about 230 of them are unit tests; the client's reconnect
// state machine reads best in one place.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use crate::CLOSE_ROOM_MOVED;
use crate::client::{Client, ClientError, Refusal};
use crate::codec::{DecodeError, Subprotocol};
use crate::error_code::ErrorCode;
use crate::message::{ClientMessage, Identity, ServerMessage};

/// The close code after which a client must not come back: the server sends it right
/// after `unsupported_version`.
const CLOSE_PROTOCOL_ERROR: u16 = 1002;

/// Whether a connection closed with `code` should be replaced by a new one.
///
/// Every close means "reconnect" (1006 included, which stands for a connection that
/// dropped without a close frame) except 1002, 1007 and 1009: the client sent
/// something it must not send, and re-sending its unanswered requests would end the
/// same way, so it stops (PROTOCOL.md section 1, "Close codes").
///
/// ```
/// use jumpgate_protocol::reconnect::close_means_reconnect;
/// use jumpgate_protocol::CLOSE_ROOM_MOVED;
///
/// assert!(close_means_reconnect(1001)); // the server restarts
/// assert!(close_means_reconnect(CLOSE_ROOM_MOVED));
/// assert!(!close_means_reconnect(1002)); // e.g. after unsupported_version
/// ```
pub fn close_means_reconnect(code: u16) -> bool {
    !matches!(code, CLOSE_PROTOCOL_ERROR | 1007 | 1009)
}

/// Exponential back-off with jitter: `first`, then twice that, four times that… up to
/// `max`, each scaled by a random factor between `1 - jitter` and `1 + jitter`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The wait before the first retry, before jitter.
    pub first: Duration,
    /// The longest wait, before jitter.
    pub max: Duration,
    /// 0.5 for ±50 %; kept within 0 to 1.
    pub jitter: f64,
}

impl Default for Backoff {
    /// 0.5 s, 1 s, 2 s, 4 s… capped at 15 s, each ±50 %, as PROTOCOL.md suggests.
    fn default() -> Self {
        Backoff {
            first: Duration::from_millis(500),
            max: Duration::from_secs(15),
            jitter: 0.5,
        }
    }
}

impl Backoff {
    /// The wait before retry number `retry` (0 for the first), where `unit` is a random
    /// draw from 0 (the shortest wait) to 1 (the longest).
    ///
    /// ```
    /// use std::time::Duration;
    /// use jumpgate_protocol::reconnect::Backoff;
    ///
    /// let backoff = Backoff::default(); // 0.5 s doubling to 15 s, ±50 %
    /// assert_eq!(backoff.delay(0, 0.5), Duration::from_millis(500));
    /// assert_eq!(backoff.delay(2, 0.5), Duration::from_secs(2));
    /// assert_eq!(backoff.delay(2, 0.0), Duration::from_secs(1), "the shortest draw");
    /// assert_eq!(backoff.delay(30, 0.5), Duration::from_secs(15), "capped");
    /// ```
    pub fn delay(&self, retry: u32, unit: f64) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        let base = self.first.saturating_mul(factor).min(self.max);
        let jitter = self.jitter.clamp(0.0, 1.0);
        base.mul_f64(1.0 - jitter + 2.0 * jitter * unit.clamp(0.0, 1.0))
    }

    fn random_delay(&self, retry: u32) -> Duration {
        self.delay(retry, rand::random())
    }
}

/// How persistently a [`ReconnectingClient`] tries again, and when it gives up.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconnectPolicy {
    /// The waits between connection attempts, and between retries of a request the
    /// server refused with a retryable code.
    pub backoff: Backoff,
    /// Connection attempts in one outage, and retries of one request, before giving up.
    pub max_attempts: u32,
    /// How long one outage may last, counted from the lost connection, before giving up.
    pub give_up_after: Duration,
    /// The limit on each step of a reconnection: opening the WebSocket, `welcome`, the
    /// answer to re-entering the room.
    pub step_timeout: Duration,
    /// Messages sent per second at most on one connection. It should stay below the
    /// server's limit (40 by default), because a message dropped for the rate limit is
    /// refused without its `seq`, so nobody can tell which one to send again.
    pub messages_per_second: usize,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            backoff: Backoff::default(),
            max_attempts: 10,
            give_up_after: Duration::from_secs(120),
            step_timeout: Duration::from_secs(10),
            messages_per_second: 30,
        }
    }
}

/// The room a connection is in, as far as coming back to it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Room {
    /// A lobby, entered as a player (`seated`) or a spectator.
    Lobby {
        /// The lobby's code.
        code: String,
        /// The invite of an invite-only lobby, from its `state`.
        invite: Option<String>,
        /// Whether this identity holds one of the seats.
        seated: bool,
    },
    /// A solo game, by its id (`S` and a code).
    Solo {
        /// The game's id, as `solo_state.id` gives it.
        id: String,
    },
}

impl Room {
    /// What a connection names in `?room=` to reach the server instance holding it.
    pub fn route(&self) -> &str {
        match self {
            Room::Lobby { code, .. } => code,
            Room::Solo { id } => id,
        }
    }

    /// The request that enters the room again on a new connection. A player whose
    /// `leave` is still unanswered sends `watch`, which gives back a seat the identity
    /// still holds but never takes a free one, so the re-sent `leave` cannot concede a
    /// series that the first one did not.
    fn reentry(&self, seq: u32, leaving: bool) -> ClientMessage {
        match self {
            Room::Lobby {
                code,
                invite,
                seated: true,
            } if !leaving => ClientMessage::JoinLobby {
                seq,
                code: code.clone(),
                invite: invite.clone(),
            },
            Room::Lobby { code, invite, .. } => ClientMessage::Watch {
                seq,
                code: code.clone(),
                invite: invite.clone(),
            },
            Room::Solo { .. } => ClientMessage::ResumeSolo { seq },
        }
    }
}

/// What became of the room when the client reconnected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reentry {
    /// The client was in no room.
    NoRoom,
    /// The client is back in the room (a player in the same seat).
    Rejoined(Room),
    /// The server refused to let the client back in (say, `unknown_lobby` from a
    /// server that lost its lobbies): the client is now in no room.
    Lost {
        /// The room the client was in.
        room: Room,
        /// The server's answer to re-entering it.
        refusal: Refusal,
    },
}

/// Why a connection was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disconnect {
    /// The connection closed with this code: 1001 for a server restart,
    /// [`CLOSE_ROOM_MOVED`] for a room that moved to another instance, 1006 for a
    /// connection that dropped.
    Closed {
        /// The close code (1006 when the connection dropped without one).
        code: u16,
        /// The close frame's reason text.
        reason: String,
    },
    /// The server answered `room_unavailable`: the room was between instances.
    RoomUnavailable,
    /// Some other failure of the socket, described.
    Failed(String),
}

impl From<&ClientError> for Disconnect {
    fn from(err: &ClientError) -> Self {
        match err {
            ClientError::Closed { code, reason } => Disconnect::Closed {
                code: *code,
                reason: reason.clone(),
            },
            other => Disconnect::Failed(other.to_string()),
        }
    }
}

impl fmt::Display for Disconnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disconnect::Closed { code, reason } => {
                write!(f, "connection closed with code {code} ({reason:?})")
            }
            Disconnect::RoomUnavailable => f.write_str("the room was unavailable"),
            Disconnect::Failed(why) => f.write_str(why),
        }
    }
}

/// A reconnection that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconnection {
    /// Why the previous connection ended.
    pub cause: Disconnect,
    /// Connections tried, 1 when the first one worked.
    pub attempts: u32,
    /// Whether the client is back in its room.
    pub room: Reentry,
    /// Requests that were waiting for an answer and were not sent again, because the
    /// server does not de-duplicate them: moves and undos in a solo game (PROTOCOL.md
    /// section 14). They get no answer; the fresh `solo_state` that follows shows
    /// whether they took effect.
    pub not_resent: Vec<ClientMessage>,
    /// When the room was lost ([`Reentry::Lost`]): the requests that were waiting for
    /// an answer and acted in it (a move, a resignation, ...). They were not sent again
    /// and get no answer: the room they were for is gone.
    pub lost_with_room: Vec<ClientMessage>,
}

/// What [`ReconnectingClient::recv`] delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "messages are nearly every event; boxing them would cost an allocation each"
)]
pub enum Event {
    /// A message from the server.
    Message(ServerMessage),
    /// The connection was replaced. Messages from the new connection follow, starting
    /// with the room's fresh `state` or `solo_state` when the room was re-entered.
    Reconnected(Reconnection),
}

/// Why a [`ReconnectingClient`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReconnectError {
    /// The first connection could not be opened or greeted.
    #[error("could not connect: {0}")]
    Connect(ClientError),
    /// Reconnecting failed `attempts` times in a row, or took longer than the policy
    /// allows.
    #[error("gave up reconnecting after {attempts} attempts; the last failure: {last_failure}")]
    GaveUp {
        /// Connections tried in the outage (or refusals of one request).
        attempts: u32,
        /// What went wrong the last time.
        last_failure: String,
    },
    /// The server will not take this client back: a close with 1002 (say, after
    /// `unsupported_version`), 1007 or 1009 (the client sent what it must not), `hello`
    /// refused (`invalid_token`), an HTTP 4xx answer to the upgrade, or the wrong
    /// subprotocol.
    #[error("the server will not take this client back: {0}")]
    Rejected(ClientError),
    /// A new connection was welcomed as someone else.
    #[error("reconnected as {found} instead of {expected}")]
    IdentityChanged {
        /// The identity id the client had.
        expected: String,
        /// The identity id the new connection was welcomed as.
        found: String,
    },
    /// The server sent a message that could not be decoded. The connection is still
    /// up, and `recv` may be called again.
    #[error("undecodable message from the server: {0}")]
    Decode(DecodeError),
    /// An earlier call ended the client with one of the errors above.
    #[error("the client has stopped after an earlier error")]
    Ended,
}

/// A Jumpgate client that reconnects, re-enters its room and re-sends its unanswered
/// requests by itself.
///
/// Use it like [`Client`]: take sequence numbers from [`next_seq`](Self::next_seq) (or
/// use [`request`](Self::request)), [`send`](Self::send) messages and
/// [`recv`](Self::recv) what comes back. Its own `hello`s and re-entries use the same
/// counter, so `seq` never repeats. Answers to requests arrive as ordinary messages,
/// except refusals with a retryable code (`storage_unavailable`, `room_unavailable`,
/// `rate_limited` with a `seq`), which it handles by sending the request again after a
/// back-off (on a new connection naming the room, for `room_unavailable`); only once a
/// request has been refused more than [`ReconnectPolicy::max_attempts`] times does its
/// last refusal reach the user. A `rate_limited` without `seq` names no request, so it
/// is passed on as it is; keeping under [`ReconnectPolicy::messages_per_second`] is
/// what prevents it.
#[derive(Debug)]
pub struct ReconnectingClient {
    base_url: String,
    subprotocol: Subprotocol,
    client_name: String,
    policy: ReconnectPolicy,
    identity: Identity,
    token: String,
    last_seq: u32,
    room: Option<Room>,
    requests: Requests,
    /// The live connection; `None` during an outage and after the end.
    connection: Option<Client>,
    outage: Option<Outage>,
    /// How long the latest `shutdown` notice asked to wait, jitter added.
    notice: Option<Duration>,
    pacer: SendPacer,
    ready: VecDeque<Event>,
    reconnections: u32,
    ended: bool,
}

impl ReconnectingClient {
    /// Opens a WebSocket to `url` (e.g. `ws://host/ws`; later connections replace or add
    /// its `room` parameter) speaking `subprotocol` (an [`Encoding`](crate::Encoding) alone means
    /// protocol 1 in it), sends `hello` with `token` (none for a new guest) and waits
    /// for `welcome`. This first connection is tried once.
    pub async fn connect(
        url: &str,
        subprotocol: impl Into<Subprotocol>,
        token: Option<String>,
        client_name: &str,
        policy: ReconnectPolicy,
    ) -> Result<ReconnectingClient, ReconnectError> {
        Self::connect_as(url, subprotocol, token, client_name, None, policy).await
    }

    /// [`connect`](Self::connect), asking in the first `hello` for the guest display
    /// name `name` (later connections come back with the token, which keeps it).
    pub async fn connect_as(
        url: &str,
        subprotocol: impl Into<Subprotocol>,
        token: Option<String>,
        client_name: &str,
        name: Option<String>,
        policy: ReconnectPolicy,
    ) -> Result<ReconnectingClient, ReconnectError> {
        let subprotocol = subprotocol.into();
        let mut connection = Client::connect(url, subprotocol)
            .await
            .map_err(ReconnectError::Connect)?;
        let mut pacer = SendPacer::new(policy.messages_per_second);
        pacer.next_slot(Instant::now());
        let greeting = connection
            .greet_as(token, client_name, name)
            .await
            .map_err(ReconnectError::Connect)?;
        Ok(ReconnectingClient {
            base_url: url.to_owned(),
            subprotocol,
            client_name: client_name.to_owned(),
            policy,
            identity: greeting.identity,
            token: greeting.token,
            last_seq: connection.last_seq(),
            room: None,
            requests: Requests::default(),
            connection: Some(connection),
            outage: None,
            notice: None,
            pacer,
            ready: VecDeque::new(),
            reconnections: 0,
            ended: false,
        })
    }

    /// Who the server knows this client as.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The latest token from `welcome`, to come back as this identity later.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The protocol version and encoding of every connection this client opens.
    pub fn subprotocol(&self) -> Subprotocol {
        self.subprotocol
    }

    /// The room the client is in, as far as it knows.
    pub fn room(&self) -> Option<&Room> {
        self.room.as_ref()
    }

    /// How many times the connection has been replaced.
    pub fn reconnections(&self) -> u32 {
        self.reconnections
    }

    /// A fresh sequence number, one more than the last one used on any connection.
    pub fn next_seq(&mut self) -> u32 {
        self.last_seq = self.last_seq.wrapping_add(1);
        self.last_seq
    }

    /// Sends a message built from the next sequence number, and returns that number.
    pub async fn request(
        &mut self,
        build: impl FnOnce(u32) -> ClientMessage,
    ) -> Result<u32, ReconnectError> {
        let seq = self.next_seq();
        self.send(build(seq)).await?;
        Ok(seq)
    }

    /// Sends a request and remembers it until it is answered. It waits when needed to
    /// stay within [`ReconnectPolicy::messages_per_second`]. During an outage the
    /// request waits for the next connection; this fails only once the client has
    /// stopped.
    pub async fn send(&mut self, message: ClientMessage) -> Result<(), ReconnectError> {
        if self.ended {
            return Err(ReconnectError::Ended);
        }
        let repeatable = is_repeatable(&message, self.room.as_ref());
        self.requests.sent(message.clone(), repeatable);
        self.transmit(&message).await
    }

    /// Waits for the next message or reconnection.
    ///
    /// Reconnecting happens inside this call, so keep calling it. It is cancel safe in
    /// that a cancelled call loses no request: a reconnection it interrupted starts
    /// again on the next call.
    pub async fn recv(&mut self) -> Result<Event, ReconnectError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(event);
            }
            if self.ended {
                return Err(ReconnectError::Ended);
            }
            let Some(connection) = self.connection.as_mut() else {
                self.reconnect().await?;
                continue;
            };
            let retry_at = self.requests.next_retry();
            let received = tokio::select! {
                received = connection.recv() => Some(received),
                () = sleep_until_some(retry_at) => None,
            };
            match received {
                None => self.resend_due().await?,
                Some(Ok(message)) => {
                    if let Some(message) = self.observe(message) {
                        return Ok(Event::Message(message));
                    }
                }
                // Clients ignore message types they do not know.
                Some(Err(ClientError::Decode(DecodeError::UnknownType { .. }))) => {}
                Some(Err(ClientError::Decode(err))) => return Err(ReconnectError::Decode(err)),
                Some(Err(err)) => self.lose_connection(err)?,
            }
        }
    }

    /// Closes the connection with code 1000; nothing is re-sent.
    pub async fn close(mut self) -> Result<(), ClientError> {
        match self.connection.take() {
            Some(connection) => connection.close().await,
            None => Ok(()),
        }
    }

    /// Sends on the current connection, within the rate. Without a connection, or when
    /// the send fails, the message waits for the next connection like every unanswered
    /// request.
    async fn transmit(&mut self, message: &ClientMessage) -> Result<(), ReconnectError> {
        let Some(connection) = self.connection.as_mut() else {
            return Ok(());
        };
        tokio::time::sleep_until(self.pacer.next_slot(Instant::now())).await;
        match connection.send(message).await {
            Ok(()) => Ok(()),
            Err(err) => self.lose_connection(err),
        }
    }

    async fn resend_due(&mut self) -> Result<(), ReconnectError> {
        for message in self.requests.due(Instant::now()) {
            self.transmit(&message).await?;
            // Only now, so that a cancelled call sends it on the next one.
            self.requests.sent_again(message.seq());
        }
        Ok(())
    }

    /// Keeps the books on a message from the server; returns it unless it is a
    /// retryable refusal that this client handles itself.
    fn observe(&mut self, message: ServerMessage) -> Option<ServerMessage> {
        match &message {
            ServerMessage::Ack { seq } => {
                // A solo game's `leave` is answered by `ack` alone, without `left`.
                if let Some(ClientMessage::Leave { .. }) = self.requests.answered(*seq) {
                    self.room = None;
                }
            }
            ServerMessage::Error {
                seq: Some(seq),
                code,
                ..
            } => {
                if code.is_retryable() && self.retry_later(*seq, *code) {
                    return None;
                }
                self.requests.answered(*seq);
            }
            // Only the connections in a room receive its states.
            ServerMessage::State(state) => {
                let seated = state
                    .players
                    .iter()
                    .flatten()
                    .any(|player| player.id == self.identity.id);
                self.room = Some(Room::Lobby {
                    code: state.code.clone(),
                    invite: state.invite.clone(),
                    seated,
                });
            }
            // Protocol 2's whole room, and the one event that can move seats.
            ServerMessage::Snapshot(snapshot) => {
                let seated = snapshot
                    .players
                    .iter()
                    .flatten()
                    .any(|player| player.id == self.identity.id);
                self.room = Some(Room::Lobby {
                    code: snapshot.code.clone(),
                    invite: snapshot.invite.clone(),
                    seated,
                });
            }
            ServerMessage::Changed(changed) => {
                if let (Some(players), Some(Room::Lobby { seated, .. })) =
                    (&changed.room.players, self.room.as_mut())
                {
                    *seated = players
                        .iter()
                        .flatten()
                        .any(|player| player.id == self.identity.id);
                }
            }
            ServerMessage::Moved(_) => {}
            ServerMessage::SoloState(solo) => {
                self.room = Some(Room::Solo {
                    id: solo.id.clone(),
                });
            }
            ServerMessage::Left { .. } => self.room = None,
            // Answers that carry the request's `seq` instead of an `ack`.
            ServerMessage::LobbyInfo { seq, .. } | ServerMessage::MyGames { seq, .. } => {
                self.requests.answered(*seq);
            }
            ServerMessage::Shutdown {
                reconnect_after_ms, ..
            } => {
                // At least the asked-for wait, plus up to as much again so that a
                // restart's clients do not all come back at once.
                let wait = Duration::from_millis(u64::from(*reconnect_after_ms));
                self.notice = Some(wait.mul_f64(1.0 + rand::random::<f64>()));
            }
            ServerMessage::Welcome { .. } | ServerMessage::Error { seq: None, .. } => {}
        }
        Some(message)
    }

    /// Arranges for request `seq` to go again after a retryable refusal. False when it
    /// is not a request of ours or has been refused too often, so the refusal should
    /// reach the user.
    fn retry_later(&mut self, seq: u32, code: ErrorCode) -> bool {
        let Some(refusals) = self.requests.refused_for_now(seq) else {
            return false;
        };
        if refusals > self.policy.max_attempts {
            return false;
        }
        let wait = self.policy.backoff.random_delay(refusals - 1);
        if code == ErrorCode::RoomUnavailable {
            // The room is between instances: come back on a new connection, which
            // the load balancer routes by the room's name.
            self.begin_outage(Disconnect::RoomUnavailable, wait);
        } else {
            self.requests.retry_at(seq, Instant::now() + wait);
        }
        true
    }

    /// Starts an outage after `err`, or ends the client when `err` means the server
    /// will not take it back.
    fn lose_connection(&mut self, err: ClientError) -> Result<(), ReconnectError> {
        if !is_transient(&err) {
            self.end();
            return Err(ReconnectError::Rejected(err));
        }
        let cause = Disconnect::from(&err);
        let wait = match self.notice.take() {
            Some(wait) => wait,
            // The server has handed the room over already: come back at once.
            None if matches!(
                cause,
                Disconnect::Closed {
                    code: CLOSE_ROOM_MOVED,
                    ..
                }
            ) =>
            {
                Duration::ZERO
            }
            None => self.policy.backoff.random_delay(0),
        };
        self.begin_outage(cause, wait);
        Ok(())
    }

    fn begin_outage(&mut self, cause: Disconnect, wait: Duration) {
        self.connection = None;
        let now = Instant::now();
        self.outage = Some(Outage {
            last_failure: cause.to_string(),
            cause,
            since: now,
            not_before: now + wait,
            attempts: 0,
            not_resent: Vec::new(),
        });
    }

    fn end(&mut self) {
        self.ended = true;
        self.connection = None;
        self.outage = None;
    }

    /// Tries new connections, with back-off, until one is back in the room or the
    /// policy says to give up.
    async fn reconnect(&mut self) -> Result<(), ReconnectError> {
        loop {
            let outage = self
                .outage
                .as_mut()
                .expect("without a connection there is an outage");
            let deadline = outage.since + self.policy.give_up_after;
            if outage.attempts >= self.policy.max_attempts || outage.not_before > deadline {
                let err = ReconnectError::GaveUp {
                    attempts: outage.attempts,
                    last_failure: outage.last_failure.clone(),
                };
                self.end();
                return Err(err);
            }
            tokio::time::sleep_until(outage.not_before).await;
            outage.attempts += 1;
            match self.attempt().await {
                Ok(()) => return Ok(()),
                Err(Failure::Final(err)) => {
                    self.end();
                    return Err(err);
                }
                Err(Failure::Retry(why)) => {
                    let outage = self.outage.as_mut().expect("still in the outage");
                    outage.last_failure = why;
                    outage.not_before =
                        Instant::now() + self.policy.backoff.random_delay(outage.attempts);
                }
            }
        }
    }

    /// One reconnection: a new socket, `hello`, re-entering the room, re-sending.
    async fn attempt(&mut self) -> Result<(), Failure> {
        let step = self.policy.step_timeout;
        let url = room_url(&self.base_url, self.route().as_deref());
        let mut connection = within(step, Client::connect(&url, self.subprotocol)).await?;
        self.pacer.reset();
        self.pacer.next_slot(Instant::now());
        connection.set_last_seq(self.last_seq);
        let greeting = within(
            step,
            connection.greet(Some(self.token.clone()), &self.client_name),
        )
        .await?;
        self.last_seq = connection.last_seq();
        if greeting.identity.id != self.identity.id {
            return Err(Failure::Final(ReconnectError::IdentityChanged {
                expected: self.identity.id.clone(),
                found: greeting.identity.id,
            }));
        }
        self.token = greeting.token;

        let mut early = Vec::new();
        let mut lost_with_room = Vec::new();
        let reentry = match self.room.clone() {
            None => Reentry::NoRoom,
            Some(room) => {
                let seq = self.next_seq();
                let enter = room.reentry(seq, self.requests.leaving());
                tokio::time::sleep_until(self.pacer.next_slot(Instant::now())).await;
                within(step, connection.send(&enter)).await?;
                match within(step, connection.answer(seq, |m| early.push(m))).await? {
                    Ok(()) => Reentry::Rejoined(room),
                    Err(refusal) if refusal.code.is_retryable() => {
                        return Err(Failure::Retry(format!(
                            "re-entering {}: {refusal}",
                            room.route()
                        )));
                    }
                    Err(refusal) => {
                        self.room = None;
                        lost_with_room = self.requests.drop_room_actions();
                        Reentry::Lost { room, refusal }
                    }
                }
            }
        };

        let outage = self.outage.as_mut().expect("reconnecting in an outage");
        outage.not_resent.extend(self.requests.drop_unrepeatable());
        for message in self.requests.resend_all() {
            tokio::time::sleep_until(self.pacer.next_slot(Instant::now())).await;
            within(step, connection.send(&message)).await?;
        }

        let outage = self.outage.take().expect("reconnecting in an outage");
        self.connection = Some(connection);
        self.reconnections += 1;
        self.ready.push_back(Event::Reconnected(Reconnection {
            cause: outage.cause,
            attempts: outage.attempts,
            room: reentry,
            not_resent: outage.not_resent,
            lost_with_room,
        }));
        for message in early {
            if let Some(message) = self.observe(message) {
                self.ready.push_back(Event::Message(message));
            }
        }
        Ok(())
    }

    /// The room a new connection should name: the one the client is in, else the one
    /// an unanswered `join_lobby` or `watch` is for.
    fn route(&self) -> Option<String> {
        let route = match &self.room {
            Some(room) => Some(room.route()),
            None => self.requests.entering(),
        };
        route.map(|route| route.trim().to_ascii_uppercase())
    }
}

/// Whether `message` acts in the room the client is in (a move, a draw offer, a
/// resignation, leaving it, ...), rather than entering one or asking the server.
fn acts_in_room(message: &ClientMessage) -> bool {
    matches!(
        message,
        ClientMessage::Leave { .. }
            | ClientMessage::Move { .. }
            | ClientMessage::OfferDraw { .. }
            | ClientMessage::AcceptDraw { .. }
            | ClientMessage::DeclineDraw { .. }
            | ClientMessage::Resign { .. }
            | ClientMessage::NextRound { .. }
            | ClientMessage::Rematch { .. }
            | ClientMessage::EndMatch { .. }
            | ClientMessage::Resync { .. }
            | ClientMessage::Undo { .. }
            | ClientMessage::ClaimForfeit { .. }
    )
}

/// An outage: the time from a lost connection to a working new one.
#[derive(Debug)]
struct Outage {
    cause: Disconnect,
    since: Instant,
    /// When the next attempt may start.
    not_before: Instant,
    attempts: u32,
    last_failure: String,
    not_resent: Vec<ClientMessage>,
}

/// How one reconnection attempt failed.
#[derive(Debug)]
enum Failure {
    /// Worth another try after a back-off.
    Retry(String),
    /// The client must stop.
    Final(ReconnectError),
}

impl From<ClientError> for Failure {
    fn from(err: ClientError) -> Self {
        if is_transient(&err) {
            Failure::Retry(err.to_string())
        } else {
            Failure::Final(ReconnectError::Rejected(err))
        }
    }
}

/// Runs one step of a reconnection within `limit`.
async fn within<T>(
    limit: Duration,
    step: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, step).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(err.into()),
        Err(_) => Err(Failure::Retry(format!("no answer within {limit:?}"))),
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether trying again may work after `err`.
fn is_transient(err: &ClientError) -> bool {
    match err {
        ClientError::Closed { code, .. } => close_means_reconnect(*code),
        ClientError::WebSocket(_) => true,
        // A load balancer with no instance ready answers 502 or 503; a 400 means the
        // server speaks none of our subprotocols.
        ClientError::Refused { status } => *status >= 500 || *status == 408 || *status == 429,
        ClientError::Subprotocol { .. }
        | ClientError::HelloRefused(_)
        | ClientError::Decode(_)
        | ClientError::NotWebSocketUrl(_) => false,
    }
}

/// Whether a request may be sent again without its first copy's answer. The server
/// applies a repeated lobby action once, but not a solo move or undo (PROTOCOL.md
/// section 14).
fn is_repeatable(message: &ClientMessage, room: Option<&Room>) -> bool {
    let in_solo_game = matches!(room, Some(Room::Solo { .. }));
    !(in_solo_game
        && matches!(
            message,
            ClientMessage::Move { .. } | ClientMessage::Undo { .. }
        ))
}

/// `base` with its `room` query parameter set to `room`; `base` as it is without one.
fn room_url(base: &str, room: Option<&str>) -> String {
    let Some(room) = room else {
        return base.to_owned();
    };
    let (path, query) = base.split_once('?').unwrap_or((base, ""));
    let named = format!("room={room}");
    let params: Vec<&str> = query
        .split('&')
        .filter(|param| !param.is_empty() && *param != "room" && !param.starts_with("room="))
        .chain([named.as_str()])
        .collect();
    format!("{path}?{}", params.join("&"))
}

/// The requests sent and not yet answered, by `seq`.
#[derive(Debug, Default)]
struct Requests {
    unanswered: BTreeMap<u32, Unanswered>,
}

#[derive(Debug)]
struct Unanswered {
    message: ClientMessage,
    repeatable: bool,
    /// Retryable refusals so far.
    refusals: u32,
    /// When to send it again on the same connection, after a retryable refusal.
    retry_at: Option<Instant>,
}

impl Requests {
    fn sent(&mut self, message: ClientMessage, repeatable: bool) {
        self.unanswered.insert(
            message.seq(),
            Unanswered {
                message,
                repeatable,
                refusals: 0,
                retry_at: None,
            },
        );
    }

    /// Forgets request `seq`, answered at last; returns it if it was ours.
    fn answered(&mut self, seq: u32) -> Option<ClientMessage> {
        self.unanswered.remove(&seq).map(|request| request.message)
    }

    /// Counts a retryable refusal of request `seq`; returns how many it has had.
    fn refused_for_now(&mut self, seq: u32) -> Option<u32> {
        let request = self.unanswered.get_mut(&seq)?;
        request.refusals += 1;
        Some(request.refusals)
    }

    fn retry_at(&mut self, seq: u32, at: Instant) {
        if let Some(request) = self.unanswered.get_mut(&seq) {
            request.retry_at = Some(at);
        }
    }

    fn next_retry(&self) -> Option<Instant> {
        self.unanswered.values().filter_map(|r| r.retry_at).min()
    }

    /// The requests whose retry time has come, in `seq` order.
    fn due(&self, now: Instant) -> Vec<ClientMessage> {
        self.unanswered
            .values()
            .filter(|request| request.retry_at.is_some_and(|at| at <= now))
            .map(|request| request.message.clone())
            .collect()
    }

    /// Notes that request `seq` went again after its retry time came.
    fn sent_again(&mut self, seq: u32) {
        if let Some(request) = self.unanswered.get_mut(&seq) {
            request.retry_at = None;
        }
    }

    /// Forgets the requests that act in the room the client was in, and returns them:
    /// that room is gone, and the server would only answer them `not_in_lobby`.
    fn drop_room_actions(&mut self) -> Vec<ClientMessage> {
        let (drop, keep) = std::mem::take(&mut self.unanswered)
            .into_iter()
            .partition(|(_, request)| acts_in_room(&request.message));
        self.unanswered = keep;
        drop.into_values().map(|request| request.message).collect()
    }

    /// Forgets the requests that must not be sent again, and returns them.
    fn drop_unrepeatable(&mut self) -> Vec<ClientMessage> {
        let (keep, drop) = std::mem::take(&mut self.unanswered)
            .into_iter()
            .partition(|(_, request)| request.repeatable);
        self.unanswered = keep;
        drop.into_values().map(|request| request.message).collect()
    }

    /// Every unanswered request, in `seq` order, for a new connection.
    fn resend_all(&mut self) -> Vec<ClientMessage> {
        self.unanswered
            .values_mut()
            .map(|request| {
                request.retry_at = None;
                request.message.clone()
            })
            .collect()
    }

    /// Whether a `leave` is unanswered.
    fn leaving(&self) -> bool {
        self.unanswered
            .values()
            .any(|request| matches!(request.message, ClientMessage::Leave { .. }))
    }

    /// The lobby code of the newest unanswered `join_lobby` or `watch`.
    fn entering(&self) -> Option<&str> {
        self.unanswered
            .values()
            .rev()
            .find_map(|request| match &request.message {
                ClientMessage::JoinLobby { code, .. } | ClientMessage::Watch { code, .. } => {
                    Some(code.as_str())
                }
                _ => None,
            })
    }
}

/// Spaces one connection's messages so that no second holds more than `per_second`.
#[derive(Debug)]
struct SendPacer {
    per_second: usize,
    recent: VecDeque<Instant>,
}

impl SendPacer {
    fn new(per_second: usize) -> SendPacer {
        SendPacer {
            per_second: per_second.max(1),
            recent: VecDeque::new(),
        }
    }

    /// When the next message may go, given the time `now`; it counts as sent then.
    fn next_slot(&mut self, now: Instant) -> Instant {
        let slot = if self.recent.len() >= self.per_second {
            let oldest = self.recent.pop_front().expect("the window is full");
            now.max(oldest + Duration::from_secs(1))
        } else {
            now
        };
        self.recent.push_back(slot);
        slot
    }

    /// Starts counting afresh, for a new connection.
    fn reset(&mut self) {
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn moves(seq: u32, notation: &str) -> ClientMessage {
        ClientMessage::Move {
            seq,
            notation: Some(notation.into()),
            path: None,
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter_around_it() {
        let backoff = Backoff::default();
        let middle: Vec<u64> = (0..8)
            .map(|retry| backoff.delay(retry, 0.5).as_millis() as u64)
            .collect();
        assert_eq!(middle, [500, 1000, 2000, 4000, 8000, 15000, 15000, 15000]);
        assert_eq!(backoff.delay(0, 0.0), ms(250));
        assert_eq!(backoff.delay(0, 1.0), ms(750));
        assert_eq!(backoff.delay(6, 0.0), ms(7500));
        assert_eq!(backoff.delay(6, 1.0), ms(22500));
        // Huge retry counts neither overflow nor pass the cap.
        assert_eq!(backoff.delay(u32::MAX, 0.5), ms(15000));
        for retry in 0..12 {
            let delay = backoff.random_delay(retry);
            let base = backoff.delay(retry, 0.5);
            assert!(delay >= base / 2 && delay <= base * 3 / 2, "{delay:?}");
        }
    }

    #[test]
    fn backoff_without_jitter_is_exact() {
        let backoff = Backoff {
            first: ms(100),
            max: ms(300),
            jitter: 0.0,
        };
        let delays: Vec<Duration> = (0..4).map(|r| backoff.delay(r, 0.9)).collect();
        assert_eq!(delays, [ms(100), ms(200), ms(300), ms(300)]);
    }

    #[test]
    fn every_close_but_1002_1007_and_1009_means_reconnect() {
        for code in [1000, 1001, 1005, 1006, 1008, 1011, 4000, CLOSE_ROOM_MOVED] {
            assert!(close_means_reconnect(code), "{code}");
        }
        for code in [1002, 1007, 1009] {
            assert!(!close_means_reconnect(code), "{code}");
        }
    }

    #[test]
    fn transient_failures_are_tried_again_and_refusals_are_not() {
        let closed = |code| ClientError::Closed {
            code,
            reason: String::new(),
        };
        assert!(is_transient(&closed(1006)));
        assert!(is_transient(&closed(CLOSE_ROOM_MOVED)));
        assert!(!is_transient(&closed(1002)));
        assert!(is_transient(&ClientError::Refused { status: 503 }));
        assert!(!is_transient(&ClientError::Refused { status: 400 }));
        assert!(!is_transient(&ClientError::Subprotocol {
            expected: "jumpgate.v1.json",
            chosen: None,
        }));
        assert!(!is_transient(&ClientError::HelloRefused(Refusal {
            code: ErrorCode::InvalidToken,
            message: "the token has expired".into(),
        })));
    }

    #[test]
    fn room_url_names_the_room_once() {
        assert_eq!(room_url("ws://h/ws", None), "ws://h/ws");
        assert_eq!(
            room_url("ws://h/ws", Some("K7QP2DXM")),
            "ws://h/ws?room=K7QP2DXM"
        );
        assert_eq!(
            room_url("ws://h/ws?room=OLDCODE2&x=1", Some("S7K2QP4XZ")),
            "ws://h/ws?x=1&room=S7K2QP4XZ"
        );
        assert_eq!(room_url("ws://h/ws?room=OLD", None), "ws://h/ws?room=OLD");
    }

    #[test]
    fn a_room_is_entered_again_as_it_was_held() {
        let lobby = |seated| Room::Lobby {
            code: "K7QP2DXM".into(),
            invite: Some("inv".into()),
            seated,
        };
        assert_eq!(
            lobby(true).reentry(7, false),
            ClientMessage::JoinLobby {
                seq: 7,
                code: "K7QP2DXM".into(),
                invite: Some("inv".into()),
            }
        );
        let watch = ClientMessage::Watch {
            seq: 7,
            code: "K7QP2DXM".into(),
            invite: Some("inv".into()),
        };
        assert_eq!(lobby(false).reentry(7, false), watch);
        // A player whose leave is unanswered must not take a free seat again.
        assert_eq!(lobby(true).reentry(7, true), watch);
        let solo = Room::Solo {
            id: "S7K2QP4XZ".into(),
        };
        assert_eq!(solo.reentry(7, false), ClientMessage::ResumeSolo { seq: 7 });
        assert_eq!(solo.route(), "S7K2QP4XZ");
    }

    #[test]
    fn answered_requests_are_forgotten_and_the_rest_resent_in_order() {
        let mut requests = Requests::default();
        requests.sent(moves(5, "11-15"), true);
        requests.sent(ClientMessage::Ping { seq: 3 }, true);
        requests.sent(ClientMessage::OfferDraw { seq: 4 }, true);
        assert_eq!(
            requests.answered(4),
            Some(ClientMessage::OfferDraw { seq: 4 })
        );
        assert_eq!(requests.answered(4), None);
        assert!(requests.drop_unrepeatable().is_empty());
        assert_eq!(
            requests.resend_all(),
            [ClientMessage::Ping { seq: 3 }, moves(5, "11-15")]
        );
        // Re-sending answers nothing: they stay until answered.
        assert_eq!(requests.resend_all().len(), 2);
    }

    #[test]
    fn solo_moves_and_undos_are_not_resent() {
        let solo = Room::Solo {
            id: "S7K2QP4XZ".into(),
        };
        let lobby = Room::Lobby {
            code: "K7QP2DXM".into(),
            invite: None,
            seated: true,
        };
        assert!(!is_repeatable(&moves(1, "11-15"), Some(&solo)));
        assert!(!is_repeatable(&ClientMessage::Undo { seq: 1 }, Some(&solo)));
        assert!(is_repeatable(
            &ClientMessage::Resync { seq: 1, since: 0 },
            Some(&solo)
        ));
        assert!(is_repeatable(&moves(1, "11-15"), Some(&lobby)));
        assert!(is_repeatable(&moves(1, "11-15"), None));

        let mut requests = Requests::default();
        requests.sent(moves(1, "11-15"), false);
        requests.sent(ClientMessage::Resync { seq: 2, since: 0 }, true);
        assert_eq!(requests.drop_unrepeatable(), [moves(1, "11-15")]);
        assert_eq!(
            requests.resend_all(),
            [ClientMessage::Resync { seq: 2, since: 0 }]
        );
    }

    #[test]
    fn refused_requests_come_due_at_their_retry_time() {
        let now = Instant::now();
        let mut requests = Requests::default();
        requests.sent(moves(1, "11-15"), true);
        requests.sent(ClientMessage::Ping { seq: 2 }, true);
        assert_eq!(requests.next_retry(), None);
        assert_eq!(requests.refused_for_now(1), Some(1));
        assert_eq!(requests.refused_for_now(1), Some(2));
        assert_eq!(requests.refused_for_now(9), None, "not ours");
        requests.retry_at(1, now + ms(500));
        assert_eq!(requests.next_retry(), Some(now + ms(500)));
        assert!(requests.due(now).is_empty());
        assert_eq!(requests.due(now + ms(500)), [moves(1, "11-15")]);
        requests.sent_again(1);
        assert_eq!(requests.next_retry(), None, "sent once");
        // Still unanswered until the answer comes.
        assert_eq!(requests.answered(1), Some(moves(1, "11-15")));
    }

    #[test]
    fn unanswered_entries_and_leaves_steer_the_reconnection() {
        let mut requests = Requests::default();
        assert_eq!(requests.entering(), None);
        assert!(!requests.leaving());
        requests.sent(
            ClientMessage::JoinLobby {
                seq: 1,
                code: "AAAAAAAA".into(),
                invite: None,
            },
            true,
        );
        requests.sent(
            ClientMessage::Watch {
                seq: 2,
                code: "BBBBBBBB".into(),
                invite: None,
            },
            true,
        );
        requests.sent(ClientMessage::Leave { seq: 3 }, true);
        assert_eq!(requests.entering(), Some("BBBBBBBB"), "the newest");
        assert!(requests.leaving());
    }

    #[test]
    fn the_pacer_keeps_each_second_under_the_limit() {
        let start = Instant::now();
        let mut pacer = SendPacer::new(3);
        let slots: Vec<Duration> = (0..7).map(|_| pacer.next_slot(start) - start).collect();
        assert_eq!(
            slots,
            [ms(0), ms(0), ms(0), ms(1000), ms(1000), ms(1000), ms(2000)]
        );
        // Later messages go at once when the window has room.
        let later = start + ms(5000);
        assert_eq!(pacer.next_slot(later), later);
        pacer.reset();
        for _ in 0..3 {
            assert_eq!(pacer.next_slot(later), later);
        }
    }
}
