//! Runs the three parts of `edge` in miniature against real `jumpgate` processes with
//! the default per-client limits, and checks the counts. Nothing here asserts on time.

use std::net::Ipv4Addr;
use std::time::Duration;

use jumpgate_harness::{JumpgateOptions, JumpgateProcess, free_loopback_addr};
use jumpgate_loadtest::edge::{
    Abuse, EdgeConfig, Part, Target, crowd_address, measure_cap, measure_deadline, measure_flood,
};

/// Starts a server with the default per-client limits and `env`; stopped when the
/// process is dropped.
async fn server(env: &[(&str, String)]) -> (Target, JumpgateProcess) {
    let internal = free_loopback_addr();
    let mut all = vec![
        ("JUMPGATE_MOVE_CLOCK_MS", "600000".to_owned()),
        ("JUMPGATE_METRICS_LISTEN", internal.to_string()),
    ];
    all.extend_from_slice(env);
    let mut options = JumpgateOptions::for_test(free_loopback_addr(), &all);
    options.client_limits_off = false;
    let process = JumpgateProcess::start_with(&options).await.unwrap();
    let target = Target {
        addr: process.addr,
        metrics: Some(internal),
        pid: Some(process.pid()),
    };
    // The internal listener starts just after the public one.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(internal).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (target, process)
}

fn config() -> EdgeConfig {
    EdgeConfig {
        parts: vec![Part::Cap, Part::Deadlines, Part::Flood],
        max_connections: 20,
        per_address: 8,
        healthz_requests: 5,
        deadline_connections: 20,
        header_read_timeout_ms: 300,
        hello_timeout_ms: 300,
        moves: 20,
        move_gap_ms: 20,
        flood_connections: 4,
        flood_addresses: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_edge_counts_everything() {
    let config = config();

    let (target, _server) = server(&[("JUMPGATE_MAX_CONNECTIONS", "20".into())]).await;
    let cap = measure_cap(&target, &config).await;
    assert_eq!(cap.greeted, 20, "{cap:?}");
    assert_eq!(cap.one_more_status, Some(503), "{cap:?}");
    assert_eq!(cap.healthz_public.ok, 5, "{cap:?}");
    assert_eq!(cap.healthz_internal.ok, 5, "{cap:?}");

    let deadline = Duration::from_millis(300);
    let deadlines = [
        ("JUMPGATE_HEADER_READ_TIMEOUT_MS", "300".to_owned()),
        ("JUMPGATE_HELLO_TIMEOUT_MS", "300".to_owned()),
    ];
    let crowd = |i: usize| crowd_address(i / 8);
    for abuse in [Abuse::HalfOpen, Abuse::Ungreeted] {
        let (target, _server) = server(&deadlines).await;
        let closed = measure_deadline(&target, abuse, 20, crowd, deadline).await;
        assert_eq!(closed.opened, 20, "{abuse:?}: {closed:?}");
        assert_eq!(closed.closed_at_deadline, 20, "{abuse:?}: {closed:?}");
    }
    let (target, _server) = server(&deadlines).await;
    let lone = |_| Ipv4Addr::new(127, 0, 0, 3);
    let one = measure_deadline(&target, Abuse::HalfOpen, 80, lone, deadline).await;
    assert_eq!(one.closed_at_deadline, 64, "{one:?}");
    assert_eq!(one.closed_early, 16, "{one:?}");

    let (target, _server) = server(&[]).await;
    let flood = measure_flood(&target, &config).await;
    assert!(flood.failures.is_empty(), "{:?}", flood.failures);
    assert_eq!(flood.flood_greeted, 4);
    for phase in [&flood.quiet, &flood.flooded, &flood.quiet_after] {
        let phase = phase.as_ref().expect("every phase ran");
        assert_eq!(phase.moves, 20, "{phase:?}");
    }
    assert!(flood.flooded.as_ref().unwrap().flood_answered > 0);
    assert!(flood.p99_ratio.is_some());
}
