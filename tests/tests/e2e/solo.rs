//! Solo play over real WebSockets: the computer replies, undo, ranked
//! games and their leaderboard, same-device games, resume after a restart.

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
    let url = redis.map(|r| r.url());
    TestServer::start(move |s| {
        s.redis_url = url;
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
    play_first(&mut p, &s).await.unwrap();
    let s = p.solo_until(|s| s.game.ply == 1).await;
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
    let b = board(&server).await;
    assert_eq!(b["entries"][0]["games"], 2);
    assert_eq!(b["entries"][0]["losses"], 1);
    assert_eq!(b["entries"][0]["points"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ranked_game_resumes_after_a_restart() {
    let redis = RedisServer::start().await;
    let first = server(Some(&redis), 500).await;
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

    let second = server(Some(&redis), 500).await;
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
        Box::new(RedisLeaderboards::open(&redis.url(), Duration::from_secs(2)).unwrap()),
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
                b.record(&game, "russian", account, name, *o).await.unwrap();
                b.record(&game, "russian", account, name, *o).await.unwrap(); // once
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
