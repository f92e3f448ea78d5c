//! Unit tests of the session's pure parts: reading the state, and telling new moves.

use super::driver::new_moves;
use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn new_moves_are_the_tail_or_a_whole_new_game() {
    let before = strings(&["11-15", "23-19"]);
    assert_eq!(
        new_moves(&before, &strings(&["11-15", "23-19", "8-11"])),
        strings(&["8-11"])
    );
    assert!(new_moves(&before, &before).is_empty(), "nothing new");
    assert!(
        new_moves(&before, &strings(&["11-15"])).is_empty(),
        "an undo"
    );
    assert_eq!(
        new_moves(&before, &strings(&["9-13"])),
        strings(&["9-13"]),
        "another game"
    );
    assert!(
        new_moves(&before, &[]).is_empty(),
        "a new game, no move yet"
    );
}

/// The golden `snapshot` of a lobby in play: `u_7f3a` in seat 0 plays Light, Dark to
/// move.
fn playing() -> RoomSnapshot {
    let json = include_str!("../../tests/vectors/server_v2_snapshot_playing.json");
    match crate::codec::decode_server(Encoding::Json, json.as_bytes()).unwrap() {
        ServerMessage::Snapshot(room) => room,
        other => panic!("not a snapshot: {other:?}"),
    }
}

fn state_of(id: &str, room: RoomSnapshot) -> SessionState {
    SessionState {
        identity: Identity {
            id: id.to_owned(),
            name: "someone".to_owned(),
            guest: true,
        },
        token: String::new(),
        room: Some(room),
        solo: None,
        reconnections: 0,
        ended: None,
    }
}

#[test]
fn seat_colour_and_turn_follow_the_room() {
    let light = state_of("u_7f3a", playing());
    assert_eq!(light.seat(), Some(0));
    assert_eq!(light.color(), Some(Color::Light));
    assert!(!light.my_turn(), "Dark to move");
    let dark = state_of("u_91c2", playing());
    assert_eq!(dark.color(), Some(Color::Dark));
    assert!(dark.my_turn());
    assert_eq!(dark.legal_paths().len(), 7);
    let spectator = state_of("u_0000", playing());
    assert_eq!(spectator.seat(), None);
    assert!(!spectator.my_turn());

    let mut over = playing();
    over.phase = Phase::Break;
    assert!(
        !state_of("u_91c2", over).my_turn(),
        "no turn between rounds"
    );
}

/// A failed `connect` reads as a sentence in its `Debug` form too (what `main`
/// prints when it returns the error), not as nested variants.
#[tokio::test]
async fn a_session_error_debugs_as_its_message() {
    let err = Session::connect(
        "http://127.0.0.1:8080/r/K7QP2DXM",
        SessionOptions::default(),
    )
    .await
    .expect_err("an http:// URL is refused");
    let debug = format!("{err:?}");
    assert_eq!(debug, err.to_string());
    assert!(!debug.contains("Connect("), "{debug}");
    assert!(debug.contains("is not a WebSocket URL"), "{debug}");
}
