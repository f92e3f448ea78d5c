//! Golden vectors: one example of every message, pinned byte for byte in both encodings.
//!
//! For each example `NAME`, `tests/vectors/NAME.json` holds the JSON text frame and
//! `tests/vectors/NAME.msgpack.hex` the MessagePack binary frame as lowercase hex; each
//! file ends with one newline that is not part of the frame. Other implementations can
//! test against these files. Frames the decoders must refuse sit beside them
//! (`refused_*`, see [`crate::refusals`]).
//!
//! After a deliberate wire change, rewrite the files with
//! `JUMPGATE_BLESS=1 cargo test -p jumpgate-protocol --test protocol golden` and review the diff:
//! any change to an existing file breaks compatibility within v1.
//!
//! Over 700 lines: most of it is the list of examples, one per message and
//! variant, which must stay in one place to be seen to be complete.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::fs;
use std::path::{Path, PathBuf};

use jumpgate_protocol::codec::{self, Encoding};
use jumpgate_protocol::{
    BoardGeometry, Boosts, ClientMessage, Color, DrawRules, ErrorCode, GameEndReason, GameResult,
    GameView, Identity, LobbySummary, MoveView, MyGame, Pace, Phase, PieceView, PlayerView, Points,
    RoomState, RuleSet, SeriesEndReason, SeriesResult, SeriesView, ServerMessage, SpaceView,
    SquareGeometry,
};

fn client_examples() -> Vec<(&'static str, ClientMessage)> {
    vec![
        (
            "client_hello_guest",
            ClientMessage::Hello {
                seq: 1,
                protocol: 1,
                token: None,
                client: "jumpgate-web/0.1".into(),
                name: None,
            },
        ),
        (
            "client_hello_token",
            ClientMessage::Hello {
                seq: 1,
                protocol: 1,
                token: Some("tk_2Vq9LmX4Rz".into()),
                client: "jumpgate-web/0.1".into(),
                name: None,
            },
        ),
        (
            "client_hello_named",
            ClientMessage::Hello {
                seq: 1,
                protocol: 1,
                token: Some("tk_2Vq9LmX4Rz".into()),
                client: "jumpgate-web/0.1".into(),
                name: Some("Ann".into()),
            },
        ),
        (
            "client_create_lobby",
            ClientMessage::CreateLobby {
                seq: 2,
                rule_set: RuleSet::Russian,
                series_length: 3,
                invite_only: true,
                stake: Some(100),
                pace: None,
                draw_rules: None,
            },
        ),
        (
            "client_join_lobby",
            ClientMessage::JoinLobby {
                seq: 2,
                code: "M3XW9A".into(),
                invite: Some("inv_8dJ3".into()),
            },
        ),
        (
            "client_watch",
            ClientMessage::Watch {
                seq: 2,
                code: "K7QP2D".into(),
                invite: None,
            },
        ),
        ("client_leave", ClientMessage::Leave { seq: 40 }),
        (
            "client_move_notation",
            ClientMessage::Move {
                seq: 3,
                notation: Some("11-15".into()),
                path: None,
            },
        ),
        (
            "client_move_path",
            ClientMessage::Move {
                seq: 5,
                notation: None,
                path: Some(vec!["c3".into(), "e5".into(), "g7".into()]),
            },
        ),
        (
            "client_move_orbit",
            ClientMessage::Move {
                seq: 5,
                notation: None,
                path: Some(vec!["A3".into(), "C".into()]),
            },
        ),
        ("client_offer_draw", ClientMessage::OfferDraw { seq: 6 }),
        ("client_accept_draw", ClientMessage::AcceptDraw { seq: 7 }),
        ("client_decline_draw", ClientMessage::DeclineDraw { seq: 7 }),
        ("client_resign", ClientMessage::Resign { seq: 8 }),
        ("client_next_round", ClientMessage::NextRound { seq: 9 }),
        ("client_rematch", ClientMessage::Rematch { seq: 10 }),
        ("client_end_match", ClientMessage::EndMatch { seq: 11 }),
        (
            "client_resync",
            ClientMessage::Resync { seq: 12, since: 41 },
        ),
        ("client_ping", ClientMessage::Ping { seq: 300 }),
        (
            "client_start_solo",
            ClientMessage::StartSolo {
                seq: 301,
                rule_set: RuleSet::Italian,
                mode: jumpgate_protocol::SoloMode::Computer,
                level: Some(jumpgate_protocol::BotLevel::Executive),
                ranked: true,
            },
        ),
        ("client_undo", ClientMessage::Undo { seq: 302 }),
        ("client_resume_solo", ClientMessage::ResumeSolo { seq: 303 }),
        (
            "client_create_lobby_correspondence",
            ClientMessage::CreateLobby {
                seq: 2,
                rule_set: RuleSet::American,
                series_length: 3,
                invite_only: false,
                stake: None,
                pace: Some(Pace::Correspondence),
                draw_rules: None,
            },
        ),
        (
            "client_claim_forfeit",
            ClientMessage::ClaimForfeit { seq: 14 },
        ),
        (
            "client_lobby_info",
            ClientMessage::LobbyInfo {
                seq: 2,
                code: "M3XW9A".into(),
                invite: Some("inv_8dJ3".into()),
            },
        ),
        ("client_my_games", ClientMessage::MyGames { seq: 3 }),
        (
            "client_create_lobby_federation_draws",
            ClientMessage::CreateLobby {
                seq: 2,
                rule_set: RuleSet::Brazilian,
                series_length: 1,
                invite_only: false,
                stake: None,
                pace: None,
                draw_rules: Some(DrawRules::Federation),
            },
        ),
    ]
}

pub(crate) fn player(id: &str, name: &str, connected: bool) -> Option<PlayerView> {
    Some(PlayerView {
        id: id.into(),
        name: name.into(),
        connected,
        record: None,
    })
}

pub(crate) fn squares(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

pub(crate) fn quiet(notation: &str, from: &str, to: &str) -> MoveView {
    MoveView {
        notation: notation.into(),
        path: squares(&[from, to]),
        captures: vec![],
        boost: false,
        teleports: vec![],
    }
}

fn pieces(color: Color, on: &[&str]) -> Vec<PieceView> {
    on.iter()
        .map(|square| PieceView {
            square: (*square).into(),
            color,
            king: false,
        })
        .collect()
}

/// Round 2 of a best-of-3 in American checkers after 11-15 23-19. Seat 1 opens this
/// round, so it plays Dark; Light offered a draw with its move and the offer stands.
pub(crate) fn state_playing() -> RoomState {
    let mut board = pieces(
        Color::Dark,
        &[
            "g1", "e1", "c1", "a1", "h2", "f2", "d2", "b2", "g3", "e3", "a3", "d4",
        ],
    );
    board.extend(pieces(
        Color::Light,
        &[
            "c5", "h6", "f6", "b6", "g7", "e7", "c7", "a7", "h8", "f8", "d8", "b8",
        ],
    ));
    RoomState {
        version: 42,
        code: "K7QP2D".into(),
        rule_set: RuleSet::American,
        series_length: 3,
        pace: Pace::Live,
        expires_at: None,
        draw_rules: DrawRules::Standard,
        invite_only: false,
        invite: None,
        stake: 0,
        head_to_head: None,
        invite_link: Some("https://jumpgate.example/r/K7M2QX9P".into()),
        host: "u_7f3a".into(),
        players: vec![
            player("u_7f3a", "Guest 7F3A", true),
            player("u_91c2", "Guest 91C2", true),
        ],
        spectators: 3,
        phase: Phase::Playing,
        series: SeriesView {
            round: 2,
            max_rounds: 6,
            wins: vec![1, 0],
            draws: 0,
            points: None,
            result: None,
        },
        game: Some(GameView {
            dark_seat: 1,
            fen: "B:W19,21,22,24-32:B1-10,12,15".into(),
            pieces: board,
            turn: Color::Dark,
            ply: 2,
            moves: squares(&["11-15", "23-19"]),
            last_move: Some(quiet("23-19", "d6", "c5")),
            legal_moves: vec![
                quiet("7-11", "d2", "c3"),
                quiet("8-11", "b2", "c3"),
                quiet("9-13", "g3", "h4"),
                quiet("9-14", "g3", "f4"),
                quiet("10-14", "e3", "f4"),
                quiet("12-16", "a3", "b4"),
                quiet("15-18", "d4", "e5"),
            ],
            must_capture: vec![],
            deadline: 1_767_225_645_000,
            remaining_ms: 44_210,
            draw_offer: Some(Color::Light),
            draw_declined: None,
            result: None,
            board: None,
            space: None,
            points: None,
        }),
        board: None,
        break_ends_at: None,
        next_round: vec![false, false],
        rematch: vec![false, false],
    }
}

/// `state_playing` in a correspondence lobby: `deadline` is when Light may claim the
/// game (two days after Light's move), `expires_at` a week after it.
fn state_correspondence() -> RoomState {
    let mut state = state_playing();
    state.pace = Pace::Correspondence;
    state.expires_at = Some(1_767_830_400_000);
    let game = state.game.as_mut().expect("a game is in play");
    game.deadline = 1_767_398_400_000;
    game.remaining_ms = 172_795_000;
    game.draw_offer = None;
    state
}

/// `state_playing` after Light declined Dark's offer: Dark, to move, is told.
fn state_draw_declined() -> RoomState {
    let mut state = state_playing();
    state.version = 43;
    let game = state.game.as_mut().expect("a game is in play");
    game.draw_offer = None;
    game.draw_declined = Some(Color::Dark);
    state
}

/// An invite-only Russian lobby just created by its host, waiting for an opponent.
/// `client_create_lobby` makes one like it and `client_join_lobby` joins it.
pub(crate) fn state_waiting() -> RoomState {
    RoomState {
        version: 1,
        code: "M3XW9A".into(),
        rule_set: RuleSet::Russian,
        series_length: 3,
        pace: Pace::Live,
        expires_at: None,
        draw_rules: DrawRules::Standard,
        invite_only: true,
        invite: Some("inv_8dJ3".into()),
        stake: 0,
        head_to_head: None,
        invite_link: Some("https://jumpgate.example/r/K7M2QX9P?invite=inv_8dJ3".into()),
        host: "u_7f3a".into(),
        players: vec![player("u_7f3a", "Guest 7F3A", true), None],
        spectators: 0,
        phase: Phase::Waiting,
        series: SeriesView {
            round: 1,
            max_rounds: 6,
            wins: vec![0, 0],
            draws: 0,
            points: None,
            result: None,
        },
        game: None,
        board: None,
        break_ends_at: None,
        next_round: vec![false, false],
        rematch: vec![false, false],
    }
}

/// A single-round American series that seat 1 won on time: seat 0 lost its connection
/// four plies in and its clock ran out. Seat 1 has called a rematch.
pub(crate) fn state_finished() -> RoomState {
    let mut board = pieces(
        Color::Dark,
        &[
            "g1", "e1", "c1", "a1", "h2", "f2", "d2", "g3", "e3", "c3", "a3", "d4",
        ],
    );
    board.extend(pieces(
        Color::Light,
        &[
            "g5", "c5", "h6", "b6", "g7", "e7", "c7", "a7", "h8", "f8", "d8", "b8",
        ],
    ));
    RoomState {
        version: 97,
        code: "ZZ4T8N".into(),
        rule_set: RuleSet::American,
        series_length: 1,
        pace: Pace::Live,
        expires_at: None,
        draw_rules: DrawRules::Standard,
        invite_only: false,
        invite: None,
        stake: 0,
        head_to_head: None,
        invite_link: Some("https://jumpgate.example/r/K7M2QX9P".into()),
        host: "u_91c2".into(),
        players: vec![
            player("u_7f3a", "Guest 7F3A", false),
            player("u_91c2", "Guest 91C2", true),
        ],
        spectators: 0,
        phase: Phase::Finished,
        series: SeriesView {
            round: 1,
            max_rounds: 2,
            wins: vec![0, 1],
            draws: 0,
            points: None,
            result: Some(SeriesResult {
                winner: Some(1),
                reason: SeriesEndReason::Majority,
            }),
        },
        game: Some(GameView {
            dark_seat: 0,
            fen: "B:W17,19,21,24-32:B1-7,9-12,15".into(),
            pieces: board,
            turn: Color::Dark,
            ply: 4,
            moves: squares(&["11-15", "23-19", "8-11", "22-17"]),
            last_move: Some(quiet("22-17", "f6", "g5")),
            legal_moves: vec![],
            must_capture: vec![],
            deadline: 1_767_226_012_500,
            remaining_ms: 0,
            draw_offer: None,
            draw_declined: None,
            result: Some(GameResult {
                winner: Some(Color::Light),
                reason: GameEndReason::Timeout,
                points: None,
            }),
            board: None,
            space: None,
            points: None,
        }),
        board: None,
        break_ends_at: None,
        next_round: vec![false, false],
        rematch: vec![false, true],
    }
}

/// The break after the first round of a best-of-5 in Brazilian draughts, drawn by
/// agreement after four plies; seat 1 has asked to go on.
pub(crate) fn state_break() -> RoomState {
    let mut board = pieces(
        Color::Dark,
        &[
            "a1", "c1", "e1", "g1", "b2", "d2", "f2", "h2", "a3", "e3", "d4", "f4",
        ],
    );
    board.extend(pieces(
        Color::Light,
        &[
            "a5", "g5", "d6", "h6", "a7", "c7", "e7", "g7", "b8", "d8", "f8", "h8",
        ],
    ));
    RoomState {
        version: 130,
        code: "Q2RB7K".into(),
        rule_set: RuleSet::Brazilian,
        series_length: 5,
        pace: Pace::Live,
        expires_at: None,
        draw_rules: DrawRules::Standard,
        invite_only: false,
        invite: None,
        stake: 0,
        head_to_head: None,
        invite_link: Some("https://jumpgate.example/r/K7M2QX9P".into()),
        host: "u_7f3a".into(),
        players: vec![
            player("u_7f3a", "Guest 7F3A", true),
            player("u_91c2", "Guest 91C2", true),
        ],
        spectators: 1,
        phase: Phase::Break,
        series: SeriesView {
            round: 1,
            max_rounds: 10,
            wins: vec![0, 0],
            draws: 1,
            points: None,
            result: None,
        },
        game: Some(GameView {
            dark_seat: 0,
            fen: "W:Wa1,a3,b2,c1,d2,d4,e1,e3,f2,f4,g1,h2:Ba5,a7,b8,c7,d6,d8,e7,f8,g5,g7,h6,h8"
                .into(),
            pieces: board,
            turn: Color::Dark,
            ply: 4,
            moves: squares(&["c3-d4", "b6-a5", "g3-f4", "f6-g5"]),
            last_move: Some(quiet("f6-g5", "f6", "g5")),
            legal_moves: vec![],
            must_capture: vec![],
            deadline: 1_767_226_100_000,
            remaining_ms: 41_950,
            draw_offer: None,
            draw_declined: None,
            result: Some(GameResult {
                winner: None,
                reason: GameEndReason::DrawAgreed,
                points: None,
            }),
            board: None,
            space: None,
            points: None,
        }),
        board: None,
        break_ends_at: Some(1_767_226_108_000),
        next_round: vec![false, true],
        rematch: vec![false, false],
    }
}

/// Round 1 of a best-of-1 in Brazilian draughts under the federation draw rules (a
/// random playout, replayed by the rules engine): kings alone, one each, drew after five
/// moves each (`endgame_limit`). The drawn round is followed by a second one.
fn state_federation_draw() -> RoomState {
    RoomState {
        version: 78,
        code: "B8RZ4K".into(),
        rule_set: RuleSet::Brazilian,
        series_length: 1,
        pace: Pace::Live,
        expires_at: None,
        draw_rules: DrawRules::Federation,
        invite_only: false,
        invite: None,
        stake: 0,
        head_to_head: None,
        invite_link: Some("https://jumpgate.example/r/B8RZ4K".into()),
        host: "u_7f3a".into(),
        players: vec![
            player("u_7f3a", "Guest 7F3A", true),
            player("u_91c2", "Guest 91C2", true),
        ],
        spectators: 0,
        phase: Phase::Break,
        series: SeriesView {
            round: 1,
            max_rounds: 2,
            wins: vec![0, 0],
            draws: 1,
            points: None,
            result: None,
        },
        game: Some(GameView {
            dark_seat: 0,
            fen: "B:WKb4:BKb6".into(),
            pieces: vec![
                PieceView {
                    square: "b4".into(),
                    color: Color::Dark,
                    king: true,
                },
                PieceView {
                    square: "b6".into(),
                    color: Color::Light,
                    king: true,
                },
            ],
            turn: Color::Light,
            ply: 73,
            moves: squares(&[
                "g3-f4", "h6-g5", "f4xh6", "b6-a5", "c3-b4", "a5xc3", "d2xb4", "f6-g5", "h6xf4",
                "c7-b6", "h2-g3", "g7-f6", "b4-c5", "d6xb4", "a3xc5", "b6xd4", "e3xc5", "f6-e5",
                "f4xd6", "h8-g7", "b2-c3", "b8-c7", "d6xb8", "g7-h6", "c5-d6", "e7xc5", "g1-h2",
                "f8-e7", "c3-b4", "c5xa3", "b8-e5", "e7-f6", "e5xg7", "h6xf8", "f2-e3", "f8-e7",
                "e3-f4", "e7-f6", "f4-g5", "f6xf2", "e1xg3", "d8-e7", "g3-f4", "e7-f6", "c1-d2",
                "f6-e5", "f4xd6", "a7-b6", "d6-c7", "b6xd8", "h2-g3", "d8-c7", "a1-b2", "a3xe3",
                "g3-h4", "e3-f2", "h4-g5", "f2-g1", "g5-f6", "g1-a7", "f6-e7", "a7-b8", "e7-f8",
                "c7-d6", "f8xc5", "b8-f4", "c5-b4", "f4-e3", "b4-c3", "e3-c5", "c3-d2", "c5-b6",
                "d2-b4",
            ]),
            last_move: Some(quiet("d2-b4", "d2", "b4")),
            legal_moves: vec![],
            must_capture: vec![],
            deadline: 1_767_227_912_000,
            remaining_ms: 43_600,
            draw_offer: None,
            draw_declined: None,
            result: Some(GameResult {
                winner: None,
                reason: GameEndReason::EndgameLimit,
                points: None,
            }),
            board: None,
            space: None,
            points: None,
        }),
        board: None,
        break_ends_at: Some(1_767_227_920_000),
        next_round: vec![false, false],
        rematch: vec![false, false],
    }
}

/// The orbit board as the server describes it: every square's centre in a 1000 × 1000
/// box, and the lines joining neighbours.
const ORBIT_SQUARES: [(&str, u16, u16); 25] = [
    ("C", 500, 500),
    ("B1", 565, 259),
    ("B2", 677, 323),
    ("B3", 741, 435),
    ("B4", 741, 565),
    ("B5", 677, 677),
    ("B6", 565, 741),
    ("B7", 435, 741),
    ("B8", 323, 677),
    ("B9", 259, 565),
    ("B10", 259, 435),
    ("B11", 323, 323),
    ("B12", 435, 259),
    ("A1", 614, 75),
    ("A2", 811, 189),
    ("A3", 925, 386),
    ("A4", 925, 614),
    ("A5", 811, 811),
    ("A6", 614, 925),
    ("A7", 386, 925),
    ("A8", 189, 811),
    ("A9", 75, 614),
    ("A10", 75, 386),
    ("A11", 189, 189),
    ("A12", 386, 75),
];
const ORBIT_LINES: [(&str, &str); 48] = [
    ("C", "B1"),
    ("B1", "A1"),
    ("B1", "B2"),
    ("A1", "A2"),
    ("C", "B2"),
    ("B2", "A2"),
    ("B2", "B3"),
    ("A2", "A3"),
    ("C", "B3"),
    ("B3", "A3"),
    ("B3", "B4"),
    ("A3", "A4"),
    ("C", "B4"),
    ("B4", "A4"),
    ("B4", "B5"),
    ("A4", "A5"),
    ("C", "B5"),
    ("B5", "A5"),
    ("B5", "B6"),
    ("A5", "A6"),
    ("C", "B6"),
    ("B6", "A6"),
    ("B6", "B7"),
    ("A6", "A7"),
    ("C", "B7"),
    ("B7", "A7"),
    ("B7", "B8"),
    ("A7", "A8"),
    ("C", "B8"),
    ("B8", "A8"),
    ("B8", "B9"),
    ("A8", "A9"),
    ("C", "B9"),
    ("B9", "A9"),
    ("B9", "B10"),
    ("A9", "A10"),
    ("C", "B10"),
    ("B10", "A10"),
    ("B10", "B11"),
    ("A10", "A11"),
    ("C", "B11"),
    ("B11", "A11"),
    ("B11", "B12"),
    ("A11", "A12"),
    ("C", "B12"),
    ("B12", "A12"),
    ("B12", "B1"),
    ("A12", "A1"),
];

fn orbit_board() -> BoardGeometry {
    BoardGeometry {
        squares: ORBIT_SQUARES
            .iter()
            .map(|&(name, x, y)| SquareGeometry {
                name: name.into(),
                x,
                y,
            })
            .collect(),
        lines: ORBIT_LINES
            .iter()
            .map(|&(a, b)| [a.into(), b.into()])
            .collect(),
    }
}

fn moving(notation: &str, path: &[&str]) -> MoveView {
    MoveView {
        notation: notation.into(),
        path: squares(path),
        captures: vec![],
        boost: false,
        teleports: vec![],
    }
}

/// Round 1 of a Space Mode best-of-1 after Dark's opening boost 8-15 (b2 over c3 to d4).
/// The wormholes link h4 and a5; Light's step to a5 comes out on h4.
pub(crate) fn state_space() -> RoomState {
    let mut board = pieces(
        Color::Dark,
        &[
            "a1", "c1", "e1", "g1", "d2", "f2", "h2", "a3", "c3", "e3", "g3", "d4",
        ],
    );
    board.extend(pieces(
        Color::Light,
        &[
            "b6", "d6", "f6", "h6", "a7", "c7", "e7", "g7", "b8", "d8", "f8", "h8",
        ],
    ));
    let mut state = state_waiting();
    state.version = 3;
    state.code = "SP4CE7X2".into();
    state.rule_set = RuleSet::Space;
    state.series_length = 1;
    state.invite_only = false;
    state.invite = None;
    state.invite_link = Some("https://jumpgate.example/r/SP4CE7X2".into());
    state.players[1] = player("u_91c2", "Guest 91C2", true);
    state.phase = Phase::Playing;
    state.series.max_rounds = 2;
    state.game = Some(GameView {
        dark_seat: 0,
        fen: "W:W21-32:B1-7,9-12,15".into(),
        pieces: board,
        turn: Color::Light,
        ply: 1,
        moves: squares(&["8-15"]),
        last_move: Some(MoveView {
            boost: true,
            ..moving("8-15", &["b2", "d4"])
        }),
        legal_moves: vec![
            moving("24-19", &["b6", "c5"]),
            MoveView {
                teleports: vec![["a5".into(), "h4".into()]],
                ..moving("24-20", &["b6", "a5"])
            },
            moving("23-18", &["d6", "e5"]),
            MoveView {
                boost: true,
                ..moving("28-19", &["a7", "c5"])
            },
            MoveView {
                boost: true,
                teleports: vec![["a5".into(), "h4".into()]],
                ..moving("27-20", &["c7", "a5"])
            },
        ],
        must_capture: vec![],
        deadline: 1_767_225_645_000,
        remaining_ms: 44_000,
        draw_offer: None,
        draw_declined: None,
        result: None,
        board: None,
        space: Some(SpaceView {
            wormholes: ["h4".into(), "a5".into()],
            boosts: Boosts { dark: 2, light: 3 },
        }),
        points: None,
    });
    state
}

/// A finished best-of-1 on the orbit board: Dark (seat 1) scored 3 points to Light's 2.
/// An orbit lobby waiting for its second player: no game yet, so the board's
/// geometry comes with the room.
pub(crate) fn state_orbit_waiting() -> RoomState {
    let mut state = state_waiting();
    state.code = "RB7T5QXA".into();
    state.rule_set = RuleSet::Orbit;
    state.invite_only = false;
    state.invite = None;
    state.invite_link = Some("https://jumpgate.example/r/RB7T5QXA".into());
    state.series_length = 1;
    state.series.max_rounds = 1;
    state.series.points = Some(vec![0, 0]);
    state.board = Some(orbit_board());
    state
}

pub(crate) fn state_orbit() -> RoomState {
    let mut board = vec![
        PieceView {
            square: "C".into(),
            color: Color::Dark,
            king: false,
        },
        PieceView {
            square: "B6".into(),
            color: Color::Light,
            king: false,
        },
    ];
    board.extend(pieces(Color::Dark, &["A1", "A2", "A4", "A5", "A12"]));
    board.extend(pieces(Color::Light, &["A7", "A8", "A9", "A10", "A11"]));
    let mut state = state_finished();
    state.version = 88;
    state.code = "RB7T5QXA".into();
    state.rule_set = RuleSet::Orbit;
    state.invite_link = Some("https://jumpgate.example/r/RB7T5QXA".into());
    state.players[0] = player("u_7f3a", "Guest 7F3A", true);
    state.series = SeriesView {
        round: 1,
        max_rounds: 1,
        wins: vec![0, 1],
        draws: 0,
        points: Some(vec![2, 3]),
        result: Some(SeriesResult {
            winner: Some(1),
            reason: SeriesEndReason::Points,
        }),
    };
    state.rematch = vec![false, false];
    state.game = Some(GameView {
        dark_seat: 1,
        fen: "D:DC,A1,A2,A4,A5,A12:LB6,A7,A8,A9,A10,A11".into(),
        pieces: board,
        turn: Color::Dark,
        ply: 2,
        moves: squares(&["A3-C", "A6-B6"]),
        last_move: Some(moving("A6-B6", &["A6", "B6"])),
        legal_moves: vec![],
        must_capture: vec![],
        deadline: 0,
        remaining_ms: 0,
        draw_offer: None,
        draw_declined: None,
        result: Some(GameResult {
            winner: Some(Color::Dark),
            reason: GameEndReason::InARow,
            points: Some(Points { dark: 3, light: 2 }),
        }),
        board: Some(orbit_board()),
        space: None,
        points: Some(Points { dark: 3, light: 2 }),
    });
    state
}

fn server_examples() -> Vec<(&'static str, ServerMessage)> {
    vec![
        (
            "server_welcome",
            ServerMessage::Welcome {
                server_version: "0.1.0".into(),
                protocols: vec![1],
                identity: Identity {
                    id: "u_7f3a".into(),
                    name: "Guest 7F3A".into(),
                    guest: true,
                },
                token: "tk_2Vq9LmX4Rz".into(),
                accounts: true,
            },
        ),
        ("server_ack", ServerMessage::Ack { seq: 3 }),
        (
            "server_error",
            ServerMessage::error(
                Some(5),
                ErrorCode::IllegalMove,
                "c3 cannot move there: a capture is compulsory",
            ),
        ),
        (
            "server_error_without_seq",
            ServerMessage::error(
                None,
                ErrorCode::MalformedMessage,
                "expected a JSON object with a \"type\"",
            ),
        ),
        (
            "server_state_playing",
            ServerMessage::State(state_playing()),
        ),
        (
            "server_state_waiting",
            ServerMessage::State(state_waiting()),
        ),
        ("server_state_break", ServerMessage::State(state_break())),
        (
            "server_state_draw_declined",
            ServerMessage::State(state_draw_declined()),
        ),
        (
            "server_state_finished",
            ServerMessage::State(state_finished()),
        ),
        ("server_state_space", ServerMessage::State(state_space())),
        ("server_state_orbit", ServerMessage::State(state_orbit())),
        (
            "server_state_orbit_waiting",
            ServerMessage::State(state_orbit_waiting()),
        ),
        (
            "server_left",
            ServerMessage::Left {
                code: "K7QP2D".into(),
            },
        ),
        (
            "server_shutdown",
            ServerMessage::Shutdown {
                reason: "restarting for an upgrade".into(),
                reconnect_after_ms: 3_000,
            },
        ),
        (
            "server_state_correspondence",
            ServerMessage::State(state_correspondence()),
        ),
        (
            "server_error_claim_too_early",
            ServerMessage::Error {
                seq: Some(14),
                code: ErrorCode::ClaimTooEarly,
                message: "you can claim this game in 1 d 4 h 30 min".into(),
            },
        ),
        (
            "server_lobby_info",
            ServerMessage::LobbyInfo {
                seq: 2,
                lobby: LobbySummary {
                    code: "M3XW9A".into(),
                    rule_set: RuleSet::Russian,
                    pace: Pace::Correspondence,
                    series_length: 3,
                    invite_only: true,
                    stake: 100,
                    host_name: Some("Ann".into()),
                    host_away: false,
                    players: vec![Some("Ann".into()), None],
                    spectators: 0,
                    phase: Phase::Waiting,
                    expires_at: Some(1_767_830_400_000),
                    draw_rules: DrawRules::Standard,
                },
            },
        ),
        (
            "server_my_games",
            ServerMessage::MyGames {
                seq: 3,
                games: vec![
                    MyGame {
                        code: "K7QP2D".into(),
                        kind: jumpgate_protocol::GameKind::Lobby,
                        rule_set: RuleSet::American,
                        pace: Pace::Correspondence,
                        phase: Some(Phase::Playing),
                        opponent: Some("Guest 91C2".into()),
                        your_turn: true,
                        deadline: Some(1_767_398_400_000),
                        last_move_at: Some(1_767_225_600_000),
                        expires_at: Some(1_767_830_400_000),
                    },
                    MyGame {
                        code: "M3XW9A".into(),
                        kind: jumpgate_protocol::GameKind::Lobby,
                        rule_set: RuleSet::Russian,
                        pace: Pace::Correspondence,
                        phase: Some(Phase::Waiting),
                        opponent: None,
                        your_turn: false,
                        deadline: None,
                        last_move_at: None,
                        expires_at: Some(1_767_830_400_000),
                    },
                    MyGame {
                        code: "S4K7M2QX".into(),
                        kind: jumpgate_protocol::GameKind::Solo,
                        rule_set: RuleSet::Italian,
                        pace: Pace::Live,
                        phase: None,
                        opponent: Some("executive".into()),
                        your_turn: true,
                        deadline: None,
                        last_move_at: None,
                        expires_at: None,
                    },
                ],
            },
        ),
        (
            "server_solo_state",
            ServerMessage::SoloState(jumpgate_protocol::SoloState {
                version: 4,
                id: "S4K7M2QX".into(),
                rule_set: RuleSet::American,
                mode: jumpgate_protocol::SoloMode::Computer,
                level: Some(jumpgate_protocol::BotLevel::Executive),
                ranked: true,
                you: Some(Color::Dark),
                thinking: false,
                queue: None,
                game: state_playing().game.expect("a game"),
            }),
        ),
        (
            "server_solo_state_queued",
            ServerMessage::SoloState(jumpgate_protocol::SoloState {
                version: 5,
                id: "S4K7M2QX".into(),
                rule_set: RuleSet::American,
                mode: jumpgate_protocol::SoloMode::Computer,
                level: Some(jumpgate_protocol::BotLevel::Executive),
                ranked: true,
                you: Some(Color::Dark),
                thinking: true,
                queue: Some(jumpgate_protocol::SearchQueuePlace {
                    ahead: 3,
                    expected_ms: 4_200,
                }),
                game: state_playing().game.expect("a game"),
            }),
        ),
        (
            "server_error_computer_busy",
            ServerMessage::Error {
                seq: Some(3),
                code: ErrorCode::ComputerBusy,
                message: "the computer is busy: try again in about 20 s".into(),
            },
        ),
        (
            "server_state_federation_draw",
            ServerMessage::State(state_federation_draw()),
        ),
        (
            "server_lobby_info_federation_draws",
            ServerMessage::LobbyInfo {
                seq: 2,
                lobby: LobbySummary {
                    code: "R5MD2W".into(),
                    rule_set: RuleSet::Russian,
                    pace: Pace::Live,
                    series_length: 3,
                    invite_only: false,
                    stake: 0,
                    host_name: Some("Ann".into()),
                    host_away: false,
                    players: vec![Some("Ann".into()), None],
                    spectators: 0,
                    phase: Phase::Waiting,
                    expires_at: None,
                    draw_rules: DrawRules::Federation,
                },
            },
        ),
    ]
}

/// Every client example, protocol 2's included.
pub fn all_client_examples() -> Vec<(&'static str, ClientMessage)> {
    let mut examples = client_examples();
    examples.extend(crate::golden_v2::client_examples());
    examples
}

/// Every server example, protocol 2's included.
pub fn all_server_examples() -> Vec<(&'static str, ServerMessage)> {
    let mut examples = server_examples();
    examples.extend(crate::golden_v2::server_examples());
    examples
}

pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

pub fn blessing() -> bool {
    std::env::var_os("JUMPGATE_BLESS").is_some_and(|value| value == "1")
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

pub fn from_hex(text: &str) -> Vec<u8> {
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).expect("ASCII hex");
            assert_eq!(pair.len(), 2, "odd-length hex");
            u8::from_str_radix(pair, 16).expect("hex digit")
        })
        .collect()
}

/// Compares `frame` with the file (or writes the file when blessing) and returns the
/// frame as stored, without its final newline.
pub fn check_file(path: &Path, frame: &str) -> String {
    let expected = format!("{frame}\n");
    if blessing() {
        fs::write(path, &expected).unwrap();
    }
    let stored = fs::read_to_string(path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; run with JUMPGATE_BLESS=1 to create it",
            path.display()
        )
    });
    assert_eq!(
        stored,
        expected,
        "{} differs from the encoder's output; if the change is deliberate, \
         run with JUMPGATE_BLESS=1 and review the diff",
        path.display()
    );
    stored.strip_suffix('\n').unwrap().to_owned()
}

/// Checks one example in both encodings: encoding matches the files, decoding the files
/// gives the example back. Returns the file names it used.
fn check_example<M: PartialEq + Debug>(
    name: &str,
    message: &M,
    encode: impl Fn(Encoding, &M) -> codec::Frame,
    decode: impl Fn(Encoding, &[u8]) -> Result<M, codec::DecodeError>,
) -> [String; 2] {
    let dir = vectors_dir();
    let json_name = format!("{name}.json");
    let hex_name = format!("{name}.msgpack.hex");

    let codec::Frame::Text(json) = encode(Encoding::Json, message) else {
        panic!("JSON must encode to a text frame");
    };
    let stored_json = check_file(&dir.join(&json_name), &json);
    assert_eq!(
        decode(Encoding::Json, stored_json.as_bytes()).as_ref(),
        Ok(message),
        "{json_name}"
    );

    let codec::Frame::Binary(bytes) = encode(Encoding::MsgPack, message) else {
        panic!("MessagePack must encode to a binary frame");
    };
    let stored_hex = check_file(&dir.join(&hex_name), &to_hex(&bytes));
    assert_eq!(
        decode(Encoding::MsgPack, &from_hex(&stored_hex)).as_ref(),
        Ok(message),
        "{hex_name}"
    );

    [json_name, hex_name]
}

// One test, so that blessing writes every file before the stale-file check reads the
// folder.
#[test]
fn vectors_match_the_codec() {
    let dir = vectors_dir();
    if blessing() {
        fs::create_dir_all(&dir).unwrap();
    }
    let mut expected_files = BTreeSet::new();
    for (name, message) in all_client_examples() {
        expected_files.extend(check_example(
            name,
            &message,
            codec::encode_client,
            codec::decode_client,
        ));
    }
    for (name, message) in all_server_examples() {
        expected_files.extend(check_example(
            name,
            &message,
            codec::encode_server,
            codec::decode_server,
        ));
    }
    expected_files.extend(crate::refusals::check_refusals(&dir));

    let mut stale = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        let file = entry.file_name().into_string().unwrap();
        if !expected_files.contains(&file) {
            if blessing() {
                fs::remove_file(entry.path()).unwrap();
            } else {
                stale.push(file);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "files with no example (JUMPGATE_BLESS=1 removes them): {stale:?}"
    );
}

#[test]
fn every_message_type_has_an_example() {
    let client: BTreeSet<_> = all_client_examples()
        .iter()
        .map(|(_, message)| message.kind())
        .collect();
    let server: BTreeSet<_> = all_server_examples()
        .iter()
        .map(|(_, message)| message.kind())
        .collect();
    assert_eq!(client, ClientMessage::TYPES.iter().copied().collect());
    assert_eq!(server, ServerMessage::TYPES.iter().copied().collect());
}

#[test]
fn kind_is_the_wire_type() {
    let client = all_client_examples().into_iter().map(|(_, message)| {
        (
            message.kind(),
            codec::encode_client(Encoding::Json, &message),
        )
    });
    let server = all_server_examples().into_iter().map(|(_, message)| {
        (
            message.kind(),
            codec::encode_server(Encoding::Json, &message),
        )
    });
    for (kind, frame) in client.chain(server) {
        let value: serde_json::Value = serde_json::from_slice(frame.as_bytes()).unwrap();
        assert_eq!(value["type"], kind);
    }
}

#[test]
fn the_playing_example_has_a_game_with_legal_moves() {
    let game = state_playing().game.expect("a game in progress");
    assert!(game.result.is_none());
    assert!(!game.legal_moves.is_empty());
}

#[test]
fn every_example_fits_the_size_limit() {
    for encoding in Encoding::ALL {
        for (name, message) in all_server_examples() {
            let frame = codec::encode_server(encoding, &message);
            assert!(
                frame.len() <= jumpgate_protocol::MAX_MESSAGE_BYTES,
                "{name}"
            );
        }
    }
}

/// States decode straight into their struct when `type` comes first (see
/// `codec::decode_server`); the same message with its keys in another order takes the
/// general path, and both must give the same message.
#[test]
fn states_decode_the_same_whatever_the_key_order() {
    for (name, message) in all_server_examples() {
        let codec::Frame::Binary(bytes) = codec::encode_server(Encoding::MsgPack, &message) else {
            panic!("{name}: MessagePack is binary");
        };
        assert_eq!(
            codec::decode_server(Encoding::MsgPack, &bytes).as_ref(),
            Ok(&message),
            "{name}, type first"
        );
        // serde_json's map sorts its keys, which moves `type` away from the front.
        let value: serde_json::Value = rmp_serde::from_slice(&bytes).unwrap();
        let reordered = rmp_serde::to_vec_named(&value).unwrap();
        assert_ne!(reordered[..6], bytes[..6], "{name}: `type` moved");
        assert_eq!(
            codec::decode_server(Encoding::MsgPack, &reordered).as_ref(),
            Ok(&message),
            "{name}, keys reordered"
        );
    }
}

/// A `welcome` from a server older than its `accounts` field still decodes,
/// as a server without accounts.
#[test]
fn a_welcome_without_accounts_reads_as_guests_only() {
    let old = r#"{"type":"welcome","server_version":"0.1.0","protocols":[1],"identity":{"id":"u_7f3a","name":"Guest 7F3A","guest":true},"token":"tk"}"#;
    let decoded = jumpgate_protocol::codec::decode_server(Encoding::Json, old.as_bytes()).unwrap();
    assert!(
        matches!(
            decoded,
            ServerMessage::Welcome {
                accounts: false,
                ..
            }
        ),
        "{decoded:?}"
    );
}
