//! `bench-cluster` in a tiny configuration: a real one-node Redis and a real
//! three-master Redis Cluster, each under a real `jumpgate` process, the same
//! two-game saturation load on both for one second. Checks that every run moved
//! and the report has each figure and ratio; nothing here asserts on time.

use jumpgate_harness::{AppendOnly, ClusterOptions, RedisCluster, RedisOptions, RedisServer};
use jumpgate_loadtest::bench_cluster::{BenchClusterReport, Plan, StoreKind, StoreTarget, measure};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_bench_cluster_moves_on_both_stores() {
    let no_aof = RedisOptions {
        append_only: AppendOnly::Off,
        ..RedisOptions::default()
    };
    let redis = RedisServer::start_with(&no_aof).await.unwrap();
    let cluster = RedisCluster::start_with(&ClusterOptions {
        node: no_aof.clone(),
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    assert_eq!(cluster.url().split(',').count(), 3);
    assert_eq!(cluster.pids().len(), 3);
    let single_server = crate::jumpgate(&[("JUMPGATE_REDIS_URL", redis.url())]).await;
    let cluster_server = crate::jumpgate(&[("JUMPGATE_REDIS_URL", cluster.url())]).await;

    let plan = Plan::new(2, 1.0, 1, "spanish").unwrap();
    let single = StoreTarget {
        store: StoreKind::SingleRedis,
        url: single_server.ws_url(),
        server_pid: Some(single_server.pid()),
        redis_pids: redis.pid().into_iter().collect(),
    };
    let on_cluster = StoreTarget {
        store: StoreKind::RedisCluster,
        url: cluster_server.ws_url(),
        server_pid: Some(cluster_server.pid()),
        redis_pids: cluster.pids(),
    };
    let runs = measure(&single, &on_cluster, &plan).await;
    let report = BenchClusterReport::new(&plan, 3, redis.url(), cluster.url(), runs);

    let stores: Vec<StoreKind> = report.runs.iter().map(|r| r.store).collect();
    assert_eq!(stores, [StoreKind::SingleRedis, StoreKind::RedisCluster]);
    for run in &report.runs {
        assert_eq!(run.failure, None, "{:?}", run.store);
        let sat = run.saturated.as_ref().expect("a saturation phase");
        assert!(sat.ops > 0, "{:?}: no moves", run.store);
        assert_eq!(sat.errors, 0, "{:?}: {:?}", run.store, sat.first_error);
        assert!(sat.p99_us >= sat.p50_us);
        assert!(
            run.server_cpu_us_per_move.is_some(),
            "{:?}: the server's CPU is read",
            run.store
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

    drop((single_server, cluster_server));
    drop((redis, cluster));
}
