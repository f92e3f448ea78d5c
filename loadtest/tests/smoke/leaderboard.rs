//! The `leaderboard` measurement in a tiny configuration, against a real `jumpgate`
//! process on a real Redis: the players it writes straight into Redis must read
//! back from the server's endpoint in the tie order (the run checks it), so the
//! load tester's layout cannot drift from the server's unnoticed. Nothing here
//! asserts on time.

use jumpgate_harness::RedisServer;
use jumpgate_loadtest::leaderboard::{Plan, measure};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_leaderboard_reads_back_in_order() {
    let redis = RedisServer::start().await;
    let server = crate::jumpgate(&[("JUMPGATE_REDIS_URL", redis.url())]).await;

    let plan = Plan {
        players: vec![300, 2_500],
        reads: 50,
        per_page: 25,
        whole_board_reads: 3,
        whole_board_max: 1_000,
    };
    let report = measure(&redis.url(), server.addr, &plan).await.unwrap();
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
    drop(server);
    drop(redis);
}
