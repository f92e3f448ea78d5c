//! The space rule sets through the real server: Space Mode lobbies show
//! wormholes and charges and play boosts, a Space Mode game comes back from
//! Redis with the same wormholes, orbit series are scored by points, and the
//! computer plays both in solo games.

use std::time::Duration;

use jumpgate_e2e::{JumpgateProcess, Player, RedisServer, TestServer, http_get, lobby_pair};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Color, Encoding, GameView, Phase, RuleSet, SeriesEndReason, SoloMode,
};

fn game(p: &Player) -> GameView {
    p.state
        .as_ref()
        .and_then(|s| s.game.clone())
        .expect("a game")
}

/// The side to move plays the move `pick` chooses among the legal moves;
/// both players then see it. Returns the move's notation.
async fn play_one(
    a: &mut Player,
    b: &mut Player,
    pick: impl Fn(&GameView) -> usize,
) -> jumpgate_protocol::MoveView {
    let ply = game(a).ply;
    b.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply >= ply))
        .await;
    let mover = if a.my_turn() { &mut *a } else { &mut *b };
    let g = game(mover);
    let chosen = g.legal_moves[pick(&g)].clone();
    let text = chosen.notation.clone();
    let seq = mover
        .send(|seq| ClientMessage::Move {
            seq,
            notation: Some(text),
            path: None,
        })
        .await;
    mover.expect_ack(seq).await;
    a.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply > ply))
        .await;
    b.state_until(|s| s.game.as_ref().is_some_and(|g| g.ply > ply))
        .await;
    chosen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_lobby_shows_wormholes_and_charges_and_plays_a_boost() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, _) = lobby_pair(&server, RuleSet::Space, 1).await;
    let start = game(&host);
    let space = start.space.clone().expect("Space Mode state");
    assert_ne!(space.wormholes[0], space.wormholes[1]);
    let middle_rows: Vec<char> = space
        .wormholes
        .iter()
        .map(|sq| sq.chars().nth(1).unwrap())
        .collect();
    assert!(
        middle_rows.contains(&'4') && middle_rows.contains(&'5'),
        "a new game links one square on each middle row: {:?}",
        space.wormholes
    );
    assert_eq!((space.boosts.dark, space.boosts.light), (3, 3));
    assert!(start.board.is_none() && start.points.is_none());
    assert!(
        start.legal_moves.iter().any(|m| m.boost),
        "boosts are among the opening moves"
    );

    // Dark boosts at once.
    let boost = play_one(&mut host, &mut guest, |g| {
        g.legal_moves.iter().position(|m| m.boost).unwrap()
    })
    .await;
    assert!(boost.boost);
    let after = game(&guest);
    let charges = after.space.as_ref().unwrap().boosts;
    assert_eq!((charges.dark, charges.light), (2, 3), "one charge spent");
    assert!(after.last_move.as_ref().unwrap().boost);
    // Light answers with a plain move; its charges stay.
    play_one(&mut host, &mut guest, |g| {
        g.legal_moves.iter().position(|m| !m.boost).unwrap()
    })
    .await;
    let after = game(&host);
    let charges = after.space.as_ref().unwrap().boosts;
    assert_eq!((charges.dark, charges.light), (2, 3));
    assert_eq!(after.moves.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn space_game_recovered_from_redis_has_the_same_wormholes() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()),
    ];
    let mut first = JumpgateProcess::start(&env).await;
    let (mut host, mut guest, code) = lobby_pair(&first, RuleSet::Space, 1).await;
    let mut seen = vec![game(&host).space.unwrap().wormholes];
    for i in 0..7 {
        // Mix boosts in while they last, so charges are part of the check.
        play_one(&mut host, &mut guest, |g| {
            let boost = g.legal_moves.iter().position(|m| m.boost);
            if i % 3 == 0 { boost.unwrap_or(0) } else { 0 }
        })
        .await;
        seen.push(game(&host).space.unwrap().wormholes);
    }
    let before = game(&host);
    assert!(
        seen.windows(2).any(|w| w[0] != w[1]),
        "the wormholes moved during the game: {seen:?}"
    );
    first.kill_9();

    let second = JumpgateProcess::start(&env).await;
    let mut host = Player::connect_to(&second, Encoding::MsgPack, Some(host.token.clone())).await;
    let state = host.join(&code).await;
    let after = state.game.clone().expect("the game resumed");
    assert_eq!(after.moves, before.moves);
    assert_eq!(after.fen, before.fen);
    assert_eq!(after.pieces, before.pieces);
    assert_eq!(after.space, before.space, "same wormholes and charges");
    assert_eq!(after.legal_moves, before.legal_moves);
    // And play goes on from there.
    let mut guest = Player::connect_to(&second, Encoding::Json, Some(guest.token.clone())).await;
    guest.join(&code).await;
    play_one(&mut host, &mut guest, |_| 0).await;
    assert_eq!(game(&host).ply, before.ply + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orbit_series_is_scored_by_points() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, _) = lobby_pair(&server, RuleSet::Orbit, 1).await;
    let g = game(&host);
    let board = g.board.as_ref().expect("the orbit board's geometry");
    assert_eq!(board.squares.len(), 25);
    assert!(board.squares.iter().any(|s| s.name == "C"));
    assert!(
        board
            .lines
            .iter()
            .any(|l| l[0] == "C" && l[1] == "B1" || l[0] == "B1" && l[1] == "C")
    );
    assert_eq!(g.pieces.len(), 12);
    assert!(g.points.is_some());
    assert_eq!(host.state.as_ref().unwrap().series.points, Some(vec![0, 0]));

    for _ in 0..400 {
        if game(&host).result.is_some() {
            break;
        }
        play_one(&mut host, &mut guest, |g| {
            g.ply as usize % g.legal_moves.len()
        })
        .await;
    }
    let finished = host.phase(Phase::Finished).await;
    let g = finished.game.clone().unwrap();
    let result = g.result.expect("a result");
    let points = result.points.expect("orbit results carry points");
    let dark_seat = usize::from(g.dark_seat);
    let mut by_seat = [0; 2];
    by_seat[dark_seat] = points.dark;
    by_seat[1 - dark_seat] = points.light;
    assert_eq!(finished.series.points, Some(by_seat.to_vec()));
    let series = finished.series.result.expect("the series ended");
    assert_eq!(series.reason, SeriesEndReason::Points);
    let expected_winner = match by_seat[0].cmp(&by_seat[1]) {
        std::cmp::Ordering::Greater => Some(0),
        std::cmp::Ordering::Less => Some(1),
        std::cmp::Ordering::Equal => None,
    };
    assert_eq!(series.winner, expected_winner);
    let expected_game_winner = match points.dark.cmp(&points.light) {
        std::cmp::Ordering::Greater => Some(Color::Dark),
        std::cmp::Ordering::Less => Some(Color::Light),
        std::cmp::Ordering::Equal => None,
    };
    assert_eq!(result.winner, expected_game_winner);

    // The finished game downloads as PDN with its moves and points.
    let (status, pdn) = http_get(server.addr, &format!("/r/{}/games.pdn", finished.code)).await;
    assert_eq!(status, 200);
    assert!(pdn.contains("[Variant \"orbit\"]"), "{pdn}");
    // White first: in orbit Light is White (Dark, who moves first, is Black).
    assert!(pdn.contains(&format!("[Points \"{}-{}\"]", points.light, points.dark)));
    assert!(pdn.contains(&format!("1. {} {}", g.moves[0], g.moves[1])));
}

#[tokio::test]
async fn both_space_rule_sets_have_their_own_leaderboard() {
    let server = TestServer::start(|_| {}).await;
    for name in ["space", "orbit"] {
        let (status, body) = http_get(server.addr, &format!("/api/leaderboards/{name}")).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!("\"rule_set\":\"{name}\"")), "{body}");
    }
    let (status, _) = http_get(server.addr, "/api/leaderboards/asteroids").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orbit_resignation_scores_three_points_for_the_winner() {
    let server = TestServer::start(|_| {}).await;
    let (mut host, mut guest, _) = lobby_pair(&server, RuleSet::Orbit, 3).await;
    play_one(&mut host, &mut guest, |_| 0).await;
    let seq = guest.send(|seq| ClientMessage::Resign { seq }).await;
    guest.expect_ack(seq).await;
    let s = host.phase(Phase::Finished).await;
    let result = s.game.unwrap().result.unwrap();
    let points = result.points.unwrap();
    // The guest sits in seat 1, which plays Light in round one.
    assert_eq!((points.dark, points.light), (3, 0));
    assert_eq!(s.series.points, Some(vec![3, 0]));
    assert_eq!(s.series.result.unwrap().winner, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_computer_plays_both_space_rule_sets() {
    let server = TestServer::start(|s| s.executive_budget = Duration::from_millis(20)).await;
    for rule_set in [RuleSet::Space, RuleSet::Orbit] {
        for level in [BotLevel::Tamer, BotLevel::Executive] {
            let mut p = Player::connect(&server, Encoding::Json).await;
            let seq = p
                .send(|seq| ClientMessage::StartSolo {
                    seq,
                    rule_set,
                    mode: SoloMode::Computer,
                    level: Some(level),
                    ranked: false,
                })
                .await;
            p.expect_ack(seq).await;
            let s = p.solo_until(|s| !s.game.legal_moves.is_empty()).await;
            assert_eq!(s.rule_set, rule_set);
            assert_eq!(s.game.space.is_some(), rule_set == RuleSet::Space);
            assert_eq!(s.game.board.is_some(), rule_set == RuleSet::Orbit);
            // Three moves of ours; the computer answers each.
            let mut s = s;
            let mut history = vec![(s.game.fen.clone(), s.game.space.clone())];
            for _ in 0..3 {
                if s.game.result.is_some() {
                    break;
                }
                let ply = s.game.ply;
                let text = s.game.legal_moves[0].notation.clone();
                let seq = p
                    .send(|seq| ClientMessage::Move {
                        seq,
                        notation: Some(text),
                        path: None,
                    })
                    .await;
                p.expect_ack(seq).await;
                s = p
                    .solo_until(|s| {
                        s.game.ply > ply
                            && !s.thinking
                            && (!s.game.legal_moves.is_empty() || s.game.result.is_some())
                    })
                    .await;
                history.push((s.game.fen.clone(), s.game.space.clone()));
            }
            assert!(
                s.game.result.is_some() || s.game.ply >= 5,
                "the computer replied: {:?}",
                s.game.moves
            );
            if s.game.result.is_none() {
                // Undo takes back our move and the reply: the board, and in
                // Space Mode the wormholes and charges, are as they were.
                let seq = p.send(|seq| ClientMessage::Undo { seq }).await;
                p.expect_ack(seq).await;
                let undone = p.solo_until(|s| !s.thinking).await;
                let earlier = &history[history.len() - 2];
                assert_eq!(
                    (&undone.game.fen, &undone.game.space),
                    (&earlier.0, &earlier.1)
                );
            }
            let _ = p.send(|seq| ClientMessage::Leave { seq }).await;
        }
    }
}

#[tokio::test]
async fn an_orbit_lobby_shows_its_board_before_the_first_game() {
    let server = TestServer::start(|_| {}).await;
    for rule_set in [RuleSet::Orbit, RuleSet::American] {
        let mut host = Player::connect_to(&server, Encoding::MsgPack, None).await;
        host.request(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await
        .unwrap();
        let waiting = host.state_until(|_| true).await;
        assert!(waiting.game.is_none());
        let board = waiting.board.as_ref().map(|b| b.squares.len());
        let expected = (rule_set == RuleSet::Orbit).then_some(25);
        assert_eq!(board, expected, "{rule_set:?} while waiting");

        let mut guest = Player::connect_to(&server, Encoding::Json, None).await;
        guest.join(&waiting.code).await;
        let playing = host.state_until(|s| s.game.is_some()).await;
        assert!(playing.board.is_none(), "the game carries it now");
        let in_game = playing.game.as_ref().unwrap().board.as_ref();
        assert_eq!(in_game.map(|b| b.squares.len()), expected);
    }
}
