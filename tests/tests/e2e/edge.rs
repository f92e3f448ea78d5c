//! The network edge under abuse, against a real server: frames that break
//! RFC 6455 or the size limit are answered with the close code PROTOCOL.md
//! names (1002, 1007, 1009) in a real close frame; errors quote only a short
//! excerpt of what the client sent; names and ids from tokens are bounded,
//! so every server message stays within 16 KiB however long the names.
//!
//! Over 700 lines: some thirty short attacks on the same edge, each its own
//! test, sharing a few raw-frame helpers.

use jumpgate_e2e::{PATIENCE, Player, TestServer, recv};
use jumpgate_protocol::client::Client;
use jumpgate_protocol::codec::{self, Frame};
use jumpgate_protocol::{
    ClientMessage, Encoding, ErrorCode, FrameKind, MAX_MESSAGE_BYTES, Phase, RuleSet, ServerMessage,
};
use jumpgate_server::identity::AccountSettings;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A frame or message over this closes the connection with 1009.
const FRAME_LIMIT: usize = 64 * 1024;

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;

/// How a connection ended, as the client saw it.
#[derive(Debug, PartialEq, Eq)]
enum Ending {
    /// A close frame with this code.
    Close(u16),
    /// The connection ended without a close frame (what clients call 1006).
    Dropped,
}

/// A WebSocket client with no checks of its own, writing frames by hand.
struct RawSocket {
    stream: TcpStream,
    /// Bytes read and not yet parsed.
    buffer: Vec<u8>,
}

impl RawSocket {
    /// Opens `/ws` with the subprotocol of `encoding` and checks the `101`.
    async fn open(server: &TestServer, encoding: Encoding) -> RawSocket {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        let request = format!(
            "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Protocol: {}\r\n\r\n",
            server.addr,
            encoding.subprotocol()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buffer = Vec::new();
        let end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 1024];
            let n = tokio::time::timeout(PATIENCE, stream.read(&mut chunk))
                .await
                .expect("an upgrade answer in time")
                .unwrap();
            assert!(n > 0, "the server closed during the upgrade");
            buffer.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        buffer.drain(..end);
        RawSocket { stream, buffer }
    }

    /// Writes bytes; a server that already closed may refuse the rest.
    async fn write(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// Reads one frame (the server's are never masked): `None` at the end
    /// of the connection.
    async fn read_frame(&mut self) -> Option<(u8, Vec<u8>)> {
        loop {
            if let Some((opcode, payload, used)) = parse_frame(&self.buffer) {
                self.buffer.drain(..used);
                return Some((opcode, payload));
            }
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout(PATIENCE, self.stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return None,
                Ok(Ok(n)) => self.buffer.extend_from_slice(&chunk[..n]),
                Err(_) => panic!("the server neither answered nor closed"),
            }
        }
    }

    /// The next message, decoded as the protocol crate's client would.
    async fn read_message(&mut self, encoding: Encoding) -> ServerMessage {
        let (opcode, payload) = self.read_frame().await.expect("a message");
        let kind = match opcode {
            OP_TEXT => FrameKind::Text,
            OP_BINARY => FrameKind::Binary,
            other => panic!("a data frame, not opcode {other}"),
        };
        codec::decode_server_frame(encoding, kind, &payload).unwrap()
    }

    /// Reads until the connection ends: the code of the close frame the
    /// server sent, if any. Then checks the server also ends the TCP
    /// connection.
    async fn ending(&mut self) -> Ending {
        let ending = loop {
            match self.read_frame().await {
                Some((OP_CLOSE, payload)) => {
                    assert!(payload.len() >= 2, "a close frame with a code");
                    break Ending::Close(u16::from_be_bytes([payload[0], payload[1]]));
                }
                Some(_) => continue,
                None => return Ending::Dropped,
            }
        };
        // Answer the close, then expect the server to hang up.
        let answer = frame(true, 0, OP_CLOSE, true, &[0x03, 0xe8]);
        self.write(&answer).await;
        while self.read_frame().await.is_some() {}
        ending
    }
}

/// One server frame at the start of `bytes`: (opcode, payload, bytes used).
fn parse_frame(bytes: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    let (&b0, rest) = bytes.split_first()?;
    let (&b1, rest) = rest.split_first()?;
    assert_eq!(b1 & 0x80, 0, "server frames are never masked");
    let (len, header) = match b1 & 0x7f {
        126 => (
            usize::from(u16::from_be_bytes([*rest.first()?, *rest.get(1)?])),
            4,
        ),
        127 => (
            usize::try_from(u64::from_be_bytes(rest.get(..8)?.try_into().unwrap())).unwrap(),
            10,
        ),
        n => (usize::from(n), 2),
    };
    let payload = bytes.get(header..header + len)?.to_vec();
    Some((b0 & 0x0f, payload, header + len))
}

/// A frame as a client writes it: `rsv` is the three reserved bits (0–7),
/// `masked` whether the payload is masked (clients must mask).
fn frame(fin: bool, rsv: u8, opcode: u8, masked: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![(u8::from(fin) << 7) | (rsv << 4) | opcode];
    frame_length(&mut out, masked, payload.len());
    let key = [0x37, 0xfa, 0x21, 0x3d];
    if masked {
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// Writes the length part of a frame header (mask bit included).
fn frame_length(out: &mut Vec<u8>, masked: bool, len: usize) {
    let mask_bit = if masked { 0x80 } else { 0 };
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if let Ok(len) = u16::try_from(len) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// The data frame opcode of `encoding`, and a valid payload of `len` bytes
/// for it (too big to be a message, but whole UTF-8 for text).
fn data_frame(encoding: Encoding, len: usize) -> (u8, Vec<u8>) {
    let opcode = match encoding.frame_kind() {
        FrameKind::Text => OP_TEXT,
        FrameKind::Binary => OP_BINARY,
    };
    (opcode, vec![b'x'; len])
}

/// Sends `bytes` on a fresh connection and returns how it ended.
async fn ending_after(server: &TestServer, encoding: Encoding, bytes: &[u8]) -> Ending {
    let mut socket = RawSocket::open(server, encoding).await;
    socket.write(bytes).await;
    socket.ending().await
}

#[tokio::test]
async fn frames_and_messages_over_64_kib_close_with_1009() {
    let server = TestServer::start(|_| {}).await;
    for encoding in Encoding::ALL {
        let (opcode, _) = data_frame(encoding, 0);

        // One whole frame, one byte over the limit.
        let (_, payload) = data_frame(encoding, FRAME_LIMIT + 1);
        let bytes = frame(true, 0, opcode, true, &payload);
        assert_eq!(
            ending_after(&server, encoding, &bytes).await,
            Ending::Close(1009),
            "{encoding:?}: a frame over 64 KiB"
        );

        // A header announcing 1 MiB, and only a little of it sent: refused
        // from the header alone.
        let mut bytes = vec![0x80 | opcode];
        frame_length(&mut bytes, true, 1 << 20);
        bytes.extend_from_slice(&[0x37, 0xfa, 0x21, 0x3d]);
        bytes.extend_from_slice(&[0u8; 512]);
        assert_eq!(
            ending_after(&server, encoding, &bytes).await,
            Ending::Close(1009),
            "{encoding:?}: a 1 MiB frame header"
        );

        // A message over the limit in frames that are each under it.
        let (_, part) = data_frame(encoding, 30 * 1024);
        let mut bytes = frame(false, 0, opcode, true, &part);
        bytes.extend(frame(false, 0, OP_CONTINUATION, true, &part));
        bytes.extend(frame(true, 0, OP_CONTINUATION, true, &part));
        assert_eq!(
            ending_after(&server, encoding, &bytes).await,
            Ending::Close(1009),
            "{encoding:?}: a 90 KiB message in three frames"
        );

        // Exactly 64 KiB is a message too large, not a close: the
        // connection stays open and answers.
        let mut socket = RawSocket::open(&server, encoding).await;
        let (_, payload) = data_frame(encoding, FRAME_LIMIT);
        socket.write(&frame(true, 0, opcode, true, &payload)).await;
        match socket.read_message(encoding).await {
            ServerMessage::Error { seq, code, .. } => {
                assert_eq!((seq, code), (None, ErrorCode::MessageTooLarge));
            }
            other => panic!("{encoding:?}: expected message_too_large, got {other:?}"),
        }
        let ping = codec::encode_client(encoding, &ClientMessage::Ping { seq: 3 });
        socket
            .write(&frame(true, 0, opcode, true, ping.as_bytes()))
            .await;
        match socket.read_message(encoding).await {
            ServerMessage::Error { seq, code, .. } => {
                assert_eq!((seq, code), (Some(3), ErrorCode::HelloRequired));
            }
            other => panic!("{encoding:?}: expected hello_required, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn protocol_violations_close_with_1002() {
    let server = TestServer::start(|_| {}).await;
    for encoding in Encoding::ALL {
        let ping = codec::encode_client(encoding, &ClientMessage::Ping { seq: 1 });
        let (opcode, _) = data_frame(encoding, 0);
        let message = ping.as_bytes();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("an unmasked frame", frame(true, 0, opcode, false, message)),
            ("reserved bit 1", frame(true, 0b100, opcode, true, message)),
            ("reserved bit 2", frame(true, 0b010, opcode, true, message)),
            ("reserved bit 3", frame(true, 0b001, opcode, true, message)),
            ("reserved data opcode 3", frame(true, 0, 0x3, true, message)),
            ("reserved control opcode 11", frame(true, 0, 0xb, true, b"")),
            ("a fragmented ping", frame(false, 0, OP_PING, true, b"hi")),
            ("a ping over 125 bytes", {
                let mut bytes = vec![0x80 | OP_PING, 0x80 | 126];
                bytes.extend_from_slice(&126u16.to_be_bytes());
                bytes.extend_from_slice(&[0; 4]);
                bytes.extend_from_slice(&[0; 126]);
                bytes
            }),
            (
                "a continuation with nothing to continue",
                frame(true, 0, OP_CONTINUATION, true, message),
            ),
            ("a new message inside a fragmented one", {
                let mut bytes = frame(false, 0, opcode, true, &message[..2]);
                bytes.extend(frame(true, 0, opcode, true, message));
                bytes
            }),
            (
                "a close frame of one byte",
                frame(true, 0, OP_CLOSE, true, &[0x03]),
            ),
            (
                "a close frame with a reserved code",
                frame(true, 0, OP_CLOSE, true, &999u16.to_be_bytes()),
            ),
        ];
        for (case, bytes) in cases {
            assert_eq!(
                ending_after(&server, encoding, &bytes).await,
                Ending::Close(1002),
                "{encoding:?}: {case}"
            );
        }
    }
}

#[tokio::test]
async fn invalid_utf8_in_text_closes_with_1007() {
    let server = TestServer::start(|_| {}).await;
    // Text frames are checked on both kinds of connection: on a MessagePack
    // one a text frame is the wrong kind, but its UTF-8 is checked first.
    for encoding in Encoding::ALL {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                "invalid bytes",
                frame(true, 0, OP_TEXT, true, b"{\"type\":\"ping\xff\xfe\"}"),
            ),
            (
                "a lone continuation byte",
                frame(true, 0, OP_TEXT, true, &[0x80]),
            ),
            (
                "an encoded surrogate",
                frame(true, 0, OP_TEXT, true, &[0xed, 0xa0, 0x80]),
            ),
            ("a character split and spoiled across fragments", {
                // U+1F600 is F0 9F 98 80; the second fragment breaks it.
                let mut bytes = frame(false, 0, OP_TEXT, true, &[b'a', 0xf0, 0x9f]);
                bytes.extend(frame(true, 0, OP_CONTINUATION, true, &[0x41, 0x42]));
                bytes
            }),
            ("a close reason that is not UTF-8", {
                let mut payload = 1000u16.to_be_bytes().to_vec();
                payload.extend_from_slice(&[0xc3, 0x28]);
                frame(true, 0, OP_CLOSE, true, &payload)
            }),
        ];
        for (case, bytes) in cases {
            assert_eq!(
                ending_after(&server, encoding, &bytes).await,
                Ending::Close(1007),
                "{encoding:?}: {case}"
            );
        }
        // The same text split on a character boundary is fine (a
        // MessagePack connection refuses the frame kind, and stays open).
        let mut socket = RawSocket::open(&server, encoding).await;
        let text = "{\"type\":\"ping\",\"seq\":4,\"pad\":\"\u{1F600}\"}".as_bytes();
        let split = text.len() - 4;
        socket
            .write(&frame(false, 0, OP_TEXT, true, &text[..split]))
            .await;
        socket
            .write(&frame(true, 0, OP_CONTINUATION, true, &text[split..]))
            .await;
        let want = match encoding {
            Encoding::Json => (Some(4), ErrorCode::HelloRequired),
            Encoding::MsgPack => (None, ErrorCode::MalformedMessage),
        };
        match socket.read_message(encoding).await {
            ServerMessage::Error { seq, code, .. } => assert_eq!((seq, code), want),
            other => panic!("{encoding:?}: expected an error, got {other:?}"),
        }
    }
}

/// A greeted connection in the middle of a game sees the same closes, and
/// its seat is kept as for any dropped connection.
#[tokio::test]
async fn a_player_who_breaks_the_protocol_is_closed_and_keeps_the_seat() {
    let server = TestServer::start(|_| {}).await;
    let mut other = Player::connect(&server, Encoding::Json).await;
    let seq = other
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
    other.expect_ack(seq).await;
    let code = other.state_until(|_| true).await.code;

    let encoding = Encoding::Json;
    let mut socket = RawSocket::open(&server, encoding).await;
    let masked = |message: &ClientMessage| {
        frame(
            true,
            0,
            OP_TEXT,
            true,
            codec::encode_client(encoding, message).as_bytes(),
        )
    };
    socket
        .write(&masked(&ClientMessage::Hello {
            seq: 1,
            protocol: 1,
            token: None,
            client: "raw".into(),
            name: None,
        }))
        .await;
    socket
        .write(&masked(&ClientMessage::JoinLobby {
            seq: 2,
            code: code.clone(),
            invite: None,
        }))
        .await;
    other.phase(Phase::Playing).await;
    socket
        .write(&frame(true, 0, OP_TEXT, true, b"\"\xff\""))
        .await;
    assert_eq!(socket.ending().await, Ending::Close(1007));
    let state = other
        .state_until(|s| s.players[1].as_ref().is_some_and(|p| !p.connected))
        .await;
    assert_eq!(state.phase, Phase::Playing, "the seat is kept");
}

/// Sends any JSON value as a frame of `encoding`.
async fn send_value(client: &mut Client, encoding: Encoding, value: &serde_json::Value) {
    match codec::encode(encoding, value).unwrap() {
        Frame::Text(text) => client.send_raw_text(text).await.unwrap(),
        Frame::Binary(bytes) => client.send_raw_binary(bytes).await.unwrap(),
    }
}

/// The next error's code and text.
async fn next_error(player: &mut Player) -> (ErrorCode, String) {
    loop {
        if let ServerMessage::Error { code, message, .. } = player.recv().await {
            return (code, message);
        }
    }
}

/// An error text is short, and quotes at most 64 characters of a run of
/// `filler`.
fn assert_excerpt(text: &str, filler: char, what: &str) {
    assert!(
        text.chars().count() <= 256 && text.len() <= 1024,
        "{what}: {} characters: {text}",
        text.chars().count()
    );
    let longest_run = text
        .split(|c| c != filler)
        .map(|run| run.chars().count())
        .max()
        .unwrap_or(0);
    assert!(longest_run <= 64, "{what}: quotes {longest_run} of it");
}

#[tokio::test]
async fn errors_quote_only_an_excerpt_of_the_input() {
    let server = TestServer::start(|s| {
        s.rate_per_second = 10_000;
        s.flood_per_second = 20_000;
    })
    .await;
    for encoding in Encoding::ALL {
        // Decoding errors: an unknown type, a bad enum value, a wrong type.
        let mut p = Player::connect(&server, encoding).await;
        let long = "x".repeat(15_000);
        let cases = [
            ("an unknown type", json!({"type": long, "seq": 1})),
            (
                "an unknown rule set",
                json!({"type": "create_lobby", "seq": 2, "rule_set": long}),
            ),
            (
                "a seq of the wrong type",
                json!({"type": "ping", "seq": long}),
            ),
            (
                "a field of the wrong type",
                json!({"type": "join_lobby", "seq": 3, "code": [long]}),
            ),
        ];
        for (what, value) in cases {
            send_value(&mut p.client, encoding, &value).await;
            let (code, text) = next_error(&mut p).await;
            assert!(
                matches!(
                    code,
                    ErrorCode::MalformedMessage | ErrorCode::UnknownMessageType
                ),
                "{what}: {code}"
            );
            assert_excerpt(&text, 'x', what);
        }
        // Four-byte characters are cut whole.
        let emoji = "\u{1F600}".repeat(4_000);
        send_value(&mut p.client, encoding, &json!({"type": emoji, "seq": 4})).await;
        let (_, text) = next_error(&mut p).await;
        assert_excerpt(&text, '\u{1F600}', "an emoji type");
        assert!(text.contains('\u{2026}'), "the cut is marked: {text}");
        drop(p);

        // Move texts in every rule set, quoted or not by the rules engine.
        for rule_set in [RuleSet::Russian, RuleSet::Space, RuleSet::Orbit] {
            let (mut host, mut guest, _) =
                jumpgate_e2e::seated_pair(&server, encoding, rule_set, 1).await;
            // The side to move, so that the move text itself is judged.
            let mover = if host.my_turn() {
                &mut host
            } else {
                &mut guest
            };
            for notation in [
                "x".repeat(15_000),
                format!("a1-h8{}", " ".repeat(15_000)),
                format!("11-15{}", "x".repeat(15_000)),
                format!("{}-{}", "9".repeat(7_000), "9".repeat(7_000)),
            ] {
                let filler = notation.chars().last().unwrap();
                let seq = mover
                    .send(|seq| ClientMessage::Move {
                        seq,
                        notation: Some(notation),
                        path: None,
                    })
                    .await;
                let (code, text) = next_error(mover).await;
                assert_eq!(code, ErrorCode::IllegalMove, "{rule_set:?} seq {seq}");
                assert_excerpt(&text, filler, &format!("{rule_set:?} move text"));
            }
            let seq = mover
                .send(|seq| ClientMessage::Move {
                    seq,
                    notation: None,
                    path: Some(vec!["x".repeat(8_000), "y".repeat(7_000)]),
                })
                .await;
            let (code, text) = next_error(mover).await;
            assert_eq!(code, ErrorCode::IllegalMove, "{rule_set:?} seq {seq}");
            assert_excerpt(&text, 'x', "a move path");
        }
    }
}

const ISSUER_SECRET: &[u8] = b"issuer-secret-for-edge-tests";

fn with_accounts(s: &mut jumpgate_server::config::Settings) {
    s.rate_per_second = 10_000;
    s.flood_per_second = 20_000;
    s.accounts = Some(AccountSettings {
        issuer: "https://id.test".into(),
        audience: "jumpgate".into(),
        hs256: vec![("k1".into(), ISSUER_SECRET.to_vec())],
        ..AccountSettings::default()
    });
}

/// An account token with exactly these claims (plus `aud` and `exp`).
fn token_with(claims: serde_json::Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("k1".into());
    let mut all = json!({"aud": "jumpgate", "exp": 4_000_000_000u64});
    all.as_object_mut()
        .unwrap()
        .extend(claims.as_object().unwrap().clone());
    let key = jsonwebtoken::EncodingKey::from_secret(ISSUER_SECRET).unwrap();
    jsonwebtoken::encode(&header, &all, &key).unwrap()
}

#[tokio::test]
async fn doubtful_account_tokens_are_refused() {
    let server = TestServer::start(with_accounts).await;
    for encoding in Encoding::ALL {
        let refused = [
            (
                "a blank sub",
                json!({"sub": "  \t ", "iss": "https://id.test"}),
            ),
            (
                "a sub with a line break",
                json!({"sub": "a\nb", "iss": "https://id.test"}),
            ),
            (
                "a sub over 128 bytes",
                json!({"sub": "s".repeat(129), "iss": "https://id.test"}),
            ),
            (
                "an iss list naming us",
                json!({"sub": "u1", "iss": ["https://id.test"]}),
            ),
            (
                "an iss list naming us and another",
                json!({"sub": "u1", "iss": ["https://other.test", "https://id.test"]}),
            ),
            (
                "a token over 8 KiB",
                json!({"sub": "u1", "iss": "https://id.test", "pad": "p".repeat(9_000)}),
            ),
        ];
        for (what, claims) in refused {
            let mut client = Client::connect(&server.ws_url(), encoding).await.unwrap();
            let refusal = tokio::time::timeout(
                PATIENCE,
                client.greet(Some(token_with(claims)), "jumpgate-e2e"),
            )
            .await
            .unwrap()
            .expect_err(what);
            match refusal {
                jumpgate_protocol::client::ClientError::HelloRefused(r) => {
                    assert_eq!(r.code, ErrorCode::InvalidToken, "{what}");
                }
                other => panic!("{what}: {other}"),
            }
            // Still open: a guest hello is welcomed.
            tokio::time::timeout(PATIENCE, client.greet(None, "jumpgate-e2e"))
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        // A name that is blank once normalised becomes "Player".
        let token = token_with(json!({
            "sub": "blank-name", "iss": "https://id.test", "name": " \u{200B}\n\u{7} ",
        }));
        let p = Player::connect_with(&server, encoding, Some(token)).await;
        assert_eq!(p.name, "Player");
    }
}

/// The longest name there is: 24 four-byte characters (96 bytes), from a
/// claim that is much longer and dirtier.
fn longest_name(salt: usize) -> (String, String) {
    let faces = ['\u{1F600}', '\u{1F47E}', '\u{1F680}', '\u{1F3C1}'];
    let face = faces[salt % faces.len()];
    let claim = format!(
        "\u{202E}\t{}\u{0}{}\n",
        face.to_string().repeat(20),
        face.to_string().repeat(500)
    );
    (claim, face.to_string().repeat(24))
}

/// The biggest ids: `sub`s of 128 bytes that JSON has to escape.
fn biggest_sub(salt: usize) -> String {
    let mut sub = format!("{salt}");
    while sub.len() < 128 {
        sub.push(if sub.len() % 2 == 0 { '"' } else { '\\' });
    }
    sub
}

#[tokio::test]
async fn the_longest_names_keep_every_message_within_16_kib() {
    let server = TestServer::start(with_accounts).await;
    let mut largest = 0;
    let mut states = 0;
    for (round, &rule_set) in RuleSet::ALL.iter().enumerate() {
        let mut people = Vec::new();
        for i in 0..6 {
            let salt = round * 10 + i;
            let (claim, shown) = longest_name(salt);
            let token = token_with(json!({
                "sub": biggest_sub(salt), "iss": "https://id.test", "name": claim,
            }));
            assert!(token.len() <= 8 * 1024);
            let encoding = Encoding::ALL[i % 2];
            let p = Player::connect_with(&server, encoding, Some(token)).await;
            assert_eq!(p.name, shown, "the name is normalised at hello");
            assert_eq!(p.id, format!("a_{}", biggest_sub(salt)));
            people.push(p);
        }
        let (host, rest) = people.split_first_mut().unwrap();
        let seq = host
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set,
                series_length: 7,
                invite_only: true,
                stake: None,
                pace: None,
                draw_rules: None,
            })
            .await;
        host.expect_ack(seq).await;
        let state = host.state_until(|_| true).await;
        let invite = state.invite.clone().expect("the host sees the invite");
        for (i, p) in rest.iter_mut().enumerate() {
            let (code, invite) = (state.code.clone(), Some(invite.clone()));
            let seq = p
                .send(|seq| {
                    if i == 0 {
                        ClientMessage::JoinLobby { seq, code, invite }
                    } else {
                        ClientMessage::Watch { seq, code, invite }
                    }
                })
                .await;
            p.expect_ack(seq).await;
        }
        // A few moves, every state seen by all six.
        for ply in 0..6u32 {
            for p in people.iter_mut() {
                p.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == ply))
                    .await;
            }
            let mover = people[..2]
                .iter_mut()
                .find(|p| p.my_turn())
                .expect("a player to move");
            mover.play_first_legal().await;
        }
        // Everyone reads to the latest state; every message on the way was
        // decoded by the protocol crate's client, which refuses anything
        // over 16 KiB, and is measured again here in both encodings.
        for p in people.iter_mut() {
            let seq = p.send(|seq| ClientMessage::Resync { seq, since: 0 }).await;
            loop {
                let message = p.recv().await;
                for encoding in Encoding::ALL {
                    let size = codec::encode_server(encoding, &message).len();
                    assert!(size <= MAX_MESSAGE_BYTES, "{rule_set:?}: {size} bytes");
                    largest = largest.max(size);
                }
                if let ServerMessage::State(state) = &message {
                    states += 1;
                    let names: Vec<&str> = state
                        .players
                        .iter()
                        .flatten()
                        .map(|p| p.name.as_str())
                        .collect();
                    assert_eq!(names.len(), 2);
                    assert!(
                        names
                            .iter()
                            .all(|n| n.chars().count() == 24 && n.len() == 96)
                    );
                    assert_eq!(state.spectators, 4);
                }
                if matches!(message, ServerMessage::Ack { seq: s } if s == seq) {
                    break;
                }
            }
        }
    }
    assert!(states >= 8 * 6, "{states} states");
    eprintln!("largest server message with the longest names: {largest} bytes");
}

/// A welcome for the longest token accepted still fits.
#[tokio::test]
async fn the_longest_token_gets_a_welcome_within_16_kib() {
    let server = TestServer::start(with_accounts).await;
    for encoding in Encoding::ALL {
        // Pad the token to just under 8 KiB.
        let mut pad = 0;
        let token = loop {
            let token = token_with(json!({
                "sub": biggest_sub(1), "iss": "https://id.test",
                "name": longest_name(1).0, "pad": "p".repeat(pad),
            }));
            if token.len() > 8 * 1024 - 8 {
                break token;
            }
            pad += 1 + (8 * 1024 - 8 - token.len()) * 3 / 4;
        };
        assert!(token.len() <= 8 * 1024, "{}", token.len());
        let mut client = Client::connect(&server.ws_url(), encoding).await.unwrap();
        client
            .send(&ClientMessage::Hello {
                seq: 1,
                protocol: 1,
                token: Some(token.clone()),
                client: "jumpgate-e2e".into(),
                name: None,
            })
            .await
            .unwrap();
        let welcome = recv(&mut client).await;
        let size = codec::encode_server(encoding, &welcome).len();
        assert!(size <= MAX_MESSAGE_BYTES, "{size}");
        match welcome {
            ServerMessage::Welcome {
                token: echoed,
                identity,
                ..
            } => {
                assert_eq!(echoed, token);
                assert_eq!(identity.name, longest_name(1).1);
            }
            other => panic!("expected welcome, got {other:?}"),
        }
    }
}

/// A connection that never says `hello` is closed with 1008 once the
/// deadline passes.
#[tokio::test]
async fn a_connection_without_hello_is_closed_at_the_deadline() {
    let server = TestServer::start(|s| {
        s.hello_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    let mut socket = RawSocket::open(&server, Encoding::Json).await;
    assert_eq!(socket.ending().await, Ending::Close(1008));
}

/// A greeted client that answers no ping (and sends nothing) is closed with
/// 1008 after two ping intervals; the server pinged it first.
#[tokio::test]
async fn a_client_silent_through_two_pings_is_closed() {
    let server = TestServer::start(|s| {
        s.ping_interval = std::time::Duration::from_millis(200);
    })
    .await;
    let mut socket = RawSocket::open(&server, Encoding::Json).await;
    let hello = codec::encode_client(
        Encoding::Json,
        &jumpgate_protocol::ClientMessage::Hello {
            seq: 1,
            protocol: 1,
            token: None,
            client: "edge-test".into(),
            name: None,
        },
    );
    let Frame::Text(text) = hello else {
        panic!("JSON is text")
    };
    socket
        .write(&frame(true, 0, OP_TEXT, true, text.as_bytes()))
        .await;
    let mut pinged = false;
    let ending = loop {
        match socket.read_frame().await {
            Some((OP_PING, _)) => pinged = true,
            Some((OP_CLOSE, payload)) => {
                break Ending::Close(u16::from_be_bytes([payload[0], payload[1]]));
            }
            Some(_) => continue,
            None => break Ending::Dropped,
        }
    };
    assert!(pinged, "pinged before being closed");
    assert_eq!(ending, Ending::Close(1008));
}

/// A client that answers pings stays, however long it says nothing else.
#[tokio::test]
async fn a_client_that_answers_pings_stays() {
    let server = TestServer::start(|s| {
        s.ping_interval = std::time::Duration::from_millis(500);
    })
    .await;
    let mut player = Player::connect_to(&server, Encoding::Json, None).await;
    // The client answers pings while it reads; nothing arrives meanwhile
    // (four pings; a client silent for a whole second would be closed).
    let quiet = tokio::time::timeout(
        std::time::Duration::from_millis(2_000),
        player.client.recv(),
    )
    .await;
    assert!(quiet.is_err(), "nothing but pings: {quiet:?}");
    player
        .request(|seq| jumpgate_protocol::ClientMessage::Ping { seq })
        .await
        .expect("still connected");
}

/// At the connection cap a new WebSocket gets HTTP 503 while the health
/// endpoint still answers; a slot freed is taken again.
#[tokio::test]
async fn past_the_connection_cap_upgrades_get_503_and_health_still_answers() {
    use jumpgate_protocol::client::ClientError;
    let server = TestServer::start(|s| s.max_connections = 2).await;
    let first = Player::connect_to(&server, Encoding::Json, None).await;
    let _second = Player::connect_to(&server, Encoding::Json, None).await;
    let refused = Client::connect(&server.ws_url(), Encoding::Json).await;
    assert!(
        matches!(refused, Err(ClientError::Refused { status: 503 })),
        "{refused:?}"
    );
    assert_eq!(jumpgate_e2e::http_get(server.addr, "/healthz").await.0, 200);
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match Client::connect(&server.ws_url(), Encoding::Json).await {
            Ok(_) => break,
            Err(ClientError::Refused { status: 503 }) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the slot never came back"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}
