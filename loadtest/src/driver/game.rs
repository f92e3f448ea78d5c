//! A game between two real protocol clients: each player's copy of the lobby (a v1
//! `state` or a v2 view kept by events), the choice of move, and the loop that plays
//! moves and reopens a lobby when a game ends.

use super::*;

/// A player's copy of its lobby: v1's latest `state`, or v2's view kept by events.
#[derive(Debug)]
pub(super) enum LobbyView {
    /// Protocol 1: the newest `state`.
    V1(Option<RoomState>),
    /// Protocol 2: the snapshot with every event since applied.
    V2(RoomView),
}

impl LobbyView {
    pub(super) fn empty(protocol: ProtocolVersion) -> LobbyView {
        match protocol {
            ProtocolVersion::V1 => LobbyView::V1(None),
            ProtocolVersion::V2 => LobbyView::V2(RoomView::new()),
        }
    }

    pub(super) fn clear(&mut self) {
        match self {
            LobbyView::V1(state) => *state = None,
            LobbyView::V2(view) => *view = RoomView::new(),
        }
    }

    /// The room version held; `None` before the first state or snapshot.
    pub(super) fn version(&self) -> Option<u64> {
        match self {
            LobbyView::V1(state) => state.as_ref().map(|s| s.version),
            LobbyView::V2(view) => view.version(),
        }
    }

    pub(super) fn code(&self) -> Option<&str> {
        match self {
            LobbyView::V1(state) => state.as_ref().map(|s| s.code.as_str()),
            LobbyView::V2(view) => view.room().map(|r| r.code.as_str()),
        }
    }

    /// Whether a game is being played.
    pub(super) fn playing(&self) -> bool {
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
    pub(super) fn turn(&self, host_id: &str) -> Turn {
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
pub(super) struct Player {
    pub(super) conn: Conn,
    pub(super) id: String,
    /// The lobby this player is in, once known.
    pub(super) code: Option<String>,
    pub(super) lobby: LobbyView,
    /// Protocol 2: events that did not follow the version held (each answered with a
    /// `resync`).
    pub(super) gaps: u64,
    /// Protocol 2: the `since` of a `resync` still to send.
    pub(super) resync: Option<u64>,
}

impl Player {
    pub(super) async fn greet(
        url: &str,
        protocol: ProtocolVersion,
        limit: Instant,
    ) -> Result<Player, String> {
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

    pub(super) fn absorb(&mut self, message: ServerMessage) -> Result<(), String> {
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
    pub(super) async fn resync_if_needed(&mut self) -> Result<(), String> {
        if let Some(since) = self.resync.take() {
            let seq = self.conn.client.next_seq();
            self.conn
                .send(&ClientMessage::Resync { seq, since })
                .await?;
        }
        Ok(())
    }

    /// Sends a request and waits for its `ack`; returns when it came.
    pub(super) async fn request(
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
    pub(super) async fn state_until(
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
pub(super) struct Game {
    pub(super) host: Player,
    pub(super) guest: Player,
    pub(super) rule_set: RuleSet,
}

impl Game {
    pub(super) async fn set_up(
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
    pub(super) async fn new_lobby(&mut self, hard: Instant) -> Result<bool, String> {
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
    pub(super) async fn leave(&mut self, hard: Instant) -> Result<bool, String> {
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
pub(super) enum Turn {
    /// This seat's player plays this move.
    Play { host: bool, choice: MoveChoice },
    /// The game is over.
    Over,
}

/// A move as a request names it.
pub(super) enum MoveChoice {
    /// By its notation (what v1's `state` lists).
    Notation(String),
    /// By its path (what v2's `snapshot` and `moved` list).
    Path(Vec<String>),
}

impl MoveChoice {
    pub(super) fn request(self, seq: u32) -> ClientMessage {
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

pub(super) async fn play_game(
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
