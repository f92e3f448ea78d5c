//! Several instances on one Redis, each a real `jumpgate` process: one owner
//! per room whatever happens to the others — frozen (SIGSTOP), killed
//! (kill -9), replaced in a surge rollout, added and removed — with players
//! on clients that reconnect by themselves, through the deployed balancer
//! configuration.

use std::time::Duration;

use jumpgate_e2e::balancer::Balancer;
use jumpgate_e2e::table::Table;
use jumpgate_e2e::{JumpgateProcess, PATIENCE, Player, RedisServer, TestServer, lobby_pair};
use jumpgate_protocol::client::ClientError;
use jumpgate_protocol::{ClientMessage, Encoding, RuleSet, ServerMessage};
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;

/// Short heartbeats, so takeovers come quickly in tests.
const HEARTBEAT_TTL_MS: &str = "1000";

pub(crate) fn env(redis: &RedisServer) -> Vec<(&'static str, String)> {
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
/// A stopped instance stays dead to the others: its heartbeat ends before
/// it deletes its alive key, so no beat in flight marks it alive again
/// (which would hold off the takeover of whatever it could not hand over
/// for another TTL). In process, where the runtime outlives the server, a
/// beat after the retirement could not hide in the process's exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_instance_never_beats_again() {
    // Stopped on a good day, and while Redis stalls for longer than the
    // command timeout: a beat and the retirement are then both in doubt,
    // queued in Redis and run when the stall ends.
    for stall_ms in [None, Some(1_500)] {
        let redis = RedisServer::start().await;
        let server = TestServer::start(|s| {
            s.redis_url = Some(redis.url());
            s.redis_timeout = Duration::from_millis(300);
            s.instance_id = "e2e-retiring".into();
            s.heartbeat_ttl = Duration::from_millis(600);
        })
        .await;
        let alive = || redis.command(&["EXISTS", "jg:alive:{e2e-retiring}"]);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while alive().await != ":1\r\n" {
            assert!(tokio::time::Instant::now() < deadline, "never alive");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A few beats, so that the next one is due at any moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Some(ms) = stall_ms {
            redis.pause(ms).await;
        }
        drop(server);
        // Deleted, or (after a stall) expired.
        while alive().await != ":0\r\n" {
            assert!(tokio::time::Instant::now() < deadline, "never retired");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Two TTLs, over six beat intervals: the key never comes back.
        for _ in 0..120 {
            assert_eq!(
                alive().await,
                ":0\r\n",
                "a retired instance beat again (stall {stall_ms:?})"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

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
    // old connection to A sends another move at once. A must not
    // acknowledge it, whether the move reaches A's room before or after A
    // notices (its heartbeat had expired) that the room is not its own.
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
    let seq = waiter.seq();
    let _ = waiter
        .client
        .send(&ClientMessage::Move {
            seq,
            notation: Some(other),
            path: None,
        })
        .await;
    let (code_waiter, notice) = closed_without_ack(waiter, seq).await;
    assert_eq!(code_waiter, jumpgate_protocol::CLOSE_ROOM_MOVED);
    assert!(notice, "told to reconnect before the close");
    // The other player, who sent nothing, is told too.
    let (code_mover, notice) = closed_without_ack(mover, 0).await;
    assert_eq!(code_mover, jumpgate_protocol::CLOSE_ROOM_MOVED);
    assert!(notice);

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

/// A thawed owner notices by itself that it was counted dead (its heartbeat
/// had expired) and sends away the players of rooms taken over meanwhile,
/// though none of them sends anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thawed_owner_sends_away_the_players_of_rooms_it_lost() {
    let redis = RedisServer::start().await;
    let env = env(&redis);
    let a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let (mut host, mut guest, code) = lobby_pair(&a, RuleSet::American, 1).await;
    a.signal("STOP");
    let mut on_b = Player::connect_to(&b, Encoding::Json, Some(guest.token.clone())).await;
    on_b.join(&code).await;
    a.signal("CONT");
    for player in [&mut host, &mut guest] {
        let (code, notice) = closed_without_ack(player, 0).await;
        assert_eq!(code, jumpgate_protocol::CLOSE_ROOM_MOVED);
        assert!(notice);
    }
}

/// Opens `n` tables through the balancer, a few at a time, each with
/// `moves` acknowledged moves.
pub(crate) async fn open_tables(balancer: &Balancer, n: usize, moves: usize) -> Vec<Table> {
    let ws = format!("ws://{}/ws", balancer.addr);
    let mut tables = Vec::new();
    for batch in 0..n.div_ceil(25) {
        let tasks: Vec<_> = (0..25.min(n - batch * 25))
            .map(|_| {
                let ws = ws.clone();
                tokio::spawn(async move {
                    let mut table = Table::open(&ws, RuleSet::American).await;
                    for _ in 0..moves {
                        table.play().await;
                    }
                    table
                })
            })
            .collect();
        for task in tasks {
            tables.push(task.await.unwrap());
        }
    }
    tables
}

/// Every table plays `moves` more moves, all at once; returns them.
pub(crate) async fn play_all(tables: Vec<Table>, moves: usize) -> Vec<Table> {
    let tasks: Vec<_> = tables
        .into_iter()
        .map(|mut table| {
            tokio::spawn(async move {
                for _ in 0..moves {
                    table.play().await;
                }
                table
            })
        })
        .collect();
    let mut tables = Vec::new();
    for task in tasks {
        tables.push(task.await.unwrap());
    }
    tables
}

/// Every acknowledged move is stored, in order, once; no game has ended.
pub(crate) async fn nothing_lost(redis: &RedisServer, tables: &[Table]) {
    for table in tables {
        assert_eq!(
            stored_moves(redis, &table.code).await,
            table.acknowledged,
            "{}: the store holds exactly the acknowledged moves",
            table.code
        );
        for seat in &table.seats {
            let room = seat.room().expect("in the room");
            let game = room.game.as_ref().unwrap();
            assert!(game.result.is_none(), "{}: no game ended", table.code);
            assert_eq!(game.ply as usize, table.acknowledged.len());
        }
    }
}

pub(crate) async fn start_instances(env: &[(&str, String)], n: usize) -> Vec<JumpgateProcess> {
    let mut instances = Vec::new();
    for _ in 0..n {
        instances.push(JumpgateProcess::start(env).await);
    }
    instances
}

/// kill -9 one of three instances with 150 games in play through the
/// balancer: every game comes back (its players reconnect by themselves and
/// another instance takes the room over) with no acknowledged move lost and
/// no game lost on time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_one_of_three_instances_loses_no_move_and_no_game() {
    const GAMES: usize = 150;
    let redis = RedisServer::start().await;
    let env = env(&redis);
    let mut instances = start_instances(&env, 3).await;
    let addrs: Vec<_> = instances.iter().map(|i| i.addr).collect();
    let balancer = Balancer::start(&addrs).await;
    let tables = open_tables(&balancer, GAMES, 2).await;
    let mut affected = 0;
    for table in &tables {
        if balancer.server_for(Some(&table.code)).await.as_deref() == Some("jumpgate1") {
            affected += 1;
        }
    }
    assert!(affected > 0, "some games live on the instance killed");

    instances[0].kill_9();
    let killed = tokio::time::Instant::now();
    let tables = play_all(tables, 2).await;
    eprintln!(
        "{affected} of {GAMES} games were on the killed instance; every game had two more \
         moves acknowledged {:.1} s after the kill",
        killed.elapsed().as_secs_f64()
    );
    nothing_lost(&redis, &tables).await;
    let reconnections: u32 = tables
        .iter()
        .flat_map(|t| &t.seats)
        .map(|s| s.reconnections())
        .sum();
    assert!(
        reconnections > 0,
        "the players of the killed instance came back"
    );
}

/// A surge rollout (a new instance up, then the old one stopped with
/// SIGTERM) and scaling 2 → 3 → 2, with games in play throughout: no
/// acknowledged move lost, every lobby reachable afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_rollout_and_scaling_lose_nothing() {
    const GAMES: usize = 45;
    let redis = RedisServer::start().await;
    let env = env(&redis);
    let mut a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let balancer = Balancer::start(&[a.addr, b.addr]).await;
    let tables = open_tables(&balancer, GAMES, 1).await;

    // 2 → 3: the third slot comes up; rooms keep playing where they are.
    let mut c = JumpgateProcess::start_at(balancer.servers[2], &env).await;
    balancer.wait_for_ring(&[true, true, true]).await;
    let tables = play_all(tables, 1).await;

    // Surge rollout of A: its replacement is up (C), A is stopped with
    // SIGTERM while games are played: A hands its rooms over.
    a.begin_terminate();
    let tables = play_all(tables, 2).await;
    assert!(a.wait().success(), "A exited cleanly");
    balancer.wait_for_ring(&[false, true, true]).await;
    let tables = play_all(tables, 1).await;

    // A's new version comes back in its slot, then 3 → 2: C leaves.
    let a2 = JumpgateProcess::start_at(balancer.servers[0], &env).await;
    balancer.wait_for_ring(&[true, true, true]).await;
    c.begin_terminate();
    let tables = play_all(tables, 2).await;
    assert!(c.wait().success(), "C exited cleanly");
    balancer.wait_for_ring(&[true, true, false]).await;
    let tables = play_all(tables, 1).await;
    nothing_lost(&redis, &tables).await;
    drop((a2, b));
}

const ISSUER_SECRET: &[u8] = b"failover-issuer-secret-0123456789abcd";

/// Staked series on an instance that dies with nobody connected: another
/// instance adopts the rooms, their clocks end the series, and every stake
/// is settled exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphaned_staked_series_are_adopted_and_settled_exactly_once() {
    use jumpgate_server::wallet::{RedisWallets, WalletRules, Wallets};
    const LOBBIES: usize = 4;
    const STAKE: u32 = 50;
    let redis = RedisServer::start().await;
    let mut env = env(&redis);
    env.retain(|(k, _)| *k != "JUMPGATE_MOVE_CLOCK_MS");
    env.extend([
        ("JUMPGATE_MOVE_CLOCK_MS", "1500".to_owned()),
        ("JUMPGATE_RESUME_GRACE_MS", "1500".to_owned()),
        ("JUMPGATE_JWT_ISSUER", "https://id.test".to_owned()),
        (
            "JUMPGATE_JWT_HS256",
            format!("k1={}", std::str::from_utf8(ISSUER_SECRET).unwrap()),
        ),
    ]);
    let mut a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let mut accounts = Vec::new();
    for lobby in 0..LOBBIES {
        // Account identities are `a_` + the token's subject.
        let [host_sub, guest_sub] = [format!("orphan{lobby}h"), format!("orphan{lobby}g")];
        let token = |sub: &str| jumpgate_e2e::account_token(ISSUER_SECRET, sub, sub);
        let mut host = Player::connect_to(&a, Encoding::Json, Some(token(&host_sub))).await;
        host.request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: false,
            stake: Some(STAKE),
            pace: None,
            draw_rules: None,
        })
        .await
        .unwrap();
        let code = host.state_until(|_| true).await.code;
        let mut guest = Player::connect_to(&a, Encoding::Json, Some(token(&guest_sub))).await;
        guest.join(&code).await;
        host.state_until(|s| s.game.is_some()).await;
        accounts.push((format!("a_{host_sub}"), format!("a_{guest_sub}")));
        // Both leave the connection (not the seat): nobody is connected.
    }
    let wallets = RedisWallets::open(&redis.url(), PATIENCE, WalletRules::default()).unwrap();
    let totals = wallets.totals().await.unwrap();
    assert_eq!(
        totals.escrow,
        i64::from(STAKE) * 2 * LOBBIES as i64,
        "all staked"
    );

    // A dies before any clock runs out; B adopts the rooms on its own.
    a.kill_9();
    let deadline = tokio::time::Instant::now() + PATIENCE * 3;
    loop {
        let totals = wallets.totals().await.unwrap();
        assert_eq!(totals.balances + totals.escrow, totals.granted, "conserved");
        if totals.escrow == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the orphaned series never settled ({} still in escrow)",
            totals.escrow
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (host, guest) in &accounts {
        let h = wallets.wallet(host).await.unwrap();
        let g = wallets.wallet(guest).await.unwrap();
        // One of the two lost on time: the pot went to the other, once.
        let mut ends = [h.balance, g.balance];
        ends.sort();
        assert_eq!(ends, [950, 1050], "{host} vs {guest}");
        for view in [&h, &g] {
            let mut keys: Vec<&str> = view.ledger.iter().map(|e| e.key.as_str()).collect();
            let all = keys.len();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), all, "no ledger entry applied twice");
        }
    }
    let (_, metrics) = jumpgate_e2e::http_get(b.addr, "/metrics").await;
    let adopted = metrics
        .lines()
        .find_map(|l| l.strip_prefix("jumpgate_room_takeovers_total "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(
        adopted >= LOBBIES as u64,
        "B took the rooms over ({adopted})"
    );
}

/// Redis stalls (`CLIENT PAUSE`, five times the servers' command timeout)
/// landing at different moments of a handover: a spectator on B, naming the
/// room, makes A hand it over while the players on A keep moving. Whatever
/// step a stall cuts — the ask, A storing, A releasing the fence, B
/// claiming it — each move is acknowledged once, stored once, in order, and
/// the room ends with one owner that serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handovers_cut_by_redis_stalls_lose_nothing_and_leave_one_owner() {
    let redis = RedisServer::start().await;
    let mut env = env(&redis);
    env.push(("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()));
    let a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let mut table = jumpgate_e2e::table::Table::open(&a.ws_url(), RuleSet::American).await;
    table.play().await;
    for delay_ms in [0u64, 15, 40, 90, 200] {
        // The spectator's watch starts the handover; the stall follows it
        // after `delay_ms`, cutting a different step each time.
        let url = format!("{}?room={}", b.ws_url(), table.code);
        let code = table.code.clone();
        let watcher = tokio::spawn(async move {
            let mut seat = jumpgate_e2e::table::Seat::connect(&url).await;
            seat.watch(&code).await;
            seat
        });
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        redis.pause(1_500).await;
        // The players move meanwhile, pulling the room back to A (their
        // reconnections name it there).
        table.play().await;
        let mut watcher = watcher.await.unwrap();
        let ply = table.acknowledged.len() as u32;
        watcher
            .room_until(|s| s.game.as_ref().is_some_and(|g| g.ply >= ply))
            .await;
    }
    table.play().await;
    assert_eq!(
        stored_moves(&redis, &table.code).await,
        table.acknowledged,
        "the store holds exactly the acknowledged moves, in order"
    );
    assert_one_owner(&redis, &table.code, &[&a, &b]).await;
}

/// Redis stalls landing at different moments of takeovers from a dead
/// instance: while B claims A's rooms (on its players' requests, and by its
/// sweep), Redis is paused again and again, each time for longer than the
/// servers' command timeout, so claims, loads and seat writes time out with
/// their outcome unknown. B must not guess: it reads the fence again, and a
/// fence naming B for a room B does not run is claimed once more. Every
/// room comes back with its acknowledged move, takes new ones, and has one
/// owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takeovers_cut_by_redis_stalls_lose_nothing_and_leave_one_owner() {
    const ROOMS: usize = 6;
    let redis = std::sync::Arc::new(RedisServer::start().await);
    let mut env = env(&redis);
    env.push(("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()));
    let mut a = JumpgateProcess::start(&env).await;
    let b = JumpgateProcess::start(&env).await;
    let mut rooms = Vec::new();
    for _ in 0..ROOMS {
        let (mut host, mut guest, code) = lobby_pair(&a, RuleSet::American, 1).await;
        let mover = if host.my_turn() {
            &mut host
        } else {
            &mut guest
        };
        let first = mover.play_first_legal().await;
        rooms.push((code, first, [host.token.clone(), guest.token.clone()]));
    }
    a.kill_9();
    // Stalls of 700 ms with gaps of 40–240 ms, from just before A's
    // heartbeat runs out (1 s) until the takeovers are done.
    let staller = {
        let redis = redis.clone();
        tokio::spawn(async move {
            for round in 0..8u64 {
                tokio::time::sleep(Duration::from_millis(40 + 200 * (round % 2) + 13 * round))
                    .await;
                redis.pause(700).await;
                tokio::time::sleep(Duration::from_millis(700)).await;
            }
        })
    };
    let mut retried = 0;
    let mut players = Vec::new();
    for (code, _, tokens) in &rooms {
        let mut pair = Vec::new();
        for token in tokens {
            let mut player = Player::connect_to(&b, Encoding::Json, Some(token.clone())).await;
            let seq = player
                .send(|seq| ClientMessage::JoinLobby {
                    seq,
                    code: code.clone(),
                    invite: None,
                })
                .await;
            // Whatever a stall cut, the same request again gets its answer.
            retried += rejoin_until_acked(&mut player, seq, code).await;
            pair.push(player);
        }
        players.push(pair);
    }
    staller.await.unwrap();
    for ((code, first, _), pair) in rooms.iter().zip(&mut players) {
        for player in pair.iter_mut() {
            player
                .state_until(|s| s.code == *code && s.players.iter().flatten().all(|p| p.connected))
                .await;
        }
        let game = pair[0]
            .state
            .as_ref()
            .unwrap()
            .game
            .clone()
            .expect("the game resumed");
        assert_eq!(
            game.moves,
            std::slice::from_ref(first),
            "{code}: the acknowledged move"
        );
        let mover = pair
            .iter()
            .position(Player::my_turn)
            .expect("a side to move");
        let second = pair[mover].play_first_legal().await;
        assert_eq!(stored_moves(&redis, code).await, [first.clone(), second]);
        assert_one_owner(&redis, code, &[&b]).await;
    }
    let (_, metrics) = jumpgate_e2e::http_get(b.addr, "/metrics").await;
    let failed = metrics
        .lines()
        .find_map(|l| l.strip_prefix("jumpgate_redis_errors_total{op=\"ownership\"} "))
        .unwrap_or("0")
        .to_owned();
    eprintln!(
        "takeovers under stalls: {retried} requests re-sent, {failed} ownership commands failed on B"
    );
}

/// Re-sends `join_lobby` with the same `seq` until it is acknowledged,
/// through `storage_unavailable` and `room_unavailable`; returns how many
/// times it was re-sent.
async fn rejoin_until_acked(player: &mut Player, seq: u32, code: &str) -> usize {
    let deadline = tokio::time::Instant::now() + PATIENCE * 2;
    let mut resent = 0;
    loop {
        match player.answer(seq).await {
            Ok(()) => return resent,
            Err(code_) if code_.is_retryable() => {
                resent += 1;
                assert!(tokio::time::Instant::now() < deadline, "never acknowledged");
                tokio::time::sleep(Duration::from_millis(200)).await;
                player
                    .client
                    .send(&ClientMessage::JoinLobby {
                        seq,
                        code: code.to_owned(),
                        invite: None,
                    })
                    .await
                    .unwrap();
            }
            Err(other) => panic!("join refused: {other}"),
        }
    }
}

/// The room's fence names one of `instances`, and that instance serves the
/// room: a spectator sent straight to it (not naming the room, so nothing
/// can move) is let in.
async fn assert_one_owner(redis: &RedisServer, code: &str, instances: &[&JumpgateProcess]) {
    let store = RedisStore::open(&redis.url(), Duration::from_secs(2)).unwrap();
    let fence = store.fence(code).await.unwrap().expect("a fence");
    let owner = fence.owner.expect("an owner");
    let holder = instances
        .iter()
        .find(|p| *owner == *format!("test-{}", p.addr.port()))
        .unwrap_or_else(|| panic!("{code}: owned by {owner}, not a live instance"));
    let mut spectator = Player::connect_to(*holder, Encoding::Json, None).await;
    spectator.watch(code).await;
}
