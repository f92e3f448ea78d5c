//! Games played by clients that reconnect by themselves (the SDK's
//! [`Session`]), with the books the fault tests check: every move
//! acknowledged, in order, to compare with what the store holds, and each
//! player's newest room.
//!
//! The players speak protocol 1 in MessagePack: the SDK keeps its room as
//! a protocol 2 snapshot either way, and protocol 1's whole `state`s let
//! each player also check, message by message, that the room's version
//! never goes down across failovers.

use std::time::Duration;

use jumpgate_protocol::reconnect::{Backoff, ReconnectPolicy};
use jumpgate_protocol::session::{
    LobbyAddress, NewLobby, Session, SessionError, SessionEvent, SessionOptions,
};
use jumpgate_protocol::v2::RoomSnapshot;
use jumpgate_protocol::{Encoding, RuleSet, ServerMessage, Subprotocol};
use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::PATIENCE;

/// How long anything may take across a failover.
pub const OUTAGE_PATIENCE: Duration = Duration::from_secs(60);

/// Quick retries, enough of them to outlast a restart (and the takeover of the rooms
/// of an instance that vanished), but never endless: the policy of the e2e tests that
/// restart or kill a server under a reconnecting client.
pub fn restart_policy() -> ReconnectPolicy {
    ReconnectPolicy {
        backoff: Backoff {
            first: Duration::from_millis(100),
            max: Duration::from_secs(1),
            jitter: 0.5,
        },
        max_attempts: 60,
        give_up_after: Duration::from_secs(45),
        step_timeout: PATIENCE,
        ..ReconnectPolicy::default()
    }
}

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

/// The options of every player here: protocol 1 in MessagePack, [`policy`].
pub fn options() -> SessionOptions {
    SessionOptions {
        subprotocol: Subprotocol::v1(Encoding::MsgPack),
        client_name: "jumpgate-e2e".into(),
        policy: policy(),
        ..SessionOptions::default()
    }
}

/// `request` within [`OUTAGE_PATIENCE`]; panics on a refusal or the end of
/// the session, saying what was asked.
async fn answered<T>(what: &str, request: impl Future<Output = Result<T, SessionError>>) -> T {
    tokio::time::timeout(OUTAGE_PATIENCE, request)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {OUTAGE_PATIENCE:?}"))
        .unwrap_or_else(|err| panic!("{what}: {err}"))
}

/// One player on a session that reconnects by itself.
#[derive(Debug)]
pub struct Seat {
    pub session: Session,
    /// Every message the session received, read to check room versions.
    events: broadcast::Receiver<SessionEvent>,
    /// The newest room version a `state` carried, by room code.
    newest: Option<(String, u64)>,
}

impl Seat {
    /// Connects to `url` (`ws://…/ws`, with `?room=CODE` to reach a room).
    pub async fn connect(url: &str) -> Seat {
        let session = tokio::time::timeout(PATIENCE, Session::connect(url, options()))
            .await
            .expect("connected in time")
            .expect("connected and welcomed");
        let events = session.events();
        Seat {
            session,
            events,
            newest: None,
        }
    }

    /// The newest room this player has, if in one.
    pub fn room(&self) -> Option<RoomSnapshot> {
        self.session.room()
    }

    /// How many times this player's connection was replaced.
    pub fn reconnections(&self) -> u32 {
        self.session.state().reconnections
    }

    /// Waits for a room matching `pred`, and returns it.
    pub async fn room_until(&mut self, pred: impl Fn(&RoomSnapshot) -> bool) -> RoomSnapshot {
        let state = self
            .session
            .wait_for_within(OUTAGE_PATIENCE, |s| s.room.as_ref().is_some_and(&pred))
            .await
            .expect("the session keeps going")
            .unwrap_or_else(|| panic!("no matching room within {OUTAGE_PATIENCE:?}"));
        self.check_versions();
        state.room.expect("the predicate saw a room")
    }

    /// Watches the lobby `code` as a spectator.
    pub async fn watch(&mut self, code: &str) -> RoomSnapshot {
        let room = answered("watch", self.session.watch(&LobbyAddress::code(code))).await;
        self.check_versions();
        room
    }

    /// Reads the messages received since the last look and checks that no
    /// `state` took its room's version back. (The session itself keeps the
    /// newest room and would hide an older one.)
    fn check_versions(&mut self) {
        loop {
            match self.events.try_recv() {
                Ok(SessionEvent::Message(ServerMessage::State(state))) => {
                    if let Some((code, version)) = &self.newest
                        && *code == state.code
                    {
                        assert!(
                            state.version >= *version,
                            "{code}: versions never go down ({} after {version})",
                            state.version
                        );
                    }
                    self.newest = Some((state.code, state.version));
                }
                Ok(_) => {}
                // Skipped messages would be skipped checks: a test that loses
                // them fails rather than passing unchecked.
                Err(TryRecvError::Lagged(missed)) => {
                    panic!("{missed} messages went unchecked: read the events more often")
                }
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
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
        let host = Seat::connect(ws).await;
        let lobby = NewLobby {
            rule_set,
            series_length: 1,
            ..NewLobby::default()
        };
        let code = answered("create_lobby", host.session.create_lobby(lobby))
            .await
            .code;
        let guest = Seat::connect(&format!("{ws}?room={code}")).await;
        answered("join_lobby", guest.session.join(&LobbyAddress::code(&code))).await;
        let mut table = Table {
            code,
            seats: [host, guest],
            acknowledged: Vec::new(),
        };
        for seat in &mut table.seats {
            seat.room_until(|room| room.game.as_ref().is_some_and(|g| g.ply == 0))
                .await;
        }
        table
    }

    /// The side to move plays its first legal move; returns once it is
    /// acknowledged and both players see it. Reconnections happen inside.
    pub async fn play(&mut self) {
        let ply = self.acknowledged.len() as u32;
        for seat in &mut self.seats {
            seat.room_until(|room| room.game.as_ref().is_some_and(|g| g.ply == ply))
                .await;
        }
        let mover = self
            .seats
            .iter()
            .position(|seat| seat.session.state().my_turn())
            .expect("someone is to move");
        let path = self.seats[mover].session.state().legal_paths()[0].clone();
        answered("move", self.seats[mover].session.play(path.clone())).await;
        let mut seen = Vec::new();
        for seat in &mut self.seats {
            seen.push(
                seat.room_until(|room| room.game.as_ref().is_some_and(|g| g.ply > ply))
                    .await,
            );
        }
        // Nobody else moves meanwhile, so the mover's room is the one its move made.
        let game = seen[mover].game.as_ref().expect("a game");
        let last = game.last_move.as_ref().expect("the move just played");
        assert_eq!(
            (game.ply, &last.path),
            (ply + 1, &path),
            "{}: the move acknowledged is the one sent",
            self.code
        );
        self.acknowledged.push(last.notation.clone());
    }
}
