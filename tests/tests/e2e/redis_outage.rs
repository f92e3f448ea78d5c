//! Redis restarted under live instances: an outage longer than the
//! heartbeat TTL lets every instance's heartbeat expire, yet no room moves
//! between the instances that are still alive (each doubts the deaths the
//! store reports until one TTL after its own beats are stored again).

use std::time::Duration;

use jumpgate_e2e::table::Table;
use jumpgate_e2e::{JumpgateProcess, RedisServer};
use jumpgate_protocol::RuleSet;
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;

/// Short heartbeats: the outage below is three of them.
const HEARTBEAT_TTL_MS: u64 = 1000;

fn env(redis: &RedisServer) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_HEARTBEAT_TTL_MS", HEARTBEAT_TTL_MS.to_string()),
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()),
    ]
}

/// A counter's value in a `/metrics` page (0 when absent).
fn counter(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

async fn owner_of(redis: &RedisServer, code: &str) -> String {
    let store = RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap();
    let fence = store.fence(code).await.unwrap().expect("a fence");
    fence.owner.expect("an owner")
}

/// Two instances with four lobbies each; Redis is killed and started again
/// after three heartbeat TTLs (its AOF keeps the rooms; every heartbeat key
/// has expired). Afterwards every lobby has the owner it had, no instance
/// took a room over, and every player's next move is acknowledged on the
/// connection it had all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_longer_than_the_heartbeat_ttl_moves_no_room() {
    let mut redis = RedisServer::start().await;
    let env = env(&redis);
    let a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let mut tables: Vec<(Table, String)> = Vec::new();
    for instance in [&a, &a, &a, &a, &b, &b, &b, &b] {
        let mut table = Table::open(&instance.ws_url(), RuleSet::American).await;
        table.play().await;
        let owner = owner_of(&redis, &table.code).await;
        assert_eq!(owner, format!("test-{}", instance.addr.port()));
        tables.push((table, owner));
    }
    redis.kill();
    tokio::time::sleep(Duration::from_millis(3 * HEARTBEAT_TTL_MS)).await;
    redis.restart().await;
    // Long enough for each instance to beat again, find the other's
    // heartbeat gone, and sweep for orphans several times.
    tokio::time::sleep(Duration::from_millis(4 * HEARTBEAT_TTL_MS)).await;
    for (table, owner) in &tables {
        assert_eq!(
            &owner_of(&redis, &table.code).await,
            owner,
            "{} moved",
            table.code
        );
    }
    for instance in [&a, &b] {
        let (_, metrics) = jumpgate_e2e::http_get(instance.addr, "/metrics").await;
        assert_eq!(
            counter(&metrics, "jumpgate_room_takeovers_total"),
            0,
            "an instance took rooms over"
        );
    }
    for (table, _) in &mut tables {
        table.play().await;
        for seat in &table.seats {
            assert_eq!(
                seat.reconnections(),
                0,
                "{}: a player was sent away",
                table.code
            );
        }
    }
}
