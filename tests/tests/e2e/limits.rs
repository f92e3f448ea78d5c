//! The edge's deadlines, caps and rates against a real server, with clients
//! on several loopback addresses (127.0.0.1, 127.0.0.2, ...): a request head
//! that never ends is cut off; one address, one identity or one proxy-named
//! client gets its share and no more while others still get in; a flood
//! across connections is slowed, not served; health answers on the
//! internal listener when the public one is full.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, PATIENCE, Player, TestServer};
use jumpgate_protocol::client::Client;
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, RuleSet, ServerMessage};
use jumpgate_server::limits::{LimitSettings, parse_proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A TCP connection to `server` from the loopback address `from`.
async fn tcp_from(from: [u8; 4], server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::from(from), 0)).unwrap();
    socket.connect(server).await.unwrap()
}

/// Whether the server closes `stream` (end of stream or reset) before
/// sending anything, within the test's patience.
async fn closed_unanswered(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(PATIENCE, stream.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(_)) => false,
        Err(_) => panic!("the server neither answered nor closed"),
    }
}

/// Sends a WebSocket upgrade request from `from` with `extra` headers and
/// returns the response's status and head.
async fn upgrade_from(
    from: [u8; 4],
    server: SocketAddr,
    extra: &[(&str, &str)],
) -> (u16, String, TcpStream) {
    let mut stream = tcp_from(from, server).await;
    let extra: String = extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {server}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: jumpgate.v1.json\r\n{extra}\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(PATIENCE, stream.read(&mut byte))
            .await
            .expect("an answer to the upgrade")
            .unwrap();
        assert_eq!(read, 1, "closed before answering: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, stream)
}

/// A greeted player connected from the loopback address `from`.
async fn player_from(from: [u8; 4], server: SocketAddr) -> Client {
    let stream = tcp_from(from, server).await;
    let mut client = Client::connect_on(stream, &format!("ws://{server}/ws"), Encoding::Json)
        .await
        .unwrap();
    client.greet(None, "limits-test").await.unwrap();
    client
}

/// Sends a request and returns the answer to it (an ack or an error).
async fn ask(client: &mut Client, build: impl FnOnce(u32) -> ClientMessage) -> ServerMessage {
    let seq = client.next_seq();
    client.send(&build(seq)).await.unwrap();
    loop {
        let message = tokio::time::timeout(PATIENCE, client.recv())
            .await
            .expect("an answer")
            .unwrap();
        match &message {
            ServerMessage::Ack { seq: s } | ServerMessage::Error { seq: Some(s), .. }
                if *s == seq =>
            {
                return message;
            }
            _ => {}
        }
    }
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// A request head sent halfway is cut off at the deadline, and so is a
/// connection that sends nothing, or nothing after its first request.
#[tokio::test]
async fn request_heads_have_a_deadline() {
    let server = TestServer::start(|s| {
        s.header_read_timeout = Duration::from_millis(300);
    })
    .await;
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    assert!(closed_unanswered(&mut half).await, "half a head");
    assert!(closed_unanswered(&mut silent).await, "no head at all");
    // Keep-alive: the first request is answered, then the next head is due.
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = vec![0u8; 512];
    let n = kept.read(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"));
    assert!(closed_unanswered(&mut kept).await, "idle after a request");
}

/// One address holds at most its share of WebSocket connections (429 with
/// Retry-After past it) and of connections still in HTTP (closed at
/// accept); another address still gets in, and a freed slot is reusable.
#[tokio::test]
async fn one_address_gets_its_share_of_connections() {
    let server = TestServer::start(|s| {
        s.limits = LimitSettings {
            connections_per_address: 2,
            ..LimitSettings::unlimited()
        };
    })
    .await;
    let first = player_from([127, 0, 0, 2], server.addr).await;
    let _second = player_from([127, 0, 0, 2], server.addr).await;
    let (status, head, _) = upgrade_from([127, 0, 0, 2], server.addr, &[]).await;
    assert_eq!(status, 429, "{head}");
    assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
    let _other = player_from([127, 0, 0, 3], server.addr).await;
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (status, _, _) = upgrade_from([127, 0, 0, 2], server.addr, &[]).await;
        if status == 101 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Connections that have not upgraded count apart: two idle ones fill
    // the address's share, and a third is closed at once.
    let _idle = [
        tcp_from([127, 0, 0, 4], server.addr).await,
        tcp_from([127, 0, 0, 4], server.addr).await,
    ];
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = tcp_from([127, 0, 0, 4], server.addr).await;
    assert!(closed_unanswered(&mut third).await);
    assert_eq!(
        jumpgate_e2e::http_get(server.addr, "/healthz").await.0,
        200,
        "another address is served"
    );
}

/// Behind a trusted proxy the client is the address the proxy appended to
/// the header (the rightmost untrusted entry); the same header from an
/// untrusted peer is ignored.
#[tokio::test]
async fn a_trusted_proxy_names_the_client() {
    let server = TestServer::start(|s| {
        s.limits = LimitSettings {
            connections_per_address: 1,
            trusted_proxies: vec![parse_proxy("127.0.0.5").unwrap()],
            ..LimitSettings::unlimited()
        };
    })
    .await;
    let proxy = [127, 0, 0, 5];
    let one = [("X-Forwarded-For", "203.0.113.1")];
    let (a, _, _held_a) = upgrade_from(proxy, server.addr, &one).await;
    // A client cannot escape by forging the first entry: the rightmost
    // untrusted one counts.
    let forged = [("X-Forwarded-For", "6.6.6.6, 203.0.113.1")];
    let (b, _, _) = upgrade_from(proxy, server.addr, &forged).await;
    let two = [("X-Forwarded-For", "203.0.113.2")];
    let (c, _, _held_c) = upgrade_from(proxy, server.addr, &two).await;
    assert_eq!((a, b, c), (101, 429, 101));
    // From an untrusted peer the header means nothing: that peer is the
    // client, with one connection allowed.
    let (d, _, _held_d) = upgrade_from([127, 0, 0, 6], server.addr, &one).await;
    let (e, _, _) = upgrade_from([127, 0, 0, 6], server.addr, &two).await;
    assert_eq!((d, e), (101, 429));
}

/// Two real proxies in front (a plain HAProxy, standing for an Ingress,
/// before the deployment's HAProxy running `deploy/haproxy.cfg`): each
/// appends to `X-Forwarded-For`, and with both listed as trusted the
/// instance walks the header from the right past them to the client, so
/// every client keeps its own share of connections; what a client writes
/// in the header itself changes nothing. Were the last entry taken, every
/// client would be the front proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_client_limits_stay_per_client_behind_two_proxies() {
    use jumpgate_e2e::balancer::{Balancer, FrontProxy};
    let front_source = std::net::Ipv4Addr::new(127, 0, 0, 3);
    let server = TestServer::start(|s| {
        s.limits = LimitSettings {
            connections_per_address: 2,
            trusted_proxies: vec![
                parse_proxy("127.0.0.1").unwrap(),
                parse_proxy(&front_source.to_string()).unwrap(),
            ],
            ..LimitSettings::unlimited()
        };
    })
    .await;
    let balancer = Balancer::start(&[server.addr]).await;
    let front = FrontProxy::start(balancer.addr, front_source).await;
    let mut held = Vec::new();
    // Six clients, one connection each: more than one address's share.
    for last in 10..16 {
        let (status, head, stream) = upgrade_from([127, 0, 0, last], front.addr, &[]).await;
        assert_eq!(status, 101, "client 127.0.0.{last}: {head}");
        held.push(stream);
    }
    // One client still gets exactly its own share, whatever it forges.
    let (second, _, stream) = upgrade_from(
        [127, 0, 0, 10],
        front.addr,
        &[("X-Forwarded-For", "198.51.100.7")],
    )
    .await;
    held.push(stream);
    let (third, head, _) = upgrade_from(
        [127, 0, 0, 10],
        front.addr,
        &[("X-Forwarded-For", "198.51.100.8, 127.0.0.3")],
    )
    .await;
    assert_eq!((second, third), (101, 429), "{head}");
}

/// One identity may hold only so many connections: the next `hello` is
/// refused with `too_many_connections` and the connection closed.
#[tokio::test]
async fn one_identity_gets_its_share_of_connections() {
    let server = TestServer::start(|s| {
        s.limits = LimitSettings {
            connections_per_identity: 2,
            ..LimitSettings::unlimited()
        };
    })
    .await;
    let first = Player::connect_to(&server, Encoding::Json, None).await;
    let token = first.token.clone();
    let _second = Player::connect_to(&server, Encoding::Json, Some(token.clone())).await;
    let mut third = Client::connect(&server.ws_url(), Encoding::Json)
        .await
        .unwrap();
    let refused = third.greet(Some(token.clone()), "limits-test").await;
    assert!(
        format!("{refused:?}").contains("TooManyConnections"),
        "{refused:?}"
    );
    // A fresh guest is not affected.
    let _other = Player::connect_to(&server, Encoding::Json, None).await;
    drop(first);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let mut again = Client::connect(&server.ws_url(), Encoding::Json)
            .await
            .unwrap();
        if again
            .greet(Some(token.clone()), "limits-test")
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// New lobbies and solo games are rate limited per identity and per
/// address, with `rate_limited` carrying the request's seq.
#[tokio::test]
async fn new_rooms_are_rate_limited_per_identity_and_address() {
    let server = TestServer::start(|s| {
        s.limits = LimitSettings {
            rooms_per_minute_per_identity: 2,
            rooms_per_minute_per_address: 3,
            ..LimitSettings::unlimited()
        };
    })
    .await;
    let create = |seq| ClientMessage::CreateLobby {
        seq,
        rule_set: RuleSet::American,
        series_length: 1,
        invite_only: false,
        stake: None,
        pace: None,
        draw_rules: None,
    };
    let leave = |seq| ClientMessage::Leave { seq };
    let mut a = player_from([127, 0, 0, 7], server.addr).await;
    for _ in 0..2 {
        assert!(matches!(
            ask(&mut a, create).await,
            ServerMessage::Ack { .. }
        ));
        assert!(matches!(
            ask(&mut a, leave).await,
            ServerMessage::Ack { .. }
        ));
    }
    let refused = ask(&mut a, create).await;
    assert!(
        matches!(
            refused,
            ServerMessage::Error {
                code: ErrorCode::RateLimited,
                seq: Some(_),
                ..
            }
        ),
        "per identity: {refused:?}"
    );
    // Another identity on the same address has one left of the address's
    // three; a solo game counts like a lobby.
    let mut b = player_from([127, 0, 0, 7], server.addr).await;
    let solo = |seq| ClientMessage::StartSolo {
        seq,
        rule_set: RuleSet::American,
        mode: jumpgate_protocol::SoloMode::SameDevice,
        level: None,
        ranked: false,
    };
    assert!(matches!(ask(&mut b, solo).await, ServerMessage::Ack { .. }));
    let refused = ask(&mut b, solo).await;
    assert!(
        matches!(
            refused,
            ServerMessage::Error {
                code: ErrorCode::RateLimited,
                ..
            }
        ),
        "per address: {refused:?}"
    );
    // Another address is not affected.
    let mut c = player_from([127, 0, 0, 8], server.addr).await;
    assert!(matches!(
        ask(&mut c, create).await,
        ServerMessage::Ack { .. }
    ));
}

/// Many connections from one address share one message rate: past it their
/// messages wait (nothing is dropped or refused), and another address is
/// not held back. The server is a process of its own, so that the
/// throttle counter it reads counts this test's messages alone.
#[tokio::test]
async fn one_address_shares_one_message_rate_across_connections() {
    let server =
        JumpgateProcess::start(&[("JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS", "20".to_owned())])
            .await;
    let before = metric(
        &jumpgate_e2e::http_get(server.addr, "/metrics").await.1,
        "jumpgate_messages_throttled_total",
    );
    let mut flooders = Vec::new();
    for _ in 0..4 {
        flooders.push(player_from([127, 0, 0, 9], server.addr).await);
    }
    // 4 × 25 pings: more than the burst of 40, under each connection's own
    // limit of 40 a second.
    let mut sent = Vec::new();
    for client in &mut flooders {
        let mut seqs = Vec::new();
        for _ in 0..25 {
            let seq = client.next_seq();
            client.send(&ClientMessage::Ping { seq }).await.unwrap();
            seqs.push(seq);
        }
        sent.push(seqs);
    }
    let mut innocent = player_from([127, 0, 0, 10], server.addr).await;
    assert!(matches!(
        ask(&mut innocent, |seq| ClientMessage::Ping { seq }).await,
        ServerMessage::Ack { .. }
    ));
    for (client, seqs) in flooders.iter_mut().zip(sent) {
        for seq in seqs {
            let answer = tokio::time::timeout(PATIENCE, client.recv())
                .await
                .expect("every message is answered in the end")
                .unwrap();
            assert_eq!(answer, ServerMessage::Ack { seq }, "in order, none refused");
        }
    }
    let after = metric(
        &jumpgate_e2e::http_get(server.addr, "/metrics").await.1,
        "jumpgate_messages_throttled_total",
    );
    assert!(
        after > before,
        "messages were held back: {before} -> {after}"
    );
}

/// Public HTTP endpoints are rate limited per address (429, Retry-After,
/// the JSON error body); health, readiness and metrics never are.
#[tokio::test]
async fn http_requests_are_rate_limited_but_probes_are_not() {
    let server = TestServer::start(|s| {
        s.limits = LimitSettings {
            http_per_second: 2,
            ..LimitSettings::unlimited()
        };
    })
    .await;
    let mut limited = None;
    for _ in 0..20 {
        let (status, response) = jumpgate_e2e::http_get(server.addr, "/r/ABCDEFGH").await;
        if status == 429 {
            limited = Some(response);
            break;
        }
        assert_eq!(status, 404);
    }
    let response = limited.expect("refused within 20 requests");
    assert!(
        response.to_ascii_lowercase().contains("retry-after:"),
        "{response}"
    );
    assert!(response.contains(r#""error":"rate_limited""#), "{response}");
    for path in ["/healthz", "/readyz", "/metrics"] {
        for _ in 0..10 {
            assert_eq!(
                jumpgate_e2e::http_get(server.addr, path).await.0,
                200,
                "{path}"
            );
        }
    }
}

/// With the public listener full (every WebSocket slot and the HTTP
/// headroom taken), new connections are closed at accept and the internal
/// listener still answers `/healthz`, `/readyz` and `/metrics`.
#[tokio::test]
async fn health_answers_on_the_internal_listener_when_the_public_one_is_full() {
    let internal = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    let server = TestServer::start(|s| {
        s.max_connections = 2;
        s.http_headroom = 2;
        s.metrics_listen = Some(internal);
    })
    .await;
    let _players = [
        Player::connect_to(&server, Encoding::Json, None).await,
        Player::connect_to(&server, Encoding::Json, None).await,
    ];
    let _idle = [
        TcpStream::connect(server.addr).await.unwrap(),
        TcpStream::connect(server.addr).await.unwrap(),
    ];
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut refused = TcpStream::connect(server.addr).await.unwrap();
    assert!(
        closed_unanswered(&mut refused).await,
        "the public listener is full"
    );
    for path in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(
            jumpgate_e2e::http_get(internal, path).await.0,
            200,
            "{path}"
        );
    }
    let metrics = jumpgate_e2e::http_get(internal, "/metrics").await.1;
    assert!(
        metric(
            &metrics,
            "jumpgate_edge_refusals_total{reason=\"connections_cap\"}"
        ) >= 1.0,
        "counted"
    );
}

/// WebSocket pings count against the address's message rate like messages
/// (a flood of them is held back, not answered at full speed). A process
/// of its own, for its own throttle counter.
#[tokio::test]
async fn pings_count_against_the_address_message_rate() {
    let server =
        JumpgateProcess::start(&[("JUMPGATE_MESSAGES_PER_SECOND_PER_ADDRESS", "5".to_owned())])
            .await;
    let throttled = || async {
        metric(
            &jumpgate_e2e::http_get(server.addr, "/metrics").await.1,
            "jumpgate_messages_throttled_total",
        )
    };
    let before = throttled().await;
    let (status, _, mut stream) = upgrade_from([127, 0, 0, 11], server.addr, &[]).await;
    assert_eq!(status, 101);
    // 100 empty masked pings (FIN + opcode 9, mask bit, zero mask key).
    let pings: Vec<u8> = [0x89u8, 0x80, 0, 0, 0, 0].repeat(100);
    stream.write_all(&pings).await.unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while throttled().await <= before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "pings were never held back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
