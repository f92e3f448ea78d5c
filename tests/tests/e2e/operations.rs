//! Operations: health, readiness, metrics (main and separate address),
//! graceful shutdown, the operator API on its own address, the secrets the
//! server refuses to start with, and what the logs leave out, against a
//! real server.

use std::time::Duration;

use jumpgate_e2e::{
    JumpgateProcess, Player, RedisServer, TEST_SECRET, TestServer, free_port, http_get,
    http_get_with, seated_pair,
};
use jumpgate_protocol::{ClientMessage, Encoding, RuleSet, ServerMessage};

/// The value of one sample line, e.g. `jumpgate_moves_accepted_total{rule_set="thai"}`.
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {name}"))
}

#[tokio::test]
async fn health_and_metrics_follow_what_happens() {
    let metrics_addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let server = TestServer::start(|s| s.metrics_listen = Some(metrics_addr)).await;
    assert_eq!(http_get(server.addr, "/healthz").await.0, 200);
    assert_eq!(http_get(server.addr, "/readyz").await.0, 200);

    // With an internal listener, the metrics are served there alone.
    assert_eq!(http_get(server.addr, "/metrics").await.0, 404);
    let (status, before) = http_get(metrics_addr, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "jumpgate_connections_open",
        "jumpgate_lobbies_live",
        "jumpgate_games_live",
        "jumpgate_moves_accepted_total",
        "jumpgate_clock_forfeits_total",
        "jumpgate_stake_points_escrowed_total",
        "jumpgate_stake_points_paid_total",
        "jumpgate_stake_points_refunded_total",
        "jumpgate_slow_consumers_dropped_total",
        "jumpgate_solo_games_live",
        "jumpgate_rooms_awaiting_store",
        "jumpgate_resume_seconds",
        "jumpgate_resume_rooms_left",
        "jumpgate_resume_rooms_total",
        "jumpgate_build_info",
        "process_resident_memory_bytes",
        "process_open_fds",
    ] {
        assert!(before.contains(name), "{name} is exported");
    }
    // Bounded label values exist before their first event, so panels and
    // alerts see a zero rather than nothing (other tests in this process
    // may have counted some since: only the series' presence is checked).
    for series in [
        r#"jumpgate_moves_rejected_total{reason="not_your_turn"} "#,
        r#"jumpgate_series_finished_total{outcome="resigned"} "#,
        r#"jumpgate_redis_errors_total{op="write"} "#,
        r#"jumpgate_redis_errors_total{op="resume"} "#,
        r#"jumpgate_resume_rooms_total{outcome="deferred"} "#,
        r#"jumpgate_bot_think_seconds_count{level="executive"} "#,
    ] {
        assert!(before.contains(series), "{series} is there from the start");
    }
    let accepted = r#"jumpgate_moves_accepted_total{rule_set="thai"}"#;
    let accepted_before = sample(&before, accepted);

    let (mut host, mut guest, _) = seated_pair(&server, Encoding::Json, RuleSet::Thai, 1).await;
    host.play_first_legal().await;
    let seq = guest
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some("1-2".into()),
            path: None,
        })
        .await;
    guest.expect_error(Some(seq)).await;
    guest
        .client
        .send_raw_text("{not json".into())
        .await
        .unwrap();
    guest.expect_error(None).await;

    // The separate metrics address serves the same registry.
    let (status, after) = http_get(metrics_addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(sample(&after, accepted) >= accepted_before + 1.0);
    assert!(
        sample(
            &after,
            r#"jumpgate_moves_rejected_total{reason="illegal_move"}"#
        ) >= 1.0
    );
    assert!(
        sample(
            &after,
            r#"jumpgate_decode_errors_total{code="malformed_message"}"#
        ) >= 1.0
    );
    assert!(sample(&after, "jumpgate_connections_open") >= 2.0);
    assert!(sample(&after, r#"jumpgate_games_live{rule_set="thai"}"#) >= 1.0);
    assert!(after.contains("jumpgate_move_handling_seconds_count"));
    // Labels are bounded: no room codes, no user ids.
    assert!(!after.contains(&host.id));
    assert!(!after.contains(&host.state.as_ref().unwrap().code));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_redis() {
    let mut redis = RedisServer::start().await;
    let url = redis.url();
    let server = TestServer::start(|s| {
        s.redis_url = Some(url);
        s.redis_timeout = Duration::from_millis(300);
    })
    .await;
    // Ready once the stored rooms are back (at once: there are none).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while http_get(server.addr, "/readyz").await.0 != 200 {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    redis.kill();
    assert_eq!(http_get(server.addr, "/readyz").await.0, 503);
    assert_eq!(
        http_get(server.addr, "/healthz").await.0,
        200,
        "alive all the same"
    );
    let (_, metrics) = http_get(server.addr, "/metrics").await;
    assert!(sample(&metrics, r#"jumpgate_redis_errors_total{op="ping"}"#) >= 1.0);
    redis.restart().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while http_get(server.addr, "/readyz").await.0 != 200 {
        assert!(tokio::time::Instant::now() < deadline, "never ready again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn shutdown_tells_clients_and_closes_with_1001() {
    let server = TestServer::start(|s| s.shutdown_grace = Duration::from_secs(5)).await;
    let mut player = Player::connect(&server, Encoding::MsgPack).await;
    let addr = server.addr;
    drop(server); // triggers the shutdown
    let mut notice = false;
    loop {
        match player.client.recv().await {
            Ok(ServerMessage::Shutdown {
                reconnect_after_ms, ..
            }) => {
                assert!(reconnect_after_ms > 0);
                notice = true;
            }
            Ok(_) => {}
            Err(jumpgate_protocol::client::ClientError::Closed { code, .. }) => {
                assert_eq!(code, 1001);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(notice);
    // And it stops accepting.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(tokio::time::Instant::now() < deadline, "still accepting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `shutdown` notice a connection gets before its close (its reason and
/// `reconnect_after_ms`), and the close code.
async fn farewell(player: &mut Player) -> (Option<(String, u32)>, u16) {
    let mut notice = None;
    loop {
        match player.client.recv().await {
            Ok(ServerMessage::Shutdown {
                reason,
                reconnect_after_ms,
            }) => notice = Some((reason, reconnect_after_ms)),
            Ok(_) => {}
            Err(jumpgate_protocol::client::ClientError::Closed { code, .. }) => {
                return (notice, code);
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// A server that stops hands every room over before it tells connections
/// it stops, and each member of a room handed over is told the room moved
/// (back at once, close 4001) even when its connection sees the stop first;
/// a connection in no room is told the server restarts. Without Redis,
/// where the handover is quickest and the two notices come closest, and
/// beside another instance on Redis; a few rounds, each with several rooms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_tells_every_member_of_a_handed_over_room_that_it_moved() {
    let redis = RedisServer::start().await;
    let _other = TestServer::start(|s| s.redis_url = Some(redis.url())).await;
    let moved = ("the room moved to another server instance".to_owned(), 0);
    let restarting = ("the server is restarting".to_owned(), 1000);
    for url in [None, None, None, None, Some(redis.url()), Some(redis.url())] {
        let server = TestServer::start(|s| s.redis_url = url).await;
        let mut members = Vec::new();
        for _ in 0..4 {
            let (host, guest, code) =
                seated_pair(&server, Encoding::Json, RuleSet::American, 1).await;
            let mut fan = Player::connect(&server, Encoding::MsgPack).await;
            fan.watch(&code).await;
            members.extend([host, guest, fan]);
        }
        let mut idle = Player::connect(&server, Encoding::Json).await;
        drop(server);
        for member in &mut members {
            assert_eq!(
                farewell(member).await,
                (Some(moved.clone()), jumpgate_protocol::CLOSE_ROOM_MOVED),
                "a member of a room handed over"
            );
        }
        assert_eq!(farewell(&mut idle).await, (Some(restarting.clone()), 1001));
    }
}

fn account_token(sub: &str) -> String {
    jumpgate_e2e::account_token(LOG_TEST_ISSUER_SECRET, sub, &format!("Name {sub}"))
}

const LOG_TEST_ISSUER_SECRET: &[u8] = b"issuer-secret-for-the-log-test";

fn loopback(port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], port))
}

/// Debug-level JSON logs of a whole session (accounts, a refused token, a
/// lobby, moves, the operator API, shutdown) hold no token, secret or email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_never_carry_tokens_secrets_or_emails() {
    let dir = std::env::temp_dir().join(format!(
        "jumpgate-logs-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("jumpgate.log");
    let admin_token = "admin-token-never-logged-4711-7a1c9e";
    let admin_addr = loopback(free_port());
    let mut server = JumpgateProcess::start_logging(
        &[
            ("JUMPGATE_ADMIN_LISTEN", admin_addr.to_string()),
            ("RUST_LOG", "debug".into()),
            ("JUMPGATE_LOG_JSON", "true".into()),
            ("JUMPGATE_JWT_ISSUER", "https://id.test".into()),
            (
                "JUMPGATE_JWT_HS256",
                format!(
                    "k1={}",
                    std::str::from_utf8(LOG_TEST_ISSUER_SECRET).unwrap()
                ),
            ),
            ("JUMPGATE_ADMIN_TOKEN", admin_token.into()),
        ],
        &log,
    )
    .await;

    let ann_token = account_token("ann");
    let bob_token = account_token("bob");
    let mut ann = Player::connect_to(&server, Encoding::Json, Some(ann_token.clone())).await;
    let mut bob = Player::connect_to(&server, Encoding::MsgPack, Some(bob_token.clone())).await;
    let guest = Player::connect_to(&server, Encoding::Json, None).await;
    let guest_token = guest.token.clone();
    assert_ne!(ann.id, bob.id);

    // A token signed with the wrong key is refused (and its reason logged).
    let mut forged = account_token("eve");
    forged.replace_range(forged.len() - 4.., "AAAA");
    let mut raw = jumpgate_protocol::client::Client::connect(&server.ws_url(), Encoding::Json)
        .await
        .unwrap();
    raw.send(&ClientMessage::Hello {
        seq: 1,
        protocol: 1,
        token: Some(forged.clone()),
        client: "log-test".into(),
        name: None,
    })
    .await
    .unwrap();
    let refused = jumpgate_e2e::recv(&mut raw).await;
    assert!(
        matches!(refused, ServerMessage::Error { .. }),
        "forged token refused: {refused:?}"
    );

    // A lobby between the two accounts, and a move.
    let code = {
        let seq = ann
            .send(|seq| ClientMessage::CreateLobby {
                seq,
                rule_set: RuleSet::American,
                series_length: 1,
                invite_only: false,
                stake: None,
                pace: None,
                draw_rules: None,
            })
            .await;
        ann.expect_ack(seq).await;
        ann.state_until(|_| true).await.code
    };
    bob.join(&code).await;
    let state = ann.state_until(|s| s.game.is_some()).await;
    let game = state.game.as_ref().unwrap();
    let dark_is_ann = state.players[usize::from(game.dark_seat)]
        .as_ref()
        .is_some_and(|p| p.id == ann.id);
    if dark_is_ann {
        ann.play_first_legal().await;
    } else {
        bob.play_first_legal().await;
    }

    // The operator API, with its bearer token.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(admin_addr).await.unwrap();
        let request = format!(
            "GET /api/admin/wallets/{} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {admin_token}\r\nConnection: close\r\n\r\n",
            ann.id
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }

    let status = server.terminate();
    assert!(status.success(), "{status}");
    drop((ann, bob, guest, raw));
    let logs = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    // The logs are there and say what happened, at debug level...
    assert!(logs.lines().count() >= 5, "{logs}");
    assert!(logs.contains(&code), "the lobby's code is logged: {logs}");
    assert!(
        logs.contains("\"level\":\"DEBUG\""),
        "debug lines are logged: {logs}"
    );
    // ... and none of these appears, whole or as its JWT payload.
    let secrets = [
        ("an email", "private.example".to_owned()),
        ("ann's token", ann_token.clone()),
        ("bob's token", bob_token.clone()),
        ("the forged token", forged.clone()),
        ("a guest token", guest_token.clone()),
        (
            "a JWT payload",
            ann_token.split('.').nth(1).unwrap().to_owned(),
        ),
        ("the admin token", admin_token.to_owned()),
        (
            "the issuer's key",
            std::str::from_utf8(LOG_TEST_ISSUER_SECRET)
                .unwrap()
                .to_owned(),
        ),
        ("the guest-token secret", TEST_SECRET.to_owned()),
    ];
    for (what, secret) in secrets {
        assert!(!logs.contains(&secret), "{what} is in the logs");
    }
}

/// An operator token of the length the server asks for.
const ADMIN_TOKEN: &str = "operator-token-for-the-e2e-tests-3f9a";

/// Waits until `addr` accepts connections: the server binds its operator
/// address as it starts, after `TestServer::start` has returned.
async fn listening(addr: std::net::SocketAddr) {
    let deadline = tokio::time::Instant::now() + jumpgate_e2e::PATIENCE;
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{addr} never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The JSON body of a response.
fn json_body(response: &str) -> serde_json::Value {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {response}"))
}

/// The operator API answers on its own address only; the token is checked
/// before the request is read; every refusal is a JSON error; grant keys
/// are scoped per account.
#[tokio::test]
async fn the_operator_api_is_private_checks_its_token_first_and_scopes_grant_keys() {
    let admin = loopback(free_port());
    let server = TestServer::start(|s| {
        s.admin_token = Some(ADMIN_TOKEN.into());
        s.admin_listen = Some(admin);
    })
    .await;
    listening(admin).await;
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let with_token: &[(&str, &str)] = &[("Authorization", &auth)];
    let wrong: &[(&str, &str)] = &[(
        "Authorization",
        "Bearer operator-token-for-the-e2e-tests-3f9b",
    )];

    // Not on the public listener, with or without the token: the public
    // listener answers as for any path it does not serve.
    let (status, elsewhere) = http_get(server.addr, "/api/no-such-thing").await;
    assert_eq!(status, 404);
    let body_of = |r: &str| r.split_once("\r\n\r\n").unwrap().1.to_owned();
    for (method, path) in [
        ("GET", "/api/admin/wallets/a_ann"),
        ("POST", "/api/admin/wallets/a_ann/grant"),
        ("GET", "/api/admin/rooms/unresumable"),
        ("POST", "/api/admin/rooms/ABCDEFGH/settle"),
    ] {
        let (status, response) = jumpgate_e2e::http_exchange(
            server.addr,
            method,
            path,
            with_token,
            r#"{"amount": 5, "key": "k"}"#,
        )
        .await;
        assert_eq!(status, 404, "{method} {path} on the public listener");
        assert_eq!(body_of(&response), body_of(&elsewhere), "{method} {path}");
    }

    // No token or a wrong one: 401 and the documented JSON, before the body
    // is read (a body that would not parse, or none).
    for headers in [&[][..], wrong] {
        for (method, path, body) in [
            ("GET", "/api/admin/wallets/a_ann", ""),
            ("POST", "/api/admin/wallets/a_ann/grant", "{not json"),
            ("POST", "/api/admin/wallets/a_ann/grant", ""),
            ("GET", "/api/admin/no-such-endpoint", ""),
            ("GET", "/api/admin/wallets/a_ann/grant", ""),
        ] {
            let (status, response) =
                jumpgate_e2e::http_exchange(admin, method, path, headers, body).await;
            assert_eq!(status, 401, "{method} {path}: {response}");
            assert_eq!(json_body(&response)["error"], "unauthorised", "{response}");
            assert!(response.contains("application/json"), "{response}");
        }
    }

    // With the token, a bad body is `400 invalid_grant`, always JSON, and
    // nothing is granted.
    let grant = "/api/admin/wallets/a_ann/grant";
    for body in [
        "",
        "{not json",
        r#"{"amount": 5}"#,
        r#"{"amount": "5", "key": "k"}"#,
        r#"{"amount": -5, "key": "k"}"#,
        r#"{"amount": 0, "key": "k"}"#,
        r#"{"amount": 1000001, "key": "k"}"#,
        r#"{"amount": 5, "key": ""}"#,
        "amount=5&key=k",
    ] {
        let (status, response) =
            jumpgate_e2e::http_exchange(admin, "POST", grant, with_token, body).await;
        assert_eq!(status, 400, "{body}: {response}");
        assert_eq!(json_body(&response)["error"], "invalid_grant", "{response}");
    }
    let balance = |response: &str| json_body(response)["balance"].as_i64().unwrap();
    let (status, response) = http_get_with(admin, "/api/admin/wallets/a_ann", with_token).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(balance(&response), 1_000, "only the initial grant");

    // Other endpoints and methods answer JSON too.
    let (status, response) = http_get_with(admin, "/api/admin/nothing", with_token).await;
    assert_eq!(
        (status, &json_body(&response)["error"]),
        (404, &"not_found".into())
    );
    let (status, response) = http_get_with(admin, grant, with_token).await;
    assert_eq!(
        (status, &json_body(&response)["error"]),
        (405, &"method_not_allowed".into())
    );

    // A grant key is per account: the same key grants once to each.
    let body = r#"{"amount": 250, "key": "welcome-bonus"}"#;
    for (account, expected) in [("a_ann", 1_250), ("a_ann", 1_250), ("a_bob", 1_250)] {
        let path = format!("/api/admin/wallets/{account}/grant");
        // No Content-Type needed: the body is read as JSON whatever it says.
        let (status, response) =
            jumpgate_e2e::http_exchange(admin, "POST", &path, with_token, body).await;
        assert_eq!(status, 200, "{response}");
        assert_eq!(balance(&response), expected, "{account}: {response}");
    }

    // An admin address without a token: the API is off there.
    let off = loopback(free_port());
    let server = TestServer::start(|s| s.admin_listen = Some(off)).await;
    listening(off).await;
    let (status, response) = http_get_with(off, "/api/admin/wallets/a_ann", with_token).await;
    assert_eq!(status, 404, "{response}");
    assert_eq!(json_body(&response)["error"], "admin_disabled");
    drop(server);
}

/// The process refuses to start with a short or placeholder secret, or an
/// admin token without an address of its own, and says why without
/// printing the value.
#[tokio::test]
async fn weak_secrets_and_an_admin_token_without_its_address_stop_the_start() {
    let placeholder = "REPLACE-ME-with-a-long-random-string";
    let cases: [(&[(&str, &str)], &str); 5] = [
        (&[("JUMPGATE_TOKEN_SECRET", "changeme")], "too short"),
        (&[("JUMPGATE_TOKEN_SECRET", placeholder)], "placeholder"),
        (
            &[
                ("JUMPGATE_ADMIN_TOKEN", "secret"),
                ("JUMPGATE_ADMIN_LISTEN", "127.0.0.1:0"),
            ],
            "too short",
        ),
        (
            &[
                (
                    "JUMPGATE_ADMIN_TOKEN",
                    "CHANGE_ME_CHANGE_ME_CHANGE_ME_CHANGE_ME",
                ),
                ("JUMPGATE_ADMIN_LISTEN", "127.0.0.1:0"),
            ],
            "placeholder",
        ),
        (&[("JUMPGATE_ADMIN_TOKEN", ADMIN_TOKEN)], "--admin-listen"),
    ];
    for (env, why) in cases {
        let mut command = std::process::Command::new(jumpgate_e2e::jumpgate_binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env_remove("JUMPGATE_TOKEN_SECRET")
            .env_remove("JUMPGATE_ADMIN_TOKEN")
            .env_remove("JUMPGATE_ADMIN_LISTEN")
            .env("RUST_LOG", "error");
        for (k, v) in env {
            command.env(k, v);
        }
        let output = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{env:?} started");
        assert!(stderr.contains(why), "{env:?}: {stderr}");
        for (name, value) in env {
            if name.ends_with("TOKEN") || name.ends_with("SECRET") {
                assert!(
                    !stderr.contains(value),
                    "{name}'s value is printed: {stderr}"
                );
            }
        }
    }
}

/// While an instance takes its stored rooms back (here: Redis stalls at
/// start), it is alive (`/healthz` 200) but not ready (`/readyz` 503), and
/// the operator API's room endpoints say `starting` rather than answer
/// from an unfinished list; it becomes ready once they are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_the_stored_rooms_are_taken_back() {
    let redis = jumpgate_e2e::RedisServer::start().await;
    let admin = loopback(free_port());
    redis.pause(2_500).await;
    let server = jumpgate_e2e::JumpgateProcess::start(&[
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_ADMIN_LISTEN", admin.to_string()),
        (
            "JUMPGATE_ADMIN_TOKEN",
            "ops-secret-0123456789abcdef0123456789".into(),
        ),
    ])
    .await;
    let (status, _) = jumpgate_e2e::http_get(server.addr, "/healthz").await;
    assert_eq!(status, 200, "alive while starting");
    let (status, body) = jumpgate_e2e::http_get(server.addr, "/readyz").await;
    assert_eq!(status, 503, "not ready while starting: {body}");
    assert!(body.contains("starting"), "{body}");
    listening(admin).await;
    let token = [(
        "Authorization",
        "Bearer ops-secret-0123456789abcdef0123456789",
    )];
    let unresumable = "/api/admin/rooms/unresumable";
    let (status, response) = http_get_with(admin, unresumable, &token).await;
    assert_eq!(status, 503, "no list while starting: {response}");
    assert_eq!(json_body(&response)["error"], "starting", "{response}");
    assert!(
        response.to_ascii_lowercase().contains("retry-after: 1"),
        "{response}"
    );
    let (status, response) = jumpgate_e2e::http_exchange(
        admin,
        "POST",
        "/api/admin/rooms/K7QP2DXM/settle",
        &token,
        "",
    )
    .await;
    assert_eq!(status, 503, "nothing settled while starting: {response}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, _) = jumpgate_e2e::http_get(server.addr, "/readyz").await;
        if status == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (status, response) = http_get_with(admin, unresumable, &token).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(json_body(&response)["rooms"], serde_json::json!([]));
}
