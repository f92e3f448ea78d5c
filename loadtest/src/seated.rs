//! Lobbies with two seated players, each on the SDK's [`Session`], for the benchmarks
//! that run several instances: like real clients, the players come back by themselves
//! when their instance dies or their room moves. What the benchmarks time and check is
//! kept: when each move was sent and when its answer came, every reconnection, and the
//! moves each player sees, so that no acknowledged move can go missing unnoticed.
//!
//! Each session's own driver task keeps reading and reconnecting whatever the benchmark
//! is doing. A move is sent with [`Session::send`], which returns once the move is on
//! the connection, and its answer is awaited by a task of its own that notes the moment
//! it came; a benchmark can therefore have a move in flight while it waits for
//! something else (the kill). Reconnections are read from
//! [`Session::reconnections`] by [`SeatedLobby::until`], which benchmarks keep calling
//! while they wait, and are stamped when read. Nothing here copies a room per message
//! (the session's driver does: it converts each protocol 1 `state` to its snapshot and
//! compares it); on a machine shared with the servers, the load tester's own work shows
//! in the figures.
//!
//! The players speak protocol 1 in MessagePack, as these benchmarks always have, so
//! their figures stay comparable with earlier runs.

use jumpgate_protocol::reconnect::{ReconnectPolicy, Reconnection, Reentry};
use jumpgate_protocol::session::{
    LobbyAddress, NewLobby, Reply, Session, SessionOptions, SessionState,
};
use jumpgate_protocol::v2::Path;
use jumpgate_protocol::{ClientMessage, Color, Encoding, Phase, RuleSet, Subprotocol};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};
use tokio::time::{Instant, sleep_until, timeout_at};

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Acknowledged at this moment.
    Ack(Instant),
    /// Refused (the server's code and message), or the session ended first.
    Failed(String),
}

/// One reconnection that worked.
#[derive(Debug, Clone)]
pub struct Reconnected {
    /// Why the connection before it ended.
    pub cause: String,
    /// Connections tried, 1 when the first one worked.
    pub attempts: u32,
    /// When the benchmark read that the client was back.
    pub at: Instant,
}

/// One player: its session, and the reconnections read so far.
#[derive(Debug)]
pub struct Seat {
    id: String,
    session: Session,
    updates: watch::Receiver<SessionState>,
    reconnection_feed: broadcast::Receiver<Reconnection>,
    reconnections: Vec<Reconnected>,
    /// Why the player cannot go on, if it cannot: its room was lost, or reconnections
    /// went unread.
    failed: Option<String>,
}

impl Seat {
    /// Connects to `url` as a new guest and greets the server; the session ends when
    /// the seat is dropped.
    pub async fn connect(url: &str, policy: ReconnectPolicy) -> Result<Seat, String> {
        let options = SessionOptions {
            subprotocol: Subprotocol::v1(Encoding::MsgPack),
            client_name: "jumpgate-loadtest".into(),
            policy,
            ..SessionOptions::default()
        };
        let session = Session::connect(url, options)
            .await
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        Ok(Seat {
            id: session.identity().id,
            updates: session.updates(),
            reconnection_feed: session.reconnections(),
            session,
            reconnections: Vec::new(),
            failed: None,
        })
    }

    /// This player's identity id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the player's session knows now.
    pub fn state(&self) -> SessionState {
        self.session.state()
    }

    /// The moves of the current game, as this player last saw them.
    pub fn game_moves(&self) -> Vec<String> {
        game_moves(&self.updates.borrow()).to_vec()
    }

    /// The reconnections read so far, in order.
    pub fn reconnections(&self) -> &[Reconnected] {
        &self.reconnections
    }

    /// Notes one reconnection from the session.
    fn take(&mut self, reconnection: Result<Reconnection, RecvError>) {
        match reconnection {
            Ok(reconnection) => {
                if let Reentry::Lost { room, refusal } = &reconnection.room {
                    self.failed
                        .get_or_insert(format!("could not re-enter {}: {refusal}", room.route()));
                }
                self.reconnections.push(Reconnected {
                    cause: reconnection.cause.to_string(),
                    attempts: reconnection.attempts,
                    at: Instant::now(),
                });
            }
            // The figures would miss them.
            Err(RecvError::Lagged(missed)) => {
                self.failed
                    .get_or_insert(format!("{missed} reconnections went unread"));
            }
            Err(RecvError::Closed) => {
                self.failed.get_or_insert("the session stopped".into());
            }
        }
    }

    /// Notes every reconnection already waiting.
    fn take_waiting(&mut self) {
        loop {
            let event = match self.reconnection_feed.try_recv() {
                Ok(event) => Ok(event),
                Err(broadcast::error::TryRecvError::Empty) => return,
                Err(broadcast::error::TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(broadcast::error::TryRecvError::Closed) => Err(RecvError::Closed),
            };
            self.take(event);
        }
    }

    /// Why the player cannot go on, if it cannot.
    fn stopped(&self) -> Option<String> {
        let why = self
            .failed
            .clone()
            .or_else(|| self.updates.borrow().ended.clone())?;
        Some(format!("player {}: {why}", self.id))
    }
}

/// The moves of the room's current game in `state`.
fn game_moves(state: &SessionState) -> &[String] {
    state
        .room
        .as_ref()
        .and_then(|room| room.game.as_ref())
        .map_or(&[], |game| game.moves.as_slice())
}

fn is_playing(state: &SessionState) -> bool {
    state
        .room
        .as_ref()
        .is_some_and(|room| room.phase == Phase::Playing && room.game.is_some())
}

/// A move sent, with its answer to come.
#[derive(Debug, Clone)]
pub struct SentMove {
    /// Whether the host sent it.
    pub by_host: bool,
    /// What was played: the start square and every landing square.
    pub path: Path,
    /// When it was on the connection.
    pub at: Instant,
    /// Its answer, once it came.
    answer: watch::Receiver<Option<Answer>>,
}

/// A lobby with both seats taken and a game in play.
#[derive(Debug)]
pub struct SeatedLobby {
    /// The lobby's code.
    pub code: String,
    /// The player who opened it.
    pub host: Seat,
    /// The player who joined.
    pub guest: Seat,
    /// Every move acknowledged so far, in order, by its notation; a move acknowledged
    /// that neither player came to see is listed as its path, with a note, so that it
    /// cannot match a stored move.
    pub acknowledged: Vec<String>,
}

impl SeatedLobby {
    /// The host connects to `host_url` and opens an American lobby (series of 1); the
    /// guest connects to `guest_url(code)` and joins. Returns once both see the game.
    pub async fn open(
        host_url: &str,
        guest_url: impl FnOnce(&str) -> String,
        policy: ReconnectPolicy,
        limit: Instant,
    ) -> Result<SeatedLobby, String> {
        let host = Seat::connect(host_url, policy.clone()).await?;
        let lobby = NewLobby {
            rule_set: RuleSet::American,
            series_length: 1,
            ..NewLobby::default()
        };
        let code = timeout_at(limit, host.session.create_lobby(lobby))
            .await
            .map_err(|_| "no answer to create_lobby in time")?
            .map_err(|e| format!("create_lobby: {e}"))?
            .code;
        let guest = Seat::connect(&guest_url(&code), policy).await?;
        timeout_at(limit, guest.session.join(&LobbyAddress::code(&code)))
            .await
            .map_err(|_| format!("{code}: no answer to join_lobby in time"))?
            .map_err(|e| format!("{code}: join_lobby: {e}"))?;
        let mut lobby = SeatedLobby {
            code,
            host,
            guest,
            acknowledged: Vec::new(),
        };
        if !lobby
            .until(limit, |h, g| is_playing(h) && is_playing(g))
            .await?
        {
            return Err(format!("{}: the game did not start in time", lobby.code));
        }
        Ok(lobby)
    }

    /// Waits until `done` holds for the two players' states, noting their
    /// reconnections meanwhile; false if `limit` passed first, an error if a player
    /// stopped. Benchmarks call it while they wait for anything else, so that
    /// reconnections are read (and stamped) as they happen.
    pub async fn until(
        &mut self,
        limit: Instant,
        done: impl Fn(&SessionState, &SessionState) -> bool,
    ) -> Result<bool, String> {
        loop {
            self.host.take_waiting();
            self.guest.take_waiting();
            {
                let host = self.host.updates.borrow_and_update();
                let guest = self.guest.updates.borrow_and_update();
                if done(&host, &guest) {
                    return Ok(true);
                }
            }
            if let Some(why) = self.host.stopped().or_else(|| self.guest.stopped()) {
                return Err(why);
            }
            let (host, guest) = (&mut self.host, &mut self.guest);
            tokio::select! {
                changed = host.updates.changed() => {
                    changed.map_err(|_| format!("player {} has stopped", host.id))?;
                }
                changed = guest.updates.changed() => {
                    changed.map_err(|_| format!("player {} has stopped", guest.id))?;
                }
                reconnection = host.reconnection_feed.recv() => host.take(reconnection),
                reconnection = guest.reconnection_feed.recv() => guest.take(reconnection),
                () = sleep_until(limit) => return Ok(false),
            }
        }
    }

    /// Whether the host is to move, from the newest room either player has.
    fn host_to_move(&self, host: &SessionState, guest: &SessionState) -> Result<bool, String> {
        let newest = [&host.room, &guest.room]
            .into_iter()
            .flatten()
            .max_by_key(|room| room.version)
            .ok_or("no room yet")?;
        let game = newest.game.as_ref().ok_or("no game in play")?;
        if game.result.is_some() {
            return Err("the game is over".into());
        }
        let seat = if game.turn == Color::Dark {
            usize::from(game.dark_seat)
        } else {
            1 - usize::from(game.dark_seat).min(1)
        };
        let player = newest
            .players
            .get(seat)
            .and_then(Option::as_ref)
            .ok_or("the seat to move is empty")?;
        Ok(player.id == self.host.id)
    }

    /// The player to move sends the first legal move of the position it has seen
    /// (call it once both see the last acknowledged move). Returns once the move is on
    /// the connection; its answer is awaited by a task of its own.
    pub async fn send_move(&mut self) -> Result<SentMove, String> {
        let (by_host, path) = {
            let (host, guest) = (self.host.updates.borrow(), self.guest.updates.borrow());
            let by_host = self.host_to_move(&host, &guest)?;
            let seen = if by_host { &host } else { &guest };
            let path = seen
                .room
                .as_ref()
                .and_then(|room| room.game.as_ref())
                .and_then(|game| game.legal.first())
                .cloned()
                .ok_or("no legal move")?;
            (by_host, path)
        };
        let mover = if by_host { &self.host } else { &self.guest };
        let sent_path = path.clone();
        let pending = mover
            .session
            .send(move |seq| ClientMessage::Move {
                seq,
                notation: None,
                path: Some(sent_path),
            })
            .await
            .map_err(|e| format!("player {}: sending a move: {e}", mover.id))?;
        let at = Instant::now();
        let (answered, answer) = watch::channel(None);
        tokio::spawn(async move {
            let answer = match pending.answer().await {
                Ok(Reply::Ack) => Answer::Ack(Instant::now()),
                Ok(other) => Answer::Failed(format!("answered {other:?}")),
                Err(e) => Answer::Failed(e.to_string()),
            };
            let _ = answered.send(Some(answer));
        });
        Ok(SentMove {
            by_host,
            path,
            at,
            answer,
        })
    }

    /// Waits for the answer to `sent` and for both players to see as many moves as are
    /// then acknowledged. Returns when the ack came, or `None` if `limit` passed.
    pub async fn settle(
        &mut self,
        sent: &SentMove,
        limit: Instant,
    ) -> Result<Option<Instant>, String> {
        let mut answer = sent.answer.clone();
        let acked = loop {
            if let Some(came) = answer.borrow_and_update().clone() {
                break came;
            }
            tokio::select! {
                changed = answer.changed() => {
                    changed.map_err(|_| "the answer went missing".to_owned())?;
                }
                read = self.until(limit, |_, _| false) => {
                    read?;
                    return Ok(None);
                }
            }
        };
        let acked = match acked {
            Answer::Ack(at) => at,
            Answer::Failed(why) => return Err(format!("move {:?}: {why}", sent.path)),
        };
        let n = self.acknowledged.len() + 1;
        let seen = move |host: &SessionState, guest: &SessionState| {
            game_moves(host).len() >= n && game_moves(guest).len() >= n
        };
        if !self.until(limit, seen).await? {
            self.acknowledged.push(format!(
                "{} (acknowledged, never seen)",
                sent.path.join("-")
            ));
            return Ok(None);
        }
        let mover = if sent.by_host {
            &self.host
        } else {
            &self.guest
        };
        let notation = {
            let state = mover.updates.borrow();
            let game = state
                .room
                .as_ref()
                .and_then(|room| room.game.as_ref())
                .ok_or("no game in play")?;
            // Nobody else moves meanwhile, so the move at ply n is the one sent.
            game.last_move
                .as_ref()
                .filter(|played| game.ply as usize == n && played.path == sent.path)
                .map(|played| played.notation.clone())
        };
        let Some(notation) = notation else {
            return Err(format!(
                "the game's move {n} is not the move sent, {:?}",
                sent.path
            ));
        };
        self.acknowledged.push(notation);
        Ok(Some(acked))
    }

    /// Sends the next move and waits as [`settle`](Self::settle) does.
    pub async fn play(&mut self, limit: Instant) -> Result<Option<Instant>, String> {
        let sent = self.send_move().await?;
        self.settle(&sent, limit).await
    }

    /// Reconnections of both players read so far.
    pub fn reconnections(&self) -> Vec<Reconnected> {
        let mut all = self.host.reconnections().to_vec();
        all.extend_from_slice(self.guest.reconnections());
        all
    }
}
