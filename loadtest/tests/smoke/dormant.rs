//! The `dormant` measurement in a tiny configuration, against a real `jumpgate`
//! process on a real Redis, with lobbies unloaded after one second: every lobby must
//! be unloaded (none left in memory), every comeback must take its seat again, and
//! the report must hold every reading. Nothing here asserts on time.

use std::time::Duration;

use jumpgate_harness::RedisServer;
use jumpgate_loadtest::dormant::{Plan, Target, measure};
use jumpgate_protocol::RuleSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_dormant_unloads_every_lobby_and_loads_it_back() {
    let redis = RedisServer::start().await;
    let server = crate::jumpgate(&[
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_CORRESPONDENCE_UNLOAD_SECS", "1".into()),
    ])
    .await;

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
        addr: server.addr,
        pid: Some(server.pid()),
        redis_url: redis.url(),
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
        assert!(s.rss_kib.is_some(), "{label}: the server's memory is read");
    }
    assert!(by("wave 1 unloaded").redis_keys > by("baseline").redis_keys);
    assert!(report.redis_bytes_per_room > 0.0);
    assert!(report.redis_keys_per_room >= 1.0);
    assert!(
        report.kib_per_idle_room.is_some(),
        "the server's memory is read"
    );
    for join in [&report.join_loaded, &report.join_unloaded] {
        assert_eq!(join.joins, 10);
        assert!(join.p50_us > 0 && join.p99_us >= join.p50_us && join.max_us >= join.p99_us);
    }
    assert_eq!(report.wave_open_seconds.len(), 2);
    let table = report.table();
    assert!(table.contains("wave 2 unloaded") && table.contains("unloaded"));
    drop(server);
    drop(redis);
}
