//! The `draw_rules` lobby option end to end: chosen in `create_lobby`,
//! shown in `state` and `lobby_info`, kept in Redis across a kill -9, and
//! judging the game: a Brazilian line that the federation's 5-move limit for
//! a king against a king draws (`endgame_limit`), finished after the
//! restart.

use jumpgate_e2e::{JumpgateProcess, Player, RedisServer};
use jumpgate_protocol::{
    ClientMessage, DrawRules, Encoding, GameEndReason, LobbySummary, Phase, RoomState, RuleSet,
    ServerMessage,
};

/// A Brazilian game from the start (a random playout, the same as in the
/// server's `lobby::draw_rules_tests`): a king each after ply 65, and the
/// federation's 5 moves each run out on the last move.
const KING_AGAINST_KING: [&str; 73] = [
    "g3-f4", "h6-g5", "f4xh6", "b6-a5", "c3-b4", "a5xc3", "d2xb4", "f6-g5", "h6xf4", "c7-b6",
    "h2-g3", "g7-f6", "b4-c5", "d6xb4", "a3xc5", "b6xd4", "e3xc5", "f6-e5", "f4xd6", "h8-g7",
    "b2-c3", "b8-c7", "d6xb8", "g7-h6", "c5-d6", "e7xc5", "g1-h2", "f8-e7", "c3-b4", "c5xa3",
    "b8-e5", "e7-f6", "e5xg7", "h6xf8", "f2-e3", "f8-e7", "e3-f4", "e7-f6", "f4-g5", "f6xf2",
    "e1xg3", "d8-e7", "g3-f4", "e7-f6", "c1-d2", "f6-e5", "f4xd6", "a7-b6", "d6-c7", "b6xd8",
    "h2-g3", "d8-c7", "a1-b2", "a3xe3", "g3-h4", "e3-f2", "h4-g5", "f2-g1", "g5-f6", "g1-a7",
    "f6-e7", "a7-b8", "e7-f8", "c7-d6", "f8xc5", "b8-f4", "c5-b4", "f4-e3", "b4-c3", "e3-c5",
    "c3-d2", "c5-b6", "d2-b4",
];

fn ply(state: &RoomState) -> u32 {
    state.game.as_ref().map_or(0, |g| g.ply)
}

/// Plays `moves` in turn, each by whichever of the two is to move, both
/// seeing every move before the next.
async fn play_line(a: &mut Player, b: &mut Player, moves: &[&str]) {
    for text in moves {
        let target = ply(a.state.as_ref().expect("a state"));
        b.state_until(|s| ply(s) >= target).await;
        let mover = if a.my_turn() { &mut *a } else { &mut *b };
        assert!(mover.my_turn(), "someone is to move before {text}");
        let notation = (*text).to_owned();
        let seq = mover
            .send(|seq| ClientMessage::Move {
                seq,
                notation: Some(notation),
                path: None,
            })
            .await;
        mover.expect_ack(seq).await;
        a.state_until(|s| ply(s) > target).await;
        b.state_until(|s| ply(s) > target).await;
    }
}

async fn lobby_info(player: &mut Player, code: &str) -> LobbySummary {
    let c = code.to_owned();
    let seq = player
        .send(|seq| ClientMessage::LobbyInfo {
            seq,
            code: c,
            invite: None,
        })
        .await;
    loop {
        if let ServerMessage::LobbyInfo { seq: s, lobby } = player.recv().await
            && s == seq
        {
            return lobby;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn federation_draw_rules_are_kept_and_judge_the_game() {
    let redis = RedisServer::start().await;
    let env = [
        ("JUMPGATE_REDIS_URL", redis.url()),
        ("JUMPGATE_MOVE_CLOCK_MS", "60000".to_owned()),
    ];
    let mut first = JumpgateProcess::start(&env).await;

    let mut host = Player::connect_to(&first, Encoding::MsgPack, None).await;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::Brazilian,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: Some(DrawRules::Federation),
        })
        .await;
    host.expect_ack(seq).await;
    let created = host.state_until(|_| true).await;
    assert_eq!(created.draw_rules, DrawRules::Federation);
    let code = created.code;

    let mut passer_by = Player::connect_to(&first, Encoding::Json, None).await;
    let shown = lobby_info(&mut passer_by, &code).await;
    assert_eq!(shown.draw_rules, DrawRules::Federation);
    assert_eq!(shown.rule_set, RuleSet::Brazilian);

    let mut guest = Player::connect_to(&first, Encoding::Json, None).await;
    guest.join(&code).await;
    host.phase(Phase::Playing).await;
    let (before, after) = KING_AGAINST_KING.split_at(70);
    play_line(&mut host, &mut guest, before).await;
    first.kill_9();

    let second = JumpgateProcess::start(&env).await;
    let mut host = Player::connect_to(&second, Encoding::MsgPack, Some(host.token)).await;
    let resumed = host.join(&code).await;
    assert_eq!(resumed.draw_rules, DrawRules::Federation, "kept in Redis");
    assert_eq!(resumed.game.as_ref().map(|g| g.moves.len()), Some(70));
    let mut guest = Player::connect_to(&second, Encoding::Json, Some(guest.token)).await;
    guest.join(&code).await;
    play_line(&mut host, &mut guest, after).await;

    let ended = host
        .state_until(|s| s.game.as_ref().is_some_and(|g| g.result.is_some()))
        .await;
    let result = ended.game.and_then(|g| g.result).unwrap();
    assert_eq!(result.reason, GameEndReason::EndgameLimit);
    assert_eq!(result.winner, None);
    assert_eq!(ended.series.draws, 1);
    let mut passer_by = Player::connect_to(&second, Encoding::MsgPack, None).await;
    assert_eq!(
        lobby_info(&mut passer_by, &code).await.draw_rules,
        DrawRules::Federation
    );
}

/// A client that leaves the option out gets the seeds' rules, and the
/// option is not shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_client_gets_the_standard_rules() {
    let server = jumpgate_e2e::TestServer::start(|_| {}).await;
    let mut host = Player::connect(&server, Encoding::Json).await;
    let seq = host
        .send(|seq| ClientMessage::CreateLobby {
            seq,
            rule_set: RuleSet::Russian,
            series_length: 1,
            invite_only: false,
            stake: None,
            pace: None,
            draw_rules: None,
        })
        .await;
    host.expect_ack(seq).await;
    let state = host.state_until(|_| true).await;
    assert_eq!(state.draw_rules, DrawRules::Standard);
    let mut passer_by = Player::connect(&server, Encoding::MsgPack).await;
    assert_eq!(
        lobby_info(&mut passer_by, &state.code).await.draw_rules,
        DrawRules::Standard
    );
}
