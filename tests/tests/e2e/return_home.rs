//! A restarted instance gets its rooms back: the rooms it released at its
//! shutdown run elsewhere meanwhile, and go back to it (the instance the
//! balancer routes their codes to) once it has been alive again for
//! `--return-home-after-ms`, each player reconnecting once for the move
//! out and once for the move back, none of the other rooms disturbed.

use std::time::Duration;

use jumpgate_e2e::balancer::Balancer;
use jumpgate_e2e::{JumpgateProcess, PATIENCE, RedisServer};
use jumpgate_server::store::{RedisStore, Store};

use crate::failover::{env, nothing_lost, open_tables, play_all, start_instances};

async fn owner_of(store: &RedisStore, code: &str) -> Option<String> {
    store.fence(code).await.unwrap().and_then(|f| f.owner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_instance_gets_its_rooms_back() {
    const GAMES: usize = 18;
    let redis = RedisServer::start().await;
    let mut env = env(&redis);
    env.push(("JUMPGATE_RETURN_HOME_AFTER_MS", "2000".to_owned()));
    let mut instances = start_instances(&env, 3).await;
    let addrs: Vec<_> = instances.iter().map(|i| i.addr).collect();
    let balancer = Balancer::start(&addrs).await;
    let tables = open_tables(&balancer, GAMES, 1).await;
    let store = RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap();
    let first = format!("test-{}", addrs[0].port());
    let mut home = Vec::new();
    for table in &tables {
        home.push(owner_of(&store, &table.code).await.as_deref() == Some(first.as_str()));
    }
    assert!(home.contains(&true), "some rooms run on the first instance");

    // Reconnections so far (a host whose lobby opened away from its code's
    // instance has moved once already).
    let before: Vec<[u32; 2]> = tables
        .iter()
        .map(|t| [t.seats[0].reconnections(), t.seats[1].reconnections()])
        .collect();

    // Out: SIGTERM, every room handed over, the ring without it.
    assert!(instances[0].terminate().success());
    balancer.wait_for_ring(&[false, true, true]).await;
    let tables = play_all(tables, 1).await;
    for (table, _) in tables.iter().zip(&home).filter(|(_, h)| **h) {
        assert_ne!(owner_of(&store, &table.code).await, Some(first.clone()));
    }

    // Back: the same instance id on the same address.
    instances[0] = JumpgateProcess::start_at(addrs[0], &env).await;
    balancer.wait_for_ring(&[true, true, true]).await;
    let deadline = tokio::time::Instant::now() + PATIENCE * 2;
    for (table, _) in tables.iter().zip(&home).filter(|(_, h)| **h) {
        while owner_of(&store, &table.code).await.as_deref() != Some(first.as_str()) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} never went back to the restarted instance",
                table.code
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let tables = play_all(tables, 2).await;
    nothing_lost(&redis, &tables).await;
    // One reconnection out and one back for the rooms that moved; none for
    // the others.
    for ((table, was_home), before) in tables.iter().zip(&home).zip(&before) {
        for (seat, before) in table.seats.iter().zip(before) {
            let moved = seat.reconnections() - before;
            let expected = if *was_home { 2 } else { 0 };
            assert_eq!(
                moved, expected,
                "{}: reconnections since the restart (on the restarted instance: {was_home})",
                table.code
            );
        }
    }
}
