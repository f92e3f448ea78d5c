//! Protocol 2's examples for the golden vectors: a `snapshot` of each kind of room, and
//! `moved` and `changed` events that follow them. `golden` pins them byte for byte with
//! the v1 examples; `room_view` applies them.

use jumpgate_protocol::v2::{Changed, GameChanges, GameSnapshot, Moved, RoomChanges, RoomSnapshot};
use jumpgate_protocol::{
    Boosts, ClientMessage, Color, GameEndReason, GameResult, Phase, RuleSet, SeriesEndReason,
    SeriesResult, ServerMessage,
};

use crate::golden::{
    player, squares, state_break, state_orbit_waiting, state_playing, state_space,
};

pub fn client_examples() -> Vec<(&'static str, ClientMessage)> {
    vec![(
        "client_hello_v2",
        ClientMessage::Hello {
            seq: 1,
            protocol: 2,
            token: Some("tk_2Vq9LmX4Rz".into()),
            client: "jumpgate-web/0.4".into(),
            name: None,
        },
    )]
}

/// `state_playing` as protocol 2 sends it: version 42, Dark to move, Light's draw offer
/// standing.
pub fn snapshot_playing() -> RoomSnapshot {
    RoomSnapshot::from(state_playing())
}

/// `state_space` as protocol 2 sends it: Light to move, two of its moves are boosts.
pub fn snapshot_space() -> RoomSnapshot {
    RoomSnapshot::from(state_space())
}

/// `state_break` as protocol 2 sends it: the break after round 1, drawn.
pub fn snapshot_break() -> RoomSnapshot {
    RoomSnapshot::from(state_break())
}

fn paths(list: &[&[&str]]) -> Vec<Vec<String>> {
    list.iter().map(|path| squares(path)).collect()
}

/// After `snapshot_playing`: Dark plays 9-14, which declines Light's standing offer.
pub fn moved_quiet() -> Moved {
    Moved {
        version: 43,
        notation: "9-14".into(),
        path: squares(&["g3", "f4"]),
        captures: vec![],
        boost: false,
        teleports: vec![],
        to: None,
        crowned: false,
        turn: Color::Light,
        ply: 3,
        deadline: 1_767_225_690_000,
        remaining_ms: 45_000,
        legal: paths(&[
            &["c5", "b4"],
            &["b6", "a5"],
            &["f6", "e5"],
            &["f6", "g5"],
            &["h6", "g5"],
            &["c7", "d6"],
            &["e7", "d6"],
        ]),
        legal_captures: vec![],
        legal_teleports: vec![],
        legal_boosts: vec![],
        legal_boost_teleports: vec![],
        must_capture: vec![],
        draw_offer: None,
        draw_declined: Some(Color::Light),
        boosts: None,
        wormholes: None,
        points: None,
        result: None,
        room: RoomChanges::default(),
    }
}

/// After `snapshot_space`: Light boosts a7 over b6 to c5, spending a charge; as after
/// every Light move, the wormholes relocate (to f4 and g5).
pub fn moved_space_boost() -> Moved {
    Moved {
        version: 4,
        notation: "28-19".into(),
        path: squares(&["a7", "c5"]),
        captures: vec![],
        boost: true,
        teleports: vec![],
        to: None,
        crowned: false,
        turn: Color::Dark,
        ply: 2,
        deadline: 1_767_225_690_000,
        remaining_ms: 45_000,
        legal: paths(&[&["d4", "e5"], &["c3", "b4"], &["e3", "f4"], &["g3", "h4"]]),
        legal_captures: vec![],
        // e3-f4 steps into the wormhole's new entrance and comes out on g5.
        legal_teleports: vec![vec![], vec![], vec![["f4".into(), "g5".into()]], vec![]],
        legal_boosts: paths(&[&["c3", "e5"]]),
        legal_boost_teleports: vec![],
        must_capture: vec![],
        draw_offer: None,
        draw_declined: None,
        boosts: Some(Boosts { dark: 2, light: 2 }),
        wormholes: Some(["f4".into(), "g5".into()]),
        points: None,
        result: None,
        room: RoomChanges::default(),
    }
}

/// A made-up Russian position (not one following the other examples): Black steps f6-e5
/// next to White's man on d4, which must now take it, landing on f6; the capture is
/// listed beside its path in `legal_captures`.
pub fn moved_capture_ahead() -> Moved {
    Moved {
        version: 17,
        notation: "f6-e5".into(),
        path: squares(&["f6", "e5"]),
        captures: vec![],
        boost: false,
        teleports: vec![],
        to: None,
        crowned: false,
        turn: Color::Dark,
        ply: 10,
        deadline: 1_767_225_690_000,
        remaining_ms: 45_000,
        legal: paths(&[&["d4", "f6"]]),
        legal_captures: vec![squares(&["e5"])],
        legal_teleports: vec![],
        legal_boosts: vec![],
        legal_boost_teleports: vec![],
        must_capture: squares(&["d4"]),
        draw_offer: None,
        draw_declined: None,
        boosts: None,
        wormholes: None,
        points: None,
        result: None,
        room: RoomChanges::default(),
    }
}

/// A made-up position (not one following the other examples), to show every field a
/// game-ending move carries: Light jumps c5 over d4 to e3 and on over f2 to g1, crowned
/// on Dark's back rank; Dark has no move left, which wins the best-of-3 for seat 0.
pub fn moved_game_over() -> Moved {
    Moved {
        version: 44,
        notation: "19x10x1".into(),
        path: squares(&["c5", "e3", "g1"]),
        captures: squares(&["d4", "f2"]),
        boost: false,
        teleports: vec![],
        to: None,
        crowned: true,
        turn: Color::Dark,
        ply: 4,
        deadline: 0,
        remaining_ms: 0,
        legal: vec![],
        legal_captures: vec![],
        legal_teleports: vec![],
        legal_boosts: vec![],
        legal_boost_teleports: vec![],
        must_capture: vec![],
        draw_offer: None,
        draw_declined: None,
        boosts: None,
        wormholes: None,
        points: None,
        result: Some(GameResult {
            winner: Some(Color::Light),
            reason: GameEndReason::NoMoves,
            points: None,
        }),
        room: RoomChanges {
            phase: Some(Phase::Finished),
            series: Some(jumpgate_protocol::SeriesView {
                round: 2,
                max_rounds: 6,
                wins: vec![2, 0],
                draws: 0,
                points: None,
                result: Some(SeriesResult {
                    winner: Some(0),
                    reason: SeriesEndReason::Majority,
                }),
            }),
            ..RoomChanges::default()
        },
    }
}

/// After `snapshot_playing`: seat 1's only connection dropped.
pub fn changed_connected() -> Changed {
    Changed {
        version: 43,
        room: RoomChanges {
            connected: Some(vec![true, false]),
            ..RoomChanges::default()
        },
        game: GameChanges::default(),
    }
}

/// After `moved_quiet` (version 43): Light, to move, offers a draw, which clears the note
/// that Dark declined its last one.
pub fn changed_draw_offer() -> Changed {
    Changed {
        version: 44,
        room: RoomChanges::default(),
        game: GameChanges {
            draw_offer: Some(Some(Color::Light)),
            draw_declined: Some(None),
            ..GameChanges::default()
        },
    }
}

/// After `snapshot_playing`: Dark resigns, conceding the series.
pub fn changed_resigned() -> Changed {
    Changed {
        version: 43,
        room: RoomChanges {
            phase: Some(Phase::Finished),
            series: Some(jumpgate_protocol::SeriesView {
                round: 2,
                max_rounds: 6,
                wins: vec![2, 0],
                draws: 0,
                points: None,
                result: Some(SeriesResult {
                    winner: Some(0),
                    reason: SeriesEndReason::Resigned,
                }),
            }),
            ..RoomChanges::default()
        },
        game: GameChanges {
            deadline: Some(0),
            remaining_ms: Some(0),
            legal: Some(vec![]),
            draw_offer: Some(None),
            result: Some(Some(GameResult {
                winner: Some(Color::Light),
                reason: GameEndReason::Resigned,
                points: None,
            })),
            ..GameChanges::default()
        },
    }
}

/// After `snapshot_break` (version 130): both players asked to go on, so round 2
/// starts with seat 1 on Dark; the new game comes whole.
pub fn changed_next_round() -> Changed {
    let mut game = GameSnapshot::from(state_break().game.expect("a game"));
    game.dark_seat = 1;
    game.pieces = state_break_start_pieces();
    game.turn = Color::Dark;
    game.ply = 0;
    game.moves = vec![];
    game.last_move = None;
    game.legal = paths(&[
        &["a3", "b4"],
        &["c3", "b4"],
        &["c3", "d4"],
        &["e3", "d4"],
        &["e3", "f4"],
        &["g3", "f4"],
        &["g3", "h4"],
    ]);
    game.deadline = 1_767_226_153_000;
    game.remaining_ms = 45_000;
    game.result = None;
    Changed {
        version: 131,
        room: RoomChanges {
            phase: Some(Phase::Playing),
            series: Some(jumpgate_protocol::SeriesView {
                round: 2,
                max_rounds: 10,
                wins: vec![0, 0],
                draws: 1,
                points: None,
                result: None,
            }),
            game: Some(Some(Box::new(game))),
            break_ends_at: Some(None),
            next_round: Some(vec![false, false]),
            ..RoomChanges::default()
        },
        game: GameChanges::default(),
    }
}

/// A new 8×8 game's pieces, Dark on ranks 1–3.
fn state_break_start_pieces() -> Vec<jumpgate_protocol::PieceView> {
    let dark = [
        "a1", "c1", "e1", "g1", "b2", "d2", "f2", "h2", "a3", "c3", "e3", "g3",
    ];
    let light = [
        "b6", "d6", "f6", "h6", "a7", "c7", "e7", "g7", "b8", "d8", "f8", "h8",
    ];
    let piece = |color, square: &&str| jumpgate_protocol::PieceView {
        square: (*square).into(),
        color,
        king: false,
    };
    dark.iter()
        .map(|s| piece(Color::Dark, s))
        .chain(light.iter().map(|s| piece(Color::Light, s)))
        .collect()
}

/// After an orbit lobby's snapshot while waiting: a second player took seat 1.
pub fn changed_seat_taken() -> Changed {
    let waiting = RoomSnapshot::from(state_orbit_waiting());
    let mut players = waiting.players.clone();
    players[1] = player("u_91c2", "Guest 91C2", true);
    Changed {
        version: waiting.version + 1,
        room: RoomChanges {
            players: Some(players),
            ..RoomChanges::default()
        },
        game: GameChanges::default(),
    }
}

pub fn server_examples() -> Vec<(&'static str, ServerMessage)> {
    vec![
        (
            "server_v2_snapshot_playing",
            ServerMessage::Snapshot(snapshot_playing()),
        ),
        (
            "server_v2_snapshot_space",
            ServerMessage::Snapshot(snapshot_space()),
        ),
        (
            "server_v2_snapshot_orbit_waiting",
            ServerMessage::Snapshot(RoomSnapshot::from(state_orbit_waiting())),
        ),
        ("server_v2_moved", ServerMessage::Moved(moved_quiet())),
        (
            "server_v2_moved_space_boost",
            ServerMessage::Moved(moved_space_boost()),
        ),
        (
            "server_v2_moved_capture_ahead",
            ServerMessage::Moved(moved_capture_ahead()),
        ),
        (
            "server_v2_moved_game_over",
            ServerMessage::Moved(moved_game_over()),
        ),
        (
            "server_v2_changed_connected",
            ServerMessage::Changed(changed_connected()),
        ),
        (
            "server_v2_changed_draw_offer",
            ServerMessage::Changed(changed_draw_offer()),
        ),
        (
            "server_v2_changed_resigned",
            ServerMessage::Changed(changed_resigned()),
        ),
        (
            "server_v2_changed_next_round",
            ServerMessage::Changed(changed_next_round()),
        ),
        (
            "server_v2_changed_seat_taken",
            ServerMessage::Changed(changed_seat_taken()),
        ),
    ]
}

/// A quiet move's event in MessagePack stays within the 200 bytes protocol 2 is built
/// for, where v1 sends the whole room.
#[test]
fn a_quiet_move_is_small_in_msgpack() {
    let frame = jumpgate_protocol::codec::encode_server(
        jumpgate_protocol::Encoding::MsgPack,
        &ServerMessage::Moved(moved_quiet()),
    );
    assert!(frame.len() <= 200, "{} bytes", frame.len());
    let state = jumpgate_protocol::codec::encode_server(
        jumpgate_protocol::Encoding::MsgPack,
        &ServerMessage::State(state_playing()),
    );
    assert!(state.len() > 4 * frame.len(), "{} bytes", state.len());
}

#[test]
fn snapshots_leave_out_the_fen_and_split_boosts() {
    let snapshot = snapshot_space();
    let game = snapshot.game.expect("a game");
    assert_eq!(game.legal.len(), 3);
    assert_eq!(game.legal_boosts, paths(&[&["a7", "c5"], &["c7", "a5"]]));
    let json = jumpgate_protocol::codec::encode_server(
        jumpgate_protocol::Encoding::Json,
        &ServerMessage::Snapshot(snapshot_playing()),
    );
    let text = std::str::from_utf8(json.as_bytes()).unwrap();
    assert!(!text.contains("\"fen\""), "{text}");
    assert_eq!(RuleSet::American, snapshot_playing().rule_set);
}
