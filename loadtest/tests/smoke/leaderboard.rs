//! The `leaderboard` measurement in a tiny configuration, against a real server
//! in-process on a real Redis: the players it writes straight into Redis must read
//! back from the server's endpoint in the tie order (the run checks it), so the
//! load tester's layout cannot drift from the server's unnoticed. Nothing here
//! asserts on time.

use std::path::Path;

use jumpgate_loadtest::cluster::RedisServer;
use jumpgate_loadtest::leaderboard::{Plan, measure};
use jumpgate_server::config::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_leaderboard_reads_back_in_order() {
    let redis = RedisServer::start(Path::new("redis-server"), false, None)
        .await
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = Settings::for_address(addr);
    settings.redis_url = Some(redis.url.clone());
    settings.limits = jumpgate_server::limits::LimitSettings::unlimited();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_server::run(listener, settings, async {
        let _ = stopped.await;
    }));

    let plan = Plan {
        players: vec![300, 2_500],
        reads: 50,
        per_page: 25,
        whole_board_reads: 3,
        whole_board_max: 1_000,
    };
    let report = measure(&redis.url, addr, &plan).await.unwrap();
    assert_eq!(report.sizes.len(), 2);
    for size in &report.sizes {
        assert_eq!(size.reads, 50);
        assert!(size.p50_us > 0 && size.p99_us >= size.p50_us);
        assert!(size.redis_us_per_read > 0.0, "Redis timed the reads");
    }
    assert!(report.sizes[0].whole_board_redis_us.is_some());
    assert!(
        report.sizes[1].whole_board_redis_us.is_none(),
        "above the maximum"
    );
    let _ = stop.send(());
    redis.stop().await;
}
