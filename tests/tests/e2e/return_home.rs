//! A restarted instance gets its rooms back: rooms whose players the
//! balancer sent to an instance that stopped (SIGTERM) or died (kill -9)
//! run elsewhere meanwhile and go back to it once it has been alive again
//! for `--return-home-after-ms`; each of their players reconnects once out
//! and once back, nobody else at all, and nothing moves after that (rooms
//! opened on one instance and routed to another included: they are where
//! the ring sends them, and stay), through a Redis stall when they are due
//! back.

use std::time::Duration;

use jumpgate_e2e::balancer::Balancer;
use jumpgate_e2e::table::Table;
use jumpgate_e2e::{JumpgateProcess, PATIENCE, RedisServer};
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;

use crate::failover::{env, nothing_lost, open_tables, play_all, start_instances};

/// How long a restarted instance must be alive before rooms go back.
const RETURN_AFTER_MS: u64 = 2_000;

async fn owner_of(store: &RedisStore, code: &str) -> Option<String> {
    store.fence(code).await.unwrap().and_then(|f| f.owner)
}

fn reconnections(tables: &[Table]) -> Vec<[u32; 2]> {
    tables
        .iter()
        .map(|t| [t.seats[0].reconnections(), t.seats[1].reconnections()])
        .collect()
}

/// Waits until every room in `codes` is owned by `instance`.
async fn wait_owned_by(store: &RedisStore, codes: &[String], instance: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE * 2;
    for code in codes {
        while owner_of(store, code).await.as_deref() != Some(instance) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{code} never went back to {instance}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Asserts each player of the rooms in `moved` reconnected `expected`
/// times since `before`, and every other player not at all.
fn assert_reconnected(
    tables: &[Table],
    before: &[[u32; 2]],
    moved: &[String],
    expected: u32,
    what: &str,
) {
    for (table, before) in tables.iter().zip(before) {
        let want = if moved.contains(&table.code) {
            expected
        } else {
            0
        };
        for (seat, before) in table.seats.iter().zip(before) {
            assert_eq!(
                seat.reconnections() - before,
                want,
                "{}: reconnections {what}",
                table.code
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_instance_gets_its_rooms_back_and_nothing_moves_after() {
    const GAMES: usize = 18;
    let redis = RedisServer::start().await;
    let mut env = env(&redis);
    env.push(("JUMPGATE_RETURN_HOME_AFTER_MS", RETURN_AFTER_MS.to_string()));
    env.push(("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()));
    let mut instances = start_instances(&env, 3).await;
    let addrs: Vec<_> = instances.iter().map(|i| i.addr).collect();
    let ids: Vec<String> = addrs.iter().map(|a| format!("test-{}", a.port())).collect();
    let balancer = Balancer::start(&addrs).await;
    // Opened on whichever instance the balancer picked, then routed by
    // code once the guest joined.
    let tables = open_tables(&balancer, GAMES, 1).await;
    let store = RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap();
    let mut on = vec![Vec::new(), Vec::new(), Vec::new()];
    for table in &tables {
        let owner = owner_of(&store, &table.code).await;
        let i = ids
            .iter()
            .position(|id| Some(id) == owner.as_ref())
            .unwrap();
        on[i].push(table.code.clone());
    }
    assert!(
        !on[0].is_empty() && !on[1].is_empty(),
        "rooms on the first two instances: {on:?}"
    );

    // SIGTERM the first instance: its rooms are handed over; then it
    // starts again with the same id on the same address.
    let before = reconnections(&tables);
    assert!(instances[0].terminate().success());
    balancer.wait_for_ring(&[false, true, true]).await;
    let tables = play_all(tables, 1).await;
    for code in &on[0] {
        assert_ne!(owner_of(&store, code).await.as_ref(), Some(&ids[0]));
    }
    instances[0] = JumpgateProcess::start_at(addrs[0], &env).await;
    balancer.wait_for_ring(&[true, true, true]).await;
    wait_owned_by(&store, &on[0], &ids[0]).await;
    let tables = play_all(tables, 1).await;
    assert_reconnected(&tables, &before, &on[0], 2, "over the restart");

    // kill -9 the second: its rooms are taken over once its heartbeat
    // expires; then it starts again.
    let before = reconnections(&tables);
    instances[1].kill_9();
    balancer.wait_for_ring(&[true, false, true]).await;
    let tables = play_all(tables, 1).await;
    instances[1] = JumpgateProcess::start_at(addrs[1], &env).await;
    balancer.wait_for_ring(&[true, true, true]).await;
    // A Redis stall (four command timeouts, longer than the heartbeat TTL)
    // about when the rooms are due back: hand-backs cut with their outcome
    // unknown, heartbeats lapsed everywhere. The rooms still go back, once.
    tokio::time::sleep(Duration::from_millis(RETURN_AFTER_MS - 300)).await;
    redis.pause(1_200).await;
    wait_owned_by(&store, &on[1], &ids[1]).await;
    let tables = play_all(tables, 1).await;
    assert_reconnected(&tables, &before, &on[1], 2, "over the kill -9");

    // Then nothing moves: three return periods later every room is where
    // it was and nobody reconnected.
    let before = reconnections(&tables);
    tokio::time::sleep(Duration::from_millis(RETURN_AFTER_MS * 3)).await;
    let tables = play_all(tables, 1).await;
    assert_reconnected(&tables, &before, &[], 0, "once every room is home");
    for (i, codes) in on.iter().enumerate() {
        for code in codes {
            assert_eq!(owner_of(&store, code).await.as_ref(), Some(&ids[i]));
        }
    }
    nothing_lost(&redis, &tables).await;
}
