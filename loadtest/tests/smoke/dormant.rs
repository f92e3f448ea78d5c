//! The `dormant` measurement in a tiny configuration, against a real server
//! in-process on a real Redis, with lobbies unloaded after one second: every
//! lobby must be unloaded (none left in memory), every comeback must take its
//! seat again, and the report must hold every reading. No memory (same process),
//! and nothing here asserts on time.

use std::path::Path;
use std::time::Duration;

use jumpgate_loadtest::cluster::RedisServer;
use jumpgate_loadtest::dormant::{Plan, Target, measure};
use jumpgate_protocol::RuleSet;
use jumpgate_server::config::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_dormant_unloads_every_lobby_and_loads_it_back() {
    let redis = RedisServer::start(Path::new("redis-server"), false, None)
        .await
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = Settings::for_address(addr);
    settings.redis_url = Some(redis.url.clone());
    settings.limits = jumpgate_server::limits::LimitSettings::unlimited();
    settings.correspondence_unload = Duration::from_secs(1);
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_server::run(listener, settings, async {
        let _ = stopped.await;
    }));

    // A rule set the other smoke tests do not play, as the lobby gauge is
    // shared by every server in this process.
    let plan = Plan {
        rooms: 20,
        joins: 10,
        concurrency: 4,
        warmup: 3,
        rule_set: RuleSet::Russian,
        unload: Duration::from_secs(1),
        settle: Duration::from_millis(100),
    };
    let target = Target {
        addr,
        pid: None,
        redis_url: redis.url.clone(),
    };
    let report = measure(&target, &plan).await.unwrap();

    let labels: Vec<&str> = report.snapshots.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "baseline",
            "wave 1 loaded",
            "wave 1 unloaded",
            "wave 2 loaded",
            "wave 2 unloaded",
            "after the joins"
        ]
    );
    let by = |label: &str| report.snapshots.iter().find(|s| s.label == label).unwrap();
    assert_eq!(by("baseline").lobbies_live, 0.0);
    assert_eq!(by("baseline").dormant, 3);
    assert_eq!(by("wave 1 loaded").lobbies_live, 20.0);
    for (label, dormant, unloaded) in [
        ("wave 1 unloaded", 23, 23),
        ("wave 2 unloaded", 43, 43),
        ("after the joins", 43, 53),
    ] {
        let s = by(label);
        assert_eq!(s.lobbies_live, 0.0, "{label}: {s:?}");
        assert_eq!(s.dormant, dormant, "{label}: {s:?}");
        assert_eq!(s.unloaded, unloaded, "{label}: {s:?}");
        assert_eq!(s.rss_kib, None);
    }
    assert!(by("wave 1 unloaded").redis_keys > by("baseline").redis_keys);
    assert!(report.redis_bytes_per_room > 0.0);
    assert!(report.redis_keys_per_room >= 1.0);
    assert_eq!(report.kib_per_idle_room, None, "no pid, no memory");
    for join in [&report.join_loaded, &report.join_unloaded] {
        assert_eq!(join.joins, 10);
        assert!(join.p50_us > 0 && join.p99_us >= join.p50_us && join.max_us >= join.p99_us);
    }
    assert_eq!(report.wave_open_seconds.len(), 2);
    let table = report.table();
    assert!(table.contains("wave 2 unloaded") && table.contains("unloaded"));
    let _ = stop.send(());
    redis.stop().await;
}
