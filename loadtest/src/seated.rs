//! Lobbies with two seated players, each on a [`ReconnectingClient`], for the
//! benchmarks that run several instances: like real clients, the players come back by
//! themselves when their instance dies or their room moves. Everything each player is
//! told (answers, states, reconnections) is kept, so a benchmark can time it and check
//! that no acknowledged move went missing.
//!
//! Each player runs in a task of its own that does nothing but read, and send when
//! told to, as a real client does. Waiting on both players by racing their `recv`
//! calls in one task would cancel one player's reconnection whenever the other
//! receives something; `ReconnectingClient` starts a cancelled reconnection again but
//! counts it as a failed attempt, and gives up after ten.

use std::collections::HashMap;

use jumpgate_protocol::reconnect::{
    Event, ReconnectError, ReconnectPolicy, ReconnectingClient, Reentry,
};
use jumpgate_protocol::{ClientMessage, Color, Encoding, Phase, RoomState, RuleSet, ServerMessage};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, sleep_until};

/// What became of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Acknowledged at this moment.
    Ack(Instant),
    /// Refused, with the server's code and message.
    Refused(String),
}

/// What one player has been told so far.
#[derive(Debug, Clone, Default)]
pub struct SeatView {
    /// The newest state of the lobby.
    pub state: Option<RoomState>,
    answers: HashMap<u32, Answer>,
    /// Each reconnection, in order.
    pub reconnections: Vec<Reconnected>,
    /// Errors without a `seq` the server sent.
    pub notices: Vec<String>,
    /// Why the player stopped, if it did.
    pub ended: Option<String>,
}

/// One reconnection that worked.
#[derive(Debug, Clone)]
pub struct Reconnected {
    /// Why the connection before it ended.
    pub cause: String,
    /// Connections tried, 1 when the first one worked.
    pub attempts: u32,
    /// When the client was back.
    pub at: Instant,
}

impl SeatView {
    /// The answer to request `seq`, if it came.
    pub fn answer(&self, seq: u32) -> Option<&Answer> {
        self.answers.get(&seq)
    }

    /// The moves of the current game, as last seen.
    pub fn game_moves(&self) -> &[String] {
        self.state
            .as_ref()
            .and_then(|s| s.game.as_ref())
            .map_or(&[], |g| g.moves.as_slice())
    }

    fn is_playing(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.phase == Phase::Playing && s.game.is_some())
    }

    /// Takes in what the client delivered.
    fn absorb(&mut self, event: Result<Event, ReconnectError>) -> Result<(), String> {
        match event.map_err(|e| e.to_string())? {
            Event::Message(ServerMessage::Ack { seq }) => {
                self.answers
                    .entry(seq)
                    .or_insert(Answer::Ack(Instant::now()));
            }
            Event::Message(ServerMessage::Error {
                seq: Some(seq),
                code,
                message,
            }) => {
                self.answers
                    .entry(seq)
                    .or_insert(Answer::Refused(format!("{code} {message}")));
            }
            Event::Message(ServerMessage::Error {
                seq: None,
                code,
                message,
            }) => self.notices.push(format!("{code} {message}")),
            Event::Message(ServerMessage::State(state)) => {
                let same_room = self.state.as_ref().is_none_or(|s| s.code == state.code);
                if same_room {
                    self.state = Some(state);
                }
            }
            Event::Message(_) => {}
            Event::Reconnected(reconnection) => {
                if let Reentry::Lost { room, refusal } = &reconnection.room {
                    return Err(format!("could not re-enter {}: {refusal}", room.route()));
                }
                self.reconnections.push(Reconnected {
                    cause: reconnection.cause.to_string(),
                    attempts: reconnection.attempts,
                    at: Instant::now(),
                });
            }
        }
        Ok(())
    }
}

/// A request for the player's task: send what `build` makes of the next `seq`, and
/// answer with that `seq`.
struct SendRequest {
    build: Box<dyn FnOnce(u32) -> ClientMessage + Send>,
    sent: oneshot::Sender<Result<u32, String>>,
}

/// One player: its task, and what it has been told.
#[derive(Debug)]
pub struct Seat {
    id: String,
    sends: mpsc::Sender<SendRequest>,
    view: watch::Receiver<SeatView>,
}

impl Seat {
    /// Connects to `url` as a new guest, says `hello`, and starts the player's task.
    /// The task ends when the seat is dropped.
    pub async fn connect(url: &str, policy: ReconnectPolicy) -> Result<Seat, String> {
        let client =
            ReconnectingClient::connect(url, Encoding::MsgPack, None, "jumpgate-loadtest", policy)
                .await
                .map_err(|e| format!("connecting to {url}: {e}"))?;
        let id = client.identity().id.clone();
        let (sends, requests) = mpsc::channel(4);
        let (report, view) = watch::channel(SeatView::default());
        tokio::spawn(play_seat(client, requests, report));
        Ok(Seat { id, sends, view })
    }

    /// This player's identity id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the player has been told so far.
    pub fn view(&self) -> SeatView {
        self.view.borrow().clone()
    }

    async fn request(
        &self,
        build: impl FnOnce(u32) -> ClientMessage + Send + 'static,
    ) -> Result<u32, String> {
        let (sent, seq) = oneshot::channel();
        let gone = || format!("player {} has stopped", self.id);
        self.sends
            .send(SendRequest {
                build: Box::new(build),
                sent,
            })
            .await
            .map_err(|_| gone())?;
        seq.await.map_err(|_| gone())?
    }
}

/// The player's task: reads everything the client delivers into `report`, and sends
/// what it is asked to.
async fn play_seat(
    mut client: ReconnectingClient,
    mut requests: mpsc::Receiver<SendRequest>,
    report: watch::Sender<SeatView>,
) {
    loop {
        // Cancelling `recv` here is harmless for a connected client. A request
        // arrives only when the benchmark decides to move, which it does on a state
        // just received (connected) or right at a kill (before a reconnection
        // attempt has begun: the first waits out a back-off of at least 250 ms).
        tokio::select! {
            request = requests.recv() => {
                let Some(SendRequest { build, sent }) = request else {
                    return;
                };
                let result = client.request(build).await.map_err(|e| e.to_string());
                let failed = result.as_ref().err().cloned();
                let _ = sent.send(result);
                if let Some(why) = failed {
                    report.send_modify(|view| view.ended = Some(why));
                    return;
                }
            }
            event = client.recv() => {
                let mut failed = None;
                report.send_modify(|view| {
                    if let Err(why) = view.absorb(event) {
                        view.ended = Some(why.clone());
                        failed = Some(why);
                    }
                });
                if failed.is_some() {
                    return;
                }
            }
        }
    }
}

/// A move sent and not yet known to be acknowledged.
#[derive(Debug, Clone)]
pub struct SentMove {
    /// Whether the host sent it.
    pub by_host: bool,
    /// Its `seq`.
    pub seq: u32,
    /// What was played.
    pub notation: String,
    /// When it was handed to the client.
    pub at: Instant,
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
    /// Every move acknowledged so far, in order.
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
        let seq = host
            .request(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::American,
                series_length: 1,
                invite_only: false,
                stake: None,
                pace: None,
                draw_rules: None,
            })
            .await?;
        let opened = |v: &SeatView| v.answer(seq).is_some() && v.state.is_some();
        if !wait_for(&host, limit, opened).await? {
            return Err("no answer to create_lobby in time".into());
        }
        let view = host.view();
        if let Some(Answer::Refused(why)) = view.answer(seq) {
            return Err(format!("create_lobby refused: {why}"));
        }
        let code = view
            .state
            .map(|s| s.code)
            .ok_or("no state after create_lobby")?;
        let guest = Seat::connect(&guest_url(&code), policy).await?;
        let join = code.clone();
        let seq = guest
            .request(|seq| ClientMessage::JoinLobby {
                seq,
                code: join,
                invite: None,
            })
            .await?;
        let mut lobby = SeatedLobby {
            code,
            host,
            guest,
            acknowledged: Vec::new(),
        };
        let seated = |host: &SeatView, guest: &SeatView| {
            guest.answer(seq).is_some() && host.is_playing() && guest.is_playing()
        };
        if !lobby.until(limit, seated).await? {
            if let Some(Answer::Refused(why)) = lobby.guest.view().answer(seq) {
                return Err(format!("join_lobby refused: {why}"));
            }
            return Err(format!("{}: the game did not start in time", lobby.code));
        }
        Ok(lobby)
    }

    /// Waits until `done` holds for what the two players have been told; false if
    /// `limit` passed first, an error if a player stopped.
    pub async fn until(
        &mut self,
        limit: Instant,
        done: impl Fn(&SeatView, &SeatView) -> bool,
    ) -> Result<bool, String> {
        loop {
            {
                let host = self.host.view.borrow_and_update();
                let guest = self.guest.view.borrow_and_update();
                if done(&host, &guest) {
                    return Ok(true);
                }
                for (id, view) in [(&self.host.id, &host), (&self.guest.id, &guest)] {
                    if let Some(why) = &view.ended {
                        return Err(format!("player {id}: {why}"));
                    }
                }
            }
            let stopped = |seat: &Seat| format!("player {} has stopped", seat.id);
            tokio::select! {
                changed = self.host.view.changed() => changed.map_err(|_| stopped(&self.host))?,
                changed = self.guest.view.changed() => changed.map_err(|_| stopped(&self.guest))?,
                () = sleep_until(limit) => return Ok(false),
            }
        }
    }

    /// Whether the host is to move, from the newest state either player has.
    fn host_to_move(&self, host: &SeatView, guest: &SeatView) -> Result<bool, String> {
        let newest = [&host.state, &guest.state]
            .into_iter()
            .flatten()
            .max_by_key(|s| s.version)
            .ok_or("no state yet")?;
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
    /// (call it once both see the last acknowledged move).
    pub async fn send_move(&mut self) -> Result<SentMove, String> {
        let (host, guest) = (self.host.view(), self.guest.view());
        let by_host = self.host_to_move(&host, &guest)?;
        let (mover, view) = if by_host {
            (&self.host, &host)
        } else {
            (&self.guest, &guest)
        };
        let notation = view
            .state
            .as_ref()
            .and_then(|s| s.game.as_ref())
            .and_then(|g| g.legal_moves.first())
            .map(|m| m.notation.clone())
            .ok_or("no legal move")?;
        let text = notation.clone();
        let at = Instant::now();
        let seq = mover
            .request(move |seq| ClientMessage::Move {
                seq,
                notation: Some(text),
                path: None,
            })
            .await?;
        Ok(SentMove {
            by_host,
            seq,
            notation,
            at,
        })
    }

    /// Waits for the answer to `sent` and for both players to see as many moves as are
    /// then acknowledged. Returns when the ack came, or `None` if `limit` passed.
    pub async fn settle(
        &mut self,
        sent: &SentMove,
        limit: Instant,
    ) -> Result<Option<Instant>, String> {
        let (by_host, seq) = (sent.by_host, sent.seq);
        let answer = move |host: &SeatView, guest: &SeatView| {
            let mover = if by_host { host } else { guest };
            mover.answer(seq).cloned()
        };
        if !self.until(limit, |h, g| answer(h, g).is_some()).await? {
            return Ok(None);
        }
        let acked = match answer(&self.host.view(), &self.guest.view()) {
            Some(Answer::Ack(at)) => at,
            Some(Answer::Refused(why)) => {
                return Err(format!("move {} refused: {why}", sent.notation));
            }
            None => return Err("the answer went missing".into()),
        };
        self.acknowledged.push(sent.notation.clone());
        let n = self.acknowledged.len();
        let seen = move |host: &SeatView, guest: &SeatView| {
            host.game_moves().len() >= n && guest.game_moves().len() >= n
        };
        if !self.until(limit, seen).await? {
            return Ok(None);
        }
        Ok(Some(acked))
    }

    /// Sends the next move and waits as [`settle`](Self::settle) does.
    pub async fn play(&mut self, limit: Instant) -> Result<Option<Instant>, String> {
        let sent = self.send_move().await?;
        self.settle(&sent, limit).await
    }

    /// Reconnections of both players.
    pub fn reconnections(&self) -> Vec<Reconnected> {
        let mut all = self.host.view().reconnections;
        all.extend(self.guest.view().reconnections);
        all
    }
}

/// Waits until `done` holds for one player.
async fn wait_for(
    seat: &Seat,
    limit: Instant,
    done: impl Fn(&SeatView) -> bool,
) -> Result<bool, String> {
    let mut view = seat.view.clone();
    loop {
        {
            let now = view.borrow_and_update();
            if done(&now) {
                return Ok(true);
            }
            if let Some(why) = &now.ended {
                return Err(format!("player {}: {why}", seat.id));
            }
        }
        tokio::select! {
            changed = view.changed() => {
                changed.map_err(|_| format!("player {} has stopped", seat.id))?;
            }
            () = sleep_until(limit) => return Ok(false),
        }
    }
}
