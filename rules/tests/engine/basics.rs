//! Hand-checked positions for every special rule, written in the internal
//! frame (a1 bottom-left, Dark moving up) so they read the same in every
//! rule set.

use jumpgate_rules::{
    Bitboard, Color, DrawReason, Game, Outcome, PlayError, Position, RuleSet, Setup, Square,
    WinReason,
};

fn sq(name: &str) -> Square {
    let b = name.as_bytes();
    Square::from_coords(b[0] - b'a', b[1] - b'1').expect("square name")
}

/// `dark`/`light` list squares; a trailing `K` marks a king (e.g. `c3K`).
fn position(dark: &str, light: &str, turn: Color) -> Position {
    let mut by_color = [Bitboard::EMPTY; 2];
    let mut kings = Bitboard::EMPTY;
    for (i, list) in [dark, light].into_iter().enumerate() {
        for item in list.split_whitespace() {
            let (name, king) = match item.strip_suffix('K') {
                Some(n) => (n, true),
                None => (item, false),
            };
            by_color[i] |= sq(name).bb();
            if king {
                kings |= sq(name).bb();
            }
        }
    }
    Position::from_setup(Setup {
        by_color,
        kings,
        turn,
    })
    .expect("valid test position")
}

/// Legal moves (one per result) as internal paths like `b6xd8xf6`.
fn legal(rs: RuleSet, pos: Position) -> Vec<String> {
    let game = Game::from_position(rs, pos);
    let mut v: Vec<String> = game
        .legal_moves()
        .iter()
        .map(|m| format!("{m:?}"))
        .collect();
    v.sort();
    v
}

fn crowned(rs: RuleSet, pos: Position, path: &str) -> bool {
    let game = Game::from_position(rs, pos);
    game.legal_moves()
        .iter()
        .find(|m| format!("{m:?}") == path)
        .unwrap_or_else(|| panic!("{path} not legal"))
        .crowns()
}

#[test]
fn russian_man_crowned_mid_capture_continues_as_flying_king() {
    let pos = position("b6", "c7 e7", Color::Dark);
    assert_eq!(
        legal(RuleSet::Russian, pos),
        ["b6xd8xf6", "b6xd8xg5", "b6xd8xh4"]
    );
    assert!(crowned(RuleSet::Russian, pos, "b6xd8xh4"));
}

#[test]
fn brazilian_man_passes_the_far_row_as_a_man() {
    let pos = position("b6", "c7 e7", Color::Dark);
    assert_eq!(legal(RuleSet::Brazilian, pos), ["b6xd8xf6"]);
    assert!(!crowned(RuleSet::Brazilian, pos, "b6xd8xf6"));
    // Ending on the far row crowns.
    let pos = position("b6", "c7", Color::Dark);
    assert_eq!(legal(RuleSet::Brazilian, pos), ["b6xd8"]);
    assert!(crowned(RuleSet::Brazilian, pos, "b6xd8"));
}

#[test]
fn american_crowning_ends_the_move() {
    // As a king on d8 it could take e7, but crowning ends the move.
    let pos = position("b6", "c7 e7", Color::Dark);
    assert_eq!(legal(RuleSet::American, pos), ["b6xd8"]);
    assert!(crowned(RuleSet::American, pos, "b6xd8"));
}

#[test]
fn majority_rule_where_it_applies() {
    let pos = position("c3", "b4 d4 f6", Color::Dark);
    for rs in [RuleSet::Brazilian, RuleSet::Spanish, RuleSet::Italian] {
        assert_eq!(legal(rs, pos), ["c3xe5xg7"], "{rs}");
    }
    for rs in [RuleSet::American, RuleSet::Russian, RuleSet::Thai] {
        assert_eq!(legal(rs, pos), ["c3xa5", "c3xe5xg7"], "{rs}");
    }
}

#[test]
fn majority_counts_a_king_as_one_piece() {
    // One king versus two men: the two men win in Brazilian and Spanish.
    let pos = position("c3", "b4K d4 f6", Color::Dark);
    assert_eq!(legal(RuleSet::Brazilian, pos), ["c3xe5xg7"]);
    assert_eq!(legal(RuleSet::Spanish, pos), ["c3xe5xg7"]);
}

#[test]
fn italian_men_cannot_capture_kings() {
    let pos = position("c3", "d4K", Color::Dark);
    assert_eq!(legal(RuleSet::Italian, pos), ["c3-b4"]);
    assert_eq!(legal(RuleSet::American, pos), ["c3xe5"]);
}

#[test]
fn italian_prefers_more_kings() {
    let pos = position("d4K", "c5K e5", Color::Dark);
    assert_eq!(legal(RuleSet::Italian, pos), ["d4xb6"]);
    assert_eq!(legal(RuleSet::American, pos), ["d4xb6", "d4xf6"]);
}

#[test]
fn italian_prefers_capturing_with_a_king() {
    let pos = position("c3K e3", "b4 f4", Color::Dark);
    assert_eq!(legal(RuleSet::Italian, pos), ["c3xa5"]);
    assert_eq!(legal(RuleSet::American, pos), ["c3xa5", "e3xg5"]);
}

#[test]
fn italian_prefers_the_king_taken_earliest() {
    let pos = position("c3K", "d4K f6 b4 b6K", Color::Dark);
    assert_eq!(legal(RuleSet::Italian, pos), ["c3xe5xg7"]);
    assert_eq!(legal(RuleSet::American, pos), ["c3xa5xc7", "c3xe5xg7"]);
}

#[test]
fn flying_king_lands_on_any_square_beyond() {
    let pos = position("a1K", "c3", Color::Dark);
    for rs in [
        RuleSet::Russian,
        RuleSet::Brazilian,
        RuleSet::Spanish,
        RuleSet::Thai,
    ] {
        assert_eq!(
            legal(rs, pos),
            ["a1xd4", "a1xe5", "a1xf6", "a1xg7", "a1xh8"],
            "{rs}"
        );
    }
    // Short kings capture only an adjacent piece, landing directly behind.
    assert_eq!(legal(RuleSet::American, pos), ["a1-b2"]);
    let pos = position("a1K", "b2", Color::Dark);
    assert_eq!(legal(RuleSet::American, pos), ["a1xc3"]);
    assert_eq!(legal(RuleSet::Italian, pos), ["a1xc3"]);
}

#[test]
fn flying_king_must_land_where_the_capture_goes_on() {
    let pos = position("a1K", "c3 f4", Color::Dark);
    for rs in [
        RuleSet::Russian,
        RuleSet::Brazilian,
        RuleSet::Spanish,
        RuleSet::Thai,
    ] {
        assert_eq!(legal(rs, pos), ["a1xe5xg3", "a1xe5xh2"], "{rs}");
    }
}

#[test]
fn captured_pieces_block_until_the_move_ends() {
    // After a1xc3 lands on d4, e5 blocks the diagonal; the king cannot fly
    // on past the captured c3 either, nor jump it again.
    let pos = position("a1K", "b2 d4 b4", Color::Dark);
    let moves = legal(RuleSet::Russian, pos);
    assert!(
        moves.iter().all(|m| m.matches('x').count() <= 3),
        "{moves:?}"
    );
    assert!(!moves.is_empty());
}

#[test]
fn a_path_may_revisit_a_square_and_paths_with_one_result_are_one_move() {
    let pos = position("c1K", "b2 d2 b4 d4", Color::Dark);
    // Two ways round the diamond, back to c1, taking all four: one move.
    assert_eq!(legal(RuleSet::American, pos), ["c1xa3xc5xe3xc1"]);
    assert_eq!(
        jumpgate_rules::perft::perft(RuleSet::American, &pos, 1, false),
        2
    );
    assert_eq!(
        jumpgate_rules::perft::perft(RuleSet::American, &pos, 1, true),
        1
    );
}

#[test]
fn illegal_moves_say_why_and_change_nothing() {
    let mut game = Game::new(RuleSet::American);
    let before = *game.position();
    assert!(matches!(
        game.play_text("11-14"),
        Err(PlayError::IllegalMove)
    ));
    assert!(matches!(
        game.play_text("14-18"),
        Err(PlayError::EmptySquare(_))
    ));
    assert!(matches!(
        game.play_text("22-18"),
        Err(PlayError::NotYourPiece(_))
    ));
    assert!(matches!(game.play_text("11-99"), Err(PlayError::Text(_))));
    assert_eq!(*game.position(), before);
    // A refusal names squares as the move gave them: numbers in notation, board
    // names in a path.
    let by_board = |text: &str| {
        let path: Vec<Square> = text
            .split('-')
            .map(|name| jumpgate_rules::notation::parse_board_name(RuleSet::American, name))
            .collect::<Option<_>>()
            .unwrap();
        path
    };
    let text = game.play_text("14-18").unwrap_err().to_string();
    let empty = jumpgate_rules::notation::board_name(
        RuleSet::American,
        jumpgate_rules::notation::parse_square(RuleSet::American, "14").unwrap(),
    );
    let target = jumpgate_rules::notation::board_name(
        RuleSet::American,
        jumpgate_rules::notation::parse_square(RuleSet::American, "18").unwrap(),
    );
    let path = game
        .play_path(&by_board(&format!("{empty}-{target}")))
        .unwrap_err()
        .to_string();
    assert_eq!(text, "there is no piece on 14");
    assert_eq!(path, format!("there is no piece on {empty}"));
    assert_eq!(*game.position(), before);
    game.play_text("11-15").unwrap();
    game.play_text("24-19").unwrap();
    // 15x24 is now mandatory.
    assert!(matches!(
        game.play_text("9-13"),
        Err(PlayError::CaptureMandatory)
    ));
    game.play_text("15x24").unwrap();

    // A larger capture is required in Brazilian.
    let mut game = Game::from_position(RuleSet::Brazilian, position("c3", "b4 d4 f6", Color::Dark));
    assert_eq!(
        game.play_text("c3xa5"),
        Err(PlayError::LargerCaptureRequired)
    );
    // Stopping half-way through a capture.
    assert_eq!(game.play_text("c3xe5"), Err(PlayError::CaptureNotFinished));
    game.play_text("c3xg7").unwrap();

    // Italian priority.
    let mut game = Game::from_position(RuleSet::Italian, position("d4K", "c5K e5", Color::Dark));
    let text = game.move_text(&game.legal_moves()[0]);
    let other = jumpgate_rules::notation::square_name(RuleSet::Italian, sq("f6"));
    let from = jumpgate_rules::notation::square_name(RuleSet::Italian, sq("d4"));
    assert_eq!(
        game.play_text(&format!("{from}x{other}")),
        Err(PlayError::PriorityCaptureRequired)
    );
    game.play_text(&text).unwrap();
}

#[test]
fn the_side_with_no_pieces_or_no_moves_loses() {
    let mut game = Game::from_position(RuleSet::American, position("c3", "d4", Color::Dark));
    game.play_text("23x14").unwrap_or_else(|_| {
        // c3 is square 23? Fall back to playing the only legal move.
        let m = game.legal_moves()[0];
        game.play(&m).unwrap();
        m
    });
    assert_eq!(
        game.outcome(),
        Some(Outcome::Win {
            winner: Color::Dark,
            reason: WinReason::NoPieces
        })
    );
    // Light man on a1's neighbour blocked: no moves.
    let game = Game::from_position(RuleSet::American, position("a1 c1", "b2", Color::Light));
    assert_eq!(
        game.outcome(),
        Some(Outcome::Win {
            winner: Color::Dark,
            reason: WinReason::NoMoves
        })
    );
}

#[test]
fn threefold_repetition_draws() {
    let pos = position("a1K", "h8K", Color::Dark);
    let mut game = Game::from_position(RuleSet::American, pos);
    let cycle = ["4-8", "29-25", "8-4", "25-29"]; // a1-b2, h8-g7, back
    for (i, m) in cycle.iter().chain(cycle.iter()).enumerate() {
        assert_eq!(game.outcome(), None, "before ply {i}");
        game.play_text(m).unwrap();
    }
    assert_eq!(
        game.outcome(),
        Some(Outcome::Draw {
            reason: DrawReason::Repetition
        })
    );
}

fn shuffle_until_draw(rs: RuleSet) -> u32 {
    // Kings far apart walking a long loop never repeat three times quickly.
    let pos = position("a1K c1K", "h8K f8K", Color::Dark);
    let mut game = Game::from_position(rs, pos);
    let mut plies = 0;
    while game.outcome().is_none() {
        // Play the first quiet king move that neither repeats a position a
        // third time nor offers the opponent a capture.
        let moves = game.legal_moves().to_vec();
        let mut played = false;
        for m in moves {
            let mut trial = game.clone();
            trial.play(&m).unwrap();
            let offers_capture = trial.legal_moves().iter().any(|m| m.is_capture());
            if !m.is_capture() && !offers_capture && trial.repetitions() < 3 {
                game = trial;
                played = true;
                break;
            }
        }
        assert!(played, "stuck");
        plies += 1;
        assert!(plies <= 200);
    }
    assert_eq!(
        game.outcome(),
        Some(Outcome::Draw {
            reason: DrawReason::NoProgress
        })
    );
    plies
}

#[test]
fn no_progress_draw_after_80_plies_in_american_and_20_elsewhere() {
    assert_eq!(shuffle_until_draw(RuleSet::American), 80);
    assert_eq!(shuffle_until_draw(RuleSet::Russian), 20);
    assert_eq!(shuffle_until_draw(RuleSet::Italian), 20);
}

#[test]
fn notation_round_trips_through_play() {
    let mut game = Game::new(RuleSet::Russian);
    let m = game.play_text("c3-d4").unwrap();
    assert_eq!(format!("{m:?}"), "c3-d4");
    let mut game = Game::new(RuleSet::American);
    let m = game.play_text("11-15").unwrap();
    assert_eq!(game.moves(), &[m]);
}

/// A capture lists the pieces it takes in the order it jumps them, not in
/// board order: the Russian man on h6 takes the king on g5, then e5, then
/// c7, crowning on b8.
#[test]
fn captures_are_listed_in_jump_order() {
    let rs = RuleSet::Russian;
    let pos = jumpgate_rules::fen::parse(rs, "W:Wc3,h6:Bc7,e5,Kg5").unwrap();
    let game = jumpgate_rules::Game::from_position(rs, pos);
    let name = |sq| jumpgate_rules::notation::board_name(rs, sq);
    let m = game
        .legal_moves()
        .iter()
        .find(|m| name(m.from()) == "h6" && name(m.to()) == "b8")
        .expect("h6:b8 is legal");
    let order: Vec<String> = m.captured_in_order().map(name).collect();
    assert_eq!(order, ["g5", "e5", "c7"]);
    let path: Vec<String> = m.path().iter().map(|&sq| name(sq)).collect();
    assert_eq!(path, ["h6", "f4", "d6", "b8"]);
}

/// A path of two squares names a move by its ends, so a multi-jump may be
/// given as origin and destination; a prefix of a capture is still refused.
#[test]
fn two_squares_name_a_capture_by_its_ends() {
    let pos = position("c3", "d4 b4 b6", Color::Dark);
    assert_eq!(legal(RuleSet::Russian, pos), ["c3xa5xc7", "c3xe5"]);
    let mut game = Game::from_position(RuleSet::Russian, pos);
    assert_eq!(
        game.clone().play_path(&[sq("c3"), sq("a5")]),
        Err(PlayError::CaptureNotFinished)
    );
    let played = game.play_path(&[sq("c3"), sq("c7")]).expect("ends name it");
    assert_eq!(format!("{played:?}"), "c3xa5xc7");
    assert_eq!(played.captured().count(), 2);
}
