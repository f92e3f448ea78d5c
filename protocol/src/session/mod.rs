//! A session with a Jumpgate server: requests that return their answers, the room or
//! solo game kept up to date, and reconnection handled out of sight.
//!
//! [`Session::connect`] greets the server and spawns a **driver task** that owns the
//! connection (a [`ReconnectingClient`]): it reads every message, applies it to the
//! session's copy of the room or solo game, hands each answer to the request that is
//! waiting for it, and reconnects by itself. The [`Session`] is a cheap, cloneable
//! handle that talks to that task through channels, so requests can be made from
//! several tasks at once and each gets its own answer.
//!
//! Why a driver task rather than a `&mut self` poll loop: a game client has to keep
//! reading (moves, clocks, reconnections) while it waits for an answer or for its user,
//! and a poll loop would push that bookkeeping onto every caller. With the task the
//! room state is always current, and [`Session::updates`] and [`Session::events`] let
//! any number of readers watch it.
//!
//! ```no_run
//! use jumpgate_protocol::session::{NewLobby, Session, SessionOptions};
//!
//! # async fn example() -> Result<(), jumpgate_protocol::session::SessionError> {
//! let session = Session::connect("ws://127.0.0.1:8080/ws", SessionOptions::default()).await?;
//! let room = session.create_lobby(NewLobby::default()).await?;
//! println!("share {}", room.invite_link.unwrap_or(room.code));
//! // Wait for an opponent and for our turn, then play the first legal move.
//! let state = session.wait_for(|state| state.my_turn()).await?;
//! let path = state.room.and_then(|room| room.game).expect("a game").legal[0].clone();
//! session.play(path).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Protocol 1 and protocol 2 sessions look the same to their user: the room is always
//! a protocol 2 [`RoomSnapshot`] (a protocol 1 `state` is converted), kept current by
//! applying `moved` and `changed` events on protocol 2, and asking `resync` when a
//! version was missed.

// Over 700 lines: most of them are the handle's request methods, one short method
// per message, which read best side by side; the driver task is in its own module.

mod address;
mod driver;
mod pages;

use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};

pub use address::{LobbyAddress, NotALobbyAddress};
pub use pages::{HttpError, HttpPages};

use crate::codec::{Encoding, Subprotocol};
use crate::error_code::ErrorCode;
use crate::game::{Color, RuleSet};
use crate::message::{BotLevel, ClientMessage, Identity, ServerMessage, SoloMode, SoloState};
use crate::reconnect::{ReconnectError, ReconnectPolicy, ReconnectingClient, Reconnection};
use crate::room::{DrawRules, LobbySummary, MyGame, Pace, Phase};
use crate::v2::{Path, RoomSnapshot};

/// How a [`Session`] connects.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionOptions {
    /// The protocol version and encoding; [`Encoding`] converts into protocol 1.
    /// Default: protocol 2 in MessagePack, the smallest on the wire. Servers from
    /// before protocol 2 speak only protocol 1.
    pub subprotocol: Subprotocol,
    /// The token from an earlier session's [`SessionState::token`], to come back as the
    /// same identity (and find its seats); `None` for a new guest. An account token
    /// from the identity service signs in.
    pub token: Option<String>,
    /// The client's name and version, for the server's logs (`hello.client`).
    pub client_name: String,
    /// A guest's display name, asked for in the first `hello` (`hello.name`; the server
    /// normalises it, an account keeps its own); `None`: the token's, or a made-up one.
    pub name: Option<String>,
    /// Reconnection back-off, give-up limits and the send rate.
    pub policy: ReconnectPolicy,
    /// How many [`SessionEvent`]s a slow [`Session::events`] reader may fall behind
    /// before it misses some.
    pub event_capacity: usize,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            subprotocol: Subprotocol::v2(Encoding::MsgPack),
            token: None,
            client_name: concat!("jumpgate-protocol/", env!("CARGO_PKG_VERSION")).to_owned(),
            name: None,
            policy: ReconnectPolicy::default(),
            event_capacity: 1024,
        }
    }
}

/// What the session knows now; read it with [`Session::state`], or follow it with
/// [`Session::updates`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    /// Who the server knows this session as.
    pub identity: Identity,
    /// The latest token from `welcome`: keep it to come back as this identity.
    pub token: String,
    /// The lobby the session is in, as of the newest version received. On protocol 1
    /// it is the latest `state`, converted (so it has no FEN, and legal moves are paths).
    pub room: Option<RoomSnapshot>,
    /// The solo game the session is in, as of its latest `solo_state`.
    pub solo: Option<SoloState>,
    /// How many times the connection has been replaced.
    pub reconnections: u32,
    /// Why the session stopped, once it has: no more requests will be answered.
    pub ended: Option<String>,
}

impl SessionState {
    /// The seat (0 or 1) this identity holds in the room, if any.
    pub fn seat(&self) -> Option<u8> {
        let room = self.room.as_ref()?;
        let seat = room
            .players
            .iter()
            .position(|player| player.as_ref().is_some_and(|p| p.id == self.identity.id))?;
        u8::try_from(seat).ok()
    }

    /// The colour this identity plays in the room's current game, if seated.
    pub fn color(&self) -> Option<Color> {
        let seat = self.seat()?;
        let game = self.room.as_ref()?.game.as_ref()?;
        Some(if game.dark_seat == seat {
            Color::Dark
        } else {
            Color::Light
        })
    }

    /// Whether it is this identity's turn in a game being played: in the lobby, or in
    /// the solo game (always, on one device; when the computer is not thinking,
    /// against it).
    pub fn my_turn(&self) -> bool {
        if let Some(room) = &self.room {
            let Some(game) = &room.game else {
                return false;
            };
            return room.phase == Phase::Playing
                && game.result.is_none()
                && self.color() == Some(game.turn);
        }
        if let Some(solo) = &self.solo {
            return solo.game.result.is_none()
                && !solo.thinking
                && solo.you.is_none_or(|you| you == solo.game.turn);
        }
        false
    }

    /// Whether nothing more will be played where the session is: it is in no room and
    /// no solo game, the lobby's series is over (`Finished`, `Ended`), or the solo game
    /// has a result. A bot's loop waits for `my_turn() || finished()`.
    pub fn finished(&self) -> bool {
        if let Some(room) = &self.room {
            return matches!(room.phase, Phase::Finished | Phase::Ended);
        }
        if let Some(solo) = &self.solo {
            return solo.game.result.is_some();
        }
        true
    }

    /// Where play stands, changing with every move applied: the room's code, round and
    /// ply, or the solo game's id and ply; `None` outside any game.
    fn play_mark(&self) -> Option<(String, u32, u32)> {
        if let Some(room) = &self.room {
            let ply = room.game.as_ref().map_or(0, |game| game.ply);
            return Some((room.code.clone(), room.series.round, ply));
        }
        self.solo
            .as_ref()
            .map(|solo| (solo.id.clone(), 0, solo.game.ply))
    }

    /// The legal moves' paths in the room's game, or in the solo game, boosted ones
    /// (Space Mode) included; empty when nothing can be played.
    pub fn legal_paths(&self) -> Vec<Path> {
        if let Some(game) = self.room.as_ref().and_then(|room| room.game.as_ref()) {
            return game
                .legal
                .iter()
                .chain(&game.legal_boosts)
                .cloned()
                .collect();
        }
        match &self.solo {
            Some(solo) => solo
                .game
                .legal_moves
                .iter()
                .map(|m| m.path.clone())
                .collect(),
            None => Vec::new(),
        }
    }
}

/// A successful answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `ack`: the request was applied (and stored).
    Ack,
    /// The answer to `lobby_info`.
    LobbyInfo(LobbySummary),
    /// The answer to `my_games`.
    MyGames(Vec<MyGame>),
}

/// Why a request failed, or a session could not start.
///
/// Its `Debug` form is its message, as for `Display`: a `main` that returns
/// `Result<(), Box<dyn Error>>` and fails with it prints a sentence ("could not connect:
/// …"), not nested variants. Match on the variants to tell the cases apart.
#[derive(thiserror::Error)]
pub enum SessionError {
    /// The first connection could not be opened or greeted (said once: "could not
    /// connect: the server refused the WebSocket upgrade with HTTP 404").
    #[error(transparent)]
    Connect(ReconnectError),
    /// The server refused the request with an `error` carrying its `seq` (after the
    /// session retried `storage_unavailable` and `room_unavailable` as long as its
    /// policy allows). Branch on `code`; `message` is for people.
    #[error("refused: {code}: {message}")]
    Refused {
        /// The stable error code.
        code: ErrorCode,
        /// The server's sentence about it.
        message: String,
    },
    /// The connection was replaced while the request was unanswered, and it was not
    /// sent again because the server would apply it twice (a solo game's `move` or
    /// `undo`, PROTOCOL.md section 14). [`SessionState::solo`] shows whether it took
    /// effect.
    #[error("the connection was replaced before {kind} was answered; it was not sent again")]
    OutcomeUnknown {
        /// The request's `type`, e.g. "move".
        kind: &'static str,
    },
    /// The connection was replaced while the request was unanswered, and the server
    /// then refused to let the session back into its room (`code`, e.g.
    /// `unknown_lobby` from a server restarted without Redis, which lost its lobbies):
    /// the request acted in that room (a move, a resignation, ...), so it was not sent
    /// again. The session is in no room now ([`SessionState::room`] is `None`).
    #[error("the room {room} is gone ({code} on re-entering it); {kind} was not sent again")]
    RoomLost {
        /// The request's `type`, e.g. "move".
        kind: &'static str,
        /// The room's code (or a solo game's id).
        room: String,
        /// How the server answered the attempt to re-enter the room.
        code: ErrorCode,
    },
    /// The server answered with a message of another kind than the request asks for
    /// (say, `ack` to `my_games`): a server that breaks the protocol.
    #[error("unexpected answer: {0}")]
    Unexpected(String),
    /// The session has stopped (closed, or its reconnection gave up or was refused);
    /// the reason says which.
    #[error("the session has ended: {0}")]
    Ended(String),
}

impl std::fmt::Debug for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl SessionError {
    /// The server's error code, for a refusal.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            SessionError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Something that happened in a session, in order, for [`Session::events`] readers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "nearly every event is a message; boxing them would cost an allocation each"
)]
pub enum SessionEvent {
    /// A message from the server, after the session applied it to its state.
    Message(ServerMessage),
    /// A move joined the game of the room or of the solo game. Each move is told once,
    /// however it arrived (a `moved` event, a `state`, a resync).
    MovePlayed {
        /// The move in the rule set's notation.
        notation: String,
    },
    /// The connection was replaced; the room (if re-entered) arrives afresh next.
    Reconnected(Reconnection),
    /// A message from the server could not be decoded and was skipped.
    Undecodable(String),
    /// The session stopped for good, for this reason (closed, refused, or reconnecting
    /// gave up); the last event. The channel itself stays open while any handle of the
    /// session lives, so readers learn of the end from this event.
    Ended(String),
}

/// A new lobby's settings for [`Session::create_lobby`]. The default is a free, public,
/// live American lobby with a series of one game.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewLobby {
    /// The rules every game is played by.
    pub rule_set: RuleSet,
    /// The rounds a series is played over: 1, 3, 5 or 7
    /// ([`SERIES_LENGTHS`](crate::SERIES_LENGTHS)); 0 means 1. A drawn round is not
    /// counted against it, so a series that keeps drawing may last up to twice as many
    /// rounds (the room's `series.max_rounds`) before it ends as it stands.
    pub series_length: u8,
    /// Whether joining and watching need the invite.
    pub invite_only: bool,
    /// Bold Points each player stakes (needs an account); `None`: a free lobby.
    pub stake: Option<u32>,
    /// How fast the lobby is played; `None`: live.
    pub pace: Option<Pace>,
    /// Which draw rules apply; `None`: the standard ones.
    pub draw_rules: Option<DrawRules>,
}

/// A solo game's settings for [`Session::start_solo`]. The default is an unranked
/// American game against the Executive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSoloGame {
    /// The rules of the game.
    pub rule_set: RuleSet,
    /// Against the computer, or two people on one device.
    pub mode: SoloMode,
    /// The computer's level; `None`: the Executive.
    pub level: Option<BotLevel>,
    /// Whether it counts for the leaderboard (needs an account).
    pub ranked: bool,
}

/// A move to play, by notation or by squares; see [`Session::play`].
///
/// ```
/// use jumpgate_protocol::session::MoveInput;
///
/// assert_eq!(MoveInput::from("11-15"), MoveInput::Notation("11-15".into()));
/// let path = vec!["c3".to_string(), "d4".to_string()];
/// assert_eq!(MoveInput::from(path.clone()), MoveInput::Path(path));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveInput {
    /// The rule set's notation, e.g. "11-15" or "c3-d4".
    Notation(String),
    /// The start square and every landing square, e.g. ["c3", "e5", "g7"].
    Path(Path),
}

impl From<&str> for MoveInput {
    fn from(notation: &str) -> Self {
        MoveInput::Notation(notation.to_owned())
    }
}

impl From<String> for MoveInput {
    fn from(notation: String) -> Self {
        MoveInput::Notation(notation)
    }
}

impl From<Path> for MoveInput {
    fn from(path: Path) -> Self {
        MoveInput::Path(path)
    }
}

impl From<&[String]> for MoveInput {
    fn from(path: &[String]) -> Self {
        MoveInput::Path(path.to_vec())
    }
}

/// How many reconnections a [`Session::reconnections`] reader may fall behind.
const RECONNECTION_CAPACITY: usize = 64;

/// A request for the driver task: the message built from the `seq` it gets, and where
/// its answer goes.
type BuildMessage = Box<dyn FnOnce(u32) -> ClientMessage + Send>;

enum Command {
    Request {
        build: BuildMessage,
        answer: oneshot::Sender<Result<Reply, SessionError>>,
        /// Told the request's `seq` once it has been handed to the connection.
        sent: oneshot::Sender<u32>,
    },
    Close {
        done: oneshot::Sender<()>,
    },
}

/// A handle on a session with a Jumpgate server; clone it to use the session from
/// several tasks. The session closes when [`close`](Self::close) is called or the last
/// handle is dropped.
///
/// Each request method sends one message and waits for its answer: `Ok` for `ack`
/// (or the answering message), [`SessionError::Refused`] for an `error` with its
/// `seq`. Requests left unanswered by a lost connection are sent again, with the same
/// `seq`, on the next one, so their answer still arrives. An `error` without `seq`
/// (`rate_limited`, which the session's pacing avoids) answers no request: it reaches
/// [`events`](Self::events) readers only, and the request it dropped stays waiting;
/// wrap a request in `tokio::time::timeout` where that matters.
#[derive(Debug, Clone)]
pub struct Session {
    commands: mpsc::Sender<Command>,
    state: watch::Receiver<SessionState>,
    events: broadcast::Sender<SessionEvent>,
    reconnections: broadcast::Sender<Reconnection>,
    /// The URL it connected to, for [`Session::pages`].
    url: String,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Request { .. } => f.write_str("Request"),
            Command::Close { .. } => f.write_str("Close"),
        }
    }
}

impl Session {
    /// Opens a connection to `url` (e.g. `ws://127.0.0.1:8080/ws`), greets the server
    /// and starts the session's driver task on the current tokio runtime.
    ///
    /// The first connection is tried once; later ones follow the reconnect policy.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), jumpgate_protocol::session::SessionError> {
    /// use jumpgate_protocol::session::{Session, SessionOptions};
    ///
    /// let options = SessionOptions {
    ///     // Keep the token of an earlier session to come back as the same player.
    ///     token: std::env::var("JUMPGATE_TOKEN").ok(),
    ///     name: Some("Ada".to_owned()),
    ///     ..SessionOptions::default()
    /// };
    /// let session = Session::connect("ws://127.0.0.1:8080/ws", options).await?;
    /// println!("playing as {} (token {})", session.identity().name, session.state().token);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(url: &str, options: SessionOptions) -> Result<Session, SessionError> {
        let client = ReconnectingClient::connect_as(
            url,
            options.subprotocol,
            options.token,
            &options.client_name,
            options.name,
            options.policy,
        )
        .await
        .map_err(SessionError::Connect)?;
        let (commands, command_rx) = mpsc::channel(64);
        let (state_tx, state) = watch::channel(SessionState {
            identity: client.identity().clone(),
            token: client.token().to_owned(),
            room: None,
            solo: None,
            reconnections: 0,
            ended: None,
        });
        let (events, _) = broadcast::channel(options.event_capacity.max(1));
        let (reconnections, _) = broadcast::channel(RECONNECTION_CAPACITY);
        let tellers = driver::Tellers {
            events: events.clone(),
            reconnections: reconnections.clone(),
        };
        tokio::spawn(driver::run(client, command_rx, state_tx, tellers));
        Ok(Session {
            commands,
            state,
            events,
            reconnections,
            url: url.to_owned(),
        })
    }

    /// The server's HTTP pages for lobbies (a summary, the finished games' PDN), on
    /// the host and port this session connected to.
    ///
    /// ```no_run
    /// # use jumpgate_protocol::session::{LobbyAddress, Session};
    /// # async fn example(session: Session, lobby: LobbyAddress) -> Result<(), Box<dyn std::error::Error>> {
    /// let pdn = session.pages()?.finished_games_pdn(&lobby).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn pages(&self) -> Result<HttpPages, HttpError> {
        HttpPages::new(&self.url)
    }

    /// Who the server knows this session as.
    pub fn identity(&self) -> Identity {
        self.state.borrow().identity.clone()
    }

    /// Everything the session knows now (a copy).
    pub fn state(&self) -> SessionState {
        self.state.borrow().clone()
    }

    /// The room as of the newest version received, if the session is in one.
    pub fn room(&self) -> Option<RoomSnapshot> {
        self.state.borrow().room.clone()
    }

    /// The solo game as of its latest `solo_state`, if the session is in one.
    pub fn solo(&self) -> Option<SoloState> {
        self.state.borrow().solo.clone()
    }

    /// A receiver that sees each new [`SessionState`] (the latest one, when several
    /// arrive between two reads); `changed()` fails once the session has ended.
    pub fn updates(&self) -> watch::Receiver<SessionState> {
        self.state.clone()
    }

    /// A receiver of every [`SessionEvent`] from now on, in order, ending with
    /// [`SessionEvent::Ended`].
    pub fn events(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    /// A receiver of every reconnection from now on, in order: why the connection
    /// before it ended, how many attempts it took, and whether the room was re-entered
    /// (the same as the [`SessionEvent::Reconnected`] events).
    ///
    /// For a reader that needs only these, say to count and time reconnections: an
    /// [`events`](Self::events) reader is handed a copy of every message as well. One
    /// that falls more than 64 reconnections behind misses the oldest
    /// ([`RecvError::Lagged`](broadcast::error::RecvError::Lagged)). The feed says
    /// nothing when the session ends: watch [`updates`](Self::updates) (or
    /// [`events`](Self::events)) for that.
    pub fn reconnections(&self) -> broadcast::Receiver<Reconnection> {
        self.reconnections.subscribe()
    }

    /// Waits until the state satisfies `pred` (checked at once, then after each
    /// change) and returns that state; fails if the session ends first.
    ///
    /// ```no_run
    /// # async fn example(session: jumpgate_protocol::session::Session)
    /// # -> Result<(), jumpgate_protocol::session::SessionError> {
    /// use jumpgate_protocol::Phase;
    ///
    /// // Until a friend has taken the second seat and the first round runs.
    /// let state = session
    ///     .wait_for(|s| s.room.as_ref().is_some_and(|room| room.phase == Phase::Playing))
    ///     .await?;
    /// println!("we play {:?}", state.color());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait_for(
        &self,
        mut pred: impl FnMut(&SessionState) -> bool,
    ) -> Result<SessionState, SessionError> {
        let mut updates = self.state.clone();
        let found = updates
            .wait_for(|state| pred(state) || state.ended.is_some())
            .await
            .map(|state| state.clone());
        match found {
            Ok(state) if pred(&state) => Ok(state),
            Ok(state) => Err(SessionError::Ended(state.ended.unwrap_or_default())),
            Err(_) => Err(self.ended()),
        }
    }

    /// Like [`wait_for`](Self::wait_for), giving up with `None` after `limit`.
    pub async fn wait_for_within(
        &self,
        limit: Duration,
        pred: impl FnMut(&SessionState) -> bool,
    ) -> Result<Option<SessionState>, SessionError> {
        match tokio::time::timeout(limit, self.wait_for(pred)).await {
            Ok(found) => found.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Sends the message `build` makes from the next `seq`, and waits for its answer.
    ///
    /// ```no_run
    /// # async fn example(session: jumpgate_protocol::session::Session)
    /// # -> Result<(), jumpgate_protocol::session::SessionError> {
    /// use jumpgate_protocol::ClientMessage;
    /// use jumpgate_protocol::session::Reply;
    ///
    /// let reply = session.request(|seq| ClientMessage::Ping { seq }).await?;
    /// assert_eq!(reply, Reply::Ack);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn request(
        &self,
        build: impl FnOnce(u32) -> ClientMessage + Send + 'static,
    ) -> Result<Reply, SessionError> {
        self.send(build).await?.answer().await
    }

    /// Sends the message `build` makes from the next `seq`, and returns as soon as the
    /// driver task has handed it to the connection (written it, or, in the middle of a
    /// reconnection, queued it for the next connection), with its answer still to come.
    /// A solo game's `move` or `undo` is not queued across a reconnection: one handed
    /// over during an outage is never written, and its answer is
    /// [`SessionError::OutcomeUnknown`].
    ///
    /// [`request`](Self::request) is this followed by [`PendingRequest::answer`]. Use
    /// the two steps to know when a request left and under which `seq`, say to time its
    /// answer, or to have several requests out before waiting for any.
    ///
    /// ```no_run
    /// # async fn example(session: jumpgate_protocol::session::Session)
    /// # -> Result<(), jumpgate_protocol::session::SessionError> {
    /// use jumpgate_protocol::ClientMessage;
    ///
    /// let started = std::time::Instant::now();
    /// let ping = session.send(|seq| ClientMessage::Ping { seq }).await?;
    /// let seq = ping.seq();
    /// ping.answer().await?;
    /// println!("ping {seq} answered in {:?}", started.elapsed());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn send(
        &self,
        build: impl FnOnce(u32) -> ClientMessage + Send + 'static,
    ) -> Result<PendingRequest, SessionError> {
        let (answer, reply) = oneshot::channel();
        let (sent, handed_over) = oneshot::channel();
        let command = Command::Request {
            build: Box::new(build),
            answer,
            sent,
        };
        if self.commands.send(command).await.is_err() {
            return Err(self.ended());
        }
        match handed_over.await {
            Ok(seq) => Ok(PendingRequest {
                seq,
                reply,
                state: self.state.clone(),
            }),
            // The session ended before the request went out; its answer says why.
            Err(_) => Err(match reply.await {
                Ok(Err(err)) => err,
                _ => self.ended(),
            }),
        }
    }

    /// Sends a request answered by `ack`.
    async fn act(
        &self,
        build: impl FnOnce(u32) -> ClientMessage + Send + 'static,
    ) -> Result<(), SessionError> {
        match self.request(build).await? {
            Reply::Ack => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    /// Creates a lobby, seated as its host, and returns its first state.
    pub async fn create_lobby(&self, lobby: NewLobby) -> Result<RoomSnapshot, SessionError> {
        let NewLobby {
            rule_set,
            series_length,
            invite_only,
            stake,
            pace,
            draw_rules,
        } = lobby;
        self.act(move |seq| ClientMessage::CreateLobby {
            seq,
            rule_set,
            series_length: series_length.max(1),
            invite_only,
            stake,
            pace,
            draw_rules,
        })
        .await?;
        self.room_when(|_| true).await
    }

    /// Takes the free seat of the lobby at `address` (or the seat this identity already
    /// holds there), and returns the room.
    pub async fn join(&self, address: &LobbyAddress) -> Result<RoomSnapshot, SessionError> {
        let LobbyAddress { code, invite } = address.clone();
        let wanted = code.clone();
        self.act(move |seq| ClientMessage::JoinLobby { seq, code, invite })
            .await?;
        self.room_when(move |room| room.code == wanted).await
    }

    /// Watches the lobby at `address` as a spectator, and returns the room.
    pub async fn watch(&self, address: &LobbyAddress) -> Result<RoomSnapshot, SessionError> {
        let LobbyAddress { code, invite } = address.clone();
        let wanted = code.clone();
        self.act(move |seq| ClientMessage::Watch { seq, code, invite })
            .await?;
        self.room_when(move |room| room.code == wanted).await
    }

    /// What the lobby at `address` is, without entering it.
    pub async fn lobby_info(&self, address: &LobbyAddress) -> Result<LobbySummary, SessionError> {
        let LobbyAddress { code, invite } = address.clone();
        match self
            .request(move |seq| ClientMessage::LobbyInfo { seq, code, invite })
            .await?
        {
            Reply::LobbyInfo(lobby) => Ok(lobby),
            other => Err(unexpected(&other)),
        }
    }

    /// This identity's unfinished lobbies and solo game.
    pub async fn my_games(&self) -> Result<Vec<MyGame>, SessionError> {
        match self.request(|seq| ClientMessage::MyGames { seq }).await? {
            Reply::MyGames(games) => Ok(games),
            other => Err(unexpected(&other)),
        }
    }

    /// Leaves the lobby (mid-series, this concedes the series) or the solo game.
    pub async fn leave(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::Leave { seq }).await
    }

    /// Plays a move in the lobby's game or the solo game, by notation (`"11-15"`) or by
    /// path (`vec!["c3", "d4"]` as strings), and returns the first state that shows it.
    ///
    /// The server's `ack` comes before the event that carries the move, and after a
    /// reconnection the room's snapshot can arrive before the re-sent move is applied;
    /// so `play` waits past both, until the session's view has the move (or has moved
    /// on: the round ended, the room is gone). What it returns, and `state()` from then
    /// on, is the position after the move: a bot may choose its next move from it.
    ///
    /// ```no_run
    /// # async fn example(session: jumpgate_protocol::session::Session)
    /// # -> Result<(), jumpgate_protocol::session::SessionError> {
    /// let state = session.wait_for(|s| s.my_turn() || s.finished()).await?;
    /// if let Some(path) = state.legal_paths().into_iter().next() {
    ///     let after = session.play(path).await?;
    ///     // The move is in `after`: choose the next one from it, never from `state`.
    ///     println!("ply {:?}", after.room.and_then(|room| room.game).map(|game| game.ply));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn play(&self, mv: impl Into<MoveInput>) -> Result<SessionState, SessionError> {
        let (notation, path) = match mv.into() {
            MoveInput::Notation(notation) => (Some(notation), None),
            MoveInput::Path(path) => (None, Some(path)),
        };
        let before = self.state.borrow().play_mark();
        self.act(move |seq| ClientMessage::Move {
            seq,
            notation,
            path,
        })
        .await?;
        self.wait_for(move |state| state.play_mark() != before)
            .await
    }

    /// Offers a draw, on your own turn.
    pub async fn offer_draw(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::OfferDraw { seq }).await
    }

    /// Accepts the opponent's standing draw offer.
    pub async fn accept_draw(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::AcceptDraw { seq }).await
    }

    /// Declines the opponent's standing draw offer.
    pub async fn decline_draw(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::DeclineDraw { seq }).await
    }

    /// Resigns: in a lobby, the whole series; in a solo game, the game.
    pub async fn resign(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::Resign { seq }).await
    }

    /// Asks to end the break between rounds early.
    pub async fn next_round(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::NextRound { seq }).await
    }

    /// Calls a rematch, or accepts the one the opponent called.
    pub async fn rematch(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::Rematch { seq }).await
    }

    /// Ends the match for everyone (host only).
    pub async fn end_match(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::EndMatch { seq }).await
    }

    /// In a correspondence lobby: claims the game whose opponent has not moved in time.
    pub async fn claim_forfeit(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::ClaimForfeit { seq }).await
    }

    /// A round trip to the server.
    pub async fn ping(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::Ping { seq }).await
    }

    /// Starts a solo game and returns its first state.
    pub async fn start_solo(&self, game: NewSoloGame) -> Result<SoloState, SessionError> {
        let NewSoloGame {
            rule_set,
            mode,
            level,
            ranked,
        } = game;
        let before = self.solo().map(|solo| (solo.id, solo.version));
        self.act(move |seq| ClientMessage::StartSolo {
            seq,
            rule_set,
            mode,
            level,
            ranked,
        })
        .await?;
        self.solo_when(move |solo| Some((solo.id.clone(), solo.version)) != before)
            .await
    }

    /// Comes back to this identity's unfinished solo game and returns its state.
    pub async fn resume_solo(&self) -> Result<SoloState, SessionError> {
        self.act(|seq| ClientMessage::ResumeSolo { seq }).await?;
        self.solo_when(|_| true).await
    }

    /// Takes back your last turn in the solo game.
    pub async fn undo(&self) -> Result<(), SessionError> {
        self.act(|seq| ClientMessage::Undo { seq }).await
    }

    /// Closes the connection (code 1000) and stops the driver task; requests still
    /// waiting fail with [`SessionError::Ended`].
    pub async fn close(self) {
        let (done, closed) = oneshot::channel();
        if self.commands.send(Command::Close { done }).await.is_ok() {
            let _ = closed.await;
        }
    }

    /// The room once `pred` holds for it; after an `ack`, its state follows.
    async fn room_when(
        &self,
        mut pred: impl FnMut(&RoomSnapshot) -> bool,
    ) -> Result<RoomSnapshot, SessionError> {
        let state = self
            .wait_for(|state| state.room.as_ref().is_some_and(&mut pred))
            .await?;
        Ok(state.room.expect("the predicate saw a room"))
    }

    async fn solo_when(
        &self,
        mut pred: impl FnMut(&SoloState) -> bool,
    ) -> Result<SoloState, SessionError> {
        let state = self
            .wait_for(|state| state.solo.as_ref().is_some_and(&mut pred))
            .await?;
        Ok(state.solo.expect("the predicate saw a solo game"))
    }

    fn ended(&self) -> SessionError {
        ended(&self.state)
    }
}

/// A request a [`Session`] has sent whose answer is still to come; from
/// [`Session::send`].
#[derive(Debug)]
pub struct PendingRequest {
    seq: u32,
    reply: oneshot::Receiver<Result<Reply, SessionError>>,
    state: watch::Receiver<SessionState>,
}

impl PendingRequest {
    /// The `seq` the request went with (and goes with again after a reconnection).
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// Waits for the answer, as [`Session::request`] does: `Ok` for `ack` or the
    /// answering message, [`SessionError::Refused`] for an `error` with its `seq`.
    pub async fn answer(self) -> Result<Reply, SessionError> {
        let PendingRequest { reply, state, .. } = self;
        reply.await.unwrap_or_else(|_| Err(ended(&state)))
    }
}

/// The error for a request made to a session that has stopped, with its reason.
fn ended(state: &watch::Receiver<SessionState>) -> SessionError {
    let reason = state.borrow().ended.clone();
    SessionError::Ended(reason.unwrap_or_else(|| "the session was closed".to_owned()))
}

/// A reply of another kind than the request's: the server broke the protocol.
fn unexpected(reply: &Reply) -> SessionError {
    SessionError::Unexpected(format!("{reply:?}"))
}

#[cfg(test)]
mod tests;
