//! Append-only persistence: a move that changes nothing but the game is
//! appended to the move log without rewriting the room record, and the
//! record is rewritten every `--compact-every` moves. The store's append
//! (one Redis, a cluster, memory), then faults in the middle of a run of
//! appends: Redis stalled past the timeout, kill -9 between two record
//! rewrites, and a frozen owner whose room another instance took.

use std::sync::Arc;
use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, PATIENCE, Player, RedisCluster, RedisServer, seated_pair_on};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, RuleSet};
use jumpgate_server::store::prelude::*;
use jumpgate_server::store::{
    Fence, MemoryStore, MoveAppend, MoveEffects, OwnerEpoch, RedisStore, RoomWrite, StoredMove,
    WriteError,
};

use super::{STALL_MS, mover, retry_move, send_move, server_env, stored_moves};
use crate::persistence::play;

const CODE: &str = "APPEND01";

fn effects(version: u64) -> MoveEffects {
    MoveEffects {
        version,
        at_ms: 1_000 + version,
        deadline_ms: 2_000 + version,
        to_move: Some((version % 2) as u8),
        submitted: format!("{{\"kind\":\"move\",\"notation\":\"m{version}\",\"path\":null}}"),
    }
}

fn logged(ply: u32, path: &str, version: Option<u64>) -> StoredMove {
    StoredMove {
        game_no: 1,
        ply,
        path: path.into(),
        text: path.into(),
        seat: (ply % 2) as u8,
        seq: ply,
        effects: version.map(effects),
    }
}

fn append(owner: &OwnerEpoch, expected: u64, version: u64, moves: Vec<StoredMove>) -> MoveAppend {
    MoveAppend {
        code: CODE.into(),
        owner: owner.clone(),
        expected_version: expected,
        version,
        moves,
    }
}

fn record(owner: &OwnerEpoch, expected: u64, version: u64, moves: Vec<StoredMove>) -> RoomWrite {
    RoomWrite {
        code: CODE.into(),
        owner: owner.clone(),
        expected_version: expected,
        version,
        record: format!("{{\"version\":{version}}}"),
        moves,
        finished_games: Vec::new(),
        open: true,
        expire_after: None,
        seated: Vec::new(),
        unseated: Vec::new(),
    }
}

/// An append adds its moves with their effects and leaves the record as it
/// was; it follows the same rules as a record write (the version it
/// follows from, the same move at a stored id, the fence), so it can be
/// re-sent after an unknown outcome, and a record write after it takes
/// its moves as stored. One Redis, a cluster and the memory store agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_is_conditional_fenced_and_leaves_the_record() {
    let redis = RedisServer::start().await;
    let cluster = RedisCluster::start().await;
    let stores: Vec<Box<dyn Store>> = vec![
        Box::new(RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap()),
        Box::new(RedisStore::open(&cluster.url(), Duration::from_secs(2)).unwrap()),
        Box::new(MemoryStore::default()),
    ];
    let owner = OwnerEpoch::first(&Arc::from("writer"));
    for store in &stores {
        // Nothing to append to before the record exists.
        let early = store
            .append(&append(&owner, 0, 1, vec![logged(1, "a", Some(1))]))
            .await;
        assert!(matches!(early, Err(WriteError::Conflict(_))), "{early:?}");
        assert!(store.load(CODE).await.unwrap().is_none(), "nothing made");

        store
            .write(&record(&owner, 0, 1, Vec::new()))
            .await
            .unwrap();
        let a = append(&owner, 1, 2, vec![logged(1, "a", Some(2))]);
        store.append(&a).await.unwrap();
        // The same append again (its answer was lost): it landed.
        store.append(&a).await.unwrap();
        // Another move at that version is another change: refused.
        let twin = store
            .append(&append(&owner, 1, 2, vec![logged(1, "x", Some(2))]))
            .await;
        assert!(matches!(twin, Err(WriteError::Conflict(_))), "{twin:?}");
        // A catch-up from version 1 repeats the move of version 2.
        store
            .append(&append(
                &owner,
                1,
                3,
                vec![logged(1, "a", Some(2)), logged(2, "b", Some(3))],
            ))
            .await
            .unwrap();
        // Not following from what is stored: refused whole.
        for stale in [
            append(&owner, 4, 5, vec![logged(3, "c", Some(5))]),
            append(&owner, 1, 2, vec![logged(2, "b", Some(2))]),
            append(&owner, 3, 4, vec![logged(2, "z", Some(4))]),
        ] {
            let refused = store.append(&stale).await;
            assert!(
                matches!(refused, Err(WriteError::Conflict(_))),
                "{refused:?}"
            );
        }
        let room = store.load(CODE).await.unwrap().unwrap();
        assert_eq!(room.record, "{\"version\":1}", "the record is left alone");
        assert_eq!(
            room.moves,
            [logged(1, "a", Some(2)), logged(2, "b", Some(3))],
            "each move once, with its effects"
        );
        let open = store.open_records(&[CODE.to_owned()]).await.unwrap();
        let open = open[0].as_ref().expect("open");
        assert_eq!(open.record, "{\"version\":1}");
        assert_eq!(open.last_move, Some(logged(2, "b", Some(3))));

        // A record write (the compaction) after them: their moves are
        // stored already, the record is replaced.
        store
            .write(&record(
                &owner,
                3,
                4,
                vec![logged(1, "a", None), logged(2, "b", None)],
            ))
            .await
            .unwrap();
        store
            .append(&append(&owner, 4, 5, vec![logged(3, "c", Some(5))]))
            .await
            .unwrap();
        let room = store.load(CODE).await.unwrap().unwrap();
        assert_eq!(room.record, "{\"version\":4}");
        assert_eq!(room.moves.len(), 3);

        // Another instance claims the room: the first owner's append is
        // fenced and changes nothing; the new owner's goes through.
        let fence = store.fence(CODE).await.unwrap().expect("open");
        let other: Arc<str> = Arc::from("other");
        let theirs = store.claim(CODE, &fence, &other).await.unwrap().unwrap();
        let fenced = store
            .append(&append(&owner, 5, 6, vec![logged(4, "d", Some(6))]))
            .await;
        assert!(matches!(fenced, Err(WriteError::Fenced(_))), "{fenced:?}");
        assert_eq!(store.load(CODE).await.unwrap().unwrap().moves.len(), 3);
        store
            .append(&append(&theirs, 5, 6, vec![logged(4, "d", Some(6))]))
            .await
            .unwrap();
        let stale_view = Fence {
            owner: Some("writer".into()),
            epoch: 1,
            handed: false,
            parked: false,
            wake: None,
            home: None,
        };
        assert!(
            store
                .claim(CODE, &stale_view, &owner.instance)
                .await
                .unwrap()
                .is_none()
        );
        let room = store.load(CODE).await.unwrap().unwrap();
        let paths: Vec<&str> = room.moves.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["a", "b", "c", "d"]);
    }
}

/// The record as stored and the number of moves it covers (its round's
/// notations), read straight from Redis.
async fn stored_record(redis: &RedisServer, code: &str) -> (serde_json::Value, usize) {
    let store = RedisStore::open(&redis.url(), PATIENCE).unwrap();
    let room = store.load(code).await.unwrap().expect("stored");
    let record: serde_json::Value = serde_json::from_str(&room.record).unwrap();
    let covered = record["round"]["notations"].as_array().map_or(0, Vec::len);
    (record, covered)
}

/// Reconnects both players to `server` (continuing their seq counters)
/// and rejoins the lobby; returns them with the state the host saw.
async fn rejoin(server: &JumpgateProcess, code: &str, old: (Player, Player)) -> (Player, Player) {
    let mut back = Vec::new();
    for (p, encoding) in [(old.0, Encoding::Json), (old.1, Encoding::MsgPack)] {
        let last = p.client.last_seq();
        let mut again = Player::connect_to(server, encoding, Some(p.token.clone())).await;
        again.client.set_last_seq(last);
        again.join(code).await;
        back.push(again);
    }
    let b = back.pop().unwrap();
    let a = back.pop().unwrap();
    (a, b)
}

/// kill -9 between two record rewrites (`--compact-every 4`): the record
/// covers the moves up to the last rewrite, the log holds the ones
/// appended since; the restarted server rebuilds the game from both with
/// every acknowledged move once, and the lobby plays on, across the next
/// rewrite, through a second kill -9 just after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_between_record_rewrites_loses_no_appended_move() {
    let redis = RedisServer::start().await;
    let mut env = server_env(&redis);
    env.push(("JUMPGATE_COMPACT_EVERY", "4".into()));
    env.push(("JUMPGATE_MOVE_CLOCK_MS", "60000".into()));
    let mut server = JumpgateProcess::start(&env).await;
    let (mut a, mut b, code) = seated_pair_on(
        &server,
        [Encoding::Json, Encoding::MsgPack],
        RuleSet::American,
        1,
    )
    .await;

    // The game's start wrote the record; moves 1-3 are appended, the 4th
    // rewrites it, 5 and 6 are appended.
    let mut acked = play(&mut a, &mut b, 3).await;
    let (_, covered) = stored_record(&redis, &code).await;
    assert_eq!(covered, 0, "three moves appended, the record untouched");
    acked.extend(play(&mut a, &mut b, 3).await);
    let (record, covered) = stored_record(&redis, &code).await;
    assert_eq!(covered, 4, "rewritten at the 4th move: {record}");
    assert_eq!(stored_moves(&redis, &code).await, acked);

    server.kill_9();
    let server = JumpgateProcess::start(&env).await;
    let mut watcher = Player::connect_to(&server, Encoding::Json, None).await;
    let state = watcher.watch(&code).await;
    let game = state.game.expect("the game resumed");
    assert_eq!(game.moves, acked, "record + appended moves, each once");
    assert_eq!(game.ply as usize, acked.len());

    // Both come back (their joins rewrite the record) and play on: moves
    // 7-9 are appended, the 10th rewrites the record, the 11th is appended
    // after it. Then kill -9 again.
    let (mut a, mut b) = rejoin(&server, &code, (a, b)).await;
    assert_eq!(stored_record(&redis, &code).await.1, 6);
    acked.extend(play(&mut a, &mut b, 3).await);
    assert_eq!(stored_record(&redis, &code).await.1, 6);
    acked.extend(play(&mut a, &mut b, 2).await);
    let (_, covered) = stored_record(&redis, &code).await;
    assert_eq!(covered, 10);
    assert_eq!(stored_moves(&redis, &code).await, acked);
    let mut server = server;
    server.kill_9();
    drop(watcher);
    let server = JumpgateProcess::start(&env).await;
    let (mut a, mut b) = rejoin(&server, &code, (a, b)).await;
    let game = a.state.clone().unwrap().game.unwrap();
    assert_eq!(game.moves, acked);
    acked.extend(play(&mut a, &mut b, 2).await);
    assert_eq!(stored_moves(&redis, &code).await, acked);
    let game = b.state.clone().unwrap().game.unwrap();
    assert_eq!(game.moves, acked, "the lobby plays on");
}

/// Redis stalled past the server's timeout in the middle of a run of
/// appends (the record last written when the game began): each stalled
/// move is answered `storage_unavailable`, held, and stored once when the
/// retry with the same seq learns its outcome; after kill -9 the game is
/// exactly the acknowledged moves and plays on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_in_a_run_of_appends_stores_each_move_once() {
    let redis = RedisServer::start().await;
    let mut env = server_env(&redis);
    env.push(("JUMPGATE_MOVE_CLOCK_MS", "60000".into()));
    let mut server = JumpgateProcess::start(&env).await;
    let (mut a, mut b, code) = seated_pair_on(
        &server,
        [Encoding::MsgPack, Encoding::Json],
        RuleSet::Russian,
        1,
    )
    .await;
    let mut acked = play(&mut a, &mut b, 3).await;
    for round in 0..3 {
        redis.pause(STALL_MS).await;
        let m = mover(&mut a, &mut b);
        let notation = m.first_legal_notation();
        let seq = m.seq();
        send_move(m, seq, &notation).await;
        assert_eq!(
            m.answer(seq).await,
            Err(ErrorCode::StorageUnavailable),
            "stall {round}: an append of unknown outcome is not acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(STALL_MS)).await;
        assert_eq!(retry_move(m, seq, &notation).await, Ok(()));
        acked.push(notation);
        acked.extend(play(&mut a, &mut b, 2).await);
        assert_eq!(stored_moves(&redis, &code).await, acked, "stall {round}");
    }
    let (_, covered) = stored_record(&redis, &code).await;
    assert!(
        covered < acked.len(),
        "the moves were appended, the record not rewritten with each ({covered} of {})",
        acked.len()
    );

    server.kill_9();
    let server = JumpgateProcess::start(&env).await;
    let (mut a, mut b) = rejoin(&server, &code, (a, b)).await;
    assert_eq!(a.state.clone().unwrap().game.unwrap().moves, acked);
    acked.extend(play(&mut a, &mut b, 2).await);
    assert_eq!(stored_moves(&redis, &code).await, acked);
}

/// A frozen owner (SIGSTOP) whose room another instance took over while
/// moves were being appended: once thawed, the move its stale connection
/// sends is not acknowledged (its append is fenced, or it finds the room
/// taken first), and the store holds each acknowledged move once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_owner_appends_nothing() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1000".to_owned()),
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()),
    ];
    let first = JumpgateProcess::start(&env).await;
    let second = JumpgateProcess::start(&env).await;
    let (mut a, mut b, code) = seated_pair_on(
        &first,
        [Encoding::Json, Encoding::Json],
        RuleSet::American,
        1,
    )
    .await;
    let mut acked = play(&mut a, &mut b, 4).await;

    first.signal("STOP");
    // Both players come back through the second instance, which takes the
    // room over once the first one's heartbeat has expired.
    let mut a2 = Player::connect_to(&second, Encoding::Json, Some(a.token.clone())).await;
    a2.client.set_last_seq(a.client.last_seq() + 100);
    let state = a2.join(&code).await;
    assert_eq!(
        state.game.unwrap().moves,
        acked,
        "taken over with every move"
    );
    let mut b2 = Player::connect_to(&second, Encoding::Json, Some(b.token.clone())).await;
    b2.client.set_last_seq(b.client.last_seq() + 100);
    b2.join(&code).await;
    acked.extend(play(&mut a2, &mut b2, 2).await);

    // The first instance thaws; the stale connection of whoever is to move
    // in its (old) view sends a move there.
    first.signal("CONT");
    let stale = mover(&mut a, &mut b);
    let notation = stale.first_legal_notation();
    let seq = stale.seq();
    let _ = stale
        .client
        .send(&ClientMessage::Move {
            seq,
            notation: Some(notation),
            path: None,
        })
        .await;
    let answer = tokio::time::timeout(PATIENCE, async {
        loop {
            match stale.client.recv().await {
                Ok(jumpgate_protocol::ServerMessage::Ack { seq: s }) if s == seq => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    })
    .await
    .expect("the stale connection is answered or closed in time");
    assert!(!answer, "a fenced owner acknowledged a move");
    assert_eq!(stored_moves(&redis, &code).await, acked, "nothing appended");
    // The room plays on at its new owner.
    acked.extend(play(&mut a2, &mut b2, 2).await);
    assert_eq!(stored_moves(&redis, &code).await, acked);
}
