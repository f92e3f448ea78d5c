//! Runs the three parts of `edge` in miniature against in-process servers with the
//! default per-client limits, and checks the counts. No memory or CPU (same process),
//! and nothing here asserts on time.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use jumpgate_loadtest::edge::{
    Abuse, EdgeConfig, Part, Target, crowd_address, measure_cap, measure_deadline, measure_flood,
};
use jumpgate_server::config::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Starts a server with the default limits, `adjust`ed; stops when the sender drops.
async fn server(adjust: impl FnOnce(&mut Settings)) -> (Target, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let internal: SocketAddr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    let mut settings = Settings::for_address(addr);
    settings.move_clock = Duration::from_secs(600);
    settings.metrics_listen = Some(internal);
    adjust(&mut settings);
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_server::run(listener, settings, async {
        let _ = stopped.await;
    }));
    let target = Target {
        addr,
        metrics: Some(internal),
        pid: None,
    };
    // The internal listener starts just after the public one.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(internal).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (target, stop)
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

    let (target, _stop) = server(|s| s.max_connections = 20).await;
    let cap = measure_cap(&target, &config).await;
    assert_eq!(cap.greeted, 20, "{cap:?}");
    assert_eq!(cap.one_more_status, Some(503), "{cap:?}");
    assert_eq!(cap.healthz_public.ok, 5, "{cap:?}");
    assert_eq!(cap.healthz_internal.ok, 5, "{cap:?}");

    let deadline = Duration::from_millis(300);
    let deadlines = |s: &mut Settings| {
        s.header_read_timeout = deadline;
        s.hello_timeout = deadline;
    };
    let crowd = |i: usize| crowd_address(i / 8);
    for abuse in [Abuse::HalfOpen, Abuse::Ungreeted] {
        let (target, _stop) = server(deadlines).await;
        let closed = measure_deadline(&target, abuse, 20, crowd, deadline).await;
        assert_eq!(closed.opened, 20, "{abuse:?}: {closed:?}");
        assert_eq!(closed.closed_at_deadline, 20, "{abuse:?}: {closed:?}");
    }
    let (target, _stop) = server(deadlines).await;
    let lone = |_| Ipv4Addr::new(127, 0, 0, 3);
    let one = measure_deadline(&target, Abuse::HalfOpen, 80, lone, deadline).await;
    assert_eq!(one.closed_at_deadline, 64, "{one:?}");
    assert_eq!(one.closed_early, 16, "{one:?}");

    let (target, _stop) = server(|_| {}).await;
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
