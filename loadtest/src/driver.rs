//! The client side: games between two real protocol clients, echo pairs shaped the same
//! way, and idle connections; each phase bounded in time.
//!
//! A *game* is a host and a guest in a lobby (series of 1). Both players speak the
//! phase's protocol, MessagePack. In protocol 1 whoever's turn it is plays
//! `legal_moves[0]` by its notation from the latest `state`; in protocol 2 each player
//! keeps a [`RoomView`] current from `snapshot`, `moved` and `changed`, asks `resync`
//! when an event skips a version, and plays the first path of `legal`. The round trip
//! measured is `move` → its `ack`. Both players then read the resulting state or event
//! before the next move, so the opponent always answers from what the server sent, and
//! the frames either received meanwhile are counted ([`Client::traffic`]) as the move's
//! bytes. When a game ends, both leave and the host opens a new lobby.
//!
//! An *echo pair* does the same against the echo server: the two connections take
//! turns sending one frame of the size of a `move` message and waiting for it to come
//! back. The frame is shaped as a MessagePack `ack` (with a padding field, which
//! receivers ignore), so the same client decodes it.
//!
//! Open loop (the latency phase): every game follows a fixed schedule of intended send
//! times, and a round trip is measured from the *intended* time, so a slow answer that
//! delays later moves is charged to those moves too (no coordinated omission). After a
//! lobby restart the schedule starts again from the moment both connections may send
//! (see below), since setting up a lobby is not a move. Closed loop (the saturation
//! phase): send as soon as the previous answer is in.
//!
//! Every Jumpgate connection keeps at least [`MIN_SEND_GAP`] between its messages,
//! which holds it under the server's rate limit (40 messages a second per connection,
//! closing at 120); load is spread over many games instead. That self-imposed wait is
//! never counted as latency: a closed-loop round trip starts when the message really
//! leaves, and an open-loop schedule never asks for a send the pacing would hold back.
//! Echo connections are not paced (the echo server has no limit), so the saturated
//! echo figure is what the stack itself can carry, not what the pacing lets through.
//!
//! Why the raw [`Client`] and not the SDK's `Session`: this is the hot path of `bench`,
//! thousands of players whose round trips are the figures. A `Session` puts a driver
//! task between the caller and the socket, so every message would cross two channels
//! and a task switch before it is timed, and on a loaded two-core machine that hop is
//! itself part of the latency measured; it also reconnects, which a latency run must
//! not do silently (a lost connection here is an error to report). The players read
//! and send on their own connection instead, and count its frames.
//!
//! Over 700 lines: every phase shares the same connection plumbing; splitting
//! it by phase is still to do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use jumpgate_protocol::client::{Client, ClientError, Traffic};
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::v2::{Gap, RoomView};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Color, DecodeError, Encoding, Phase, ProtocolVersion, RoomState,
    RuleSet, ServerMessage, SoloMode, SoloState, Subprotocol,
};
use serde::Serialize;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until, timeout_at};

/// How long any single answer may take before the connection counts as failed.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// The least time between two messages on one connection: at most 36 a second, under
/// the server's limit of 40.
pub const MIN_SEND_GAP: Duration = Duration::from_micros(27_800);
/// The highest open-loop rate one game may be asked for, in moves a second. Moves
/// alternate between the two players, so each connection sends half of them.
pub const MAX_RATE_PER_GAME: f64 = 60.0;
/// Connections or games being set up at once.
const SETUP_CONCURRENCY: usize = 128;
/// Spreads the games' send times over a millisecond evenly whatever their number.
const GOLDEN_RATIO_FRACTION: f64 = 0.618_033_988_749_895;
/// How long answers due before the end of a phase may still arrive after it.
const GRACE: Duration = Duration::from_secs(2);
/// The largest latency the histograms hold, in microseconds (a minute).
const MAX_LATENCY_US: u64 = 60_000_000;
/// The notation whose `move` message sets the size of echo frames.
const TYPICAL_NOTATION: &str = "11-15";

/// Which kind of server a phase drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The Jumpgate server: games.
    Jumpgate,
    /// The echo baseline: echo pairs.
    Echo,
}

impl Kind {
    /// What one operation is called in reports.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Jumpgate => "moves",
            Kind::Echo => "echoes",
        }
    }
}

/// The games of a phase: how many, what they play, which protocol their players speak
/// (echo pairs use only the count).
#[derive(Clone, Copy, Debug)]
pub struct Games {
    /// Games (or echo pairs).
    pub count: usize,
    /// The rule set of every lobby.
    pub rule_set: RuleSet,
    /// The players' protocol (MessagePack in both).
    pub protocol: ProtocolVersion,
}

impl Games {
    /// `count` games of `rule_set` between protocol 1 players.
    pub fn v1(count: usize, rule_set: RuleSet) -> Games {
        Games {
            count,
            rule_set,
            protocol: ProtocolVersion::V1,
        }
    }
}

/// How a phase paces its sends.
#[derive(Clone, Copy, Debug)]
pub enum Pace {
    /// A fixed schedule: this many operations a second in total over all games.
    Open {
        /// Operations a second, summed over all games.
        rate: f64,
    },
    /// As fast as answers come back.
    Closed,
}

/// Counters the progress line reads while a phase runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Operations answered so far.
    pub ops: AtomicU64,
    /// Games or pairs that failed.
    pub errors: AtomicU64,
    /// Lobbies opened after a game ended.
    pub lobbies: AtomicU64,
}

/// What a phase measured.
#[derive(Debug, Clone)]
pub struct PhaseStats {
    /// The phase's name, e.g. "latency jumpgate".
    pub label: String,
    /// The server kind driven.
    pub kind: Kind,
    /// Games (or echo pairs) that were set up and ran.
    pub games: usize,
    /// Operations answered within the phase.
    pub ops: u64,
    /// The measured window in seconds.
    pub seconds: f64,
    /// Games or pairs that failed (set-up or during the phase).
    pub errors: u64,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    /// Lobbies opened after games ended.
    pub lobbies: u64,
    /// Round trips in microseconds.
    pub latency_us: Histogram<u64>,
    /// When the measured window began (it lasts `seconds`).
    pub window_start: Instant,
    /// The protocol the players spoke (echo: 1, unused).
    pub protocol: ProtocolVersion,
    /// Moves whose frames were counted in `move_traffic` (those answered in the window
    /// whose states or events both players then read).
    pub metered_moves: u64,
    /// The frames of those moves, both players together: the `move` out, and in, its
    /// `ack` and each player's state (v1) or event (v2).
    pub move_traffic: Traffic,
    /// Protocol 2: events that skipped a version, each answered with a `resync`.
    pub gaps: u64,
}

impl PhaseStats {
    /// Operations a second over the measured window.
    pub fn per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// What the idle phase opened.
#[derive(Debug, Clone, Serialize)]
pub struct IdleStats {
    /// Connections open (and greeted) at the time of the second reading.
    pub connections: usize,
    /// The server's `VmRSS` before opening them, KiB; absent without a process id.
    pub rss_before_kib: Option<u64>,
    /// The server's `VmRSS` with all of them open, KiB.
    pub rss_after_kib: Option<u64>,
    /// Connections that could not be opened.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
}

impl IdleStats {
    /// Resident bytes added per open connection, when both readings exist.
    pub fn bytes_per_connection(&self) -> Option<f64> {
        let (before, after) = (self.rss_before_kib?, self.rss_after_kib?);
        if self.connections == 0 {
            return None;
        }
        Some(after.saturating_sub(before) as f64 * 1024.0 / self.connections as f64)
    }
}

/// A fresh latency histogram (microseconds, 3 significant figures).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// One connection with its send pacing.
#[derive(Debug)]
struct Conn {
    client: Client,
    last_send: Option<Instant>,
}

impl Conn {
    async fn connect(url: &str, protocol: ProtocolVersion, limit: Instant) -> Result<Conn, String> {
        let subprotocol = Subprotocol::new(protocol, Encoding::MsgPack);
        let client = timeout_at(limit, Client::connect(url, subprotocol))
            .await
            .map_err(|_| format!("connecting to {url} timed out"))?
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        Ok(Conn {
            client,
            last_send: None,
        })
    }

    /// When this connection may send again ([`MIN_SEND_GAP`] after its last message).
    fn ready_at(&self) -> Instant {
        self.last_send
            .map_or_else(Instant::now, |last| last + MIN_SEND_GAP)
    }

    /// Waits until this connection may send again.
    async fn pace(&mut self) {
        sleep_until(self.ready_at()).await;
    }

    async fn send(&mut self, message: &ClientMessage) -> Result<(), String> {
        self.pace().await;
        self.last_send = Some(Instant::now());
        self.client.send(message).await.map_err(|e| e.to_string())
    }

    /// The next message, skipping unknown types; `Ok(None)` once `limit` passes.
    async fn recv(&mut self, limit: Instant) -> Result<Option<ServerMessage>, String> {
        loop {
            match timeout_at(limit, self.client.recv()).await {
                Err(_) => return Ok(None),
                Ok(Ok(message)) => return Ok(Some(message)),
                Ok(Err(ClientError::Decode(DecodeError::UnknownType { .. }))) => continue,
                Ok(Err(e)) => return Err(e.to_string()),
            }
        }
    }
}

/// The limit for one wait: [`PATIENCE`] from now, but never past `hard`.
fn wait_limit(hard: Instant) -> Instant {
    (Instant::now() + PATIENCE).min(hard)
}

fn timed_out(what: &str) -> String {
    format!("no answer to {what} within {PATIENCE:?}")
}

/// Notes what a message from the server says about a player's lobby: a
/// state of `code` (or of any lobby while `code` is unknown) becomes the
/// newest; an error without `seq` or a shutdown ends the run.
pub(crate) fn absorb(
    code: Option<&str>,
    state: &mut Option<RoomState>,
    message: ServerMessage,
) -> Result<(), String> {
    match message {
        ServerMessage::State(new) => {
            if code.is_none_or(|code| code == new.code) {
                *state = Some(new);
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

/// A player's copy of its lobby: v1's latest `state`, or v2's view kept by events.
#[derive(Debug)]
enum LobbyView {
    /// Protocol 1: the newest `state`.
    V1(Option<RoomState>),
    /// Protocol 2: the snapshot with every event since applied.
    V2(RoomView),
}

impl LobbyView {
    fn empty(protocol: ProtocolVersion) -> LobbyView {
        match protocol {
            ProtocolVersion::V1 => LobbyView::V1(None),
            ProtocolVersion::V2 => LobbyView::V2(RoomView::new()),
        }
    }

    fn clear(&mut self) {
        match self {
            LobbyView::V1(state) => *state = None,
            LobbyView::V2(view) => *view = RoomView::new(),
        }
    }

    /// The room version held; `None` before the first state or snapshot.
    fn version(&self) -> Option<u64> {
        match self {
            LobbyView::V1(state) => state.as_ref().map(|s| s.version),
            LobbyView::V2(view) => view.version(),
        }
    }

    fn code(&self) -> Option<&str> {
        match self {
            LobbyView::V1(state) => state.as_ref().map(|s| s.code.as_str()),
            LobbyView::V2(view) => view.room().map(|r| r.code.as_str()),
        }
    }

    /// Whether a game is being played.
    fn playing(&self) -> bool {
        match self {
            LobbyView::V1(state) => state
                .as_ref()
                .is_some_and(|s| s.phase == Phase::Playing && s.game.is_some()),
            LobbyView::V2(view) => view
                .room()
                .is_some_and(|r| r.phase == Phase::Playing && r.game.is_some()),
        }
    }

    /// What is next: who moves and the first legal move (as notation in v1, as a path
    /// in v2, each protocol's own way of naming moves), or the game is over.
    fn turn(&self, host_id: &str) -> Turn {
        let host_seat =
            |players: &[Option<jumpgate_protocol::PlayerView>], turn: Color, dark_seat: u8| {
                let seat = if turn == Color::Dark {
                    usize::from(dark_seat)
                } else {
                    1 - usize::from(dark_seat).min(1)
                };
                players
                    .get(seat)
                    .and_then(Option::as_ref)
                    .is_some_and(|p| p.id == host_id)
            };
        match self {
            LobbyView::V1(state) => {
                let Some((state, game)) = state.as_ref().and_then(|s| Some((s, s.game.as_ref()?)))
                else {
                    return Turn::Over;
                };
                if state.phase != Phase::Playing
                    || game.result.is_some()
                    || game.legal_moves.is_empty()
                {
                    return Turn::Over;
                }
                Turn::Play {
                    host: host_seat(&state.players, game.turn, game.dark_seat),
                    choice: MoveChoice::Notation(game.legal_moves[0].notation.clone()),
                }
            }
            LobbyView::V2(view) => {
                let Some((room, game)) = view.room().and_then(|r| Some((r, r.game.as_ref()?)))
                else {
                    return Turn::Over;
                };
                if room.phase != Phase::Playing || game.result.is_some() || game.legal.is_empty() {
                    return Turn::Over;
                }
                Turn::Play {
                    host: host_seat(&room.players, game.turn, game.dark_seat),
                    choice: MoveChoice::Path(game.legal[0].clone()),
                }
            }
        }
    }
}

/// A greeted Jumpgate connection with its copy of its lobby.
#[derive(Debug)]
struct Player {
    conn: Conn,
    id: String,
    /// The lobby this player is in, once known.
    code: Option<String>,
    lobby: LobbyView,
    /// Protocol 2: events that did not follow the version held (each answered with a
    /// `resync`).
    gaps: u64,
    /// Protocol 2: the `since` of a `resync` still to send.
    resync: Option<u64>,
}

impl Player {
    async fn greet(url: &str, protocol: ProtocolVersion, limit: Instant) -> Result<Player, String> {
        let mut conn = Conn::connect(url, protocol, limit).await?;
        conn.pace().await;
        conn.last_send = Some(Instant::now());
        let greeting = timeout_at(limit, conn.client.greet(None, "jumpgate-loadtest"))
            .await
            .map_err(|_| timed_out("hello"))?
            .map_err(|e| e.to_string())?;
        Ok(Player {
            conn,
            id: greeting.identity.id,
            code: None,
            lobby: LobbyView::empty(protocol),
            gaps: 0,
            resync: None,
        })
    }

    fn absorb(&mut self, message: ServerMessage) -> Result<(), String> {
        let view = match &mut self.lobby {
            LobbyView::V1(state) => return absorb(self.code.as_deref(), state, message),
            LobbyView::V2(view) => view,
        };
        match &message {
            ServerMessage::Error {
                seq: None,
                code,
                message,
            } => return Err(format!("server error: {code} {message}")),
            ServerMessage::Shutdown { .. } => return Err("the server is shutting down".into()),
            // Another lobby's snapshot (the one just left) is not this player's.
            ServerMessage::Snapshot(snapshot)
                if self
                    .code
                    .as_deref()
                    .is_some_and(|code| code != snapshot.code) =>
            {
                return Ok(());
            }
            _ => {}
        }
        match view.apply(&message) {
            Ok(_) => Ok(()),
            // Between lobbies (none joined yet, or one just left) an event without a
            // snapshot belongs to no lobby of this player's.
            Err(Gap::NoSnapshot { .. }) if self.code.as_deref().is_none_or(str::is_empty) => Ok(()),
            Err(gap) => {
                self.gaps += 1;
                self.resync = Some(gap.since());
                Ok(())
            }
        }
    }

    /// Asks for the versions missed, if a gap was seen; the answer arrives as events (or
    /// a snapshot) and is applied like any other.
    async fn resync_if_needed(&mut self) -> Result<(), String> {
        if let Some(since) = self.resync.take() {
            let seq = self.conn.client.next_seq();
            self.conn
                .send(&ClientMessage::Resync { seq, since })
                .await?;
        }
        Ok(())
    }

    /// Sends a request and waits for its `ack`; returns when it came.
    async fn request(
        &mut self,
        build: impl FnOnce(u32) -> ClientMessage,
        hard: Instant,
    ) -> Result<Option<Instant>, String> {
        let seq = self.conn.client.next_seq();
        let message = build(seq);
        self.conn.send(&message).await?;
        let limit = wait_limit(hard);
        let mut others = Vec::new();
        let answer = timeout_at(limit, self.conn.client.answer(seq, |m| others.push(m))).await;
        for message in others {
            self.absorb(message)?;
        }
        match answer {
            Err(_) if limit >= hard => Ok(None),
            Err(_) => Err(timed_out("a request")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(Ok(()))) => Ok(Some(Instant::now())),
            Ok(Ok(Err(refusal))) => Err(format!("request refused: {refusal}")),
        }
    }

    /// Reads until the stored state satisfies `pred`; false if `hard` passed first.
    async fn state_until(
        &mut self,
        pred: impl Fn(&LobbyView) -> bool,
        hard: Instant,
    ) -> Result<bool, String> {
        let limit = wait_limit(hard);
        loop {
            if self.lobby.version().is_some() && pred(&self.lobby) {
                return Ok(true);
            }
            self.resync_if_needed().await?;
            match self.conn.recv(limit).await? {
                None if limit >= hard => return Ok(false),
                None => return Err(timed_out("a state")),
                Some(message) => self.absorb(message)?,
            }
        }
    }
}

/// Two players seated in one lobby.
#[derive(Debug)]
struct Game {
    host: Player,
    guest: Player,
    rule_set: RuleSet,
}

impl Game {
    async fn set_up(
        url: &str,
        protocol: ProtocolVersion,
        hard: Instant,
        rule_set: RuleSet,
    ) -> Result<Game, String> {
        let host = Player::greet(url, protocol, hard).await?;
        let guest = Player::greet(url, protocol, hard).await?;
        let mut game = Game {
            host,
            guest,
            rule_set,
        };
        if !game.new_lobby(hard).await? {
            return Err("setting up the lobby took too long".into());
        }
        Ok(game)
    }

    /// The host opens a lobby and the guest joins; false if `hard` passed first.
    async fn new_lobby(&mut self, hard: Instant) -> Result<bool, String> {
        self.host.code = None;
        self.host.lobby.clear();
        let acked = self
            .host
            .request(
                |seq| ClientMessage::CreateLobby {
                    seq,
                    rule_set: self.rule_set,
                    series_length: 1,
                    invite_only: false,
                    stake: None,
                    pace: None,
                    draw_rules: None,
                },
                hard,
            )
            .await?;
        if acked.is_none() {
            return Ok(false);
        }
        // The server sends the ack first, then the new lobby's state.
        self.host.lobby.clear();
        if !self.host.state_until(|_| true, hard).await? {
            return Ok(false);
        }
        let code = self.host.lobby.code().map(str::to_owned);
        self.host.code.clone_from(&code);
        self.guest.code.clone_from(&code);
        self.guest.lobby.clear();
        let join = code.clone().unwrap_or_default();
        let acked = self
            .guest
            .request(
                |seq| ClientMessage::JoinLobby {
                    seq,
                    code: join,
                    invite: None,
                },
                hard,
            )
            .await?;
        if acked.is_none() {
            return Ok(false);
        }
        let playing = LobbyView::playing;
        Ok(self.guest.state_until(playing, hard).await?
            && self.host.state_until(playing, hard).await?)
    }

    /// Both leave; false if `hard` passed first.
    async fn leave(&mut self, hard: Instant) -> Result<bool, String> {
        for player in [&mut self.host, &mut self.guest] {
            if player
                .request(|seq| ClientMessage::Leave { seq }, hard)
                .await?
                .is_none()
            {
                return Ok(false);
            }
            player.code = Some(String::new());
            player.lobby.clear();
        }
        Ok(true)
    }
}

/// What is next in a game, read from a player's copy of the lobby.
enum Turn {
    /// This seat's player plays this move.
    Play { host: bool, choice: MoveChoice },
    /// The game is over.
    Over,
}

/// A move as a request names it.
enum MoveChoice {
    /// By its notation (what v1's `state` lists).
    Notation(String),
    /// By its path (what v2's `snapshot` and `moved` list).
    Path(Vec<String>),
}

impl MoveChoice {
    fn request(self, seq: u32) -> ClientMessage {
        match self {
            MoveChoice::Notation(notation) => ClientMessage::Move {
                seq,
                notation: Some(notation),
                path: None,
            },
            MoveChoice::Path(path) => ClientMessage::Move {
                seq,
                notation: None,
                path: Some(path),
            },
        }
    }
}

/// The open-loop schedule of one game or pair.
#[derive(Debug)]
struct Schedule {
    next: Instant,
    gap: Option<Duration>,
}

impl Schedule {
    fn new(pace: Pace, games: usize, index: usize, start: Instant) -> Schedule {
        match pace {
            Pace::Open { rate } => {
                let gap = Duration::from_secs_f64(games as f64 / rate);
                // Spread the games' first sends evenly over one gap, and their
                // phase within a millisecond too. tokio's timer fires on whole
                // milliseconds, so sends sharing one phase would all wake late
                // by the same amount, set by chance anew in every phase, and a
                // phase's percentiles would move with it.
                let within_ms = (index as f64 * GOLDEN_RATIO_FRACTION).fract();
                let offset = gap.mul_f64(index as f64 / games as f64)
                    + Duration::from_secs_f64(within_ms / 1000.0);
                Schedule {
                    next: start + offset,
                    gap: Some(gap),
                }
            }
            Pace::Closed => Schedule {
                next: start,
                gap: None,
            },
        }
    }

    /// Waits for the next intended send time and returns it; `None` if it falls after
    /// `deadline`. Closed loop: now.
    async fn wait(&mut self, deadline: Instant) -> Option<Instant> {
        let Some(gap) = self.gap else {
            return Some(Instant::now());
        };
        let intended = self.next;
        if intended >= deadline {
            return None;
        }
        self.next += gap;
        sleep_until(intended).await;
        Some(intended)
    }

    /// After a pause that is not part of the load (a new lobby), start again from
    /// `not_before` (no earlier than now).
    fn rebase(&mut self, not_before: Instant) {
        self.next = self.next.max(not_before).max(Instant::now());
    }
}

/// What one game or pair brings back.
#[derive(Debug)]
struct Outcome {
    ops: u64,
    lobbies: u64,
    latency_us: Histogram<u64>,
    error: Option<String>,
    /// Moves whose frames were all counted in `move_traffic`.
    metered_moves: u64,
    /// Both members' frames for those moves.
    move_traffic: Traffic,
    /// Protocol 2 gaps seen (and resynced).
    gaps: u64,
}

impl Outcome {
    fn new() -> Outcome {
        Outcome {
            ops: 0,
            lobbies: 0,
            latency_us: new_histogram(),
            error: None,
            metered_moves: 0,
            move_traffic: Traffic::default(),
            gaps: 0,
        }
    }
}

fn micros(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_micros()).unwrap_or(u64::MAX)
}

async fn play_game(
    mut game: Game,
    mut schedule: Schedule,
    deadline: Instant,
    progress: Arc<Progress>,
) -> Outcome {
    let mut outcome = Outcome::new();
    let hard = deadline + GRACE;
    let result = async {
        while Instant::now() < deadline {
            let version = game.host.lobby.version().ok_or("no state")?;
            let (host_moves, choice) = match game.host.lobby.turn(&game.host.id) {
                Turn::Over => {
                    if !game.leave(deadline).await? || !game.new_lobby(deadline).await? {
                        break;
                    }
                    outcome.lobbies += 1;
                    progress.lobbies.fetch_add(1, Ordering::Relaxed);
                    // Setting up the lobby was this game's last message on both
                    // connections: the next move is due once the pacing lets either
                    // send, not before, or its wait would count as latency.
                    schedule.rebase(game.host.conn.ready_at().max(game.guest.conn.ready_at()));
                    continue;
                }
                Turn::Play { host, choice } => (host, choice),
            };
            let Some(intended) = schedule.wait(deadline).await else {
                break;
            };
            let (mover, other) = if host_moves {
                (&mut game.host, &mut game.guest)
            } else {
                (&mut game.guest, &mut game.host)
            };
            // Keep to the pacing before the clock starts (closed loop measures from
            // the real send).
            mover.conn.pace().await;
            let before = (mover.conn.client.traffic(), other.conn.client.traffic());
            let sent = Instant::now();
            let Some(acked) = mover.request(|seq| choice.request(seq), hard).await? else {
                break;
            };
            let counted = acked <= deadline;
            if counted {
                let from = if schedule.gap.is_some() {
                    intended
                } else {
                    sent
                };
                outcome.latency_us.saturating_record(micros(from, acked));
                outcome.ops += 1;
                progress.ops.fetch_add(1, Ordering::Relaxed);
            }
            // Both see the move's state before anyone moves again.
            if !mover
                .state_until(|l| l.version().is_some_and(|v| v > version), hard)
                .await?
            {
                break;
            }
            let seen = mover.lobby.version().unwrap_or(version);
            if !other
                .state_until(|l| l.version().is_some_and(|v| v >= seen), hard)
                .await?
            {
                break;
            }
            if counted {
                // Everything either member received for this move (its `ack`, the
                // states or events), and the `move` itself.
                outcome
                    .move_traffic
                    .add(mover.conn.client.traffic().since(before.0));
                outcome
                    .move_traffic
                    .add(other.conn.client.traffic().since(before.1));
                outcome.metered_moves += 1;
            }
        }
        Ok::<(), String>(())
    }
    .await;
    outcome.gaps = game.host.gaps + game.guest.gaps;
    if let Err(e) = result {
        progress.errors.fetch_add(1, Ordering::Relaxed);
        outcome.error = Some(e);
    }
    outcome
}

/// Builds echo frames: MessagePack `ack`s padded to the size of a `move` message.
#[derive(Debug, Clone)]
pub struct EchoFrames {
    pad: String,
}

#[derive(Serialize)]
struct Probe<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    seq: u32,
    pad: &'a str,
}

impl Default for EchoFrames {
    fn default() -> Self {
        EchoFrames::new()
    }
}

impl EchoFrames {
    /// Works out the padding once; the `seq` takes the same bytes in both messages.
    pub fn new() -> EchoFrames {
        let move_len = move_frame_len(1);
        let bare = EchoFrames { pad: String::new() }.frame(1).len();
        EchoFrames {
            pad: "x".repeat(move_len.saturating_sub(bare)),
        }
    }

    /// The frame for `seq`.
    pub fn frame(&self, seq: u32) -> Vec<u8> {
        let probe = Probe {
            kind: "ack",
            seq,
            pad: &self.pad,
        };
        match codec::encode(Encoding::MsgPack, &probe) {
            Ok(Frame::Binary(bytes)) => bytes,
            Ok(Frame::Text(text)) => text.into_bytes(),
            Err(e) => panic!("cannot encode an echo frame: {e}"),
        }
    }
}

/// The size in bytes of a MessagePack `move` with a typical notation.
pub fn move_frame_len(seq: u32) -> usize {
    codec::encode_client(
        Encoding::MsgPack,
        &ClientMessage::Move {
            seq,
            notation: Some(TYPICAL_NOTATION.into()),
            path: None,
        },
    )
    .len()
}

impl Conn {
    /// Sends one echo frame and waits for it; returns when it came back.
    async fn echo(
        &mut self,
        frames: &EchoFrames,
        hard: Instant,
    ) -> Result<Option<Instant>, String> {
        let seq = self.client.next_seq();
        // Not paced: the echo server has no rate limit to stay under.
        self.client
            .send_raw_binary(frames.frame(seq))
            .await
            .map_err(|e| e.to_string())?;
        let limit = wait_limit(hard);
        loop {
            match self.recv(limit).await? {
                None if limit >= hard => return Ok(None),
                None => return Err(timed_out("an echo")),
                Some(ServerMessage::Ack { seq: s }) if s == seq => {
                    return Ok(Some(Instant::now()));
                }
                Some(_) => {}
            }
        }
    }
}

/// Two echo connections taking turns.
#[derive(Debug)]
struct Pair {
    a: Conn,
    b: Conn,
}

impl Pair {
    async fn set_up(url: &str, frames: &EchoFrames, hard: Instant) -> Result<Pair, String> {
        let mut a = Conn::connect(url, ProtocolVersion::V1, hard).await?;
        let mut b = Conn::connect(url, ProtocolVersion::V1, hard).await?;
        for conn in [&mut a, &mut b] {
            if conn.echo(frames, hard).await?.is_none() {
                return Err(timed_out("the first echo"));
            }
        }
        Ok(Pair { a, b })
    }
}

async fn play_pair(
    mut pair: Pair,
    frames: EchoFrames,
    mut schedule: Schedule,
    deadline: Instant,
    progress: Arc<Progress>,
) -> Outcome {
    let mut outcome = Outcome::new();
    let hard = deadline + GRACE;
    let mut a_turn = true;
    let result = async {
        while Instant::now() < deadline {
            let Some(intended) = schedule.wait(deadline).await else {
                break;
            };
            let conn = if a_turn { &mut pair.a } else { &mut pair.b };
            a_turn = !a_turn;
            let sent = Instant::now();
            let Some(back) = conn.echo(&frames, hard).await? else {
                break;
            };
            if back <= deadline {
                let from = if schedule.gap.is_some() {
                    intended
                } else {
                    sent
                };
                outcome.latency_us.saturating_record(micros(from, back));
                outcome.ops += 1;
                progress.ops.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok::<(), String>(())
    }
    .await;
    if let Err(e) = result {
        progress.errors.fetch_add(1, Ordering::Relaxed);
        outcome.error = Some(e);
    }
    outcome
}

enum Driver {
    Game(Box<Game>),
    Pair(Box<Pair>),
}

/// Runs one phase: sets up `games` games (or echo pairs) against `url`, then drives
/// them for `duration`, printing a progress line to stderr every second.
pub async fn run_phase(
    label: &str,
    kind: Kind,
    url: &str,
    games: Games,
    pace: Pace,
    duration: Duration,
) -> Result<PhaseStats, String> {
    let Games {
        count: games,
        rule_set,
        protocol,
    } = games;
    let frames = EchoFrames::new();
    let setup_limit = Instant::now() + PATIENCE * 3;
    let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
    let mut setups = JoinSet::new();
    for _ in 0..games {
        let (url, frames, permits) = (url.to_owned(), frames.clone(), permits.clone());
        setups.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            match kind {
                Kind::Jumpgate => Game::set_up(&url, protocol, setup_limit, rule_set)
                    .await
                    .map(|g| Driver::Game(Box::new(g))),
                Kind::Echo => Pair::set_up(&url, &frames, setup_limit)
                    .await
                    .map(|p| Driver::Pair(Box::new(p))),
            }
        });
    }
    let mut ready = Vec::with_capacity(games);
    let mut errors = 0;
    let mut first_error = None;
    while let Some(joined) = setups.join_next().await {
        match joined.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(driver) => ready.push(driver),
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("set-up: {e}"));
            }
        }
    }
    if ready.is_empty() {
        return Err(format!(
            "{label}: no game could be set up: {}",
            first_error.unwrap_or_default()
        ));
    }

    let progress = Arc::new(Progress::default());
    let start = Instant::now();
    let deadline = start + duration;
    let count = ready.len();
    let mut running = JoinSet::new();
    for (index, driver) in ready.into_iter().enumerate() {
        let schedule = Schedule::new(pace, count, index, start);
        let progress = progress.clone();
        match driver {
            Driver::Game(game) => {
                running.spawn(play_game(*game, schedule, deadline, progress));
            }
            Driver::Pair(pair) => {
                running.spawn(play_pair(
                    *pair,
                    frames.clone(),
                    schedule,
                    deadline,
                    progress,
                ));
            }
        }
    }
    let ticker = tokio::spawn(report_progress(
        label.to_owned(),
        kind,
        progress.clone(),
        start,
        deadline,
    ));

    let mut latency_us = new_histogram();
    let (mut ops, mut lobbies) = (0, 0);
    let (mut metered_moves, mut move_traffic, mut gaps) = (0, Traffic::default(), 0);
    // A hard bound even if some connection hangs past every limit.
    let give_up = deadline + GRACE + PATIENCE;
    loop {
        match timeout_at(give_up, running.join_next()).await {
            Ok(Some(Ok(outcome))) => {
                ops += outcome.ops;
                lobbies += outcome.lobbies;
                metered_moves += outcome.metered_moves;
                move_traffic.add(outcome.move_traffic);
                gaps += outcome.gaps;
                latency_us
                    .add(&outcome.latency_us)
                    .map_err(|e| e.to_string())?;
                if let Some(e) = outcome.error {
                    errors += 1;
                    first_error.get_or_insert(e);
                }
            }
            Ok(Some(Err(e))) => {
                errors += 1;
                first_error.get_or_insert(e.to_string());
            }
            Ok(None) => break,
            Err(_) => {
                errors += running.len() as u64;
                first_error.get_or_insert("some games did not stop in time".into());
                running.abort_all();
                break;
            }
        }
    }
    ticker.abort();
    Ok(PhaseStats {
        label: label.to_owned(),
        kind,
        games: count,
        ops,
        seconds: duration.as_secs_f64(),
        errors,
        first_error,
        lobbies,
        latency_us,
        window_start: start,
        protocol,
        metered_moves,
        move_traffic,
        gaps,
    })
}

async fn report_progress(
    label: String,
    kind: Kind,
    progress: Arc<Progress>,
    start: Instant,
    deadline: Instant,
) {
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let mut last = 0;
    loop {
        let now = tick.tick().await;
        if now > deadline + Duration::from_millis(100) {
            return;
        }
        let ops = progress.ops.load(Ordering::Relaxed);
        eprintln!(
            "  {label:<20} {:>4.0}s {ops:>9} {} {:>8}/s  lobbies {:>5}  errors {}",
            now.duration_since(start).as_secs_f64(),
            kind.unit(),
            ops - last,
            progress.lobbies.load(Ordering::Relaxed),
            progress.errors.load(Ordering::Relaxed),
        );
        last = ops;
    }
}

/// Opens `count` connections, says `hello` on each (one echo round trip on the echo
/// server), and reads the server's memory before and after; bounded by `limit`. The
/// connections stay open until the returned [`IdleConnections`] is dropped.
pub async fn run_idle(
    kind: Kind,
    protocol: ProtocolVersion,
    url: &str,
    count: usize,
    pid: Option<u32>,
    limit: Duration,
) -> (IdleStats, IdleConnections) {
    let rss_before_kib = pid.and_then(crate::net::vm_rss_kib);
    let hard = Instant::now() + limit;
    let frames = EchoFrames::new();
    let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
    let mut opening = JoinSet::new();
    for _ in 0..count {
        let (url, frames, permits) = (url.to_owned(), frames.clone(), permits.clone());
        opening.spawn(async move {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            match kind {
                Kind::Jumpgate => Player::greet(&url, protocol, hard).await.map(|p| p.conn),
                Kind::Echo => {
                    let mut conn = Conn::connect(&url, ProtocolVersion::V1, hard).await?;
                    match conn.echo(&frames, hard).await? {
                        Some(_) => Ok(conn),
                        None => Err(timed_out("the first echo")),
                    }
                }
            }
        });
    }
    let started = Instant::now();
    let mut open = Vec::with_capacity(count);
    let (mut errors, mut first_error) = (0, None);
    let mut last_report = started;
    loop {
        match timeout_at(hard, opening.join_next()).await {
            Ok(Some(Ok(Ok(conn)))) => open.push(conn),
            Ok(Some(Ok(Err(e)))) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
            Ok(Some(Err(e))) => {
                errors += 1;
                first_error.get_or_insert(e.to_string());
            }
            Ok(None) => break,
            Err(_) => {
                errors += opening.len() as u64;
                first_error.get_or_insert("opening connections took too long".into());
                opening.abort_all();
                break;
            }
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            last_report = Instant::now();
            eprintln!(
                "  idle {kind:?}: {:>4.0}s {} of {count} open, errors {errors}",
                started.elapsed().as_secs_f64(),
                open.len(),
            );
        }
    }
    // Let the server finish any work the greetings caused before reading its memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after_kib = pid.and_then(crate::net::vm_rss_kib);
    eprintln!(
        "  idle {kind:?}: {} open in {:.1}s, errors {errors}",
        open.len(),
        started.elapsed().as_secs_f64()
    );
    let connections = open.len();
    let stats = IdleStats {
        connections,
        rss_before_kib,
        rss_after_kib,
        errors,
        first_error,
    };
    (stats, IdleConnections(open))
}

/// The connections an idle phase opened, open until dropped: a later phase measured
/// while they are held adds its own connections on top, instead of reusing the memory
/// these would have left free.
#[derive(Debug)]
pub struct IdleConnections(Vec<Conn>);

impl IdleConnections {
    /// How many are open.
    pub fn count(&self) -> usize {
        self.0.len()
    }
}

/// Counters shared by the solo drivers of a [`SoloLoad`], read while it runs.
#[derive(Debug, Default)]
pub struct SoloCounters {
    /// Solo games that received their first `solo_state`.
    pub running: AtomicU64,
    /// Moves the drivers played for the human side.
    pub human_moves: AtomicU64,
    /// Moves the computer played (a `solo_state` that ends its thinking).
    pub bot_moves: AtomicU64,
    /// Games that reached a result (each followed by a new `start_solo`).
    pub finished: AtomicU64,
    /// Games whose latest `solo_state` says the computer is thinking (or queued for the
    /// bot pool), right now.
    pub thinking: AtomicU64,
    /// Drivers that failed.
    pub errors: AtomicU64,
    first_error: Mutex<Option<String>>,
    move_ack_us: Mutex<Option<Histogram<u64>>>,
}

impl SoloCounters {
    /// The first failure of any driver.
    pub fn first_error(&self) -> Option<String> {
        self.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fail(&self, error: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(error);
    }

    /// The human moves' `move` → `ack` round trips of the drivers that have stopped.
    pub fn move_ack_us(&self) -> Option<Histogram<u64>> {
        self.move_ack_us
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn add_move_acks(&self, h: &Histogram<u64>) {
        let mut all = self.move_ack_us.lock().unwrap_or_else(|e| e.into_inner());
        match all.as_mut() {
            Some(all) => {
                let _ = all.add(h);
            }
            None => *all = Some(h.clone()),
        }
    }
}

/// Solo games against the computer, each on its own connection, played by a loop that
/// answers as soon as it is the human's turn, so the server's bot pool always has work.
/// They run until [`SoloLoad::stop`].
#[derive(Debug)]
pub struct SoloLoad {
    games: usize,
    counters: Arc<SoloCounters>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl SoloLoad {
    /// Connects `games` drivers to `url` and starts them (in the background).
    pub fn start(url: &str, games: usize, level: BotLevel) -> SoloLoad {
        let counters = Arc::new(SoloCounters::default());
        let (stop, stopped) = watch::channel(false);
        let permits = Arc::new(Semaphore::new(SETUP_CONCURRENCY));
        let mut tasks = JoinSet::new();
        for _ in 0..games {
            let (url, counters, stopped, permits) = (
                url.to_owned(),
                counters.clone(),
                stopped.clone(),
                permits.clone(),
            );
            tasks.spawn(async move {
                let acks = new_histogram();
                let mut driver = SoloDriver {
                    counters: counters.clone(),
                    acks,
                    was_thinking: false,
                };
                if let Err(e) = driver.run(&url, level, stopped, permits).await {
                    counters.fail(e);
                }
                driver.set_thinking(false);
                counters.add_move_acks(&driver.acks);
            });
        }
        SoloLoad {
            games,
            counters,
            stop,
            tasks,
        }
    }

    /// The live counters.
    pub fn counters(&self) -> Arc<SoloCounters> {
        self.counters.clone()
    }

    /// Waits until every game is running (or failed) and as many as `thinking_goal` wait
    /// for the computer at once, at most `limit`; says whether both happened.
    pub async fn wait_busy(&self, thinking_goal: u64, limit: Duration) -> bool {
        let give_up = Instant::now() + limit;
        loop {
            let c = &self.counters;
            let settled = c.running.load(Ordering::Relaxed) + c.errors.load(Ordering::Relaxed)
                >= self.games as u64;
            if settled && c.thinking.load(Ordering::Relaxed) >= thinking_goal {
                return true;
            }
            if Instant::now() >= give_up {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops every driver (waiting at most [`GRACE`]) and returns the counters.
    pub async fn stop(mut self) -> Arc<SoloCounters> {
        let _ = self.stop.send(true);
        let give_up = Instant::now() + GRACE;
        while let Ok(Some(_)) = timeout_at(give_up, self.tasks.join_next()).await {}
        self.tasks.abort_all();
        self.counters
    }
}

struct SoloDriver {
    counters: Arc<SoloCounters>,
    acks: Histogram<u64>,
    was_thinking: bool,
}

impl SoloDriver {
    fn set_thinking(&mut self, thinking: bool) {
        if thinking != self.was_thinking {
            if thinking {
                self.counters.thinking.fetch_add(1, Ordering::Relaxed);
            } else {
                self.counters.thinking.fetch_sub(1, Ordering::Relaxed);
            }
            self.was_thinking = thinking;
        }
    }

    async fn start(conn: &mut Conn, level: BotLevel) -> Result<u32, String> {
        let seq = conn.client.next_seq();
        conn.send(&ClientMessage::StartSolo {
            seq,
            rule_set: RuleSet::American,
            mode: SoloMode::Computer,
            level: Some(level),
            ranked: false,
        })
        .await?;
        Ok(seq)
    }

    /// Plays until `stopped` turns true. Sends at most one message per `solo_state`.
    async fn run(
        &mut self,
        url: &str,
        level: BotLevel,
        mut stopped: watch::Receiver<bool>,
        permits: Arc<Semaphore>,
    ) -> Result<(), String> {
        let mut conn = {
            let _permit = permits.acquire_owned().await.map_err(|e| e.to_string())?;
            Player::greet(url, ProtocolVersion::V1, Instant::now() + PATIENCE)
                .await?
                .conn
        };
        // The `start_solo` whose ack is awaited: states before it belong to the old game.
        let mut starting = Some(Self::start(&mut conn, level).await?);
        let mut game_id: Option<String> = None;
        // The version last answered with a move, and that move's seq and send time.
        let mut answered: Option<u64> = None;
        let mut sent_move: Option<(u32, Instant)> = None;
        let mut counted = false;
        loop {
            if *stopped.borrow() {
                return Ok(());
            }
            // A game waits for the shared bot pool, so the computer may take long; only
            // an hour of silence counts as a failure.
            let limit = Instant::now() + Duration::from_secs(3600);
            let message = tokio::select! {
                _ = stopped.changed() => return Ok(()),
                message = conn.recv(limit) => message?,
            };
            let state: SoloState = match message {
                None => return Err(timed_out("a solo game")),
                Some(ServerMessage::Ack { seq }) => {
                    if starting == Some(seq) {
                        starting = None;
                        game_id = None;
                        answered = None;
                    }
                    if let Some((s, at)) = sent_move
                        && s == seq
                    {
                        self.acks.saturating_record(micros(at, Instant::now()));
                        sent_move = None;
                    }
                    continue;
                }
                Some(ServerMessage::Error { seq, code, message }) => {
                    return Err(format!("solo game: {code} {message} (seq {seq:?})"));
                }
                Some(ServerMessage::Shutdown { .. }) => {
                    return Err("the server is shutting down".into());
                }
                Some(ServerMessage::SoloState(state)) => state,
                Some(_) => continue,
            };
            if starting.is_some() {
                continue;
            }
            if game_id.as_deref() != Some(state.id.as_str()) {
                if game_id.is_some() {
                    // Another game's state: not ours to answer.
                    continue;
                }
                game_id = Some(state.id.clone());
                if !counted {
                    counted = true;
                    self.counters.running.fetch_add(1, Ordering::Relaxed);
                }
            } else if self.was_thinking && !state.thinking {
                self.counters.bot_moves.fetch_add(1, Ordering::Relaxed);
            }
            self.set_thinking(state.thinking);
            let game = &state.game;
            if game.result.is_some() {
                self.counters.finished.fetch_add(1, Ordering::Relaxed);
                self.set_thinking(false);
                starting = Some(Self::start(&mut conn, level).await?);
                continue;
            }
            let our_turn =
                !state.thinking && state.you == Some(game.turn) && answered != Some(state.version);
            if let (true, Some(first)) = (our_turn, game.legal_moves.first()) {
                let seq = conn.client.next_seq();
                let notation = first.notation.clone();
                answered = Some(state.version);
                conn.send(&ClientMessage::Move {
                    seq,
                    notation: Some(notation),
                    path: None,
                })
                .await?;
                sent_move = Some((seq, Instant::now()));
                self.counters.human_moves.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_frames_are_move_sized_acks() {
        let frames = EchoFrames::new();
        for seq in [1, 200, 70_000, u32::MAX] {
            let frame = frames.frame(seq);
            assert_eq!(frame.len(), move_frame_len(seq), "seq {seq}");
            let decoded = codec::decode_server(Encoding::MsgPack, &frame).unwrap();
            assert_eq!(decoded, ServerMessage::Ack { seq });
        }
    }
}
