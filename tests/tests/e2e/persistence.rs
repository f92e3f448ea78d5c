//! Persistence in Redis: a real `redis-server` started by the test, real
//! `jumpgate` processes killed with SIGKILL or SIGTERM, real clients. The
//! `faults` module stalls Redis and kills the server in the middle of writes.

use std::time::Duration;

use jumpgate_e2e::{
    Endpoint, JumpgateProcess, Player, RedisServer, Storage, TestServer, lobby_pair,
};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, Phase, RuleSet, ServerMessage};
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;

fn ply(p: &Player) -> u32 {
    p.state
        .as_ref()
        .and_then(|s| s.game.as_ref())
        .map_or(0, |g| g.ply)
}

/// Plays `plies` moves, alternating, each side moving its first legal move.
pub(crate) async fn play(a: &mut Player, b: &mut Player, plies: u32) -> Vec<String> {
    let mut played = Vec::new();
    for _ in 0..plies {
        let target = ply(a).max(ply(b));
        a.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply >= target))
            .await;
        b.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply >= target))
            .await;
        let over = a
            .state
            .as_ref()
            .is_some_and(|s| s.game.as_ref().is_some_and(|g| g.result.is_some()));
        if over {
            break;
        }
        let mover = if a.my_turn() { &mut *a } else { &mut *b };
        played.push(mover.play_first_legal().await);
        // Both see the move before the next one is chosen.
        a.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply > target))
            .await;
        b.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply > target))
            .await;
    }
    played
}

/// Plays until the game has a result; returns the number of plies.
async fn play_to_end(a: &mut Player, b: &mut Player) -> u32 {
    for _ in 0..2000 {
        play(a, b, 1).await;
        let s = a.state.as_ref().unwrap();
        if s.game.as_ref().is_some_and(|g| g.result.is_some()) {
            return ply(a);
        }
    }
    panic!("the game did not end");
}

// On Redis, on a three-master Redis Cluster (every key of a room in one
// slot, the global sets in others) and in the data directory.
jumpgate_e2e::on_every_store!(
    kill_9_loses_no_acknowledged_move_and_every_game_resumes,
    kill_9_loses_nothing_on,
    cluster
);

async fn kill_9_loses_nothing_on(storage: Storage) {
    let mut env = storage.env();
    env.push(("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()));
    let mut first = JumpgateProcess::start(&env).await;

    // 50 games in progress, each a few acknowledged moves in.
    let mut tasks = Vec::new();
    for i in 0..50u32 {
        let ws = first.ws_url();
        tasks.push(tokio::spawn(async move {
            let endpoint = Url(ws);
            let rule_set = RuleSet::ALL[i as usize % RuleSet::ALL.len()];
            let (mut host, mut guest, code) = lobby_pair(&endpoint, rule_set, 1).await;
            let played = play(&mut host, &mut guest, 1 + i % 6).await;
            (host.token.clone(), guest.token.clone(), code, played)
        }));
    }
    let mut games = Vec::new();
    for t in tasks {
        games.push(t.await.unwrap());
    }
    first.kill_9();

    let second = JumpgateProcess::start(&env).await;
    let mut tasks = Vec::new();
    for (host_token, guest_token, code, played) in games {
        let ws = second.ws_url();
        tasks.push(tokio::spawn(async move {
            let endpoint = Url(ws);
            let mut host = Player::connect_to(&endpoint, Encoding::MsgPack, Some(host_token)).await;
            let state = host.join(&code).await;
            let game = state.game.clone().expect("the game resumed");
            assert_eq!(game.moves, played, "every acknowledged move is there");
            assert_eq!(state.phase, Phase::Playing);
            assert!(
                game.remaining_ms > 0 && game.remaining_ms <= 60_000,
                "a sensible clock"
            );
            let mut guest = Player::connect_to(&endpoint, Encoding::Json, Some(guest_token)).await;
            guest.join(&code).await;
            play_to_end(&mut host, &mut guest).await;
            let s = host.phase(Phase::Finished).await;
            assert!(s.series.result.is_some());
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_refuses_moves_then_recovers_without_restart() {
    let mut redis = RedisServer::start().await;
    let url = redis.url();
    let server = TestServer::start(|s| {
        s.redis_url = Some(url.clone());
        s.redis_timeout = Duration::from_millis(300);
    })
    .await;
    let (mut host, mut guest, code) = lobby_pair(&server, RuleSet::Russian, 1).await;
    let before = play(&mut host, &mut guest, 3).await;

    redis.kill();
    // The side to move cannot get a move acknowledged while Redis is down.
    let mover = if host.my_turn() {
        &mut host
    } else {
        &mut guest
    };
    let (seq, notation) = mover.send_first_legal().await;
    let code_seen = mover.expect_error(Some(seq)).await;
    assert_eq!(code_seen, ErrorCode::StorageUnavailable);
    assert!(code_seen.is_retryable());
    // Until the room knows whether that write landed, it takes nothing
    // else, not even a resync (it would show a state not yet stored).
    let move_seq = seq;
    let seq = mover
        .send(|seq| ClientMessage::Resync { seq, since: 0 })
        .await;
    assert_eq!(
        mover.expect_error(Some(seq)).await,
        ErrorCode::StorageUnavailable
    );

    // Leaving is refused too: the player stays in the lobby.
    let other = if host.my_turn() {
        &mut guest
    } else {
        &mut host
    };
    let seq = other.send(|seq| ClientMessage::Leave { seq }).await;
    assert_eq!(
        other.expect_error(Some(seq)).await,
        ErrorCode::StorageUnavailable
    );
    let mover = if host.my_turn() {
        &mut host
    } else {
        &mut guest
    };

    // Redis comes back on the same data; the move, re-sent with its seq,
    // learns its outcome: stored, so acknowledged.
    redis.restart().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        mover
            .client
            .send(&ClientMessage::Move {
                seq: move_seq,
                notation: Some(notation.clone()),
                path: None,
            })
            .await
            .unwrap();
        match wait_answer(mover, move_seq).await {
            None => break,
            Some(ErrorCode::StorageUnavailable) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "Redis never came back"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Some(other) => panic!("unexpected {other}"),
        }
    }
    for p in [&mut host, &mut guest] {
        p.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 4))
            .await;
    }
    let after = play(&mut host, &mut guest, 2).await;

    // Everything acknowledged is in Redis.
    let store = RedisStore::open(&url, Duration::from_secs(2)).unwrap();
    let rooms = store.load_open().await.unwrap();
    let room = rooms
        .iter()
        .find(|r| r.code == code)
        .expect("the lobby is stored");
    let stored: Vec<&str> = room.moves.iter().map(|m| m.text.as_str()).collect();
    let mut expected: Vec<String> = before;
    expected.push(notation);
    expected.extend(after);
    assert_eq!(stored, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_tells_clients_and_clocks_get_a_grace_on_resume() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_MOVE_CLOCK_MS", "4000".to_owned()),
        ("JUMPGATE_RESUME_GRACE_MS", "60000".to_owned()),
    ];
    let mut first = JumpgateProcess::start(&env).await;
    let (mut host, mut guest, code) = lobby_pair(&first, RuleSet::American, 1).await;
    let played = play(&mut host, &mut guest, 1).await;
    let clock_started = tokio::time::Instant::now();

    let status = first.terminate();
    assert!(status.success(), "graceful exit");
    let mut saw_notice = false;
    loop {
        match host.client.recv().await {
            Ok(ServerMessage::Shutdown { .. }) => saw_notice = true,
            Ok(_) => {}
            Err(jumpgate_protocol::client::ClientError::Closed { code, .. }) => {
                // The lobby was handed over before the exit: its members are
                // told it moved (and to come back at once).
                assert_eq!(code, jumpgate_protocol::CLOSE_ROOM_MOVED);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(saw_notice, "clients are told the server is restarting");

    // The 4 s clock runs out while the server is down...
    tokio::time::sleep_until(clock_started + Duration::from_millis(4500)).await;
    let second = JumpgateProcess::start(&env).await;
    let mut back = Player::connect_to(&second, Encoding::Json, Some(guest.token.clone())).await;
    let s = back.join(&code).await;
    // ...but the side to move gets the grace instead of a forfeit.
    let game = s.game.unwrap();
    assert_eq!(game.moves, played);
    assert!(
        game.result.is_none(),
        "no forfeit while the server was down"
    );
    assert!(
        game.remaining_ms > 4000,
        "the grace is longer than the move clock"
    );
}

/// Waits for the answer to `seq`: `None` for an ack, the code for an error.
async fn wait_answer(p: &mut Player, seq: u32) -> Option<ErrorCode> {
    loop {
        match p.recv().await {
            ServerMessage::Ack { seq: s } if s == seq => return None,
            ServerMessage::Error {
                seq: Some(s), code, ..
            } if s == seq => return Some(code),
            _ => {}
        }
    }
}

/// An endpoint given by its WebSocket URL.
struct Url(String);

impl Endpoint for Url {
    fn ws(&self) -> String {
        self.0.clone()
    }
}

/// A room write is one pipeline (the room's script and the lobby index). A Redis
/// that lost its scripts (a restart, `SCRIPT FLUSH`) gets the script again and the
/// write goes through; closing a room takes it out of the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn room_writes_survive_a_script_flush_and_keep_the_index() {
    use jumpgate_server::store::{OwnerEpoch, RoomWrite, StoredMove};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let redis = RedisServer::start().await;
    let store = RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap();
    let mv = |ply: u32, text: &str| StoredMove {
        game_no: 1,
        ply,
        path: format!("{ply}"),
        text: text.into(),
        seat: 0,
        seq: ply,
        effects: None,
    };
    let owner = OwnerEpoch::first(&Arc::from("writer"));
    let write = |version: u64, moves: Vec<StoredMove>, open: bool| RoomWrite {
        code: "K7M2QX9P".into(),
        owner: owner.clone(),
        expected_version: version - 1,
        version,
        record: format!("{{\"moves\":{}}}", moves.len()),
        moves,
        finished_games: Vec::new(),
        open,
        expire_after: None,
        seated: Vec::new(),
        unseated: Vec::new(),
    };
    store
        .write(&write(1, vec![mv(1, "11-15")], true))
        .await
        .unwrap();

    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", redis.port))
        .await
        .unwrap();
    raw.write_all(b"SCRIPT FLUSH\r\n").await.unwrap();
    let mut reply = [0u8; 16];
    let n = raw.read(&mut reply).await.unwrap();
    assert!(reply[..n].starts_with(b"+OK"), "SCRIPT FLUSH answered");

    store
        .write(&write(2, vec![mv(2, "22-18")], true))
        .await
        .unwrap();
    let rooms = store.load_open().await.unwrap();
    assert_eq!(rooms.len(), 1);
    let texts: Vec<&str> = rooms[0].moves.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["11-15", "22-18"]);
    assert_eq!(rooms[0].record, "{\"moves\":1}");

    store.write(&write(3, Vec::new(), false)).await.unwrap();
    assert!(
        store.load_open().await.unwrap().is_empty(),
        "closed: out of the index"
    );
}

/// Room writes are conditional. The same write sent twice (its first answer
/// lost) is accepted; a catch-up write that follows from an earlier version
/// is accepted whether or not the writes in between landed; a write that
/// does not follow from what is stored, or that puts another move at a ply
/// already stored, is refused whole. The Redis store and the in-memory one
/// agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn room_writes_are_conditional_on_the_stored_version() {
    use jumpgate_server::store::{MemoryStore, OwnerEpoch, RoomWrite, StoredMove, WriteError};
    use std::sync::Arc;

    let redis = RedisServer::start().await;
    let cluster = jumpgate_e2e::RedisCluster::start().await;
    let stores: Vec<Box<dyn Store>> = vec![
        Box::new(RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap()),
        Box::new(RedisStore::open(&cluster.url(), Duration::from_secs(2)).unwrap()),
        Box::new(MemoryStore::default()),
    ];
    let mv = |ply: u32, path: &str| StoredMove {
        game_no: 1,
        ply,
        path: path.into(),
        text: path.into(),
        seat: (ply % 2) as u8,
        seq: ply,
        effects: None,
    };
    let owner = OwnerEpoch::first(&Arc::from("writer"));
    let write = |expected: u64, version: u64, moves: Vec<StoredMove>| RoomWrite {
        code: "CAS2TEST".into(),
        owner: owner.clone(),
        expected_version: expected,
        version,
        record: format!("{{\"version\":{version},\"moves\":{}}}", moves.len()),
        moves,
        finished_games: Vec::new(),
        open: true,
        expire_after: None,
        seated: Vec::new(),
        unseated: Vec::new(),
    };
    for store in &stores {
        store.write(&write(0, 1, vec![mv(1, "a")])).await.unwrap();
        // The same write again: its answer was lost, it landed.
        store.write(&write(0, 1, vec![mv(1, "a")])).await.unwrap();
        // Version 2 was sent and its outcome is unknown; the catch-up write
        // (from 1 to 3) repeats its move and adds one.
        store.write(&write(1, 2, vec![mv(2, "b")])).await.unwrap();
        store
            .write(&write(1, 3, vec![mv(2, "b"), mv(3, "c")]))
            .await
            .unwrap();
        // A writer that never saw version 3 is refused, whole.
        let stale = store.write(&write(1, 2, vec![mv(2, "x")])).await;
        assert!(matches!(stale, Err(WriteError::Conflict(_))), "{stale:?}");
        let stale = store.write(&write(0, 3, vec![mv(1, "a")])).await;
        assert!(matches!(stale, Err(WriteError::Conflict(_))), "{stale:?}");
        // Another move at a stored ply is refused, even from the right
        // version, and nothing of that write is kept.
        let other = store
            .write(&write(3, 4, vec![mv(3, "z"), mv(4, "d")]))
            .await;
        assert!(matches!(other, Err(WriteError::Conflict(_))), "{other:?}");
        // The same version with another record is refused.
        let mut twin = write(2, 3, vec![mv(3, "c")]);
        twin.record.push(' ');
        assert!(matches!(
            store.write(&twin).await,
            Err(WriteError::Conflict(_))
        ));
        let room = store.load("CAS2TEST").await.unwrap().unwrap();
        let paths: Vec<&str> = room.moves.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["a", "b", "c"]);
        assert_eq!(room.record, "{\"version\":3,\"moves\":2}");

        // Ownership: another instance claims the room at the fence it saw
        // (a claim from a stale view loses), and from then on the first
        // writer's writes are refused whole, even one that follows.
        let fence = store.fence("CAS2TEST").await.unwrap().expect("open");
        assert_eq!((fence.owner.as_deref(), fence.epoch), (Some("writer"), 1));
        let other: Arc<str> = Arc::from("other");
        let stale_view = jumpgate_server::store::Fence {
            owner: None,
            epoch: 1,
            handed: false,
            parked: false,
            wake: None,
            home: None,
        };
        assert_eq!(
            store.claim("CAS2TEST", &stale_view, &other).await.unwrap(),
            None
        );
        let theirs = store.claim("CAS2TEST", &fence, &other).await.unwrap();
        assert_eq!(theirs.as_ref().map(|o| o.epoch), Some(2));
        let fenced = store.write(&write(3, 4, vec![mv(4, "d")])).await;
        assert!(matches!(fenced, Err(WriteError::Fenced(_))), "{fenced:?}");
        let mut later = write(3, 4, vec![mv(4, "d")]);
        later.owner = theirs.clone().unwrap();
        store.write(&later).await.unwrap();
        // The old owner cannot release what it no longer holds; the new one
        // can, keeping the epoch, and the next claim needs that view.
        assert!(!store.release("CAS2TEST", &owner, None).await.unwrap());
        assert!(
            store
                .release("CAS2TEST", theirs.as_ref().unwrap(), None)
                .await
                .unwrap()
        );
        let released = store.fence("CAS2TEST").await.unwrap().unwrap();
        assert_eq!(
            (released.owner.as_deref(), released.epoch, released.handed),
            (None, 2, false)
        );
        let again = store
            .claim("CAS2TEST", &released, &owner.instance)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(again.epoch, 3);
        // Handed to the instance that asked: a new epoch, marked handed,
        // which that instance's claim clears.
        assert!(
            store
                .release("CAS2TEST", &again, Some("other"))
                .await
                .unwrap()
        );
        let handed = store.fence("CAS2TEST").await.unwrap().unwrap();
        assert_eq!(
            (handed.owner.as_deref(), handed.epoch, handed.handed),
            (Some("other"), 4, true)
        );
        let taken = store.claim("CAS2TEST", &handed, &other).await.unwrap();
        assert_eq!(taken.map(|o| o.epoch), Some(5));
        assert!(!store.fence("CAS2TEST").await.unwrap().unwrap().handed);
        let room = store.load("CAS2TEST").await.unwrap().unwrap();
        assert_eq!(room.moves.len(), 4, "only the owner's write landed");
    }
}

/// A lobby that keeps playing keeps one game in its move log: when a new
/// game's first move is stored, the finished games' moves leave the log
/// (their PDN stays), even when that write's outcome was unknown because
/// Redis stalled past the timeout, and a new server resumes the lobby from
/// that one game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lobby_that_keeps_playing_keeps_one_game_in_its_log_through_a_stall() {
    let redis = RedisServer::start().await;
    let secret = b"archive-test-secret-0123456789abcdef".to_vec();
    let start = |secret: Vec<u8>| {
        let url = redis.url();
        TestServer::start(move |s| {
            s.redis_url = Some(url);
            s.token_secret = secret;
            s.redis_timeout = Duration::from_millis(300);
            s.break_time = Duration::from_millis(200);
        })
    };
    let server = start(secret.clone()).await;
    // Best of 3: drawn games do not decide it, so the rounds go on.
    let (mut host, mut guest, code) = lobby_pair(&server, RuleSet::American, 3).await;
    let moves = format!("jg:{{{code}}}:moves");
    let games = format!("jg:{{{code}}}:games");
    // Two games drawn by agreement after two moves each.
    for round in 1..=2u32 {
        host.state_until(|s| s.series.round == round && s.phase == Phase::Playing)
            .await;
        guest
            .state_until(|s| s.series.round == round && s.phase == Phase::Playing)
            .await;
        play(&mut host, &mut guest, 2).await;
        let offerer = if host.my_turn() {
            &mut host
        } else {
            &mut guest
        };
        offerer
            .request(|seq| ClientMessage::OfferDraw { seq })
            .await
            .unwrap();
        let accepter = if host.my_turn() {
            &mut guest
        } else {
            &mut host
        };
        accepter
            .request(|seq| ClientMessage::AcceptDraw { seq })
            .await
            .unwrap();
        let log = redis.command(&["XLEN", &moves]).await;
        assert_eq!(log.trim(), ":2", "only the game just played is in the log");
    }
    // Round 3's first move is stored while Redis stalls.
    host.state_until(|s| s.phase == Phase::Playing && s.series.round == 3)
        .await;
    guest
        .state_until(|s| s.phase == Phase::Playing && s.series.round == 3)
        .await;
    let mover = if host.my_turn() {
        &mut host
    } else {
        &mut guest
    };
    let state = mover.state.clone().unwrap();
    let notation = state.game.unwrap().legal_moves[0].notation.clone();
    let text = notation.clone();
    redis.pause(1_500).await;
    let seq = mover
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some(text),
            path: None,
        })
        .await;
    assert_eq!(
        mover.answer(seq).await,
        Err(ErrorCode::StorageUnavailable),
        "unknown outcome"
    );
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    // The same move again, same seq: applied once, acknowledged.
    let again = notation.clone();
    mover
        .client
        .send(&ClientMessage::Move {
            seq,
            notation: Some(again),
            path: None,
        })
        .await
        .unwrap();
    assert_eq!(mover.answer(seq).await, Ok(()));
    let log = redis.command(&["XRANGE", &moves, "-", "+"]).await;
    assert!(log.starts_with("*1\r\n"), "one move in the log: {log:?}");
    assert!(log.contains("3-1"), "game 3's first move: {log:?}");
    let pdns = redis.command(&["HLEN", &games]).await;
    assert_eq!(pdns.trim(), ":2", "both finished games' PDN kept");

    // A new server resumes the lobby from that one game.
    let (host_token, guest_token) = (host.token.clone(), guest.token.clone());
    drop((host, guest));
    drop(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = start(secret).await;
    let mut host = Player::connect_with(&server, Encoding::Json, Some(host_token)).await;
    let state = host.join(&code).await;
    assert_eq!(state.series.round, 3);
    assert_eq!(state.game.unwrap().moves, vec![notation]);
    let mut guest = Player::connect_with(&server, Encoding::MsgPack, Some(guest_token)).await;
    guest.join(&code).await;
    play(&mut host, &mut guest, 2).await;
}
