//! The client against a stand-in server built from tokio-tungstenite on port 0.

use std::net::SocketAddr;

use futures_util::{SinkExt, StreamExt};
use jumpgate_protocol::client::{Client, ClientError};
use jumpgate_protocol::codec::{self, Encoding, Frame, FrameKind};
use jumpgate_protocol::{ClientMessage, ErrorCode, Identity, PROTOCOL_VERSION, ServerMessage};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Bytes, Message};

/// How the stand-in server answers the upgrade request.
#[derive(Clone, Copy)]
enum Upgrade {
    /// Pick our subprotocol if offered, like the real server.
    Choose,
    /// Accept without naming any subprotocol.
    Ignore,
    /// Refuse with HTTP 400.
    Refuse,
}

/// Accepts one connection, answers `hello` with `welcome` and `ack`, pings, echoes one
/// raw frame back as an `error`, then closes with 1001.
async fn stand_in_server(upgrade: Upgrade) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut encoding = None;
        let callback = |request: &Request, mut response: Response| {
            let offered = request
                .headers()
                .get("sec-websocket-protocol")
                .and_then(|value| value.to_str().ok())
                .and_then(Encoding::from_subprotocol);
            match upgrade {
                Upgrade::Refuse => {
                    let mut refusal = ErrorResponse::new(Some("no subprotocol".into()));
                    *refusal.status_mut() = StatusCode::BAD_REQUEST;
                    return Err(refusal);
                }
                Upgrade::Ignore => {}
                Upgrade::Choose => {
                    let offered = offered.expect("client offers a known subprotocol");
                    response.headers_mut().insert(
                        "sec-websocket-protocol",
                        HeaderValue::from_static(offered.subprotocol()),
                    );
                }
            }
            encoding = offered;
            Ok(response)
        };
        let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
            return;
        };
        let encoding = encoding.unwrap();
        let send = |message: ServerMessage| match codec::encode_server(encoding, &message) {
            Frame::Text(text) => Message::text(text),
            Frame::Binary(bytes) => Message::binary(bytes),
        };

        let hello = socket.next().await.unwrap().unwrap();
        let hello = codec::decode_client(encoding, &hello.into_data()).unwrap();
        let ClientMessage::Hello { seq, protocol, .. } = hello else {
            panic!("expected hello, got {hello:?}");
        };
        assert_eq!(protocol, PROTOCOL_VERSION);
        socket
            .send(send(ServerMessage::Welcome {
                server_version: "stand-in".into(),
                protocols: vec![1],
                identity: Identity {
                    id: "u1".into(),
                    name: "Guest 1".into(),
                    guest: true,
                },
                token: "t1".into(),
                accounts: false,
            }))
            .await
            .unwrap();
        socket
            .send(Message::Ping(Bytes::from_static(b"hi")))
            .await
            .unwrap();
        socket.send(send(ServerMessage::Ack { seq })).await.unwrap();

        let raw = socket.next().await.unwrap().unwrap();
        let kind = if raw.is_text() {
            FrameKind::Text
        } else {
            FrameKind::Binary
        };
        let err = codec::decode_client_frame(encoding, kind, &raw.into_data()).unwrap_err();
        socket
            .send(send(ServerMessage::error(
                err.seq(),
                err.code(),
                err.to_string(),
            )))
            .await
            .unwrap();

        socket
            .send(Message::Close(Some(CloseFrame {
                code: CloseCode::Away,
                reason: "restarting".into(),
            })))
            .await
            .unwrap();
        while let Some(Ok(_)) = socket.next().await {}
    });
    addr
}

async fn session(encoding: Encoding) {
    let addr = stand_in_server(Upgrade::Choose).await;
    let mut client = Client::connect(&format!("ws://{addr}/ws"), encoding)
        .await
        .unwrap();
    assert_eq!(client.encoding(), encoding);

    let greeting = client.greet(None, "protocol-tests").await.unwrap();
    assert_eq!(greeting.token, "t1");
    // The ping in between is skipped; the ack answers seq 1, the hello.
    let mut others = Vec::new();
    assert_eq!(client.answer(1, |m| others.push(m)).await.unwrap(), Ok(()));
    assert!(others.is_empty());

    // A frame of the wrong kind for the encoding.
    match encoding {
        Encoding::Json => client.send_raw_binary(vec![0x80]).await.unwrap(),
        Encoding::MsgPack => client.send_raw_text("{}".into()).await.unwrap(),
    }
    let ServerMessage::Error { code, .. } = client.recv().await.unwrap() else {
        panic!("expected an error");
    };
    assert_eq!(code, ErrorCode::MalformedMessage);

    match client.recv().await {
        Err(ClientError::Closed { code, reason }) => {
            assert_eq!(code, 1001);
            assert_eq!(reason, "restarting");
        }
        other => panic!("expected a close, got {other:?}"),
    }
}

#[tokio::test]
async fn json_session() {
    session(Encoding::Json).await;
}

#[tokio::test]
async fn msgpack_session() {
    session(Encoding::MsgPack).await;
}

#[tokio::test]
async fn server_that_ignores_the_subprotocol_is_rejected() {
    let addr = stand_in_server(Upgrade::Ignore).await;
    let err = Client::connect(&format!("ws://{addr}/ws"), Encoding::Json)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Subprotocol { expected, .. } if expected == "jumpgate.v1.json"),
        "{err:?}"
    );
}

#[tokio::test]
async fn refused_upgrade_reports_the_status() {
    let addr = stand_in_server(Upgrade::Refuse).await;
    let err = Client::connect(&format!("ws://{addr}/ws"), Encoding::MsgPack)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Refused { status: 400 }),
        "{err:?}"
    );
}

#[tokio::test]
async fn close_ends_the_connection_cleanly() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let callback = |_: &Request, mut response: Response| {
            response.headers_mut().insert(
                "sec-websocket-protocol",
                HeaderValue::from_static("jumpgate.v1.json"),
            );
            Ok(response)
        };
        let mut socket = tokio_tungstenite::accept_hdr_async(stream, callback)
            .await
            .unwrap();
        match socket.next().await {
            Some(Ok(Message::Close(Some(frame)))) => u16::from(frame.code),
            other => panic!("expected a close frame, got {other:?}"),
        }
    });
    let client = Client::connect(&format!("ws://{addr}/ws"), Encoding::Json)
        .await
        .unwrap();
    client.close().await.unwrap();
    assert_eq!(server.await.unwrap(), 1000);
}
