//! The seated lobbies `failover` and `ownership-cost` play, across a server restart:
//! two lobbies on a real `jumpgate` process on a real Redis each play a move, the
//! server stops on SIGTERM (it hands its rooms over and closes its players' connections with 4001),
//! another starts on the same address, and each lobby plays a move more. Every player
//! must have reconnected once, every move sent must have its answer, and each lobby's
//! acknowledged moves must be what both players see and what the store holds. Nothing
//! here asserts on time.

use std::time::Duration;

use jumpgate_harness::{JumpgateProcess, RedisServer};
use jumpgate_loadtest::seated::SeatedLobby;
use jumpgate_protocol::CLOSE_ROOM_MOVED;
use jumpgate_protocol::reconnect::{Backoff, ReconnectPolicy};
// Only to read back what the store holds, with the server's own decoding.
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;
use tokio::time::Instant;

/// Quick retries, so that the restart is over soon.
fn policy() -> ReconnectPolicy {
    ReconnectPolicy {
        backoff: Backoff {
            first: Duration::from_millis(100),
            max: Duration::from_secs(1),
            jitter: 0.5,
        },
        max_attempts: 60,
        give_up_after: Duration::from_secs(50),
        ..ReconnectPolicy::default()
    }
}

async fn stored_moves(redis_url: &str, code: &str) -> Vec<String> {
    let store = RedisStore::open(redis_url, Duration::from_secs(2)).unwrap();
    let room = store.load(code).await.unwrap().expect("the room is stored");
    room.moves.into_iter().map(|m| m.text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seated_lobbies_keep_every_acknowledged_move_across_a_restart() {
    let redis = RedisServer::start().await;
    // Both processes share the harness's token secret, so each takes the other's
    // tokens, and the address, so the players reconnect to the same place.
    let env = [("JUMPGATE_REDIS_URL", redis.url())];
    let mut first = JumpgateProcess::start(&env).await;
    let addr = first.addr;
    let url = first.ws_url();

    let limit = Instant::now() + Duration::from_secs(60);
    let mut lobbies = Vec::new();
    for _ in 0..2 {
        let guest_url = |code: &str| format!("{url}?room={code}");
        let mut lobby = SeatedLobby::open(&url, guest_url, policy(), limit)
            .await
            .unwrap();
        assert!(lobby.play(limit).await.unwrap().is_some(), "first move");
        lobbies.push(lobby);
    }

    assert!(
        first.terminate().success(),
        "the first server drained and exited"
    );
    let second = JumpgateProcess::start_at(addr, &env).await;

    for lobby in &mut lobbies {
        let sent = lobby.send_move().await.unwrap();
        let answered = lobby.settle(&sent, limit).await.unwrap();
        assert!(
            answered.is_some(),
            "{}: the move after the restart was acknowledged and seen",
            lobby.code
        );
    }
    for lobby in &lobbies {
        assert_eq!(lobby.acknowledged.len(), 2, "{}", lobby.code);
        assert_eq!(lobby.host.game_moves(), lobby.acknowledged);
        assert_eq!(lobby.guest.game_moves(), lobby.acknowledged);
        assert_eq!(
            stored_moves(&redis.url(), &lobby.code).await,
            lobby.acknowledged,
            "{}: the store holds exactly the acknowledged moves",
            lobby.code
        );
        let reconnections = lobby.reconnections();
        assert_eq!(
            reconnections.len(),
            2,
            "each player once: {reconnections:?}"
        );
        for reconnection in &reconnections {
            assert!(reconnection.attempts >= 1);
            // A stopping server on Redis hands its rooms over (4001); without
            // rooms to hand over it says it is going away (1001).
            let closed_by_server = [1001, CLOSE_ROOM_MOVED]
                .iter()
                .any(|code| reconnection.cause.contains(&format!("code {code} ")));
            assert!(closed_by_server, "{}", reconnection.cause);
        }
    }

    drop(second);
    drop(redis);
}
