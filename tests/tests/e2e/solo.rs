//! Solo play over real WebSockets: the computer replies, undo, ranked
//! games and their leaderboard, same-device games, resume after a restart.
//!
//! Over 700 lines: one module per subject in the single e2e binary, and solo
//! play is one subject (levels, undo, resume, ranked games, replacement).

use std::time::Duration;

use jumpgate_e2e::{Player, RedisServer, TestServer, account_token};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Encoding, ErrorCode, GameEndReason, RuleSet, ServerMessage, SoloMode,
    SoloState,
};
use jumpgate_server::identity::AccountSettings;

const SECRET: &[u8] = b"issuer-secret-for-solo-tests";

fn token(sub: &str, name: &str) -> String {
    account_token(SECRET, sub, name)
}

async fn server(redis: Option<&RedisServer>, ply_cap: usize) -> TestServer {
    server_on(redis.map(|r| r.url()), ply_cap).await
}

async fn server_with(storage: &jumpgate_e2e::Storage, ply_cap: usize) -> TestServer {
    server_configured(ply_cap, |s| storage.configure(s)).await
}

async fn server_on(url: Option<String>, ply_cap: usize) -> TestServer {
    server_configured(ply_cap, move |s| s.redis_url = url).await
}

async fn server_configured(
    ply_cap: usize,
    store: impl FnOnce(&mut jumpgate_server::config::Settings),
) -> TestServer {
    TestServer::start(move |s| {
        store(s);
        s.ranked_ply_cap = ply_cap;
        s.executive_budget = Duration::from_millis(20);
        s.token_secret = b"shared-guest-secret-for-solo-tests".to_vec();
        s.accounts = Some(AccountSettings {
            issuer: "https://id.test".into(),
            audience: "jumpgate".into(),
            hs256: vec![("k1".into(), SECRET.to_vec())],
            ..AccountSettings::default()
        });
    })
    .await
}

async fn start(
    p: &mut Player,
    level: BotLevel,
    ranked: bool,
    mode: SoloMode,
) -> Result<SoloState, ErrorCode> {
    let seq = p
        .send(|seq| ClientMessage::StartSolo {
            seq,
            rule_set: RuleSet::American,
            mode,
            level: Some(level),
            ranked,
        })
        .await;
    // The new game's ack comes before its first state; anything earlier
    // belongs to the previous game.
    loop {
        match p.recv().await {
            ServerMessage::Error {
                seq: Some(s), code, ..
            } if s == seq => return Err(code),
            ServerMessage::Ack { seq: s } if s == seq => break,
            _ => {}
        }
    }
    Ok(p.solo_until(|_| true).await)
}

async fn play_first(p: &mut Player, s: &SoloState) -> Result<(), ErrorCode> {
    let notation = s.game.legal_moves[0].notation.clone();
    let seq = p
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some(notation),
            path: None,
        })
        .await;
    loop {
        match p.recv().await {
            ServerMessage::Ack { seq: a } if a == seq => return Ok(()),
            ServerMessage::Error {
                seq: Some(a), code, ..
            } if a == seq => return Err(code),
            _ => {}
        }
    }
}

/// Waits until the solo game's task has done what follows its last answer:
/// it scores a finished ranked game after it acknowledges the ending
/// request and before it reads the next one, so the `ack` of a `resync`
/// sent now comes after the leaderboard write.
async fn scored(player: &mut Player) {
    player
        .request(|seq| ClientMessage::Resync { seq, since: 0 })
        .await
        .unwrap();
}

async fn board(server: &TestServer) -> serde_json::Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            b"GET /api/leaderboards/american HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap();
    serde_json::from_str(body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn practice_against_the_computer_with_undo() {
    let server = server(None, 500).await;
    let mut p = Player::connect(&server, Encoding::Json).await;
    let s = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
        .await
        .unwrap();
    assert!(!s.ranked);
    assert_eq!(s.game.ply, 0);
    play_first(&mut p, &s).await.unwrap();
    let s = p.solo_until(|s| s.game.ply == 2 && !s.thinking).await;
    assert_eq!(s.game.moves.len(), 2, "the computer replied");
    assert!(!s.game.legal_moves.is_empty());
    p.request(|seq| ClientMessage::Undo { seq }).await.unwrap();
    let s = p.solo_until(|s| s.game.ply == 0).await;
    assert!(
        s.game.moves.is_empty(),
        "undo took back the turn and the reply"
    );
    // Ranked needs an account, and only the Executive counts.
    assert_eq!(
        start(&mut p, BotLevel::Executive, true, SoloMode::Computer)
            .await
            .unwrap_err(),
        ErrorCode::AccountRequired
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_device_games_play_both_sides_and_undo_one_move() {
    let server = server(None, 500).await;
    let mut p = Player::connect(&server, Encoding::MsgPack).await;
    let s = start(&mut p, BotLevel::Tamer, false, SoloMode::SameDevice)
        .await
        .unwrap();
    assert_eq!(s.you, None);
    // Stored before it is shown, a new game's first state is version 1,
    // and each stored change adds one.
    assert_eq!(s.version, 1);
    play_first(&mut p, &s).await.unwrap();
    let s = p.solo_until(|s| s.game.ply == 1).await;
    assert_eq!(s.version, 2);
    play_first(&mut p, &s).await.unwrap();
    let s = p.solo_until(|s| s.game.ply == 2).await;
    assert!(!s.thinking);
    p.request(|seq| ClientMessage::Undo { seq }).await.unwrap();
    p.solo_until(|s| s.game.ply == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranked_games_score_undo_makes_practice_and_results_stay() {
    let redis = RedisServer::start().await;
    // A short ply cap stands in for the 500-turn draw.
    let server = server(Some(&redis), 4).await;
    let mut ann = Player::connect_with(&server, Encoding::Json, Some(token("ann", "Ann"))).await;
    assert_eq!(
        start(&mut ann, BotLevel::Warden, true, SoloMode::Computer)
            .await
            .unwrap_err(),
        ErrorCode::InvalidOptions
    );
    let mut s = start(&mut ann, BotLevel::Executive, true, SoloMode::Computer)
        .await
        .unwrap();
    assert!(s.ranked);
    while s.game.result.is_none() {
        play_first(&mut ann, &s).await.unwrap();
        let ply = s.game.ply;
        s = ann
            .solo_until(|x| x.game.result.is_some() || (x.game.ply >= ply + 2 && !x.thinking))
            .await;
    }
    let result = s.game.result.unwrap();
    assert_eq!(
        result.reason,
        GameEndReason::MoveLimit,
        "drawn at the ply cap"
    );
    assert_eq!(
        ann.request(|seq| ClientMessage::Undo { seq })
            .await
            .unwrap_err(),
        ErrorCode::NotNow,
        "a finished ranked result cannot be undone"
    );
    let b = board(&server).await;
    assert_eq!(b["entries"][0]["name"], "Ann");
    assert_eq!(b["entries"][0]["points"], 1);
    assert_eq!(b["entries"][0]["draws"], 1);
    assert!(!b.to_string().contains("a_ann"), "names only");

    // Undo turns a ranked game into practice: it then counts nowhere.
    let s = start(&mut ann, BotLevel::Executive, true, SoloMode::Computer)
        .await
        .unwrap();
    play_first(&mut ann, &s).await.unwrap();
    ann.solo_until(|x| x.game.ply == 2 && !x.thinking).await;
    ann.request(|seq| ClientMessage::Undo { seq })
        .await
        .unwrap();
    let s = ann.solo_until(|x| x.game.ply == 0).await;
    assert!(!s.ranked, "now practice");
    ann.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    scored(&mut ann).await;
    let b = board(&server).await;
    assert_eq!(
        b["entries"][0]["games"], 1,
        "the practice game did not count"
    );

    // A ranked loss counts 0 points and one more game.
    let s = start(&mut ann, BotLevel::Executive, true, SoloMode::Computer)
        .await
        .unwrap();
    assert!(s.ranked);
    ann.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    scored(&mut ann).await;
    let b = board(&server).await;
    assert_eq!(b["entries"][0]["games"], 2);
    assert_eq!(b["entries"][0]["losses"], 1);
    assert_eq!(b["entries"][0]["points"], 1);
}

jumpgate_e2e::on_every_store!(
    a_ranked_game_resumes_after_a_restart,
    a_ranked_game_resumes_on,
    cluster
);

async fn a_ranked_game_resumes_on(storage: jumpgate_e2e::Storage) {
    let first = server_with(&storage, 500).await;
    let tok = token("bea", "Bea");
    let mut bea = Player::connect_with(&first, Encoding::Json, Some(tok.clone())).await;
    let s = start(&mut bea, BotLevel::Executive, true, SoloMode::Computer)
        .await
        .unwrap();
    play_first(&mut bea, &s).await.unwrap();
    let before = bea.solo_until(|x| x.game.ply == 2 && !x.thinking).await;
    drop(first);
    drop(bea);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let second = server_with(&storage, 500).await;
    let mut bea = Player::connect_with(&second, Encoding::Json, Some(tok)).await;
    bea.request(|seq| ClientMessage::ResumeSolo { seq })
        .await
        .unwrap();
    let after = bea.solo_until(|_| true).await;
    assert_eq!(after.id, before.id);
    assert_eq!(after.game.moves, before.game.moves, "every move is back");
    assert!(after.ranked);
    play_first(&mut bea, &after).await.unwrap();
    bea.solo_until(|x| x.game.ply == 4 && !x.thinking).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderboards_keep_the_full_tie_order_in_redis_and_memory() {
    use jumpgate_server::leaderboard::{
        Leaderboards, MemoryLeaderboards, RankedOutcome as O, RedisLeaderboards,
    };
    let redis = RedisServer::start().await;
    let boards: Vec<Box<dyn Leaderboards>> = vec![
        Box::new(
            RedisLeaderboards::open(
                &redis.url(),
                Duration::from_secs(2),
                jumpgate_server::idempotency::IdempotencyWindow::default(),
            )
            .unwrap(),
        ),
        Box::new(MemoryLeaderboards::default()),
    ];
    for b in boards {
        // (account, name, outcomes)
        let players: [(&str, &str, &[O]); 5] = [
            ("a_1", "Zed", &[O::Win, O::Win, O::Loss, O::Loss]),
            ("a_2", "Amy", &[O::Win, O::Draw, O::Draw, O::Draw]),
            ("a_3", "Bob", &[O::Win, O::Win, O::Loss]),
            ("a_4", "Cat", &[O::Win, O::Win, O::Win]),
            ("a_5", "Abe", &[O::Win, O::Win, O::Loss, O::Loss]),
        ];
        for (account, name, outcomes) in players {
            for (i, o) in outcomes.iter().enumerate() {
                let game = format!("{account}-{i}");
                b.record(&game, "russian", account, name, *o, 0)
                    .await
                    .unwrap();
                b.record(&game, "russian", account, name, *o, 0)
                    .await
                    .unwrap(); // once
            }
        }
        let page = b.page("russian", 1, 10).await.unwrap();
        let names: Vec<&str> = page
            .entries
            .iter()
            .map(|e| e.standing.name.as_str())
            .collect();
        // 9 points; then 6 with 2 wins in 3 games; then 6/2 wins/4 games by
        // name; then 6 points with 1 win.
        assert_eq!(names, ["Cat", "Bob", "Abe", "Zed", "Amy"]);
        assert_eq!(page.total, 5);
        let second = b.page("russian", 2, 2).await.unwrap();
        assert_eq!(second.entries[0].place, 3);
        assert_eq!(second.entries[0].standing.name, "Abe");
        assert!(b.page("thai", 1, 10).await.unwrap().entries.is_empty());
    }
}

/// A connection is in a lobby or attached to a solo game, never both:
/// entering a lobby detaches it from its solo game (which carries on), so
/// its moves go to the lobby; after leaving, `resume_solo` brings the game
/// back as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entering_a_lobby_detaches_a_solo_game_that_resume_brings_back() {
    let server = server(None, 500).await;
    let mut p = Player::connect(&server, Encoding::Json).await;
    let s = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
        .await
        .unwrap();
    play_first(&mut p, &s).await.unwrap();
    let before = p.solo_until(|s| s.game.ply == 2 && !s.thinking).await;

    let seq = p
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
    p.expect_ack(seq).await;
    p.state_until(|_| true).await;
    // In the lobby (waiting for an opponent), a move is a lobby move.
    let notation = before.game.legal_moves[0].notation.clone();
    let refused = p
        .request(|seq| ClientMessage::Move {
            seq,
            notation: Some(notation),
            path: None,
        })
        .await;
    assert_eq!(refused, Err(ErrorCode::NoGameInProgress));
    p.request(|seq| ClientMessage::Leave { seq }).await.unwrap();

    p.request(|seq| ClientMessage::ResumeSolo { seq })
        .await
        .unwrap();
    let after = p.solo_until(|_| true).await;
    assert_eq!(after.game.moves, before.game.moves, "the game carried on");
}

async fn open_set(redis: &RedisServer) -> Vec<String> {
    redis.values(&["SMEMBERS", "jg:lobbies"]).await
}

async fn ttl(redis: &RedisServer, key: &str) -> i64 {
    redis.values(&["TTL", key]).await[0].parse().unwrap()
}

async fn note(redis: &RedisServer, identity: &str) -> Option<String> {
    let key = format!("jg:solo:{{{identity}}}");
    redis.values(&["GET", &key]).await.pop()
}

/// Every solo game in Redis: its id, and the identity its record names.
async fn stored_solo_games(redis: &RedisServer) -> Vec<(String, String)> {
    let keys = redis.values(&["KEYS", "jg:{S*}:room"]).await;
    let mut games = Vec::new();
    for key in keys {
        let record = redis.values(&["GET", &key]).await.pop().unwrap();
        let record: serde_json::Value = serde_json::from_str(&record).unwrap();
        games.push((
            record["id"].as_str().unwrap().to_owned(),
            record["owner"].as_str().unwrap().to_owned(),
        ));
    }
    games
}

/// Puts a closed solo game back as open, its keys kept and its record not
/// marked closed: what a close that was never stored leaves behind.
async fn reopen(redis: &RedisServer, id: &str) {
    let room = format!("jg:{{{id}}}:room");
    let record = redis.values(&["GET", &room]).await.pop().unwrap();
    let mut record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(record["closed"], true, "closed by its replacement");
    record["closed"] = false.into();
    redis
        .command(&["SET", &room, &record.to_string(), "KEEPTTL"])
        .await;
    for key in ["room", "fence", "moves", "games"] {
        redis
            .command(&["PERSIST", &format!("jg:{{{id}}}:{key}")])
            .await;
    }
    redis.command(&["SADD", "jg:lobbies", id]).await;
}

/// What must hold for every identity at rest: at most one of its solo
/// games is open, the one its note names; every other one of its games
/// has a TTL, and so has a note naming a closed game.
async fn only_the_current_game_is_open(redis: &RedisServer) {
    let open = open_set(redis).await;
    for (id, identity) in stored_solo_games(redis).await {
        let noted = note(redis, &identity).await;
        let room = format!("jg:{{{id}}}:room");
        if open.contains(&id) {
            assert_eq!(
                noted.as_deref(),
                Some(id.as_str()),
                "an open game is the noted one"
            );
            assert_eq!(ttl(redis, &room).await, -1, "an open game is kept");
        } else {
            assert!(ttl(redis, &room).await > 0, "closed game {id} expires");
            if noted.as_deref() == Some(id.as_str()) {
                let key = format!("jg:solo:{{{identity}}}");
                assert!(
                    ttl(redis, &key).await > 0,
                    "a note of a closed game expires"
                );
            }
        }
    }
}

/// Issue 19: after a restart, `resume_solo` gave players the practice game
/// they had replaced (discarded) about half the time, because every open
/// game was taken over and each one noted itself as its player's game.
/// A replaced game is now closed (out of the open set, with a TTL) when
/// it is replaced, and only the noted game is ever taken over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_practice_game_is_closed_and_never_resumed_after_kill_9() {
    use jumpgate_e2e::JumpgateProcess;
    let redis = RedisServer::start().await;
    let env = [("JUMPGATE_REDIS_URL", redis.url())];
    let mut first = JumpgateProcess::start(&env).await;
    // (token, identity, replaced game, current game)
    let mut players = Vec::new();
    for _ in 0..12 {
        let mut p = Player::connect_to(&first, Encoding::Json, None).await;
        let old = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
            .await
            .unwrap();
        play_first(&mut p, &old).await.unwrap();
        p.solo_until(|s| s.game.ply == 2 && !s.thinking).await;
        let current = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
            .await
            .unwrap();
        assert_ne!(old.id, current.id);
        players.push((p.token.clone(), p.id.clone(), old.id, current.id));
    }
    first.kill_9();
    // Half the replaced games are put back as the code before the fix left
    // every one of them (open, no TTL, not marked closed), as if their
    // close had never been stored: they are closed when taken over.
    for (_, _, old, _) in players.iter().take(6) {
        reopen(&redis, old).await;
    }

    let second = JumpgateProcess::start_at(first.addr, &env).await;
    for (token, _, old, current) in &players {
        let mut p = Player::connect_to(&second, Encoding::Json, Some(token.clone())).await;
        p.request(|seq| ClientMessage::ResumeSolo { seq })
            .await
            .unwrap();
        let s = p.solo_until(|_| true).await;
        assert_eq!(&s.id, current, "the current game, not the replaced {old}");
    }
    let open = open_set(&redis).await;
    for (_, identity, old, current) in &players {
        assert!(!open.contains(old), "a replaced game is not open");
        assert!(open.contains(current));
        assert_eq!(note(&redis, identity).await.as_ref(), Some(current));
    }
    only_the_current_game_is_open(&redis).await;
}

/// The replacement with a fault in its middle: Redis stalls for longer
/// than the server's timeout while players replace their games (the close
/// of the old game and the note of the new one time out), and the server
/// is killed with SIGKILL during the stall. Whatever landed, a restarted
/// server resumes no replaced game, and a replacement after that closes
/// whatever the stall left open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_a_game_during_a_stall_and_a_kill_9_never_resumes_a_discarded_one() {
    use jumpgate_e2e::JumpgateProcess;
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_REDIS_TIMEOUT_MS", "300".to_owned()),
    ];
    let mut first = JumpgateProcess::start(&env).await;
    let mut players = Vec::new();
    for _ in 0..6 {
        let mut p = Player::connect_to(&first, Encoding::Json, None).await;
        let old = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
            .await
            .unwrap();
        play_first(&mut p, &old).await.unwrap();
        p.solo_until(|s| s.game.ply == 2 && !s.thinking).await;
        players.push((p, old.id));
    }
    redis.pause(1_500).await;
    for (p, _) in &mut players {
        p.send(|seq| ClientMessage::StartSolo {
            seq,
            rule_set: RuleSet::American,
            mode: SoloMode::Computer,
            level: Some(BotLevel::Tamer),
            ranked: false,
        })
        .await;
    }
    // Past the timeout of the old game's close, within the stall.
    tokio::time::sleep(Duration::from_millis(500)).await;
    first.kill_9();
    tokio::time::sleep(Duration::from_millis(1_200)).await;

    let second = JumpgateProcess::start_at(first.addr, &env).await;
    let mut again = Vec::new();
    for (p, old) in &players {
        let mut p = Player::connect_to(&second, Encoding::Json, Some(p.token.clone())).await;
        // No `start_solo` was acknowledged: the old game is back, or it
        // was discarded (PROTOCOL.md: a refused `start_solo` may have
        // discarded it); never another.
        match p.request(|seq| ClientMessage::ResumeSolo { seq }).await {
            Ok(()) => assert_eq!(&p.solo_until(|_| true).await.id, old),
            Err(code) => assert_eq!(code, ErrorCode::NoGameInProgress),
        }
        let current = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
            .await
            .unwrap();
        again.push((p.token.clone(), old.clone(), current.id));
    }
    only_the_current_game_is_open(&redis).await;
    let mut first = second;
    first.kill_9();
    let third = JumpgateProcess::start_at(first.addr, &env).await;
    for (token, old, current) in &again {
        let mut p = Player::connect_to(&third, Encoding::Json, Some(token.clone())).await;
        p.request(|seq| ClientMessage::ResumeSolo { seq })
            .await
            .unwrap();
        let s = p.solo_until(|_| true).await;
        assert_eq!(&s.id, current, "the current game, not {old}");
    }
    only_the_current_game_is_open(&redis).await;
}

/// A practice game nobody attaches to for the idle time closes: out of
/// the open set, its keys and its note expiring, and `resume_solo` no
/// longer finds it; the close is stored even when Redis stalls for
/// longer than the timeout just as it is made (it is tried again). An
/// unfinished ranked game left alike stays (leaving does not forfeit it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_practice_game_left_unattached_closes_and_expires_through_a_stall() {
    let redis = RedisServer::start().await;
    let url = redis.url();
    let server = TestServer::start(move |s| {
        s.redis_url = Some(url);
        s.redis_timeout = Duration::from_millis(300);
        s.idle_lobby = Duration::from_secs(1);
        s.executive_budget = Duration::from_millis(20);
        s.accounts = Some(AccountSettings {
            issuer: "https://id.test".into(),
            audience: "jumpgate".into(),
            hs256: vec![("k1".into(), SECRET.to_vec())],
            ..AccountSettings::default()
        });
    })
    .await;
    let mut ranked = Player::connect_with(&server, Encoding::Json, Some(token("cy", "Cy"))).await;
    let r = start(&mut ranked, BotLevel::Executive, true, SoloMode::Computer)
        .await
        .unwrap();
    ranked
        .request(|seq| ClientMessage::Leave { seq })
        .await
        .unwrap();

    let mut p = Player::connect(&server, Encoding::Json).await;
    let s = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
        .await
        .unwrap();
    play_first(&mut p, &s).await.unwrap();
    p.solo_until(|s| s.game.ply == 2 && !s.thinking).await;
    p.request(|seq| ClientMessage::Leave { seq }).await.unwrap();
    redis.pause(1_500).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while open_set(&redis).await.contains(&s.id) {
        assert!(tokio::time::Instant::now() < deadline, "never closed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ttl(&redis, &format!("jg:{{{}}}:room", s.id)).await > 0);
    assert_eq!(
        p.request(|seq| ClientMessage::ResumeSolo { seq }).await,
        Err(ErrorCode::NoGameInProgress)
    );
    assert!(open_set(&redis).await.contains(&r.id), "ranked games wait");
    only_the_current_game_is_open(&redis).await;
    // The player simply starts another.
    let again = start(&mut p, BotLevel::Tamer, false, SoloMode::Computer)
        .await
        .unwrap();
    assert_ne!(again.id, s.id);
    ranked
        .request(|seq| ClientMessage::ResumeSolo { seq })
        .await
        .unwrap();
    assert_eq!(ranked.solo_until(|_| true).await.id, r.id);
}

/// A replaced ranked game whose result was scored but whose record still
/// says the score is pending (the write after the score never landed),
/// left open by a close that was never stored: taken over at the next
/// start, it is closed, and its result is recorded again but counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_ranked_game_left_pending_counts_once_and_closes() {
    let redis = RedisServer::start().await;
    let first = server(Some(&redis), 500).await;
    let tok = token("dee", "Dee");
    let mut dee = Player::connect_with(&first, Encoding::Json, Some(tok.clone())).await;
    let ranked = start(&mut dee, BotLevel::Executive, true, SoloMode::Computer)
        .await
        .unwrap();
    dee.request(|seq| ClientMessage::Resign { seq })
        .await
        .unwrap();
    let current = start(&mut dee, BotLevel::Tamer, false, SoloMode::Computer)
        .await
        .unwrap();
    assert_eq!(board(&first).await["entries"][0]["games"], 1);
    drop(first);
    drop(dee);
    // The next instance takes over only what a dead one owned: wait until
    // the first one has said it is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while redis.command(&["KEYS", "jg:alive:*"]).await != "*0\r\n" {
        assert!(tokio::time::Instant::now() < deadline, "never retired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    reopen(&redis, &ranked.id).await;
    let room = format!("jg:{{{}}}:room", ranked.id);
    let record = redis.values(&["GET", &room]).await.pop().unwrap();
    let mut record: serde_json::Value = serde_json::from_str(&record).unwrap();
    record["pending_score"] = true.into();
    redis.command(&["SET", &room, &record.to_string()]).await;

    let second = server(Some(&redis), 500).await;
    let mut dee = Player::connect_with(&second, Encoding::Json, Some(tok)).await;
    dee.request(|seq| ClientMessage::ResumeSolo { seq })
        .await
        .unwrap();
    assert_eq!(dee.solo_until(|_| true).await.id, current.id);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while open_set(&redis).await.contains(&ranked.id) {
        assert!(tokio::time::Instant::now() < deadline, "never closed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = board(&second).await;
    assert_eq!(b["entries"][0]["games"], 1, "counted once: {b}");
    assert_eq!(b["entries"][0]["losses"], 1);
    only_the_current_game_is_open(&redis).await;
}
