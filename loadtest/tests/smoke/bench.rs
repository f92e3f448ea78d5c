//! `bench`: every phase in a tiny configuration against a real `jumpgate` process and
//! the echo server (in-process: it is the load tester's own), checking that each phase
//! counted something. Nothing here asserts on time.

use std::time::Duration;

use jumpgate_loadtest::bench::{BenchConfig, RedisTarget, Target, run_all};
use jumpgate_loadtest::svg;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_bench_counts_everything() {
    let server = crate::jumpgate(&[]).await;

    let echo_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo_addr = echo_listener.local_addr().unwrap();
    let (stop_echo, echo_stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_loadtest::echo::serve(echo_listener, async {
        let _ = echo_stopped.await;
    }));

    // American, and the orbit board, whose states are the largest.
    for rule_set in ["american", "orbit"] {
        let config = BenchConfig::new(2, 20.0, 2, 1.0, 50, rule_set, "both").unwrap();
        // The echo server shares this process, so memory is not measured.
        let jumpgate = Target {
            url: server.ws_url(),
            pid: None,
        };
        let echo = Target {
            url: format!("ws://{echo_addr}/ws"),
            pid: None,
        };
        let report = run_all(&jumpgate, &echo, &RedisTarget::NotRequested, &config).await;
        let protocols: Vec<u32> = report.runs.iter().map(|run| run.protocol).collect();
        assert_eq!(protocols, [1, 2], "both protocols by default");
        let sides = report
            .runs
            .iter()
            .map(|run| (format!("jumpgate v{}", run.protocol), &run.jumpgate))
            .chain([("echo".to_owned(), &report.echo)]);
        for (name, side) in sides {
            assert!(side.failures.is_empty(), "{name}: {:?}", side.failures);
            let latency = side.latency.as_ref().expect("latency phase");
            assert!(
                latency.ops > 0,
                "{name}: no round trips in the latency phase"
            );
            assert!(!latency.curve.is_empty());
            let saturated = side.saturated.as_ref().expect("saturation phase");
            assert!(saturated.ops > 0, "{name}: no round trips when saturated");
            let idle = side.idle.as_ref().expect("idle phase");
            assert_eq!(idle.stats.connections, 50, "{name}: {:?}", idle.stats);
            assert_eq!(idle.bytes_per_connection, None);
        }
        // Every move's frames were counted, and no event skipped a version.
        let mut bytes = Vec::new();
        for run in &report.runs {
            let saturated = run.jumpgate.saturated.as_ref().unwrap();
            assert!(saturated.metered_moves > 0, "v{}", run.protocol);
            assert_eq!(saturated.gaps, 0, "v{}", run.protocol);
            let per_member = saturated.bytes_in_per_move_per_member.unwrap();
            // At least the opponent's event or state, and the mover's ack.
            assert!(per_member > 10.0, "v{}: {per_member}", run.protocol);
            bytes.push(per_member);
            assert!(run.redis.saturated.is_none());
        }
        // A v2 event carries less than a v1 state, whose game lists every move played.
        assert!(bytes[1] < bytes[0], "v1 {} B, v2 {} B", bytes[0], bytes[1]);
        assert_eq!(report.figures.len(), 6);
        assert_eq!(report.config.rule_set, rule_set);

        let table = report.table();
        assert!(table.contains("move round trip p50"), "{table}");
        assert!(table.contains("protocol 2"), "{table}");
        assert!(table.contains("not measured"), "{table}");
        let plot = svg::latency_plot(&report);
        assert_eq!(plot.matches("<polyline").count(), 3);
        serde_json::to_string(&report).unwrap();
    }
    let _ = stop_echo.send(());
}

/// `--crowd 300 --crowd-sources 127.0.0.2,127.0.0.3`: the crowd is greeted from both
/// addresses, none of it is closed while held, and every crowd figure is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_bench_holds_a_crowd_from_two_sources() {
    let server = crate::jumpgate(&[]).await;
    let echo_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo_addr = echo_listener.local_addr().unwrap();
    let (stop_echo, echo_stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_loadtest::echo::serve(echo_listener, async {
        let _ = echo_stopped.await;
    }));

    let config = BenchConfig::new(2, 20.0, 2, 1.0, 0, "american", "2")
        .unwrap()
        .with_crowd(300, Some("127.0.0.2,127.0.0.3"), Duration::ZERO)
        .unwrap();
    // The server is a process of its own: its memory is read.
    let jumpgate = Target {
        url: server.ws_url(),
        pid: Some(server.pid()),
    };
    let echo = Target {
        url: format!("ws://{echo_addr}/ws"),
        pid: None,
    };
    let report = run_all(&jumpgate, &echo, &RedisTarget::NotRequested, &config).await;
    let crowd = report.crowd.as_ref().expect("the crowd's figures");
    assert!(crowd.failures.is_empty(), "{:?}", crowd.failures);
    assert_eq!(crowd.asked, 300);
    assert_eq!(crowd.greeted, 300, "{:?}", crowd.first_error);
    assert_eq!(crowd.errors, 0);
    let sources: Vec<(&str, u64)> = crowd
        .sources
        .iter()
        .map(|s| (s.address.as_str(), s.greeted))
        .collect();
    assert_eq!(sources, [("127.0.0.2", 150), ("127.0.0.3", 150)]);
    assert_eq!(crowd.closed, 0, "{:?}", crowd.first_close);
    for phase in [&crowd.latency_without, &crowd.latency_with] {
        let phase = phase.as_ref().expect("both latency phases");
        assert!(phase.ops > 0, "{}: no round trips", phase.label);
        assert_eq!(phase.errors, 0, "{}: {:?}", phase.label, phase.first_error);
    }
    assert!(crowd.p50_ratio.is_some() && crowd.p99_ratio.is_some());
    assert!(crowd.server_rss_before_kib.is_some() && crowd.server_rss_after_kib.is_some());
    assert!(crowd.server_kib_per_connection.is_some());
    assert!(crowd.open_seconds > 0.0);

    let table = report.table();
    assert!(table.contains("crowd of 300"), "{table}");
    assert!(
        table.contains("server memory per crowd connection"),
        "{table}"
    );
    assert!(report.details().contains("127.0.0.3 (150)"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["crowd"]["greeted"], 300);
    assert!(json["crowd"]["p99_ratio"].is_number());
    let _ = stop_echo.send(());
}
