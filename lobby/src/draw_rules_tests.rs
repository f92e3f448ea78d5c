//! The `draw_rules` lobby option, driven directly: the games a lobby starts
//! are judged by the rules it was created with, and the choice survives the
//! stored record (records written before the option load as `standard`).

use super::*;
use jumpgate_rules::RuleSet;

/// A Brazilian game from the start position (a random playout) that ends
/// with a king each: the federation's 5 moves each run out on the last
/// move, while under the seeds' rules play goes on (their 20-ply count was
/// last reset by the capture on ply 65).
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

fn brazilian_lobby(draw_rules: DrawRules, now: Instant) -> Lobby {
    let options = LobbyOptions {
        rule_set: Variant::Draughts(RuleSet::Brazilian),
        series_length: 1,
        invite_only: false,
        stake: 0,
        pace: Pace::Live,
        draw_rules,
    };
    let timing = Timing {
        move_clock: Duration::from_secs(600),
        break_time: Duration::from_secs(3),
        claim_after: Duration::from_secs(2 * 86_400),
        expire_after: Duration::from_secs(7 * 86_400),
    };
    let mut lobby = Lobby::new(RoomCode::generate(), options, None, "a_ann", timing, 1, now);
    for id in ["a_ann", "a_bob"] {
        let identity = Identity {
            id: id.into(),
            name: id.into(),
            guest: false,
        };
        lobby.enter(&identity, None, false, &|_| true, now).unwrap();
    }
    assert_eq!(lobby.phase, Phase::Playing);
    lobby
}

/// Plays `moves` in turn, each by the seat to move.
fn play(lobby: &mut Lobby, moves: &[&str], now: Instant) {
    for (i, text) in moves.iter().enumerate() {
        let seat = lobby.seat_to_move().expect("a game in play");
        let id = ["a_ann", "a_bob"][seat];
        let seq = 100 + lobby.round.as_ref().unwrap().notations.len() as u32;
        let action = Action::Move {
            notation: Some((*text).into()),
            path: None,
        };
        lobby
            .act(id, seq, action, now)
            .unwrap_or_else(|e| panic!("move {} ({text}): {e}", i + 1));
    }
}

fn round_result(lobby: &Lobby) -> Option<GameResult> {
    lobby.round.as_ref().and_then(|r| r.result)
}

#[test]
fn a_federation_lobby_draws_by_its_endgame_limit() {
    let now = Instant::now();
    let mut lobby = brazilian_lobby(DrawRules::Federation, now);
    assert_eq!(
        lobby.round.as_ref().unwrap().game.draw_rules(),
        DrawRules::Federation
    );
    play(&mut lobby, &KING_AGAINST_KING, now);
    assert_eq!(
        round_result(&lobby),
        Some(GameResult {
            winner: None,
            reason: GameEnd::EndgameLimit,
            points: None,
        })
    );
    assert_eq!(lobby.series.draws, 1);
    assert_eq!(lobby.phase, Phase::Break);
}

#[test]
fn a_standard_lobby_plays_on_where_the_federation_draws() {
    let now = Instant::now();
    let mut lobby = brazilian_lobby(DrawRules::Standard, now);
    play(&mut lobby, &KING_AGAINST_KING, now);
    assert_eq!(round_result(&lobby), None);
    assert!(lobby.game_in_play());
}

#[test]
fn the_draw_rules_survive_the_record() {
    let now = Instant::now();
    let mut lobby = brazilian_lobby(DrawRules::Federation, now);
    let (before, after) = KING_AGAINST_KING.split_at(70);
    play(&mut lobby, before, now);
    let clock = WallClock {
        now,
        unix_ms: 1_800_000_000_000,
    };
    let json = lobby.to_record(clock);
    let moves = lobby.pending_moves.clone();
    let reload = |json: &str| {
        Lobby::from_record(
            json,
            &moves,
            lobby.timing,
            clock,
            Duration::from_secs(15),
            3,
        )
        .expect("the record loads")
    };
    let mut back = reload(&json);
    assert_eq!(back.options.draw_rules, DrawRules::Federation);
    // The replayed game is judged by the stored rules: it ends where the
    // federation's limit runs out.
    play(&mut back, after, now);
    assert_eq!(
        round_result(&back).map(|r| r.reason),
        Some(GameEnd::EndgameLimit)
    );

    // A record written before the option existed has no `draw_rules`: it
    // loads with the seeds' rules.
    let mut record: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(record["draw_rules"], "federation");
    record.as_object_mut().unwrap().remove("draw_rules");
    let mut old = reload(&record.to_string());
    assert_eq!(old.options.draw_rules, DrawRules::Standard);
    play(&mut old, after, now);
    assert!(old.game_in_play());
}
