//! The reconnecting client against a scripted stand-in server on port 0: what it sends
//! on each new connection (the room in the URL, `hello` with the kept token and the next
//! `seq`, re-entering, the same request again) and what its user sees.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use jumpgate_protocol::client::ClientError;
use jumpgate_protocol::codec::{self, Encoding, Frame};
use jumpgate_protocol::reconnect::{
    Backoff, Disconnect, Event, ReconnectError, ReconnectPolicy, ReconnectingClient, Reentry, Room,
};
use jumpgate_protocol::{
    CLOSE_ROOM_MOVED, ClientMessage, ErrorCode, Identity, RoomState, ServerMessage,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// How long any one step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// The identity the stand-in welcomes; seated in the state vector.
const ME: &str = "u_7f3a";

fn policy() -> ReconnectPolicy {
    ReconnectPolicy {
        backoff: Backoff {
            first: Duration::from_millis(10),
            max: Duration::from_millis(50),
            jitter: 0.5,
        },
        max_attempts: 3,
        give_up_after: Duration::from_secs(20),
        step_timeout: PATIENCE,
        messages_per_second: 30,
    }
}

/// A `state` of a lobby in play, seating [`ME`], from the golden vectors.
fn lobby_state() -> RoomState {
    let json = include_str!("../vectors/server_state_playing.json");
    match codec::decode_server(Encoding::Json, json.as_bytes()).unwrap() {
        ServerMessage::State(state) => state,
        other => panic!("not a state: {other:?}"),
    }
}

/// One accepted connection of the stand-in server.
struct Connection {
    socket: WebSocketStream<TcpStream>,
    /// The request's path and query, e.g. `/ws?room=K7QP2D`.
    target: String,
}

impl Connection {
    async fn accept(listener: &TcpListener) -> Connection {
        let (stream, _) = listener.accept().await.unwrap();
        let mut target = String::new();
        let callback = |request: &Request, mut response: Response| {
            target = request.uri().to_string();
            response.headers_mut().insert(
                "sec-websocket-protocol",
                HeaderValue::from_static("jumpgate.v1.json"),
            );
            Ok(response)
        };
        let socket = tokio_tungstenite::accept_hdr_async(stream, callback)
            .await
            .unwrap();
        Connection { socket, target }
    }

    async fn recv(&mut self) -> ClientMessage {
        let message = self.socket.next().await.unwrap().unwrap();
        codec::decode_client(Encoding::Json, &message.into_data()).unwrap()
    }

    async fn send(&mut self, message: ServerMessage) {
        let Frame::Text(text) = codec::encode_server(Encoding::Json, &message) else {
            unreachable!("JSON travels in text frames");
        };
        self.socket.send(Message::text(text)).await.unwrap();
    }

    /// Expects `hello` with `seq` and `token`, and welcomes [`ME`].
    async fn welcome(&mut self, seq: u32, token: Option<&str>) {
        match self.recv().await {
            ClientMessage::Hello {
                seq: s, token: t, ..
            } => {
                assert_eq!(s, seq, "hello's seq");
                assert_eq!(t.as_deref(), token, "hello's token");
            }
            other => panic!("expected hello, got {other:?}"),
        }
        self.send(ServerMessage::Welcome {
            server_version: "stand-in".into(),
            protocols: vec![1],
            identity: Identity {
                id: ME.into(),
                name: "Guest 7F3A".into(),
                guest: true,
            },
            token: "t1".into(),
            accounts: false,
        })
        .await;
    }

    async fn close(&mut self, code: u16) {
        let frame = CloseFrame {
            code: code.into(),
            reason: "stand-in".into(),
        };
        self.socket.send(Message::Close(Some(frame))).await.unwrap();
    }

    /// Waits for the client to close or drop the connection.
    async fn finish(mut self) {
        while let Some(Ok(_)) = self.socket.next().await {}
    }
}

/// A stand-in server running `script` on its listener, and its WebSocket URL.
async fn stand_in<F>(script: impl FnOnce(TcpListener) -> F) -> (String, JoinHandle<()>)
where
    F: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    (url, tokio::spawn(script(listener)))
}

async fn connect(url: &str) -> ReconnectingClient {
    let connecting = ReconnectingClient::connect(url, Encoding::Json, None, "tests", policy());
    tokio::time::timeout(PATIENCE, connecting)
        .await
        .unwrap()
        .unwrap()
}

async fn next(client: &mut ReconnectingClient) -> Result<Event, ReconnectError> {
    tokio::time::timeout(PATIENCE, client.recv())
        .await
        .expect("an event in time")
}

async fn next_message(client: &mut ReconnectingClient) -> ServerMessage {
    match next(client).await.unwrap() {
        Event::Message(message) => message,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn a_move(seq: u32) -> ClientMessage {
    ClientMessage::Move {
        seq,
        notation: Some("11-15".into()),
        path: None,
    }
}

#[tokio::test]
async fn a_moved_room_is_entered_again_and_the_unanswered_move_resent() {
    let state = lobby_state();
    let code = state.code.clone();
    let served = state.clone();
    let (url, server) = stand_in(|listener| async move {
        let mut first = Connection::accept(&listener).await;
        assert_eq!(first.target, "/ws");
        first.welcome(1, None).await;
        let create = first.recv().await;
        assert!(matches!(create, ClientMessage::CreateLobby { seq: 2, .. }));
        first.send(ServerMessage::Ack { seq: 2 }).await;
        first.send(ServerMessage::State(served.clone())).await;
        assert_eq!(first.recv().await, a_move(3));
        // The room moves before the move is answered.
        first
            .send(ServerMessage::Shutdown {
                reason: "the room moved to another server instance".into(),
                reconnect_after_ms: 0,
            })
            .await;
        first.close(CLOSE_ROOM_MOVED).await;

        let mut second = Connection::accept(&listener).await;
        assert_eq!(second.target, format!("/ws?room={}", served.code));
        second.welcome(4, Some("t1")).await;
        assert_eq!(
            second.recv().await,
            ClientMessage::JoinLobby {
                seq: 5,
                code: served.code.clone(),
                invite: None,
            }
        );
        second.send(ServerMessage::Ack { seq: 5 }).await;
        second.send(ServerMessage::State(served.clone())).await;
        assert_eq!(second.recv().await, a_move(3), "the same seq and content");
        second.send(ServerMessage::Ack { seq: 3 }).await;
        second.finish().await;
    })
    .await;

    let mut client = connect(&url).await;
    assert_eq!(client.identity().id, ME);
    let create = client
        .request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: Default::default(),
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await
        .unwrap();
    assert_eq!(create, 2);
    assert_eq!(
        next_message(&mut client).await,
        ServerMessage::Ack { seq: 2 }
    );
    assert!(matches!(
        next_message(&mut client).await,
        ServerMessage::State(_)
    ));
    let seated = Room::Lobby {
        code: code.clone(),
        invite: None,
        seated: true,
    };
    assert_eq!(client.room(), Some(&seated));

    assert_eq!(client.request(a_move).await.unwrap(), 3);
    assert!(matches!(
        next_message(&mut client).await,
        ServerMessage::Shutdown { .. }
    ));
    let Event::Reconnected(reconnection) = next(&mut client).await.unwrap() else {
        panic!("expected the reconnection");
    };
    assert!(matches!(
        reconnection.cause,
        Disconnect::Closed {
            code: CLOSE_ROOM_MOVED,
            ..
        }
    ));
    assert_eq!(reconnection.room, Reentry::Rejoined(seated));
    assert!(reconnection.not_resent.is_empty());
    assert_eq!(client.reconnections(), 1);
    assert_eq!(next_message(&mut client).await, ServerMessage::State(state));
    assert_eq!(
        next_message(&mut client).await,
        ServerMessage::Ack { seq: 3 }
    );
    client.close().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn storage_unavailable_is_retried_with_the_same_seq_out_of_sight() {
    let (url, server) = stand_in(|listener| async move {
        let mut connection = Connection::accept(&listener).await;
        connection.welcome(1, None).await;
        for _ in 0..2 {
            assert_eq!(connection.recv().await, a_move(2));
            connection
                .send(ServerMessage::error(
                    Some(2),
                    ErrorCode::StorageUnavailable,
                    "not known yet",
                ))
                .await;
        }
        assert_eq!(connection.recv().await, a_move(2));
        connection.send(ServerMessage::Ack { seq: 2 }).await;
        connection.finish().await;
    })
    .await;

    let mut client = connect(&url).await;
    client.request(a_move).await.unwrap();
    assert_eq!(
        next_message(&mut client).await,
        ServerMessage::Ack { seq: 2 }
    );
    assert_eq!(client.reconnections(), 0);
    client.close().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn room_unavailable_sends_the_join_again_on_a_connection_naming_the_room() {
    let (url, server) = stand_in(|listener| async move {
        let join = ClientMessage::JoinLobby {
            seq: 2,
            code: "k7qp2dxm".into(),
            invite: None,
        };
        let mut first = Connection::accept(&listener).await;
        first.welcome(1, None).await;
        assert_eq!(first.recv().await, join);
        first
            .send(ServerMessage::error(
                Some(2),
                ErrorCode::RoomUnavailable,
                "the room is moving",
            ))
            .await;

        let mut second = Connection::accept(&listener).await;
        assert_eq!(second.target, "/ws?room=K7QP2DXM");
        second.welcome(3, Some("t1")).await;
        assert_eq!(second.recv().await, join);
        second.send(ServerMessage::Ack { seq: 2 }).await;
        second.finish().await;
    })
    .await;

    let mut client = connect(&url).await;
    client
        .request(|seq| ClientMessage::JoinLobby {
            seq,
            code: "k7qp2dxm".into(),
            invite: None,
        })
        .await
        .unwrap();
    let Event::Reconnected(reconnection) = next(&mut client).await.unwrap() else {
        panic!("expected the reconnection");
    };
    assert_eq!(reconnection.cause, Disconnect::RoomUnavailable);
    assert_eq!(reconnection.room, Reentry::NoRoom);
    assert_eq!(
        next_message(&mut client).await,
        ServerMessage::Ack { seq: 2 }
    );
    client.close().await.unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn it_gives_up_after_the_allowed_attempts() {
    let (url, server) = stand_in(|listener| async move {
        let mut connection = Connection::accept(&listener).await;
        connection.welcome(1, None).await;
        // Gone without a close frame, and nobody listens any more.
        drop(connection);
        drop(listener);
    })
    .await;

    let mut client = connect(&url).await;
    server.await.unwrap();
    match next(&mut client).await {
        Err(ReconnectError::GaveUp { attempts, .. }) => assert_eq!(attempts, 3),
        other => panic!("expected to give up, got {other:?}"),
    }
    assert!(matches!(
        next(&mut client).await,
        Err(ReconnectError::Ended)
    ));
}

#[tokio::test]
async fn a_close_with_1002_is_final() {
    let (url, server) = stand_in(|listener| async move {
        let mut connection = Connection::accept(&listener).await;
        connection.welcome(1, None).await;
        connection.close(1002).await;
        connection.finish().await;
    })
    .await;

    let mut client = connect(&url).await;
    match next(&mut client).await {
        Err(ReconnectError::Rejected(ClientError::Closed { code: 1002, .. })) => {}
        other => panic!("expected a final refusal, got {other:?}"),
    }
    assert_eq!(client.reconnections(), 0);
    server.await.unwrap();
}
