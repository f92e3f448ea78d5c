//! Several instances on one Redis, each a real `jumpgate` process: one owner
//! per room whatever happens to the others — frozen (SIGSTOP), killed
//! (kill -9), replaced in a surge rollout, added and removed — with players
//! on clients that reconnect by themselves, through the deployed balancer
//! configuration.

use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, PATIENCE, Player, RedisServer, lobby_pair};
use jumpgate_protocol::client::ClientError;
use jumpgate_protocol::{ClientMessage, Encoding, RuleSet, ServerMessage};
use jumpgate_server::store::{RedisStore, Store};

/// Short heartbeats, so takeovers come quickly in tests.
const HEARTBEAT_TTL_MS: &str = "1000";

fn env(redis: &RedisServer) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_HEARTBEAT_TTL_MS", HEARTBEAT_TTL_MS.to_owned()),
        // No game may end on time because of an outage in these tests.
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()),
    ]
}

/// The moves the store holds for a room, as notations, in order.
async fn stored_moves(redis: &RedisServer, code: &str) -> Vec<String> {
    let store = RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap();
    let room = store.load(code).await.unwrap().expect("the room is stored");
    room.moves.into_iter().map(|m| m.text).collect()
}

/// Reads from a connection until it closes; fails on an `ack` of `seq`.
/// Returns the close code and whether a `shutdown` notice came first.
async fn closed_without_ack(player: &mut Player, seq: u32) -> (u16, bool) {
    let mut notice = false;
    loop {
        match tokio::time::timeout(PATIENCE, player.client.recv())
            .await
            .expect("the connection ends in time")
        {
            Ok(ServerMessage::Ack { seq: acked }) => {
                assert_ne!(acked, seq, "a fenced instance acknowledged a move")
            }
            Ok(ServerMessage::Shutdown { .. }) => notice = true,
            Ok(_) => {}
            Err(ClientError::Closed { code, .. }) => return (code, notice),
            Err(e) => panic!("{e}"),
        }
    }
}

/// A frozen owner wakes up after another instance took its room over: the
/// move its still-connected player sends is not acknowledged, its players
/// are told to reconnect, and the store holds exactly the acknowledged
/// moves, in order, none doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_owner_is_fenced_after_its_room_is_taken_over() {
    let redis = RedisServer::start().await;
    let env = env(&redis);
    let a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let (mut host, mut guest, code) = lobby_pair(&a, RuleSet::American, 1).await;
    let (mover, waiter) = if host.my_turn() {
        (&mut host, &mut guest)
    } else {
        (&mut guest, &mut host)
    };
    let first = mover.play_first_legal().await;
    waiter
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;

    // A freezes. The player to move comes back through B, which takes the
    // room over once A's heartbeat has expired, and moves there.
    a.signal("STOP");
    let mut on_b = Player::connect_to(&b, Encoding::Json, Some(waiter.token.clone())).await;
    let state = on_b.join(&code).await;
    assert_eq!(
        state.game.as_ref().unwrap().ply,
        1,
        "B resumed the move A acknowledged"
    );
    let second = on_b.play_first_legal().await;

    // A thaws. Its room still thinks it is that player's move; the player's
    // old connection to A sends another move. A must not acknowledge it.
    a.signal("CONT");
    let legal = waiter
        .state
        .as_ref()
        .unwrap()
        .game
        .as_ref()
        .unwrap()
        .legal_moves
        .clone();
    let other = legal
        .iter()
        .map(|m| m.notation.clone())
        .find(|n| *n != second)
        .unwrap_or_else(|| second.clone());
    let seq = waiter
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some(other),
            path: None,
        })
        .await;
    let (code_waiter, notice) = closed_without_ack(waiter, seq).await;
    assert_eq!(code_waiter, jumpgate_protocol::CLOSE_ROOM_MOVED);
    assert!(notice, "told to reconnect before the close");
    let (code_mover, _) = closed_without_ack(mover, 0).await;
    assert_eq!(code_mover, jumpgate_protocol::CLOSE_ROOM_MOVED);

    // Exactly the acknowledged moves, in order, in the store and in a fresh
    // instance that resumes the room.
    assert_eq!(
        stored_moves(&redis, &code).await,
        [first.clone(), second.clone()]
    );
    drop(a);
    drop(b);
    let c = JumpgateProcess::start(&env).await;
    let mut fresh = Player::connect_to(&c, Encoding::Json, Some(on_b.token.clone())).await;
    let resumed = fresh.join(&code).await;
    let game = resumed.game.unwrap();
    assert_eq!(game.ply, 2);
    assert_eq!(game.moves, [first, second]);
}
