//! Clients that come back by themselves: two players in a lobby through
//! `ReconnectingClient`, a real `jumpgate` process with a real Redis, the process killed
//! (SIGKILL) or stopped (SIGTERM) and started again on the same port and Redis. Both
//! clients reconnect with no help from the test, get their seats back and play on.

use std::collections::HashMap;
use std::time::Duration;

use jumpgate_e2e::table::{OUTAGE_PATIENCE, restart_policy};
use jumpgate_e2e::{JumpgateProcess, PATIENCE, RedisServer};
use jumpgate_protocol::reconnect::{Event, ReconnectingClient, Reconnection, Reentry, Room};
use jumpgate_protocol::{
    ClientMessage, Color, Encoding, ErrorCode, Phase, RoomState, ServerMessage,
};

/// A player on a reconnecting client, with the newest room state and the answers
/// received so far.
struct Seat {
    client: ReconnectingClient,
    state: Option<RoomState>,
    answers: HashMap<u32, Result<(), ErrorCode>>,
    reconnections: Vec<Reconnection>,
    shutdown_notices: usize,
}

impl Seat {
    async fn connect(url: &str, encoding: Encoding) -> Seat {
        let connecting =
            ReconnectingClient::connect(url, encoding, None, "jumpgate-e2e", restart_policy());
        let client = tokio::time::timeout(PATIENCE, connecting)
            .await
            .expect("connected in time")
            .expect("connected and welcomed");
        Seat {
            client,
            state: None,
            answers: HashMap::new(),
            reconnections: Vec::new(),
            shutdown_notices: 0,
        }
    }

    /// Receives one event and keeps the books on it.
    async fn next(&mut self, patience: Duration) {
        let event = tokio::time::timeout(patience, self.client.recv())
            .await
            .expect("an event in time")
            .expect("the client keeps going");
        match event {
            Event::Reconnected(reconnection) => self.reconnections.push(reconnection),
            Event::Message(ServerMessage::State(state)) => {
                if let Some(old) = &self.state {
                    assert!(state.version >= old.version, "versions never go down");
                }
                self.state = Some(state);
            }
            Event::Message(ServerMessage::Ack { seq }) => {
                self.answers.insert(seq, Ok(()));
            }
            Event::Message(ServerMessage::Error {
                seq: Some(seq),
                code,
                ..
            }) => {
                self.answers.insert(seq, Err(code));
            }
            Event::Message(ServerMessage::Shutdown { .. }) => self.shutdown_notices += 1,
            Event::Message(_) => {}
        }
    }

    /// Waits for the answer to `seq`, across reconnections.
    async fn answer(&mut self, seq: u32) -> Result<(), ErrorCode> {
        loop {
            if let Some(answer) = self.answers.remove(&seq) {
                return answer;
            }
            self.next(OUTAGE_PATIENCE).await;
        }
    }

    async fn request(&mut self, build: impl FnOnce(u32) -> ClientMessage) -> Result<(), ErrorCode> {
        let seq = self.client.request(build).await.expect("sent");
        self.answer(seq).await
    }

    /// Receives until a state satisfies `pred`.
    async fn state_until(&mut self, pred: impl Fn(&RoomState) -> bool) -> RoomState {
        loop {
            if let Some(state) = &self.state
                && pred(state)
            {
                return state.clone();
            }
            self.next(OUTAGE_PATIENCE).await;
        }
    }

    /// Receives until the client has reconnected (by itself), and returns how.
    async fn reconnected(&mut self) -> Reconnection {
        while self.reconnections.is_empty() {
            self.next(OUTAGE_PATIENCE).await;
        }
        self.reconnections.remove(0)
    }

    async fn shutdown_notice(&mut self) {
        while self.shutdown_notices == 0 {
            self.next(PATIENCE).await;
        }
    }

    fn my_turn(&self) -> bool {
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
        let Some(seat) = seat else { return false };
        let dark = usize::from(game.dark_seat) == seat;
        game.result.is_none() && dark == (game.turn == Color::Dark)
    }

    /// Sends the first legal move without waiting for its answer; returns its seq
    /// and notation.
    async fn send_first_legal(&mut self) -> (u32, String) {
        assert!(self.my_turn(), "it is this player's turn");
        let game = self.state.as_ref().and_then(|s| s.game.as_ref()).unwrap();
        let notation = game.legal_moves[0].notation.clone();
        let text = notation.clone();
        let seq = self
            .client
            .request(|seq| ClientMessage::Move {
                seq,
                notation: Some(text),
                path: None,
            })
            .await
            .expect("sent");
        (seq, notation)
    }
}

fn ply(state: &RoomState) -> u32 {
    state.game.as_ref().map_or(0, |g| g.ply)
}

fn moves(state: &RoomState) -> Vec<String> {
    state.game.as_ref().map_or(Vec::new(), |g| g.moves.clone())
}

fn both_connected(state: &RoomState) -> bool {
    state
        .players
        .iter()
        .all(|p| p.as_ref().is_some_and(|p| p.connected))
}

/// Whoever is to move in the newest states.
fn mover<'a>(host: &'a mut Seat, guest: &'a mut Seat) -> &'a mut Seat {
    if host.my_turn() { host } else { guest }
}

/// Plays the mover's first legal move, acknowledged, and waits until both players see
/// it; returns the move.
async fn play_one(host: &mut Seat, guest: &mut Seat) -> String {
    let target = ply(host.state.as_ref().unwrap()) + 1;
    let mover = mover(host, guest);
    let (seq, notation) = mover.send_first_legal().await;
    assert_eq!(mover.answer(seq).await, Ok(()), "{notation} acknowledged");
    for seat in [host, guest] {
        seat.state_until(|s| ply(s) >= target).await;
    }
    notation
}

/// A host (MessagePack) and a guest (JSON) seated in a new lobby of `server`, the
/// series started.
async fn seated_pair(server: &JumpgateProcess) -> (Seat, Seat, String) {
    let url = server.ws_url();
    let mut host = Seat::connect(&url, Encoding::MsgPack).await;
    let created = host
        .request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: Default::default(),
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
    assert_eq!(created, Ok(()));
    let code = host.state_until(|_| true).await.code;
    let mut guest = Seat::connect(&url, Encoding::Json).await;
    let c = code.clone();
    let joined = guest
        .request(|seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: None,
        })
        .await;
    assert_eq!(joined, Ok(()));
    for seat in [&mut host, &mut guest] {
        seat.state_until(|s| s.phase == Phase::Playing).await;
    }
    (host, guest, code)
}

/// Both players came back by themselves, to their seats, and both are connected.
async fn both_back_in_their_seats(host: &mut Seat, guest: &mut Seat, code: &str, plies: u32) {
    for seat in [&mut *host, &mut *guest] {
        let reconnection = seat.reconnected().await;
        match &reconnection.room {
            Reentry::Rejoined(Room::Lobby {
                code: rejoined,
                seated: true,
                ..
            }) => assert_eq!(rejoined, code),
            other => panic!("expected the seat back, got {other:?}"),
        }
        assert!(reconnection.not_resent.is_empty());
        assert!(seat.client.reconnections() >= 1);
    }
    for seat in [host, guest] {
        let state = seat
            .state_until(|s| both_connected(s) && ply(s) >= plies)
            .await;
        assert_eq!(state.code, code);
        assert_eq!(state.phase, Phase::Playing);
    }
}

fn server_env(redis: &RedisServer) -> [(&'static str, String); 2] {
    [
        ("JUMPGATE_REDIS_URL", redis.url()),
        // No clock runs out while the server is away.
        ("JUMPGATE_MOVE_CLOCK_MS", "120000".to_owned()),
    ]
}

/// SIGKILL with a move in flight: the move is sent and the process killed at once, so
/// its answer (if it was ever sent) is lost. The client re-sends it with the same seq
/// on the new connection and gets it acknowledged whether or not it was applied before
/// the kill; the game holds it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_clients_reconnect_by_themselves_and_play_on() {
    let redis = RedisServer::start().await;
    let env = server_env(&redis);
    let mut first = JumpgateProcess::start(&env).await;
    let (mut host, mut guest, code) = seated_pair(&first).await;
    let first_move = play_one(&mut host, &mut guest).await;

    let host_moves = host.my_turn();
    let sender = if host_moves { &mut host } else { &mut guest };
    let (in_flight_seq, second_move) = sender.send_first_legal().await;
    first.kill_9();
    // The clients find the server gone and keep trying while it starts again.
    let (_second, ()) = tokio::join!(
        JumpgateProcess::start_at(first.addr, &env),
        both_back_in_their_seats(&mut host, &mut guest, &code, 1),
    );
    let sender = if host_moves { &mut host } else { &mut guest };
    assert_eq!(
        sender.answer(in_flight_seq).await,
        Ok(()),
        "the unanswered move, re-sent, is acknowledged"
    );
    for seat in [&mut host, &mut guest] {
        seat.state_until(|s| ply(s) >= 2).await;
    }
    let third_move = play_one(&mut host, &mut guest).await;
    for seat in [&mut host, &mut guest] {
        let state = seat.state_until(|s| ply(s) >= 3).await;
        assert_eq!(
            moves(&state),
            [first_move.clone(), second_move.clone(), third_move.clone()],
            "every acknowledged move, once"
        );
    }
}

/// SIGTERM: the server hands the lobby over (its members get a `shutdown` notice and
/// the close 4001, "room moved") and exits; the clients come back, get their seats
/// back and play on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_graceful_restart_clients_reconnect_by_themselves_and_play_on() {
    let redis = RedisServer::start().await;
    let env = server_env(&redis);
    let first = JumpgateProcess::start(&env).await;
    let addr = first.addr;
    let (mut host, mut guest, code) = seated_pair(&first).await;
    let first_move = play_one(&mut host, &mut guest).await;

    let mut stopping = first;
    let stopped = tokio::task::spawn_blocking(move || stopping.terminate());
    for seat in [&mut host, &mut guest] {
        seat.shutdown_notice().await;
    }
    let restart = async {
        let status = tokio::time::timeout(OUTAGE_PATIENCE, stopped)
            .await
            .expect("the server stopped in time")
            .unwrap();
        assert!(status.success(), "graceful exit");
        JumpgateProcess::start_at(addr, &env).await
    };
    // The clients come back while the server stops and starts again.
    let (_second, ()) = tokio::join!(
        restart,
        both_back_in_their_seats(&mut host, &mut guest, &code, 1),
    );
    let second_move = play_one(&mut host, &mut guest).await;
    for seat in [&mut host, &mut guest] {
        let state = seat.state_until(|s| ply(s) >= 2).await;
        assert_eq!(moves(&state), [first_move.clone(), second_move.clone()]);
    }
}
