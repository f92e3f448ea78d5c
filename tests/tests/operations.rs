//! Operations: health, readiness, metrics (main and separate address) and
//! graceful shutdown, against a real server.

use std::time::Duration;

use jumpgate_e2e::{Player, RedisServer, TestServer, free_port, http_get, seated_pair};
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

    let (status, before) = http_get(server.addr, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "jumpgate_connections_open",
        "jumpgate_lobbies_live",
        "jumpgate_games_live",
        "jumpgate_moves_accepted_total",
        "jumpgate_clock_forfeits_total",
        "jumpgate_stake_points_total",
        "jumpgate_slow_consumers_dropped_total",
    ] {
        assert!(before.contains(name), "{name} is exported");
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
    assert_eq!(http_get(server.addr, "/readyz").await.0, 200);
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
