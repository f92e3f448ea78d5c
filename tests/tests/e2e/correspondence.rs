//! Correspondence lobbies against real servers and a real Redis, with the
//! windows set to seconds: claims before and after the window, a series
//! played across a kill -9, expiry with stakes refunded exactly, "my games"
//! for several identities, and idle lobbies unloaded from memory and
//! loaded again (through a Redis stall, and by a second instance).

use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, Player, RedisServer, TestServer};
use jumpgate_protocol::codec::Encoding;
use jumpgate_protocol::{
    ClientMessage, ErrorCode, GameEndReason, GameKind, LobbySummary, MyGame, Pace, Phase,
    RoomState, RuleSet, SeriesEndReason, ServerMessage,
};
use jumpgate_server::identity::AccountSettings;

const SECRET: &[u8] = b"correspondence-account-secret-0123456789";

fn accounts() -> AccountSettings {
    AccountSettings {
        issuer: "https://id.test".into(),
        audience: "jumpgate".into(),
        hs256: vec![("k1".into(), SECRET.to_vec())],
        ..AccountSettings::default()
    }
}

/// A server on `redis` with a claim window of `claim`, a week's expiry
/// unless `expiry` says otherwise, and idle lobbies unloaded after
/// `unload`.
async fn server(redis: &RedisServer, claim: u64, expiry: u64, unload: u64) -> TestServer {
    let url = redis.url();
    TestServer::start(move |s| {
        s.redis_url = Some(url);
        s.break_time = Duration::from_millis(200);
        s.correspondence_claim = Duration::from_secs(claim);
        s.correspondence_expiry = Duration::from_secs(expiry);
        s.correspondence_unload = Duration::from_secs(unload);
        s.heartbeat_ttl = Duration::from_secs(2);
        s.accounts = Some(accounts());
    })
    .await
}

async fn create(host: &mut Player, series_length: u8, stake: Option<u32>) -> RoomState {
    host.state = None;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length,
            invite_only: false,
            stake,
            pace: Some(Pace::Correspondence),
            draw_rules: None,
        })
        .await;
    host.expect_ack(seq).await;
    let state = host.state_until(|_| true).await;
    assert_eq!(state.pace, Pace::Correspondence);
    assert!(state.expires_at.is_some(), "a correspondence lobby expires");
    state
}

async fn claim(player: &mut Player) -> Result<(), ErrorCode> {
    player
        .request(|seq| ClientMessage::ClaimForfeit { seq })
        .await
}

/// The answer to `my_games`.
async fn my_games(player: &mut Player) -> Vec<MyGame> {
    let seq = player.send(|seq| ClientMessage::MyGames { seq }).await;
    loop {
        match player.recv().await {
            ServerMessage::MyGames { seq: s, games } if s == seq => return games,
            ServerMessage::Error {
                seq: Some(s),
                code,
                message,
            } if s == seq => panic!("my_games refused: {code} {message}"),
            _ => {}
        }
    }
}

/// The answer to `lobby_info`.
async fn lobby_info(player: &mut Player, code: &str) -> Result<LobbySummary, ErrorCode> {
    let c = code.to_owned();
    let seq = player
        .send(|seq| ClientMessage::LobbyInfo {
            seq,
            code: c,
            invite: None,
        })
        .await;
    loop {
        match player.recv().await {
            ServerMessage::LobbyInfo { seq: s, lobby } if s == seq => return Ok(lobby),
            ServerMessage::Error {
                seq: Some(s), code, ..
            } if s == seq => return Err(code),
            _ => {}
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Waits until Redis shows the lobby unloaded: its fence released and
/// parked, and the lobby listed as dormant.
async fn until_unloaded(redis: &RedisServer, code: &str) {
    let fence = format!("jg:{{{code}}}:fence");
    for _ in 0..200 {
        let parked = redis.command(&["HGET", &fence, "parked"]).await;
        let owner = redis.command(&["HGET", &fence, "owner"]).await;
        let listed = redis.command(&["ZSCORE", "jg:dormant", code]).await;
        if parked.contains("\r\n1\r\n") && owner.starts_with("$0") && !listed.starts_with("$-1") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("lobby {code} was not unloaded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_is_refused_before_the_window_and_accepted_after() {
    let redis = RedisServer::start().await;
    let server = server(&redis, 2, 3_600, 3_600).await;
    let mut ann = Player::connect(&server, Encoding::MsgPack).await;
    let mut bob = Player::connect(&server, Encoding::Json).await;
    let code = create(&mut ann, 1, None).await.code;
    // Ann closes her tab; Bob opens the link a while later: the series
    // starts anyway, Ann (the creator) to move.
    let _ = ann.client.close().await;
    let mut bob_state = bob.join(&code).await;
    if bob_state.phase != Phase::Playing {
        bob_state = bob.phase(Phase::Playing).await;
    }
    let game = bob_state.game.clone().expect("a game");
    assert_eq!(game.dark_seat, 0, "whoever created the invite moves first");
    assert!(!bob.my_turn());
    // Nobody forfeits by the clock: Bob waits past the window, then claims.
    assert_eq!(
        claim(&mut bob).await,
        Err(ErrorCode::ClaimTooEarly),
        "before the window"
    );
    let token = ann.token.clone();
    let mut ann = Player::connect_with(&server, Encoding::MsgPack, Some(token)).await;
    ann.join(&code).await;
    ann.state_until(|s| s.game.is_some()).await;
    assert_eq!(
        claim(&mut ann).await,
        Err(ErrorCode::NotNow),
        "the side to move cannot claim"
    );
    ann.play_first_legal().await;
    let state = bob
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    let claim_at = state.game.as_ref().unwrap().deadline;
    assert!(claim_at > now_ms(), "the claim time lies ahead");
    assert_eq!(claim(&mut ann).await, Err(ErrorCode::ClaimTooEarly));
    tokio::time::sleep(Duration::from_millis(
        claim_at.saturating_sub(now_ms()) + 100,
    ))
    .await;
    assert_eq!(claim(&mut ann).await, Ok(()), "after the window");
    let over = bob.phase(Phase::Finished).await;
    let result = over.game.unwrap().result.expect("a result");
    assert_eq!(result.reason, GameEndReason::ForfeitClaimed);
    assert_eq!(result.winner, Some(jumpgate_protocol::Color::Dark));
    assert_eq!(over.series.result.unwrap().winner, Some(0));
    // Finished, the lobby stays open for a rematch until it expires: its
    // keys carry no TTL (a live lobby's would).
    let ttl = redis
        .command(&["TTL", &format!("jg:{{{code}}}:room")])
        .await;
    assert!(ttl.starts_with(":-1"), "no TTL while open: {ttl:?}");
    // A live lobby has nothing to claim.
    let (mut host, _guest, _) =
        jumpgate_e2e::seated_pair(&server, Encoding::Json, RuleSet::Russian, 1).await;
    assert_eq!(claim(&mut host).await, Err(ErrorCode::NotNow));
}

/// Plays until `winner` claims the round in play: the other side is to
/// move (`winner` plays a move first if it is its turn), then `winner`
/// claims once the window ran out.
async fn win_round_by_claim(winner: &mut Player, loser: &mut Player, round: u32) {
    let state = winner
        .state_until(|s| s.series.round == round && s.phase == Phase::Playing)
        .await;
    loser
        .state_until(|s| s.series.round == round && s.phase == Phase::Playing)
        .await;
    if winner.my_turn() {
        winner.play_first_legal().await;
    }
    let ply = state.game.as_ref().map_or(0, |g| g.ply);
    let state = winner
        .state_until(|s| {
            s.game
                .as_ref()
                .is_some_and(|g| g.ply >= ply && g.result.is_none())
        })
        .await;
    let claim_at = state.game.unwrap().deadline;
    tokio::time::sleep(Duration::from_millis(
        claim_at.saturating_sub(now_ms()) + 100,
    ))
    .await;
    assert_eq!(claim(winner).await, Ok(()), "round {round} claimed");
}

jumpgate_e2e::on_every_store!(
    a_correspondence_best_of_three_is_played_across_a_kill_9,
    best_of_three_across_a_kill_9
);

async fn best_of_three_across_a_kill_9(storage: jumpgate_e2e::Storage) {
    let mut env = storage.env();
    env.extend([
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1500".to_owned()),
        ("JUMPGATE_BREAK_MS", "200".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_CLAIM_SECS", "1".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_EXPIRY_SECS", "3600".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_UNLOAD_SECS", "3600".to_owned()),
    ]);
    let mut first = JumpgateProcess::start(&env).await;
    let mut ann = Player::connect_to(&first, Encoding::MsgPack, None).await;
    let mut bob = Player::connect_to(&first, Encoding::Json, None).await;
    let code = create(&mut ann, 3, None).await.code;
    bob.join(&code).await;
    win_round_by_claim(&mut ann, &mut bob, 1).await;
    bob.state_until(|s| s.series.round == 2 && s.phase == Phase::Playing)
        .await;
    // Round 2 is under way when the server dies.
    if bob.my_turn() {
        bob.play_first_legal().await;
    }
    let before = bob
        .state_until(|s| s.series.round == 2 && s.game.as_ref().is_some_and(|g| g.ply >= 1))
        .await;
    first.kill_9();
    let second = JumpgateProcess::start_at(first.addr, &env).await;
    let (ann_token, bob_token) = (ann.token.clone(), bob.token.clone());
    let mut ann = Player::connect_to(&second, Encoding::MsgPack, Some(ann_token)).await;
    let mut bob = Player::connect_to(&second, Encoding::Json, Some(bob_token)).await;
    let after = bob.join(&code).await;
    assert_eq!(after.series.wins, vec![1, 0], "round 1 kept");
    assert_eq!(
        after.game.as_ref().unwrap().moves,
        before.game.as_ref().unwrap().moves,
        "round 2's moves kept"
    );
    ann.join(&code).await;
    win_round_by_claim(&mut bob, &mut ann, 2).await;
    win_round_by_claim(&mut ann, &mut bob, 3).await;
    let done = bob.phase(Phase::Finished).await;
    assert_eq!(done.series.wins, vec![2, 1]);
    let result = done.series.result.unwrap();
    assert_eq!(
        (result.winner, result.reason),
        (Some(0), SeriesEndReason::Majority)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unloaded_staked_lobby_expires_by_its_stored_time_and_refunds_exactly() {
    use jumpgate_server::wallet::{RedisWallets, WalletRules, Wallets};
    let redis = RedisServer::start().await;
    // Expires 4 s after its last move; unloaded 1 s after everyone left,
    // so the expiry is found by the dormant sweep, from the stored time.
    let server = server(&redis, 1, 4, 1).await;
    let token = |sub: &str| jumpgate_e2e::account_token(SECRET, sub, &format!("Name {sub}"));
    let mut ann = Player::connect_with(&server, Encoding::Json, Some(token("corr-ann"))).await;
    let mut bob = Player::connect_with(&server, Encoding::Json, Some(token("corr-bob"))).await;
    let code = create(&mut ann, 3, Some(100)).await.code;
    bob.join(&code).await;
    ann.phase(Phase::Playing).await;
    let wallets =
        RedisWallets::open(&redis.url(), Duration::from_secs(2), WalletRules::default()).unwrap();
    assert_eq!(
        wallets.wallet(&ann.id).await.unwrap().balance,
        900,
        "staked"
    );
    ann.play_first_legal().await;
    bob.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    let _ = ann.client.close().await;
    let _ = bob.client.close().await;
    until_unloaded(&redis, &code).await;
    // The sweep loads it when due, and it ends with no winner.
    let record = format!("jg:{{{code}}}:room");
    let mut ended = false;
    for _ in 0..200 {
        let stored = redis.command(&["GET", &record]).await;
        if stored.contains("\"phase\":\"ended\"") && !stored.contains("pending_settlement\":[") {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ended, "the lobby expired while unloaded");
    for id in [&ann.id, &bob.id] {
        assert_eq!(
            wallets.wallet(id).await.unwrap().balance,
            1000,
            "{id}: every point back"
        );
    }
    let totals = wallets.totals().await.unwrap();
    assert_eq!(totals.balances + totals.escrow, totals.granted);
    assert_eq!(totals.escrow, 0);
    // Nothing recorded as a win, and the lobby is gone. Its task stores the
    // ended record a few writes before it leaves the instance's rooms; a
    // summary asked in between is answered 503 (unavailable), so that one
    // answer is waited out.
    let path = format!("/r/{code}");
    let (status, body) = jumpgate_e2e::probe_while(
        Duration::from_secs(10),
        || jumpgate_e2e::http_get(server.addr, &path),
        |(status, _)| *status == 503,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let mut ann = Player::connect_with(&server, Encoding::Json, Some(token("corr-ann"))).await;
    let mut carl = Player::connect_with(&server, Encoding::Json, Some(token("corr-carl"))).await;
    let code = create(&mut ann, 1, None).await.code;
    let state = carl.join(&code).await;
    let record = state.players[0].as_ref().unwrap().record.clone().unwrap();
    assert_eq!(record.series_won, 0, "an expired series is no win");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_games_lists_exactly_each_identitys_open_games_and_whose_turn() {
    let redis = RedisServer::start().await;
    let server = server(&redis, 3_600, 86_400, 3_600).await;
    let mut ann = Player::connect(&server, Encoding::Json).await;
    let mut bob = Player::connect(&server, Encoding::MsgPack).await;
    let mut cid = Player::connect(&server, Encoding::Json).await;
    // Ann and Bob: a game where Ann moved, so it is Bob's turn.
    let both = create(&mut ann, 1, None).await.code;
    bob.join(&both).await;
    ann.state_until(|s| s.game.is_some()).await;
    ann.play_first_legal().await;
    bob.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    // Ann alone: waiting for an opponent (created on a second connection,
    // the first being in the other lobby).
    let mut ann2 = Player::connect_with(&server, Encoding::Json, Some(ann.token.clone())).await;
    let waiting = create(&mut ann2, 3, None).await.code;
    // Cid: a lobby he left (closed), and a solo game.
    let gone = create(&mut cid, 1, None).await.code;
    cid.request(|seq| ClientMessage::Leave { seq })
        .await
        .unwrap();
    cid.request(|seq| ClientMessage::StartSolo {
        seq,
        rule_set: RuleSet::Italian,
        mode: jumpgate_protocol::SoloMode::Computer,
        level: Some(jumpgate_protocol::BotLevel::Tamer),
        ranked: false,
    })
    .await
    .unwrap();

    let ann_games = my_games(&mut ann).await;
    let codes: Vec<&str> = ann_games.iter().map(|g| g.code.as_str()).collect();
    assert_eq!(codes.len(), 2, "{ann_games:?}");
    assert!(codes.contains(&both.as_str()) && codes.contains(&waiting.as_str()));
    let game = ann_games.iter().find(|g| g.code == both).unwrap();
    assert_eq!(game.kind, GameKind::Lobby);
    assert_eq!(game.pace, Pace::Correspondence);
    assert_eq!(game.opponent.as_deref(), Some(bob.name.as_str()));
    assert!(!game.your_turn, "Bob is to move");
    assert!(game.deadline.is_some() && game.last_move_at.is_some() && game.expires_at.is_some());
    let lonely = ann_games.iter().find(|g| g.code == waiting).unwrap();
    assert_eq!(
        (lonely.phase, lonely.opponent.clone()),
        (Some(Phase::Waiting), None)
    );
    assert!(!lonely.your_turn && lonely.deadline.is_none());

    let bob_games = my_games(&mut bob).await;
    assert_eq!(bob_games.len(), 1, "{bob_games:?}");
    assert!(bob_games[0].your_turn, "Bob's move");
    assert_eq!(bob_games[0].code, both);

    // Leaving took the lobby off Cid's list at once (not only when read).
    let listed = redis
        .command(&["SISMEMBER", &format!("jg:mine:{{{}}}", cid.id), &gone])
        .await;
    assert!(listed.starts_with(":0"), "{listed:?}");
    let listed = redis
        .command(&["SISMEMBER", &format!("jg:mine:{{{}}}", bob.id), &both])
        .await;
    assert!(listed.starts_with(":1"), "{listed:?}");
    let cid_games = my_games(&mut cid).await;
    assert_eq!(
        cid_games.len(),
        1,
        "the lobby he left is not listed: {cid_games:?}"
    );
    assert_eq!(cid_games[0].kind, GameKind::Solo);
    assert_eq!(cid_games[0].opponent.as_deref(), Some("tamer"));
    assert!(!cid.name.is_empty() && gone != cid_games[0].code);

    // The same over HTTP, with the token; nothing without one.
    let auth = format!("Bearer {}", bob.token);
    let (status, body) =
        jumpgate_e2e::http_get_with(server.addr, "/api/my-games", &[("Authorization", &auth)])
            .await;
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value =
        serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["games"][0]["code"], both.as_str());
    assert_eq!(json["games"][0]["your_turn"], true);
    let (status, _) = jumpgate_e2e::http_get(server.addr, "/api/my-games").await;
    assert_eq!(status, 401);
    let (status, _) = jumpgate_e2e::http_get_with(
        server.addr,
        "/api/my-games",
        &[("Authorization", "Bearer forged.token.here")],
    )
    .await;
    assert_eq!(status, 401);
    // When Bob moves, it becomes Ann's turn.
    bob.play_first_legal().await;
    let ann_games = my_games(&mut ann).await;
    assert!(ann_games.iter().find(|g| g.code == both).unwrap().your_turn);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_lobby_is_unloaded_and_loaded_again_intact_through_a_stall_and_on_another_instance()
{
    let redis = RedisServer::start().await;
    let url = redis.url();
    let secret = b"shared-secret-for-two-instances-0123456789".to_vec();
    let start = |secret: Vec<u8>| {
        let url = url.clone();
        TestServer::start(move |s| {
            s.redis_url = Some(url);
            s.token_secret = secret;
            s.redis_timeout = Duration::from_millis(300);
            s.correspondence_claim = Duration::from_secs(3_600);
            s.correspondence_unload = Duration::from_secs(1);
            s.heartbeat_ttl = Duration::from_secs(2);
        })
    };
    let a = start(secret.clone()).await;
    let mut ann = Player::connect(&a, Encoding::Json).await;
    let mut bob = Player::connect(&a, Encoding::MsgPack).await;
    let code = create(&mut ann, 3, None).await.code;
    bob.join(&code).await;
    ann.state_until(|s| s.game.is_some()).await;
    ann.play_first_legal().await;
    bob.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    bob.play_first_legal().await;
    let before = ann
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 2))
        .await;
    // Everyone leaves; Redis stalls (longer than the timeout) just as the
    // lobby is due to unload: the unload's outcome is unknown, and is
    // resolved from the fence, never guessed.
    let _ = ann.client.close().await;
    let _ = bob.client.close().await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    redis.pause(1_500).await;
    until_unloaded(&redis, &code).await;

    // Bob asks through another instance: it loads the lobby from Redis.
    let b = start(secret).await;
    let mut bob = Player::connect_to(&b, Encoding::MsgPack, Some(bob.token.clone())).await;
    let info = lobby_info(&mut bob, &code).await.expect("shown");
    assert_eq!(info.pace, Pace::Correspondence);
    assert_eq!(info.host_name.as_deref(), Some(ann.name.as_str()));
    assert_eq!(info.players.len(), 2);
    let after = bob.join(&code).await;
    assert_eq!(after.phase, Phase::Playing);
    let (was, is) = (before.game.unwrap(), after.game.clone().unwrap());
    assert_eq!((is.moves, is.fen, is.turn), (was.moves, was.fen, was.turn));
    assert!(after.version >= before.version, "versions never go down");
    // Ann comes back (through the second instance, where the lobby runs
    // now) and the game goes on.
    let mut ann = Player::connect_to(&b, Encoding::Json, Some(ann.token.clone())).await;
    ann.join(&code).await;
    ann.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 2))
        .await;
    ann.play_first_legal().await;
    bob.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 3))
        .await;
    // A code no lobby has is refused as ever.
    assert_eq!(
        lobby_info(&mut bob, "ZZZZZZZZ").await.unwrap_err(),
        ErrorCode::UnknownLobby
    );
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_holds_at_most_forty_open_lobbies_and_sees_its_private_ones() {
    let redis = RedisServer::start().await;
    let server = server(&redis, 3_600, 86_400, 3_600).await;
    let mut ann = Player::connect(&server, Encoding::Json).await;
    let token = ann.token.clone();
    let limit = jumpgate_server::my_games::MOST_OPEN_LOBBIES;
    let mut codes = Vec::new();
    for _ in 0..limit {
        // Each lobby on a connection of its own, closed after (the seat
        // stays hers).
        let mut p = Player::connect_with(&server, Encoding::Json, Some(token.clone())).await;
        codes.push(create(&mut p, 1, None).await.code);
        let _ = p.client.close().await;
    }
    let mut p = Player::connect_with(&server, Encoding::Json, Some(token.clone())).await;
    let refused = p
        .request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::American,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: Some(Pace::Correspondence),
            draw_rules: None,
        })
        .await;
    assert_eq!(refused, Err(ErrorCode::NotNow), "a 41st lobby is refused");
    let mut bob = Player::connect(&server, Encoding::Json).await;
    let other = create(&mut bob, 1, None).await.code;
    let c = other.clone();
    let refused = p
        .request(|seq| ClientMessage::JoinLobby {
            seq,
            code: c,
            invite: None,
        })
        .await;
    assert_eq!(refused, Err(ErrorCode::NotNow), "so is a seat in another");
    // Her own lobbies she may still come back to, and watch others.
    p.join(&codes[0]).await;
    let mut watcher = Player::connect_with(&server, Encoding::Json, Some(token.clone())).await;
    watcher.watch(&other).await;
    // The list holds all forty, in one message under the 16 KiB limit.
    let games = my_games(&mut ann).await;
    assert_eq!(games.len(), limit);
    let message = ServerMessage::MyGames { seq: 1, games };
    for encoding in [Encoding::Json, Encoding::MsgPack] {
        let frame = jumpgate_protocol::codec::encode_server(encoding, &message);
        assert!(
            frame.len() < jumpgate_protocol::MAX_MESSAGE_BYTES,
            "{} bytes",
            frame.len()
        );
    }

    // An invite-only lobby shows itself to its seat holder without the
    // invite (as joining does), and to nobody else.
    let mut cid = Player::connect(&server, Encoding::Json).await;
    let seq = cid
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::Russian,
            series_length: 1,
            invite_only: true,
            stake: None,
            pace: Some(Pace::Correspondence),
            draw_rules: None,
        })
        .await;
    cid.expect_ack(seq).await;
    let private = cid.state_until(|_| true).await.code;
    let shown = lobby_info(&mut cid, &private)
        .await
        .expect("its host sees it");
    assert!(shown.invite_only);
    assert_eq!(
        lobby_info(&mut bob, &private).await.unwrap_err(),
        ErrorCode::UnknownLobby
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_a_correspondence_lobby_outlives_the_idle_time() {
    let server = TestServer::start(|s| {
        s.idle_lobby = Duration::from_secs(1);
    })
    .await;
    let mut ann = Player::connect(&server, Encoding::Json).await;
    let code = create(&mut ann, 1, None).await.code;
    let _ = ann.client.close().await;
    // A live lobby would close after a second with nobody connected.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let mut bob = Player::connect(&server, Encoding::Json).await;
    let info = lobby_info(&mut bob, &code).await.expect("still open");
    assert_eq!(info.phase, Phase::Waiting);
    bob.join(&code).await;
    bob.phase(Phase::Playing).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_dormant_entry_is_listed_again_at_start() {
    let redis = RedisServer::start().await;
    let secret = b"relist-test-secret-0123456789abcdefgh".to_vec();
    let start = |secret: Vec<u8>| {
        let url = redis.url();
        TestServer::start(move |s| {
            s.redis_url = Some(url);
            s.token_secret = secret;
            s.correspondence_unload = Duration::from_secs(1);
            s.heartbeat_ttl = Duration::from_secs(1);
        })
    };
    let first = start(secret.clone()).await;
    let mut ann = Player::connect(&first, Encoding::Json).await;
    let code = create(&mut ann, 1, None).await.code;
    let _ = ann.client.close().await;
    until_unloaded(&redis, &code).await;
    let listed = redis.command(&["ZSCORE", "jg:dormant", &code]).await;
    // The entry is lost (as a failover of its master could lose it).
    redis.command(&["ZREM", "jg:dormant", &code]).await;
    drop(first);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let second = start(secret).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = redis.command(&["ZSCORE", "jg:dormant", &code]).await;
        if now == listed {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not listed again: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And the lobby is still there for the friend.
    let mut bob = Player::connect(&second, Encoding::Json).await;
    assert_eq!(
        lobby_info(&mut bob, &code).await.unwrap().phase,
        Phase::Waiting
    );
}

/// The lobbies a process holds in memory, from its `/metrics`.
async fn lobbies_live(server: &JumpgateProcess) -> i64 {
    let (_, text) = jumpgate_e2e::http_get(server.addr, "/metrics").await;
    // One line per rule set that ever had a lobby here.
    text.lines()
        .filter(|l| l.starts_with("jumpgate_lobbies_live{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<i64>().ok())
        .sum()
}

async fn until_lobbies_live(server: &JumpgateProcess, n: i64) {
    for _ in 0..200 {
        if lobbies_live(server).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{n} lobbies were never live");
}

jumpgate_e2e::on_every_store!(
    an_idle_lobby_unloads_stays_unloaded_through_a_kill_9_and_loads_intact,
    unload_and_load_across_a_kill_9
);

/// An idle correspondence lobby leaves memory, is not loaded back by the
/// start after a kill -9 (it waits to be asked for), and comes back whole
/// when a player opens it.
async fn unload_and_load_across_a_kill_9(storage: jumpgate_e2e::Storage) {
    let mut env = storage.env();
    env.extend([
        ("JUMPGATE_HEARTBEAT_TTL_MS", "1500".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_CLAIM_SECS", "3600".to_owned()),
        ("JUMPGATE_CORRESPONDENCE_UNLOAD_SECS", "1".to_owned()),
    ]);
    let mut first = JumpgateProcess::start(&env).await;
    let mut ann = Player::connect_to(&first, Encoding::MsgPack, None).await;
    let mut bob = Player::connect_to(&first, Encoding::Json, None).await;
    let code = create(&mut ann, 3, None).await.code;
    bob.join(&code).await;
    ann.state_until(|s| s.game.is_some()).await;
    let mover = if ann.my_turn() { &mut ann } else { &mut bob };
    mover.play_first_legal().await;
    let before = bob
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 1))
        .await;
    let tokens = (ann.token.clone(), bob.token.clone());
    drop((ann, bob));
    until_lobbies_live(&first, 0).await;
    first.kill_9();

    let second = JumpgateProcess::start_at(first.addr, &env).await;
    // Started, and the unloaded lobby is still out of memory.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        lobbies_live(&second).await,
        0,
        "parked lobbies wait to be asked for"
    );
    let mut bob = Player::connect_to(&second, Encoding::Json, Some(tokens.1)).await;
    let after = bob.join(&code).await;
    assert_eq!(
        after.game.as_ref().unwrap().moves,
        before.game.as_ref().unwrap().moves,
        "the lobby came back whole"
    );
    assert_eq!(lobbies_live(&second).await, 1);
    let mut ann = Player::connect_to(&second, Encoding::MsgPack, Some(tokens.0)).await;
    ann.join(&code).await;
    let mover = if ann.my_turn() { &mut ann } else { &mut bob };
    mover.play_first_legal().await;
    bob.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply == 2))
        .await;
}
