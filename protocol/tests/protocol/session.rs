//! The session against a scripted stand-in server speaking protocol 2 in both
//! encodings: answers matched to concurrent requests whatever their order, typed
//! refusals, the room kept by applying events, and a `resync` asked for exactly when a
//! version was missed. (The e2e tests run the session against the real server.)

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use jumpgate_protocol::codec::{self, Encoding, Frame, Subprotocol};
use jumpgate_protocol::reconnect::{Backoff, ReconnectPolicy};
use jumpgate_protocol::session::{
    LobbyAddress, Reply, Session, SessionError, SessionEvent, SessionOptions,
};
use jumpgate_protocol::v2::RoomSnapshot;
use jumpgate_protocol::{ClientMessage, ErrorCode, Identity, ServerMessage};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::golden_v2::{changed_connected, moved_quiet, snapshot_playing};

const PATIENCE: Duration = Duration::from_secs(10);

/// A loopback port for the stand-in server, and the URL a session connects to.
async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    (listener, url)
}

/// One connection of the stand-in server, speaking `subprotocol`.
struct StandIn {
    socket: WebSocketStream<TcpStream>,
    subprotocol: Subprotocol,
}

impl StandIn {
    async fn accept(listener: &TcpListener, subprotocol: Subprotocol) -> StandIn {
        let (stream, _) = listener.accept().await.unwrap();
        let callback = |_: &Request, mut response: Response| {
            response.headers_mut().insert(
                "sec-websocket-protocol",
                HeaderValue::from_static(subprotocol.name()),
            );
            Ok(response)
        };
        let socket = tokio_tungstenite::accept_hdr_async(stream, callback)
            .await
            .unwrap();
        StandIn {
            socket,
            subprotocol,
        }
    }

    async fn recv(&mut self) -> ClientMessage {
        let next = tokio::time::timeout(PATIENCE, self.socket.next()).await;
        let message = next.expect("a message in time").unwrap().unwrap();
        codec::decode_client(self.subprotocol.encoding, &message.into_data()).unwrap()
    }

    async fn send(&mut self, message: ServerMessage) {
        let message = match codec::encode_server(self.subprotocol.encoding, &message) {
            Frame::Text(text) => Message::text(text),
            Frame::Binary(bytes) => Message::binary(bytes),
        };
        self.socket.send(message).await.unwrap();
    }

    /// Welcomes the seated player of the golden snapshot, `u_7f3a`.
    async fn welcome(&mut self) {
        let hello = self.recv().await;
        assert!(
            matches!(hello, ClientMessage::Hello { protocol: 2, .. }),
            "{hello:?}"
        );
        self.send(ServerMessage::Welcome {
            server_version: "stand-in".into(),
            protocols: vec![1, 2],
            identity: Identity {
                id: "u_7f3a".into(),
                name: "Guest 7F3A".into(),
                guest: true,
            },
            token: "t1".into(),
            accounts: false,
        })
        .await;
    }
}

fn options(subprotocol: Subprotocol) -> SessionOptions {
    SessionOptions {
        subprotocol,
        policy: ReconnectPolicy {
            backoff: Backoff {
                first: Duration::from_millis(10),
                max: Duration::from_millis(50),
                jitter: 0.5,
            },
            max_attempts: 2,
            ..ReconnectPolicy::default()
        },
        ..SessionOptions::default()
    }
}

/// Waits until the session's room is at `version`.
async fn room_at(session: &Session, version: u64) -> RoomSnapshot {
    let state = tokio::time::timeout(
        PATIENCE,
        session.wait_for(|s| s.room.as_ref().is_some_and(|r| r.version == version)),
    )
    .await
    .expect("the room in time")
    .unwrap();
    state.room.unwrap()
}

#[tokio::test]
async fn a_v2_session_applies_events_and_resyncs_after_a_gap() {
    for encoding in Encoding::ALL {
        let subprotocol = Subprotocol::v2(encoding);
        let (listener, url) = listen().await;
        let server = tokio::spawn(async move {
            let mut conn = StandIn::accept(&listener, subprotocol).await;
            conn.welcome().await;
            // Join: ack, then the snapshot.
            let ClientMessage::JoinLobby { seq, code, .. } = conn.recv().await else {
                panic!("expected join_lobby");
            };
            assert_eq!(code, "K7QP2D");
            conn.send(ServerMessage::Ack { seq }).await;
            conn.send(ServerMessage::Snapshot(snapshot_playing())).await;
            conn.send(ServerMessage::Moved(moved_quiet())).await;
            // Version 44 is skipped: the session must ask from 43.
            let mut late = changed_connected();
            late.version = 45;
            conn.send(ServerMessage::Changed(late)).await;
            let ClientMessage::Resync { seq, since } = conn.recv().await else {
                panic!("expected resync");
            };
            assert_eq!(since, 43, "resync from the version held");
            conn.send(ServerMessage::Ack { seq }).await;
            let mut fresh = snapshot_playing();
            fresh.version = 45;
            fresh.spectators = 7;
            conn.send(ServerMessage::Snapshot(fresh)).await;
            conn
        });

        let session = Session::connect(&url, options(subprotocol)).await.unwrap();
        let mut events = session.events();
        let joined = session
            .join(&"k7qp2d".parse::<LobbyAddress>().unwrap())
            .await
            .unwrap();
        // The move may already have been applied by the time `join` looks.
        assert_eq!(joined.code, "K7QP2D");
        assert!(matches!(joined.version, 42 | 43), "{subprotocol}");
        if joined.version == 42 {
            assert_eq!(joined, snapshot_playing(), "{subprotocol}");
        }

        let after_move = room_at(&session, 43).await;
        let game = after_move.game.as_ref().unwrap();
        assert_eq!(game.moves.last().map(String::as_str), Some("9-14"));
        assert!(game.pieces.iter().any(|p| p.square == "f4"));
        assert!(session.state().my_turn(), "Light to move after 9-14");

        let resynced = room_at(&session, 45).await;
        assert_eq!(
            resynced.spectators, 7,
            "{subprotocol}: the resync's snapshot"
        );
        let mut conn = server.await.unwrap();

        // Every move told once, in order, whatever carried it.
        let mut played = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let SessionEvent::MovePlayed { notation } = event {
                played.push(notation);
            }
        }
        assert_eq!(played, ["11-15", "23-19", "9-14"], "{subprotocol}");

        // The session says nothing more until asked.
        let quiet = tokio::time::timeout(Duration::from_millis(200), conn.recv()).await;
        assert!(quiet.is_err(), "{subprotocol}: unexpected {quiet:?}");
        drop(conn);
        session.close().await;
    }
}

#[tokio::test]
async fn concurrent_requests_get_their_own_answers_in_any_order() {
    for encoding in Encoding::ALL {
        let subprotocol = Subprotocol::v2(encoding);
        let (listener, url) = listen().await;
        let server = tokio::spawn(async move {
            let mut conn = StandIn::accept(&listener, subprotocol).await;
            conn.welcome().await;
            let mut requests = Vec::new();
            for _ in 0..4 {
                requests.push(conn.recv().await);
            }
            // Answer in the reverse order of arrival.
            for request in requests.iter().rev() {
                let answer = match request {
                    ClientMessage::MyGames { seq } => ServerMessage::MyGames {
                        seq: *seq,
                        games: Vec::new(),
                    },
                    ClientMessage::Move { seq, .. } => {
                        ServerMessage::error(Some(*seq), ErrorCode::NotInLobby, "not in a lobby")
                    }
                    other => ServerMessage::Ack { seq: other.seq() },
                };
                conn.send(answer).await;
            }
            // An error without seq answers none of them.
            conn.send(ServerMessage::error(
                None,
                ErrorCode::RateLimited,
                "slow down",
            ))
            .await;
            requests
        });

        let session = Session::connect(&url, options(subprotocol)).await.unwrap();
        let (ping, games, refused, second_ping) = tokio::join!(
            session.ping(),
            session.my_games(),
            session.play("11-15"),
            session.request(|seq| ClientMessage::Ping { seq }),
        );
        ping.unwrap();
        assert_eq!(games.unwrap(), Vec::new());
        match refused {
            Err(SessionError::Refused { code, .. }) => assert_eq!(code, ErrorCode::NotInLobby),
            other => panic!("{subprotocol}: {other:?}"),
        }
        assert_eq!(second_ping.unwrap(), Reply::Ack);
        let requests = server.await.unwrap();
        let mut seqs: Vec<u32> = requests.iter().map(ClientMessage::seq).collect();
        seqs.sort_unstable();
        assert_eq!(
            seqs,
            [2, 3, 4, 5],
            "{subprotocol}: after hello's 1, one each"
        );
        session.close().await;
    }
}

#[tokio::test]
async fn a_closed_session_fails_requests_with_ended() {
    let subprotocol = Subprotocol::v2(Encoding::Json);
    let (listener, url) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = StandIn::accept(&listener, subprotocol).await;
        conn.welcome().await;
        // Never answers the ping; closes with 1002, after which no client comes back.
        let _ = conn.recv().await;
        conn.socket
            .send(Message::Close(Some(
                tokio_tungstenite::tungstenite::protocol::CloseFrame {
                    code: 1002.into(),
                    reason: "go away".into(),
                },
            )))
            .await
            .unwrap();
        while let Some(Ok(_)) = conn.socket.next().await {}
    });
    let session = Session::connect(&url, options(subprotocol)).await.unwrap();
    let mut events = session.events();
    let answer = tokio::time::timeout(PATIENCE, session.ping())
        .await
        .unwrap();
    assert!(matches!(answer, Err(SessionError::Ended(_))), "{answer:?}");
    assert!(session.state().ended.is_some());
    assert!(matches!(session.ping().await, Err(SessionError::Ended(_))));
    // Event readers are told, last: the channel stays open while `session` lives.
    let last = loop {
        match tokio::time::timeout(PATIENCE, events.recv()).await.unwrap() {
            Ok(SessionEvent::Ended(reason)) => break reason,
            Ok(_) => {}
            Err(err) => panic!("{err:?}"),
        }
    };
    assert_eq!(Some(last), session.state().ended);
    server.await.unwrap();
}
