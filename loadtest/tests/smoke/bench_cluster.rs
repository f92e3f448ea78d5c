//! `bench-cluster` in a tiny configuration: a real one-node Redis and a real
//! three-master Redis Cluster, each under a Jumpgate server in-process, the same
//! two-game saturation load on both for one second. Checks that every run moved
//! and the report has each figure and ratio; nothing here asserts on time.

use std::path::Path;
use std::time::Duration;

use jumpgate_loadtest::bench_cluster::{BenchClusterReport, Plan, StoreKind, StoreTarget, measure};
use jumpgate_loadtest::cluster::RedisServer;
use jumpgate_loadtest::redis_cluster::RedisCluster;
use jumpgate_server::config::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

async fn server_on(redis_url: String) -> (String, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = Settings::for_address(addr);
    settings.redis_url = Some(redis_url);
    settings.limits = jumpgate_server::limits::LimitSettings::unlimited();
    settings.move_clock = Duration::from_secs(600);
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(jumpgate_server::run(listener, settings, async {
        let _ = stopped.await;
    }));
    (format!("ws://{addr}/ws"), stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_bench_cluster_moves_on_both_stores() {
    let redis = RedisServer::start(Path::new("redis-server"), false, None)
        .await
        .unwrap();
    let cluster = RedisCluster::start(
        Path::new("redis-server"),
        Path::new("redis-cli"),
        3,
        false,
        None,
    )
    .await
    .unwrap();
    assert_eq!(cluster.url().split(',').count(), 3);
    assert_eq!(cluster.pids().len(), 3);
    let (single_url, stop_single) = server_on(redis.url.clone()).await;
    let (cluster_url, stop_cluster) = server_on(cluster.url()).await;

    let plan = Plan::new(2, 1.0, 1, "spanish").unwrap();
    let single = StoreTarget {
        store: StoreKind::SingleRedis,
        url: single_url,
        server_pid: None,
        redis_pids: redis.pid().into_iter().collect(),
    };
    let on_cluster = StoreTarget {
        store: StoreKind::RedisCluster,
        url: cluster_url,
        server_pid: None,
        redis_pids: cluster.pids(),
    };
    let runs = measure(&single, &on_cluster, &plan).await;
    let report = BenchClusterReport::new(&plan, 3, redis.url.clone(), cluster.url(), runs);

    let stores: Vec<StoreKind> = report.runs.iter().map(|r| r.store).collect();
    assert_eq!(stores, [StoreKind::SingleRedis, StoreKind::RedisCluster]);
    for run in &report.runs {
        assert_eq!(run.failure, None, "{:?}", run.store);
        let sat = run.saturated.as_ref().expect("a saturation phase");
        assert!(sat.ops > 0, "{:?}: no moves", run.store);
        assert_eq!(sat.errors, 0, "{:?}: {:?}", run.store, sat.first_error);
        assert!(sat.p99_us >= sat.p50_us);
        assert_eq!(
            run.server_cpu_us_per_move, None,
            "in-process: no server CPU"
        );
    }
    assert_eq!(report.figures.len(), 6);
    let moves = &report.figures[0];
    assert_eq!(moves.figure, "saturated moves/s");
    assert!(moves.single.is_some() && moves.cluster.is_some() && moves.ratio.is_some());
    let table = report.table();
    assert!(table.contains("Redis Cluster (3 masters)"), "{table}");
    assert!(table.contains("cluster ÷ one"), "{table}");
    serde_json::to_string(&report).unwrap();

    let _ = stop_single.send(());
    let _ = stop_cluster.send(());
    redis.stop().await;
    cluster.stop().await;
}
