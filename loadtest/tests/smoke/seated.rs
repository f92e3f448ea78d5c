//! The seated lobbies `failover` and `ownership-cost` play, across a server restart:
//! two lobbies on an in-process server on a real Redis each play a move, the server
//! stops (it hands its rooms over and closes its players' connections with 4001),
//! another starts on the same address, and each lobby plays a move more. Every player
//! must have reconnected once, every move sent must have its answer, and each lobby's
//! acknowledged moves must be what both players see and what the store holds. Nothing
//! here asserts on time.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use jumpgate_loadtest::cluster::RedisServer;
use jumpgate_loadtest::seated::SeatedLobby;
use jumpgate_protocol::CLOSE_ROOM_MOVED;
use jumpgate_protocol::reconnect::{Backoff, ReconnectPolicy};
use jumpgate_server::config::Settings;
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
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

const TOKEN_SECRET: &[u8] = b"seated-smoke-token-secret-0123456789abcdef";

/// A server on `listener` with `redis_url`; stops when the sender is used.
fn serve(listener: TcpListener, redis_url: &str) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let addr = listener.local_addr().unwrap();
    let mut settings = Settings::for_address(addr);
    settings.redis_url = Some(redis_url.to_owned());
    // One secret for both servers, so that each takes the other's tokens.
    settings.token_secret = TOKEN_SECRET.to_vec();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        jumpgate_server::run(listener, settings, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (stop, server)
}

async fn stored_moves(redis_url: &str, code: &str) -> Vec<String> {
    let store = RedisStore::open(redis_url, Duration::from_secs(2)).unwrap();
    let room = store.load(code).await.unwrap().expect("the room is stored");
    room.moves.into_iter().map(|m| m.text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seated_lobbies_keep_every_acknowledged_move_across_a_restart() {
    let redis = RedisServer::start(Path::new("redis-server"), false, None)
        .await
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let url = format!("ws://{addr}/ws");
    let (stop, first) = serve(listener, &redis.url);

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

    let _ = stop.send(());
    first.await.unwrap();
    let listener = TcpListener::bind(addr).await.unwrap();
    let (stop, second) = serve(listener, &redis.url);

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
            stored_moves(&redis.url, &lobby.code).await,
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

    let _ = stop.send(());
    second.await.unwrap();
    redis.stop().await;
}
