//! `v2::RoomView` against the golden examples: events applied to snapshots give the
//! rooms they describe, gaps and duplicates are told apart, `Changed::between` writes
//! exactly the events the examples show, and all of it survives both encodings.

use jumpgate_protocol::codec::{self, Encoding};
use jumpgate_protocol::v2::{Changed, Gap, RoomSnapshot, RoomView, Update};
use jumpgate_protocol::{Color, ServerMessage};

use crate::golden_v2::{
    changed_connected, changed_draw_offer, changed_next_round, changed_resigned,
    changed_seat_taken, moved_quiet, moved_space_boost, snapshot_break, snapshot_playing,
    snapshot_space,
};

/// `message` after a trip through `encoding`, as a client receives it.
fn received(encoding: Encoding, message: &ServerMessage) -> ServerMessage {
    let frame = codec::encode_server(encoding, message);
    codec::decode_server(encoding, frame.as_bytes()).expect("decodes")
}

fn view_of(snapshot: RoomSnapshot) -> RoomView {
    let mut view = RoomView::new();
    assert_eq!(
        view.apply(&ServerMessage::Snapshot(snapshot)),
        Ok(Update::Replaced)
    );
    view
}

fn after(view: &RoomView) -> RoomSnapshot {
    view.room().expect("a room").clone()
}

/// `snapshot_playing` after Dark's 9-14, written out by hand.
fn expected_after_moved_quiet() -> RoomSnapshot {
    let mut room = snapshot_playing();
    room.version = 43;
    let game = room.game.as_mut().unwrap();
    game.pieces
        .iter_mut()
        .find(|p| p.square == "g3")
        .unwrap()
        .square = "f4".into();
    game.moves.push("9-14".into());
    game.last_move = Some(moved_quiet().played());
    game.turn = Color::Light;
    game.ply = 3;
    game.deadline = 1_767_225_690_000;
    game.remaining_ms = 45_000;
    game.legal = moved_quiet().legal;
    game.draw_offer = None;
    game.draw_declined = Some(Color::Light);
    room
}

#[test]
fn a_move_plays_on_the_snapshot() {
    for encoding in Encoding::ALL {
        let mut view = view_of(snapshot_playing());
        let moved = received(encoding, &ServerMessage::Moved(moved_quiet()));
        assert_eq!(view.apply(&moved), Ok(Update::Applied));
        assert_eq!(after(&view), expected_after_moved_quiet());
        assert_eq!(view.version(), Some(43));
    }
}

#[test]
fn a_boost_spends_a_charge_and_captures_go() {
    let mut view = view_of(snapshot_space());
    view.apply(&ServerMessage::Moved(moved_space_boost()))
        .unwrap();
    let game = after(&view).game.unwrap();
    let space = game.space.clone().unwrap();
    assert_eq!(space.boosts.light, 2);
    assert_eq!(space.wormholes, ["f4".to_owned(), "g5".to_owned()]);
    assert!(game.pieces.iter().any(|p| p.square == "c5"));
    assert!(!game.pieces.iter().any(|p| p.square == "a7"));
    assert!(game.must_capture.is_empty());
    assert_eq!(game.legal_boosts.len(), 1);
    assert_eq!(game.legal_teleports.len(), game.legal.len());
    assert_eq!(
        game.legal_teleports[2],
        [["f4".to_owned(), "g5".to_owned()]]
    );

    // A capture takes the jumped pieces off and crowns the capturer.
    let mut room = snapshot_playing();
    let game = room.game.as_mut().unwrap();
    game.pieces
        .retain(|p| !["e3", "g1"].contains(&p.square.as_str()));
    let mut view = RoomView::from_snapshot(room);
    let mut moved = crate::golden_v2::moved_game_over();
    moved.version = 43;
    view.apply(&ServerMessage::Moved(moved.clone())).unwrap();
    let room = after(&view);
    let game = room.game.as_ref().unwrap();
    let king = game.pieces.iter().find(|p| p.square == "g1").unwrap();
    assert!(king.king && king.color == Color::Light);
    assert!(
        !game
            .pieces
            .iter()
            .any(|p| ["c5", "d4", "f2"].contains(&p.square.as_str()))
    );
    assert_eq!(game.result, moved.result);
    assert_eq!(room.phase, jumpgate_protocol::Phase::Finished);
    assert_eq!(room.series, moved.room.series.unwrap());
}

#[test]
fn changes_patch_fields_in_place() {
    let mut view = view_of(snapshot_playing());
    view.apply(&ServerMessage::Moved(moved_quiet())).unwrap();
    view.apply(&ServerMessage::Changed(changed_draw_offer()))
        .unwrap();
    let game = after(&view).game.unwrap();
    assert_eq!(game.draw_offer, Some(Color::Light));
    assert_eq!(game.draw_declined, None);

    let mut view = view_of(snapshot_playing());
    view.apply(&ServerMessage::Changed(changed_connected()))
        .unwrap();
    let room = after(&view);
    assert!(room.players[0].as_ref().unwrap().connected);
    assert!(!room.players[1].as_ref().unwrap().connected);
}

#[test]
fn gaps_duplicates_and_misfits_are_told_apart() {
    let mut view = RoomView::new();
    let early = view.apply(&ServerMessage::Moved(moved_quiet()));
    assert_eq!(early, Err(Gap::NoSnapshot { got: 43 }));
    assert_eq!(early.unwrap_err().since(), 0);

    let mut view = view_of(snapshot_playing());
    let skipped = view.apply(&ServerMessage::Changed(changed_draw_offer()));
    assert_eq!(skipped, Err(Gap::Missed { have: 42, got: 44 }));
    assert_eq!(skipped.unwrap_err().since(), 42);
    assert_eq!(after(&view), snapshot_playing(), "a gap changes nothing");

    view.apply(&ServerMessage::Moved(moved_quiet())).unwrap();
    assert_eq!(
        view.apply(&ServerMessage::Moved(moved_quiet())),
        Ok(Update::AlreadyHeld)
    );
    assert_eq!(after(&view), expected_after_moved_quiet());

    // A move from an empty square cannot be right: the view starts over.
    let mut view = view_of(snapshot_playing());
    let mut wrong = moved_quiet();
    wrong.path[0] = "h4".into();
    let misfit = view.apply(&ServerMessage::Moved(wrong));
    assert!(matches!(misfit, Err(Gap::Mismatch { version: 43, .. })));
    assert_eq!(misfit.unwrap_err().since(), 0);
    assert_eq!(view.room(), None);

    // Other messages pass by; `left` empties the view.
    let mut view = view_of(snapshot_playing());
    assert_eq!(
        view.apply(&ServerMessage::Ack { seq: 1 }),
        Ok(Update::Unrelated)
    );
    assert_eq!(
        view.apply(&ServerMessage::Left {
            code: "K7QP2D".into()
        }),
        Ok(Update::Left)
    );
    assert_eq!(view.version(), None);
}

/// `Changed::between` writes exactly the example events, and applying what it writes
/// gives back the room it was asked about.
#[test]
fn between_writes_the_examples() {
    let playing_then_moved = {
        let mut view = view_of(snapshot_playing());
        view.apply(&ServerMessage::Moved(moved_quiet())).unwrap();
        after(&view)
    };
    let orbit_waiting = RoomSnapshot::from(crate::golden::state_orbit_waiting());
    for (before, event) in [
        (snapshot_playing(), changed_connected()),
        (playing_then_moved.clone(), changed_draw_offer()),
        (snapshot_playing(), changed_resigned()),
        (snapshot_break(), changed_next_round()),
        (orbit_waiting, changed_seat_taken()),
    ] {
        for encoding in Encoding::ALL {
            let mut view = view_of(before.clone());
            let message = received(encoding, &ServerMessage::Changed(event.clone()));
            assert_eq!(view.apply(&message), Ok(Update::Applied));
            let now = after(&view);
            assert_eq!(
                Changed::between(&before, &now).as_ref(),
                Some(&event),
                "{encoding:?}"
            );
        }
    }
    // The same pieces in another order are the same board: the room the
    // server builds next lists them in board order, the one a client built
    // from a `moved` does not, and the offer is still a small event.
    let before = playing_then_moved;
    let mut view = view_of(before.clone());
    view.apply(&ServerMessage::Changed(changed_draw_offer()))
        .unwrap();
    let mut now = after(&view);
    now.game.as_mut().unwrap().pieces.reverse();
    assert_eq!(Changed::between(&before, &now), Some(changed_draw_offer()));

    // A lobby's fixed settings change only with a snapshot.
    let mut other = snapshot_playing();
    other.stake = 100;
    assert_eq!(Changed::between(&snapshot_playing(), &other), None);
}
