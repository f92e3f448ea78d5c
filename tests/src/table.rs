//! Games played by clients that reconnect by themselves
//! ([`ReconnectingClient`]), with the books the fault tests check: every
//! move acknowledged, in order, to compare with what the store holds.

use std::time::Duration;

use jumpgate_protocol::reconnect::{Backoff, Event, ReconnectPolicy, ReconnectingClient};
use jumpgate_protocol::{ClientMessage, Encoding, RoomState, RuleSet, ServerMessage};

use crate::PATIENCE;

/// How long anything may take across a failover.
pub const OUTAGE_PATIENCE: Duration = Duration::from_secs(60);

/// Quick retries, enough to outlast a takeover, never endless.
pub fn policy() -> ReconnectPolicy {
    ReconnectPolicy {
        backoff: Backoff {
            first: Duration::from_millis(100),
            max: Duration::from_secs(1),
            jitter: 0.5,
        },
        max_attempts: 100,
        give_up_after: Duration::from_secs(50),
        step_timeout: PATIENCE,
        ..ReconnectPolicy::default()
    }
}

/// One player on a reconnecting client, with its newest room state.
#[derive(Debug)]
pub struct Seat {
    pub client: ReconnectingClient,
    pub state: Option<RoomState>,
}

impl Seat {
    /// Connects to `url` (`ws://…/ws`, with `?room=CODE` to reach a room).
    pub async fn connect(url: &str) -> Seat {
        let connecting =
            ReconnectingClient::connect(url, Encoding::MsgPack, None, "jumpgate-e2e", policy());
        let client = tokio::time::timeout(PATIENCE, connecting)
            .await
            .expect("connected in time")
            .expect("connected and welcomed");
        Seat {
            client,
            state: None,
        }
    }

    /// Whether it is this player's move in its newest state.
    pub fn to_move(&self) -> bool {
        let Some(state) = &self.state else {
            return false;
        };
        let Some(game) = &state.game else {
            return false;
        };
        let me = &self.client.identity().id;
        let seat = state
            .players
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| &p.id == me));
        let dark = seat == Some(usize::from(game.dark_seat));
        game.result.is_none() && dark == (game.turn == jumpgate_protocol::Color::Dark)
    }

    /// Takes events until `done` says so; panics on a refusal of `seq`.
    async fn until(&mut self, seq: Option<u32>, done: impl Fn(&Seat, &Event) -> bool) {
        let deadline = tokio::time::Instant::now() + OUTAGE_PATIENCE;
        loop {
            let event = tokio::time::timeout_at(deadline, self.client.recv())
                .await
                .expect("an event in time")
                .expect("the client keeps going");
            if let Event::Message(ServerMessage::State(state)) = &event {
                if let Some(old) = &self.state {
                    assert!(state.version >= old.version, "versions never go down");
                }
                self.state = Some(state.clone());
            }
            if let Event::Message(ServerMessage::Error {
                seq: Some(refused),
                code,
                message,
            }) = &event
                && Some(*refused) == seq
            {
                panic!("request {refused} refused: {code}: {message}");
            }
            if done(self, &event) {
                return;
            }
        }
    }

    /// Sends a request and waits for its `ack`.
    pub async fn request(&mut self, build: impl FnOnce(u32) -> ClientMessage) {
        let seq = self.client.request(build).await.expect("sent");
        self.until(
            Some(seq),
            |_, e| matches!(e, Event::Message(ServerMessage::Ack { seq: s }) if *s == seq),
        )
        .await;
    }

    /// Waits for a state matching `pred`.
    pub async fn state_until(&mut self, pred: impl Fn(&RoomState) -> bool) -> RoomState {
        if let Some(state) = self.state.as_ref().filter(|s| pred(s)) {
            return state.clone();
        }
        self.until(None, |seat, _| seat.state.as_ref().is_some_and(&pred))
            .await;
        self.state.clone().expect("a state")
    }
}

/// Two players in a lobby, and every move acknowledged so far.
#[derive(Debug)]
pub struct Table {
    pub code: String,
    pub seats: [Seat; 2],
    /// The notation of every acknowledged move, in order.
    pub acknowledged: Vec<String>,
}

impl Table {
    /// The host creates a lobby at `ws` (anywhere); the guest joins it
    /// naming the code in the address, as an invite link does.
    pub async fn open(ws: &str, rule_set: RuleSet) -> Table {
        let mut host = Seat::connect(ws).await;
        host.request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
        let code = host.state_until(|_| true).await.code;
        let mut guest = Seat::connect(&format!("{ws}?room={code}")).await;
        let join = code.clone();
        guest
            .request(|seq| ClientMessage::JoinLobby {
                seq,
                code: join,
                invite: None,
            })
            .await;
        let mut table = Table {
            code,
            seats: [host, guest],
            acknowledged: Vec::new(),
        };
        for seat in &mut table.seats {
            seat.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 0))
                .await;
        }
        table
    }

    /// The ply both players have seen.
    pub fn ply(&self) -> u32 {
        self.seats
            .iter()
            .map(|s| {
                s.state
                    .as_ref()
                    .and_then(|s| s.game.as_ref())
                    .map_or(0, |g| g.ply)
            })
            .min()
            .unwrap_or(0)
    }

    /// The side to move plays its first legal move; returns once it is
    /// acknowledged and both players see it. Reconnections happen inside.
    pub async fn play(&mut self) {
        let ply = self.acknowledged.len() as u32;
        for seat in &mut self.seats {
            seat.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == ply))
                .await;
        }
        let mover = self
            .seats
            .iter()
            .position(Seat::to_move)
            .expect("someone is to move");
        let state = self.seats[mover].state.clone().unwrap();
        let notation = state.game.as_ref().unwrap().legal_moves[0].notation.clone();
        let sent = notation.clone();
        self.seats[mover]
            .request(|seq| ClientMessage::Move {
                seq,
                notation: Some(sent),
                path: None,
            })
            .await;
        self.acknowledged.push(notation);
        for seat in &mut self.seats {
            seat.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply > ply))
                .await;
        }
    }
}
