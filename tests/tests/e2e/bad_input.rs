//! Bad input over real WebSockets, in both encodings: every refusal carries
//! its stable error code, and the connection and the room stay healthy.

use std::time::Duration;

use jumpgate_e2e::{PATIENCE, Player, TestServer, closed, recv, seated_pair};
use jumpgate_protocol::client::{Client, ClientError};
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, Phase, RuleSet, ServerMessage};
use serde_json::json;

/// Generous limits, so the many messages of one test are never rate limited.
fn relaxed(s: &mut jumpgate_server::config::Settings) {
    s.rate_per_second = 10_000;
    s.flood_per_second = 20_000;
}

/// Sends any JSON value as a frame of `encoding`.
async fn send_value(client: &mut Client, encoding: Encoding, value: &serde_json::Value) {
    match codec::encode(encoding, value).unwrap() {
        Frame::Text(text) => client.send_raw_text(text).await.unwrap(),
        Frame::Binary(bytes) => client.send_raw_binary(bytes).await.unwrap(),
    }
}

/// A ping is acked: the connection still works.
async fn assert_healthy(player: &mut Player) {
    let seq = player.send(|seq| ClientMessage::Ping { seq }).await;
    player.expect_ack(seq).await;
}

/// Sends `hello` on a raw client.
async fn hello(client: &mut Client, seq: u32, protocol: u32, token: Option<String>) {
    client
        .send(&ClientMessage::Hello {
            seq,
            protocol,
            token,
            client: "jumpgate-e2e".into(),
            name: None,
        })
        .await
        .unwrap();
}

/// The next error on a raw client, skipping anything else.
async fn next_error(client: &mut Client) -> (Option<u32>, ErrorCode) {
    loop {
        if let ServerMessage::Error { seq, code, .. } = recv(client).await {
            return (seq, code);
        }
    }
}

#[tokio::test]
async fn greeting_errors() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(relaxed).await;

        // Anything before hello.
        let mut client = Client::connect(&server.ws_url(), encoding).await.unwrap();
        client.send(&ClientMessage::Ping { seq: 7 }).await.unwrap();
        assert_eq!(
            next_error(&mut client).await,
            (Some(7), ErrorCode::HelloRequired),
            "{encoding:?}"
        );
        // A bad token is refused; the connection stays open for a good hello.
        hello(&mut client, 8, 1, Some("not-a-token".into())).await;
        assert_eq!(
            next_error(&mut client).await,
            (Some(8), ErrorCode::InvalidToken)
        );
        hello(&mut client, 9, 1, None).await;
        assert!(matches!(
            recv(&mut client).await,
            ServerMessage::Welcome { .. }
        ));
        // A second hello.
        hello(&mut client, 10, 1, None).await;
        assert_eq!(
            next_error(&mut client).await,
            (Some(10), ErrorCode::AlreadyGreeted)
        );
        client.send(&ClientMessage::Ping { seq: 11 }).await.unwrap();
        assert!(matches!(
            recv(&mut client).await,
            ServerMessage::Ack { seq: 11 }
        ));

        // An unsupported version: an error, then close code 1002.
        let mut client = Client::connect(&server.ws_url(), encoding).await.unwrap();
        hello(&mut client, 1, 2, None).await;
        assert_eq!(
            next_error(&mut client).await,
            (Some(1), ErrorCode::UnsupportedVersion)
        );
        assert_eq!(closed(&mut client).await, Some(1002));
    }
}

#[tokio::test]
async fn undecodable_frames_leave_the_connection_open() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(relaxed).await;
        let mut p = Player::connect(&server, encoding).await;

        // Garbage bytes / invalid JSON in the right frame kind.
        match encoding {
            Encoding::Json => p.client.send_raw_text("{not json".into()).await.unwrap(),
            Encoding::MsgPack => p
                .client
                .send_raw_binary(vec![0xc1, 0xff, 0x00, 0x13])
                .await
                .unwrap(),
        }
        assert_eq!(p.expect_error(None).await, ErrorCode::MalformedMessage);
        assert_healthy(&mut p).await;

        // The wrong frame kind, carrying an otherwise valid ping.
        match encoding {
            Encoding::Json => {
                let Frame::Binary(bytes) =
                    codec::encode_client(Encoding::MsgPack, &ClientMessage::Ping { seq: 500 })
                else {
                    unreachable!()
                };
                p.client.send_raw_binary(bytes).await.unwrap();
            }
            Encoding::MsgPack => {
                let Frame::Text(text) =
                    codec::encode_client(Encoding::Json, &ClientMessage::Ping { seq: 500 })
                else {
                    unreachable!()
                };
                p.client.send_raw_text(text).await.unwrap();
            }
        }
        assert_eq!(p.expect_error(None).await, ErrorCode::MalformedMessage);
        assert_healthy(&mut p).await;

        // A known type with a missing field.
        send_value(
            &mut p.client,
            encoding,
            &json!({"type": "join_lobby", "seq": 600}),
        )
        .await;
        assert_eq!(p.expect_error(Some(600)).await, ErrorCode::MalformedMessage);
        assert_healthy(&mut p).await;

        // An unknown type; its seq is echoed.
        send_value(
            &mut p.client,
            encoding,
            &json!({"type": "teleport", "seq": 601}),
        )
        .await;
        assert_eq!(
            p.expect_error(Some(601)).await,
            ErrorCode::UnknownMessageType
        );
        assert_healthy(&mut p).await;

        // Over 16 KiB but under the 64 KiB frame limit.
        let pad = "x".repeat(20 * 1024);
        send_value(
            &mut p.client,
            encoding,
            &json!({"type": "ping", "seq": 602, "pad": pad}),
        )
        .await;
        assert_eq!(p.expect_error(None).await, ErrorCode::MessageTooLarge);
        assert_healthy(&mut p).await;
    }
}

#[tokio::test]
async fn lobby_errors_outside_and_inside_a_lobby() {
    for encoding in Encoding::ALL {
        let server = TestServer::start(relaxed).await;
        let mut p = Player::connect(&server, encoding).await;

        // Actions while in no lobby.
        let actions: [fn(u32) -> ClientMessage; 5] = [
            |seq| ClientMessage::Move {
                seq,
                notation: Some("c3-d4".into()),
                path: None,
            },
            |seq| ClientMessage::Leave { seq },
            |seq| ClientMessage::NextRound { seq },
            |seq| ClientMessage::Resign { seq },
            |seq| ClientMessage::Resync { seq, since: 0 },
        ];
        for build in actions {
            let seq = p.send(build).await;
            assert_eq!(p.expect_error(Some(seq)).await, ErrorCode::NotInLobby);
        }
        // Unknown codes, well-formed or not.
        for code in ["ZZZZZZZZ", "nope", ""] {
            let seq = p
                .send(|seq| ClientMessage::JoinLobby {
                    seq,
                    code: code.into(),
                    invite: None,
                })
                .await;
            assert_eq!(p.expect_error(Some(seq)).await, ErrorCode::UnknownLobby);
            let seq = p
                .send(|seq| ClientMessage::Watch {
                    seq,
                    code: code.into(),
                    invite: None,
                })
                .await;
            assert_eq!(p.expect_error(Some(seq)).await, ErrorCode::UnknownLobby);
        }
        // Invalid series lengths.
        for series_length in [0, 2, 4, 9, 255] {
            let seq = p
                .send(|seq| ClientMessage::CreateLobby {
                    seq,
                    rule_set: RuleSet::Russian,
                    series_length,
                    invite_only: false,
                    stake: None,
                    pace: None,
                    draw_rules: None,
                })
                .await;
            assert_eq!(p.expect_error(Some(seq)).await, ErrorCode::InvalidOptions);
        }
        assert_healthy(&mut p).await;
        drop(p);

        let (mut host, mut guest, code) = seated_pair(&server, encoding, RuleSet::Russian, 3).await;

        // Already in a lobby.
        let seq = host
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::Russian,
                series_length: 1,
                invite_only: false,
                stake: None,
                pace: None,
                draw_rules: None,
            })
            .await;
        assert_eq!(
            host.expect_error(Some(seq)).await,
            ErrorCode::AlreadyInLobby
        );
        let c = code.clone();
        let seq = guest
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: None,
            })
            .await;
        assert_eq!(
            guest.expect_error(Some(seq)).await,
            ErrorCode::AlreadyInLobby
        );
        let c = code.clone();
        let seq = guest
            .send(|seq| ClientMessage::Watch {
                seq,
                code: c,
                invite: None,
            })
            .await;
        assert_eq!(
            guest.expect_error(Some(seq)).await,
            ErrorCode::AlreadyInLobby
        );

        // Out of turn, illegal, and wrong-phase actions.
        let seq = guest
            .send(|seq| ClientMessage::Move {
                seq,
                notation: Some("f6-e5".into()),
                path: None,
            })
            .await;
        assert_eq!(guest.expect_error(Some(seq)).await, ErrorCode::NotYourTurn);
        for (notation, path) in [
            (Some("c3-c4".to_owned()), None),
            (Some("zz".to_owned()), None),
            (None, Some(vec!["c3".to_owned(), "q9".to_owned()])),
            (None, None),
        ] {
            let seq = host
                .send(|seq| ClientMessage::Move {
                    seq,
                    notation,
                    path,
                })
                .await;
            assert_eq!(host.expect_error(Some(seq)).await, ErrorCode::IllegalMove);
        }
        for p in [&mut host, &mut guest] {
            let seq = p.send(|seq| ClientMessage::NextRound { seq }).await;
            assert_eq!(p.expect_error(Some(seq)).await, ErrorCode::NotNow);
            let seq = p.send(|seq| ClientMessage::Rematch { seq }).await;
            assert_eq!(p.expect_error(Some(seq)).await, ErrorCode::NotNow);
        }

        // The host also sends undecodable frames mid-game.
        match encoding {
            Encoding::Json => host.client.send_raw_text("]]".into()).await.unwrap(),
            Encoding::MsgPack => host.client.send_raw_binary(vec![0xc1]).await.unwrap(),
        }
        assert_eq!(host.expect_error(None).await, ErrorCode::MalformedMessage);
        send_value(
            &mut host.client,
            encoding,
            &json!({"type": "warp", "seq": 900}),
        )
        .await;
        assert_eq!(
            host.expect_error(Some(900)).await,
            ErrorCode::UnknownMessageType
        );
        assert_healthy(&mut host).await;
        assert_healthy(&mut guest).await;

        // The room is unharmed: both still play, and both see the moves.
        let s = host.state.clone().unwrap();
        assert_eq!(s.phase, Phase::Playing);
        assert_eq!(s.game.as_ref().unwrap().ply, 0, "no bad input moved");
        assert!(host.my_turn());
        host.play_first_legal().await;
        guest
            .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
            .await;
        assert!(guest.my_turn());
        guest.play_first_legal().await;
        let s = host
            .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 2))
            .await;
        assert_eq!(s.phase, Phase::Playing);
        assert!(
            s.players
                .iter()
                .all(|p| p.as_ref().is_some_and(|p| p.connected))
        );

        // A bad move after real ones changes nothing either.
        let seq = host
            .send(|seq| ClientMessage::Move {
                seq,
                notation: Some("a1-h8".into()),
                path: None,
            })
            .await;
        assert_eq!(host.expect_error(Some(seq)).await, ErrorCode::IllegalMove);
        host.play_first_legal().await;
        guest
            .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 3))
            .await;
    }
}

/// Floods with `count` pings after a fresh rate window, then reads until
/// the close: returns (acks, rate_limited errors, close code).
async fn flood(player: &mut Player, count: u32) -> (u32, u32, u16) {
    let encoding = player.client.encoding();
    // Start from a fresh one-second window.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for seq in 1000..1000 + count {
        if player
            .client
            .send(&ClientMessage::Ping { seq })
            .await
            .is_err()
        {
            break;
        }
    }
    let mut acks = 0;
    let mut limited = 0;
    loop {
        match tokio::time::timeout(PATIENCE, player.client.recv()).await {
            Ok(Ok(ServerMessage::Ack { .. })) => acks += 1,
            Ok(Ok(ServerMessage::Error { code, .. })) => {
                assert_eq!(code, ErrorCode::RateLimited);
                limited += 1;
            }
            Ok(Ok(_)) => {}
            Ok(Err(ClientError::Closed { code, .. })) => return (acks, limited, code),
            Ok(Err(e)) => panic!("{encoding:?}: unexpected failure {e}"),
            Err(_) => panic!("{encoding:?}: the flooder was never closed"),
        }
    }
}

async fn flooding_case(count: u32) {
    for encoding in Encoding::ALL {
        let server = TestServer::start(|s| {
            s.rate_per_second = 20;
            s.flood_per_second = 60;
        })
        .await;
        let (mut flooder, mut other, _) = seated_pair(&server, encoding, RuleSet::Russian, 1).await;
        let (acks, limited, code) = flood(&mut flooder, count).await;
        assert_eq!(acks, 20, "{encoding:?}: the rate is served");
        assert_eq!(
            limited, 40,
            "{encoding:?}: then rate_limited up to the flood limit"
        );
        assert_eq!(code, 1008, "{encoding:?}: closed for policy");

        // The other player still hears the room and is answered.
        other
            .state_until(|s| s.players[0].as_ref().is_some_and(|p| !p.connected))
            .await;
        assert_healthy(&mut other).await;
    }
}

#[tokio::test]
async fn flooding_is_refused_then_closed() {
    // Exactly one message over the flood limit: nothing is left unread.
    flooding_case(61).await;
}

#[tokio::test]
async fn flooding_with_300_pings_is_closed_with_1008() {
    flooding_case(300).await;
}

#[tokio::test]
async fn an_upgrade_without_a_subprotocol_is_refused_with_400() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start(|_| {}).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        server.addr
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&buf[..n]);
    let status = response.lines().next().unwrap_or_default();
    assert!(status.contains("400"), "{response}");

    // An unknown subprotocol alone is refused the same way.
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: chat\r\n\r\n",
        server.addr
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&buf[..n]);
    assert!(
        response.lines().next().unwrap_or_default().contains("400"),
        "{response}"
    );
}
