//! Faults in the middle of writes, with a real Redis and real `jumpgate`
//! processes: Redis stalled for longer than the server's timeout (`CLIENT
//! PAUSE`), the server killed with SIGKILL mid-write, and a bounded chaos run
//! of both over many staked lobbies. What must hold: every acknowledged move
//! is stored once, in order, and replays; balances plus escrow equal
//! everything granted; nobody is paid without staking; no series is settled
//! twice; no escrow is left behind.

mod append;
mod chaos;
mod retention;

use std::collections::HashMap;
use std::time::Duration;

use jumpgate_e2e::{
    JumpgateProcess, PATIENCE, Player, RedisServer, account_token as signed_token, seated_pair_on,
};
use jumpgate_protocol::{ClientMessage, Encoding, ErrorCode, Phase, RuleSet, ServerMessage};
use jumpgate_server::store::RedisStore;
use jumpgate_server::store::prelude::*;
use jumpgate_server::wallet::{RedisWallets, WalletRules, Wallets};

const ISSUER_SECRET: &[u8] = b"faults-issuer-secret-0123456789abcdef";
/// The operator token (the server refuses one shorter than 32 bytes).
const ADMIN: &str = "faults-admin-token-0123456789abcdef";
/// The server's limit for one Redis command in these tests.
const TIMEOUT_MS: u64 = 300;
/// A stall well past that limit.
const STALL_MS: u64 = 1_500;

fn server_env(redis: &RedisServer) -> Vec<(&'static str, String)> {
    vec![
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_REDIS_TIMEOUT_MS", TIMEOUT_MS.to_string()),
        ("JUMPGATE_RESUME_GRACE_MS", "5000".into()),
        ("JUMPGATE_JWT_ISSUER", "https://id.test".into()),
        (
            "JUMPGATE_JWT_HS256",
            format!("k1={}", std::str::from_utf8(ISSUER_SECRET).unwrap()),
        ),
        ("JUMPGATE_ADMIN_TOKEN", ADMIN.into()),
        (
            "JUMPGATE_ADMIN_LISTEN",
            format!("127.0.0.1:{}", jumpgate_e2e::free_port()),
        ),
    ]
}

/// Where the processes started with `env` serve the operator API (never
/// on their public address).
fn admin_addr(env: &[(&str, String)]) -> std::net::SocketAddr {
    let (_, addr) = env
        .iter()
        .find(|(name, _)| *name == "JUMPGATE_ADMIN_LISTEN")
        .expect("server_env sets an admin address");
    addr.parse().unwrap()
}

fn token(sub: &str) -> String {
    signed_token(ISSUER_SECRET, sub, &format!("Name {sub}"))
}

fn wallets(redis: &RedisServer) -> RedisWallets {
    RedisWallets::open(&redis.url(), PATIENCE, WalletRules::default()).unwrap()
}

/// Balances plus escrow equal everything granted; the escrow total is what
/// the escrow hashes hold; no balance is negative. Returns the escrow total.
///
/// Everything is read by one script, at one instant: reads spread over
/// several commands could straddle a settlement and seem not to balance.
async fn conserved(redis: &RedisServer, accounts: &[String]) -> i64 {
    const READ_ALL: &str = r#"
local P = 'jgw:{wallets}'
local balances, lowest = 0, 0
for _, v in ipairs(redis.call('HVALS', P .. ':bal')) do
  balances = balances + tonumber(v)
  lowest = math.min(lowest, tonumber(v))
end
local held = 0
for _, key in ipairs(redis.call('KEYS', P .. ':escrow:*')) do
  for _, v in ipairs(redis.call('HVALS', key)) do held = held + tonumber(v) end
end
local escrow = tonumber(redis.call('HGET', P .. ':totals', 'escrow') or '0')
local granted = tonumber(redis.call('HGET', P .. ':totals', 'granted') or '0')
return {balances, escrow, granted, held, lowest}
"#;
    let reply = redis.command(&["EVAL", READ_ALL, "0"]).await;
    let [balances, escrow, granted, held, lowest] = resp_integers(&reply)[..] else {
        panic!("unexpected reply to the totals script: {reply:?}");
    };
    assert!(lowest >= 0, "a balance is negative ({lowest})");
    // Every account the test knows has a wallet (opened by its grant).
    let w = wallets(redis);
    for account in accounts {
        let view = w.wallet(account).await.unwrap();
        assert!(view.balance >= 0, "{account} has {}", view.balance);
    }
    assert_eq!(balances + escrow, granted, "balances + escrow = granted");
    assert_eq!(
        held, escrow,
        "the escrow total is what the escrow hashes hold"
    );
    escrow
}

/// The integers of a RESP array reply.
fn resp_integers(reply: &str) -> Vec<i64> {
    reply
        .split("\r\n")
        .filter_map(|line| line.strip_prefix(':'))
        .map(|n| n.parse().unwrap())
        .collect()
}

/// Every ledger key appears at most once per account (nothing applied
/// twice), and whoever is paid or refunded for a series staked in it.
async fn ledgers_sound(redis: &RedisServer, accounts: &[String]) {
    let w = wallets(redis);
    for account in accounts {
        let ledger = w.wallet(account).await.unwrap().ledger;
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for e in &ledger {
            *seen.entry(e.key.as_str()).or_default() += 1;
        }
        for (key, n) in &seen {
            assert_eq!(*n, 1, "{account}: ledger key {key} applied {n} times");
            if let Some(series) = key.strip_suffix(":settle") {
                assert!(
                    seen.contains_key(format!("{series}:escrow").as_str()),
                    "{account} was paid or refunded for {series} without staking in it"
                );
            }
        }
    }
}

/// Sends a move with a given seq (a retry reuses the first one's).
async fn send_move(p: &mut Player, seq: u32, notation: &str) {
    p.client
        .send(&ClientMessage::Move {
            seq,
            notation: Some(notation.to_owned()),
            path: None,
        })
        .await
        .unwrap();
}

/// Re-sends `seq` until the room answers something other than
/// `storage_unavailable` (it does once the store has caught up).
async fn retry_move(p: &mut Player, seq: u32, notation: &str) -> Result<(), ErrorCode> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        send_move(p, seq, notation).await;
        match p.answer(seq).await {
            Err(ErrorCode::StorageUnavailable) => {
                assert!(tokio::time::Instant::now() < deadline, "never resolved");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

/// Whoever of the two is to move.
fn mover<'a>(a: &'a mut Player, b: &'a mut Player) -> &'a mut Player {
    if a.my_turn() { a } else { b }
}

/// The moves stored for a lobby, as notation, checked to be in strictly
/// increasing `GAME-PLY` order.
async fn stored_moves(redis: &RedisServer, code: &str) -> Vec<String> {
    let store = RedisStore::open(&redis.url(), PATIENCE).unwrap();
    let room = store
        .load(code)
        .await
        .unwrap()
        .expect("the lobby is stored");
    let ids: Vec<(u64, u32)> = room.moves.iter().map(|m| (m.game_no, m.ply)).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "stored moves in order, none twice: {ids:?}"
    );
    room.moves.into_iter().map(|m| m.text).collect()
}

/// A move sent while Redis stalls is answered `storage_unavailable`, not
/// guessed at: the room holds it until Redis answers, refuses everything
/// else meanwhile, then stores it once. A different move sent instead is
/// judged against the stored game; the retry with the same seq is
/// acknowledged. The same holds when the server is frozen (SIGSTOP) past
/// its timeout mid-move. After kill -9 and a restart the game is exactly
/// the acknowledged moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_during_a_stall_is_resolved_never_guessed_and_survives_kill_9() {
    let redis = RedisServer::start().await;
    let env = server_env(&redis);
    let mut server = JumpgateProcess::start(&env).await;
    let (mut a, mut b, code) = seated_pair_on(
        &server,
        [Encoding::Json, Encoding::MsgPack],
        RuleSet::Russian,
        1,
    )
    .await;
    let mut acked = crate::persistence::play(&mut a, &mut b, 4).await;

    // The stall: the move's write times out, so its outcome is unknown.
    redis.pause(STALL_MS).await;
    let m = mover(&mut a, &mut b);
    let game = m.state.clone().unwrap().game.unwrap();
    let (first, second) = (
        game.legal_moves[0].notation.clone(),
        game.legal_moves.last().unwrap().notation.clone(),
    );
    let seq = m.seq();
    send_move(m, seq, &first).await;
    assert_eq!(
        m.answer(seq).await,
        Err(ErrorCode::StorageUnavailable),
        "a write of unknown outcome is not acknowledged"
    );
    // Still stalled: the room takes nothing else.
    let other = m.seq();
    send_move(m, other, &second).await;
    assert_eq!(m.answer(other).await, Err(ErrorCode::StorageUnavailable));

    // Redis wakes up and runs the queued write. A different move now is
    // judged against the game as stored, where the first move stands.
    tokio::time::sleep(Duration::from_millis(STALL_MS)).await;
    let instead = m.seq();
    let refused = retry_move(m, instead, &second).await;
    assert!(
        matches!(
            refused,
            Err(ErrorCode::NotYourTurn | ErrorCode::IllegalMove)
        ),
        "the first move was stored, so another one is refused: {refused:?}"
    );
    assert_eq!(
        retry_move(m, seq, &first).await,
        Ok(()),
        "the retry with the same seq learns the true outcome"
    );
    acked.push(first);
    acked.extend(crate::persistence::play(&mut a, &mut b, 3).await);
    assert_eq!(stored_moves(&redis, &code).await, acked);

    // The server frozen (SIGSTOP) right after a move arrives, for longer
    // than its Redis timeout, then thawed: whatever it answers, the retry
    // with the same seq is acknowledged and the move is stored once.
    let m = mover(&mut a, &mut b);
    let notation = m.first_legal_notation();
    let seq = m.seq();
    send_move(m, seq, &notation).await;
    signal(&server, "STOP");
    tokio::time::sleep(Duration::from_millis(2 * TIMEOUT_MS + 400)).await;
    signal(&server, "CONT");
    let first_answer = m.answer(seq).await;
    assert!(
        matches!(first_answer, Ok(()) | Err(ErrorCode::StorageUnavailable)),
        "{first_answer:?}"
    );
    assert_eq!(retry_move(m, seq, &notation).await, Ok(()));
    acked.push(notation);
    acked.extend(crate::persistence::play(&mut a, &mut b, 2).await);
    assert_eq!(stored_moves(&redis, &code).await, acked);

    // kill -9 and a restart: the lobby resumes with exactly those moves.
    server.kill_9();
    drop((a, b));
    let server = JumpgateProcess::start(&env).await;
    let mut again = Player::connect_to(&server, Encoding::Json, None).await;
    let state = again.watch(&code).await;
    let game = state.game.expect("the game resumed");
    assert_eq!(game.moves, acked, "every acknowledged move, in order, once");
    assert_eq!(stored_moves(&redis, &code).await, acked);
}

/// Sends a signal (`STOP`, `CONT`) to a server process.
fn signal(server: &JumpgateProcess, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Creates a staked lobby and returns its code.
pub(crate) async fn staked_lobby(host: &mut Player, stake: u32) -> String {
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: false,
            stake: Some(stake),
            pace: None,
            draw_rules: None,
        })
        .await;
    host.expect_ack(seq).await;
    host.state_until(|_| true).await.code
}

/// The join that would start a staked series is cut by a stall and a
/// kill -9, at several points. After the restart the lobby has undone it:
/// the joiner is not seated and has all their points, a third player can
/// take the seat, and the money adds up at every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_start_cut_by_a_stall_and_kill_9_takes_nothing_from_anyone() {
    let redis = RedisServer::start().await;
    let env = server_env(&redis);
    let mut accounts = Vec::new();
    // Kill -9 at several moments after the join was sent; the first rounds
    // also stall Redis so the intent's write is in flight when it dies.
    for (round, (stall, delay_ms)) in [(true, 50u64), (true, 400), (false, 0), (false, 15)]
        .into_iter()
        .enumerate()
    {
        let [host_id, joiner_id, third_id] =
            ["host", "joiner", "third"].map(|r| format!("r{round}{r}"));
        accounts.extend(
            [host_id.clone(), joiner_id.clone(), third_id.clone()].map(|s| format!("a_{s}")),
        );
        let mut server = JumpgateProcess::start(&env).await;
        let mut host = Player::connect_to(&server, Encoding::Json, Some(token(&host_id))).await;
        let code = staked_lobby(&mut host, 300).await;
        let mut joiner =
            Player::connect_to(&server, Encoding::MsgPack, Some(token(&joiner_id))).await;
        if stall {
            redis.pause(STALL_MS).await;
        }
        let c = code.clone();
        joiner
            .send(|seq| ClientMessage::JoinLobby {
                seq,
                code: c,
                invite: None,
            })
            .await;
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        server.kill_9();
        drop((host, joiner));
        if stall {
            tokio::time::sleep(Duration::from_millis(STALL_MS)).await;
        }
        conserved(&redis, &accounts).await;

        let server = JumpgateProcess::start(&env).await;
        let mut host = Player::connect_to(&server, Encoding::Json, Some(token(&host_id))).await;
        let state = host.join(&code).await;
        let mut third = Player::connect_to(&server, Encoding::Json, Some(token(&third_id))).await;
        if state.phase == Phase::Waiting {
            // The start was undone (or never stored): the seat is free.
            let c = code.clone();
            third
                .request(|seq| ClientMessage::JoinLobby {
                    seq,
                    code: c,
                    invite: None,
                })
                .await
                .expect("the third player takes the free seat");
            host.phase(Phase::Playing).await;
        } else {
            // The series had started and was stored before the kill: the
            // joiner staked and plays; nothing for the third player.
            assert_eq!(state.phase, Phase::Playing);
        }
        assert_eq!(conserved(&redis, &accounts).await, 600, "two stakes held");
        host.request(|seq| ClientMessage::Resign { seq })
            .await
            .unwrap();
        host.phase(Phase::Finished).await;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while conserved(&redis, &accounts).await != 0 {
            assert!(tokio::time::Instant::now() < deadline, "settled");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let w = wallets(&redis);
        let balance = |v: jumpgate_server::wallet::WalletView| v.balance;
        assert_eq!(
            balance(w.wallet(&format!("a_{host_id}")).await.unwrap()),
            700
        );
        let joiner_balance = balance(w.wallet(&format!("a_{joiner_id}")).await.unwrap());
        let third_balance = balance(w.wallet(&format!("a_{third_id}")).await.unwrap());
        assert!(
            (joiner_balance, third_balance) == (1000, 1300)
                || (joiner_balance, third_balance) == (1300, 1000),
            "whoever played won the pot, the other has all their points: {joiner_balance} {third_balance}"
        );
        ledgers_sound(&redis, &accounts).await;
    }
}

/// A join that would start a staked series meets a stall and is refused
/// `storage_unavailable`. Once Redis answers, the room undoes the start by
/// itself; the host then leaves, and everyone has every point back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_who_leaves_after_a_failed_series_start_gets_every_stake_back() {
    let redis = RedisServer::start().await;
    let server = JumpgateProcess::start(&server_env(&redis)).await;
    let accounts = ["a_lh".to_owned(), "a_lj".to_owned()];
    let mut host = Player::connect_to(&server, Encoding::Json, Some(token("lh"))).await;
    let code = staked_lobby(&mut host, 1000).await;
    let mut joiner = Player::connect_to(&server, Encoding::Json, Some(token("lj"))).await;
    redis.pause(STALL_MS).await;
    let c = code.clone();
    let joined = joiner
        .request(|seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: None,
        })
        .await;
    assert_eq!(joined, Err(ErrorCode::StorageUnavailable));
    tokio::time::sleep(Duration::from_millis(STALL_MS)).await;
    conserved(&redis, &accounts).await;
    host.request(|seq| ClientMessage::Leave { seq })
        .await
        .expect("the host leaves once the room has caught up");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while conserved(&redis, &accounts).await != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing left in escrow"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let w = wallets(&redis);
    for account in &accounts {
        assert_eq!(w.wallet(account).await.unwrap().balance, 1000, "{account}");
    }
    ledgers_sound(&redis, &accounts).await;
}

/// While a room waits for Redis its clocks stand still: a stall longer
/// than the move clock does not make the side to move lose on time, and
/// the room gives that time back once Redis answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clocks_stand_still_while_the_store_is_away() {
    let redis = RedisServer::start().await;
    let mut env = server_env(&redis);
    env.push(("JUMPGATE_MOVE_CLOCK_MS", "2000".into()));
    let server = JumpgateProcess::start(&env).await;
    let (mut a, mut b, _code) = seated_pair_on(
        &server,
        [Encoding::Json, Encoding::Json],
        RuleSet::American,
        1,
    )
    .await;
    crate::persistence::play(&mut a, &mut b, 1).await;
    // A stall twice the move clock, right after a move is sent.
    redis.pause(4_000).await;
    let m = mover(&mut a, &mut b);
    let notation = m.first_legal_notation();
    let seq = m.seq();
    send_move(m, seq, &notation).await;
    assert_eq!(m.answer(seq).await, Err(ErrorCode::StorageUnavailable));
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    assert_eq!(retry_move(m, seq, &notation).await, Ok(()));
    // A while later the game is still on: without the time given back the
    // side to move would have lost on time the moment Redis answered. (The
    // wait is short of the clock, with room to spare on a loaded machine.)
    a.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 2))
        .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    a.request(|seq| ClientMessage::Resync { seq, since: 0 })
        .await
        .unwrap();
    let state = loop {
        if let ServerMessage::State(state) = a.recv().await {
            break state;
        }
    };
    let game = state.game.unwrap();
    assert!(
        game.result.is_none(),
        "nobody lost on time: {:?}",
        game.result
    );
    assert_eq!(state.phase, Phase::Playing);
}

/// A POST to the operator API: the status and the body.
async fn admin_post(admin: std::net::SocketAddr, path: &str) -> (u16, String) {
    let auth = format!("Bearer {ADMIN}");
    let (status, response) =
        jumpgate_e2e::http_post_with(admin, path, &[("Authorization", &auth)]).await;
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// A staked lobby whose stored history no longer replays (a move deleted
/// from its log) is not dropped at start: it is logged, counted, kept in
/// Redis as it was, listed for the operator with the stakes it holds, and
/// the operator can refund them, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lobby_that_does_not_replay_is_kept_listed_and_its_stakes_released() {
    let redis = RedisServer::start().await;
    let env = server_env(&redis);
    let accounts = ["a_uh".to_owned(), "a_uj".to_owned()];
    let mut server = JumpgateProcess::start(&env).await;
    let mut host = Player::connect_to(&server, Encoding::Json, Some(token("uh"))).await;
    let code = staked_lobby(&mut host, 300).await;
    let mut joiner = Player::connect_to(&server, Encoding::Json, Some(token("uj"))).await;
    joiner.join(&code).await;
    host.phase(Phase::Playing).await;
    crate::persistence::play(&mut host, &mut joiner, 2).await;
    assert_eq!(conserved(&redis, &accounts).await, 600);
    server.kill_9();
    drop((host, joiner));

    let moves_key = format!("jg:{{{code}}}:moves");
    let deleted = redis.command(&["XDEL", &moves_key, "1-1"]).await;
    assert!(deleted.starts_with(":1"), "{deleted}");
    let server = JumpgateProcess::start(&env).await;

    let mut p = Player::connect_to(&server, Encoding::Json, None).await;
    let c = code.clone();
    assert_eq!(
        p.request(|seq| ClientMessage::Watch {
            seq,
            code: c,
            invite: None
        })
        .await,
        Err(ErrorCode::UnknownLobby),
        "not served"
    );
    let auth = format!("Bearer {ADMIN}");
    let (status, listed) = jumpgate_e2e::http_get_with(
        admin_addr(&env),
        "/api/admin/rooms/unresumable",
        &[("Authorization", &auth)],
    )
    .await;
    assert_eq!(status, 200);
    assert!(listed.contains(&code), "listed: {listed}");
    assert!(
        listed.contains(&format!("\"series\":\"{code}:1:")),
        "{listed}"
    );
    let (_, metrics) = jumpgate_e2e::http_get(server.addr, "/metrics").await;
    assert!(metrics.contains("jumpgate_rooms_unresumable 1"), "counted");
    let record = redis
        .command(&["EXISTS", &format!("jg:{{{code}}}:room")])
        .await;
    assert!(record.starts_with(":1"), "kept in Redis");
    let member = redis.command(&["SISMEMBER", "jg:lobbies", &code]).await;
    assert!(member.starts_with(":1"), "still listed as open");

    let path = format!("/api/admin/rooms/{code}/settle");
    let (status, body) = admin_post(admin_addr(&env), &path).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"refunded\":600"), "{body}");
    let (_, body) = admin_post(admin_addr(&env), &path).await;
    assert!(body.contains("\"refunded\":0"), "once: {body}");
    assert_eq!(conserved(&redis, &accounts).await, 0);
    let w = wallets(&redis);
    for account in &accounts {
        assert_eq!(w.wallet(account).await.unwrap().balance, 1000);
    }
    ledgers_sound(&redis, &accounts).await;
}

/// A solo game's write meets a stall: the move is refused and undone in
/// memory (it may still land). Played again after the stall it is
/// acknowledged once, and after kill -9 and a restart the game holds
/// exactly the acknowledged moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_solo_move_during_a_stall_is_stored_once_and_survives_kill_9() {
    use jumpgate_protocol::{BotLevel, SoloMode};
    async fn play(p: &mut Player, notation: String) -> Result<(), ErrorCode> {
        p.request(|seq| ClientMessage::Move {
            seq,
            notation: Some(notation),
            path: None,
        })
        .await
    }
    let redis = RedisServer::start().await;
    let env = server_env(&redis);
    let mut server = JumpgateProcess::start(&env).await;
    let mut p = Player::connect_to(&server, Encoding::Json, None).await;
    let token = p.token.clone();
    p.request(|seq| ClientMessage::StartSolo {
        seq,
        rule_set: RuleSet::American,
        mode: SoloMode::SameDevice,
        level: Some(BotLevel::Tamer),
        ranked: false,
    })
    .await
    .unwrap();
    let mut acked = Vec::new();
    for _ in 0..2 {
        let s = p.solo_until(|s| s.game.moves.len() == acked.len()).await;
        let m = s.game.legal_moves[0].notation.clone();
        play(&mut p, m.clone()).await.unwrap();
        acked.push(m);
    }
    let s = p.solo_until(|s| s.game.moves.len() == acked.len()).await;
    let m = s.game.legal_moves[0].notation.clone();
    redis.pause(STALL_MS).await;
    assert_eq!(
        play(&mut p, m.clone()).await,
        Err(ErrorCode::StorageUnavailable)
    );
    tokio::time::sleep(Duration::from_millis(STALL_MS)).await;
    // The refused move was undone here, so it is the same move to play.
    play(&mut p, m.clone()).await.unwrap();
    acked.push(m);
    let s = p.solo_until(|s| s.game.moves.len() == acked.len()).await;
    let m = s.game.legal_moves[0].notation.clone();
    play(&mut p, m.clone()).await.unwrap();
    acked.push(m);

    server.kill_9();
    drop(p);
    let server = JumpgateProcess::start(&env).await;
    let mut p = Player::connect_to(&server, Encoding::Json, Some(token)).await;
    p.request(|seq| ClientMessage::ResumeSolo { seq })
        .await
        .unwrap();
    let s = p.solo_until(|_| true).await;
    assert_eq!(
        s.game.moves, acked,
        "every acknowledged move, once, in order"
    );
}
