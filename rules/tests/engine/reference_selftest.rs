//! Self-tests of the reference move generator in `tests/reference/`: known perft counts and
//! hand-made positions for each special rule.
//!
//! Just over 700 lines: one short test per special rule, side by side.

use crate::reference::{
    RefBoard, RefColor, RefMove, RefRules, ref_legal_moves, ref_perft, ref_unique_moves,
};

use RefColor::{Dark, Light};
use RefRules::{American, Brazilian, Italian, Russian, Spanish, Thai};

/// A capture move, captured squares given in any order.
fn cap(path: &[(u8, u8)], captured: &[(u8, u8)], crowned: bool) -> RefMove {
    let mut captured = captured.to_vec();
    captured.sort();
    RefMove {
        path: path.to_vec(),
        captured,
        crowned,
    }
}

/// A non-capturing move.
fn step(from: (u8, u8), to: (u8, u8), crowned: bool) -> RefMove {
    cap(&[from, to], &[], crowned)
}

/// Asserts that the legal moves are exactly `expected` (in any order).
fn assert_moves(rules: RefRules, board: &RefBoard, mut expected: Vec<RefMove>) {
    expected.sort();
    let got = ref_legal_moves(rules, board);
    assert_eq!(
        got,
        expected,
        "{rules:?}, {:?} to move:\n{}",
        board.turn,
        board.to_text()
    );
}

fn check_perft(rules: RefRules, expected: &[u64]) {
    let board = RefBoard::start(rules);
    for (i, &want) in expected.iter().enumerate() {
        let depth = i as u32 + 1;
        assert_eq!(
            ref_perft(rules, &board, depth, false),
            want,
            "{rules:?} perft({depth})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Perft from the start position (every capture path counted).

#[test]
fn perft_american() {
    check_perft(American, &[7, 49, 302, 1469, 7361, 36768, 179740]);
}

#[test]
fn perft_russian() {
    check_perft(Russian, &[7, 49, 302, 1469, 7482, 37986, 190146]);
}

#[test]
fn perft_brazilian() {
    check_perft(Brazilian, &[7, 49, 302, 1469, 7473, 37628, 187302]);
}

#[test]
fn perft_italian() {
    check_perft(Italian, &[7, 49, 302, 1469, 7361, 36473, 177532]);
}

#[test]
fn perft_russian_depth8() {
    let b = RefBoard::start(Russian);
    assert_eq!(ref_perft(Russian, &b, 8, false), 929_905);
    assert_eq!(ref_perft(Russian, &b, 8, true), 929_899);
}

#[test]
fn perft_brazilian_depth8() {
    let b = RefBoard::start(Brazilian);
    assert_eq!(ref_perft(Brazilian, &b, 8, false), 907_836);
    assert_eq!(ref_perft(Brazilian, &b, 8, true), 907_830);
}

/// Self-computed regression values (not from an external source).
#[test]
fn perft_spanish_self_computed() {
    check_perft(Spanish, &[7, 49, 302, 1469, 7361, 36473, 177532, 828783]);
    let b = RefBoard::start(Spanish);
    assert_eq!(ref_perft(Spanish, &b, 8, true), 828_783);
}

/// Self-computed regression values (not from an external source).
#[test]
fn perft_thai_self_computed() {
    check_perft(Thai, &[7, 49, 392, 3136, 26592, 218695, 1820189]);
}

#[test]
#[ignore = "slow: about 14.5 million leaves"]
fn perft_thai_depth8_self_computed() {
    let b = RefBoard::start(Thai);
    assert_eq!(ref_perft(Thai, &b, 8, false), 14_533_506);
    assert_eq!(ref_perft(Thai, &b, 8, true), 14_533_506);
}

// ---------------------------------------------------------------------------------------------
// Board basics.

#[test]
fn start_positions() {
    for rules in RefRules::ALL {
        let b = RefBoard::start(rules);
        assert_eq!(b.turn, Dark);
        let men = if rules == Thai { 8 } else { 12 };
        assert_eq!(b.count(), (men, men), "{rules:?}");
    }
    assert_eq!(
        RefBoard::start(American).to_text(),
        ".l.l.l.l\nl.l.l.l.\n.l.l.l.l\n........\n........\nd.d.d.d.\n.d.d.d.d\nd.d.d.d.\n"
    );
    assert_eq!(
        RefBoard::start(Thai).to_text(),
        ".l.l.l.l\nl.l.l.l.\n........\n........\n........\n........\n.d.d.d.d\nd.d.d.d.\n"
    );
    assert_eq!(RefBoard::start(American).get((0, 0)), Some((Dark, false)));
    assert_eq!(RefBoard::start(American).get((7, 7)), Some((Light, false)));
}

#[test]
fn parse_round_trip() {
    let text = "\
        .L......
        ........
        ...l....
        ........
        .....d..
        ........
        ...D....
        ........
    ";
    let b = RefBoard::parse(text, Light);
    assert_eq!(b.turn, Light);
    assert_eq!(b.get((1, 7)), Some((Light, true)));
    assert_eq!(b.get((3, 5)), Some((Light, false)));
    assert_eq!(b.get((5, 3)), Some((Dark, false)));
    assert_eq!(b.get((3, 1)), Some((Dark, true)));
    assert_eq!(b.count(), (2, 2));
    assert_eq!(RefBoard::parse(&b.to_text(), Light), b);
    let start = RefBoard::start(Russian);
    assert_eq!(RefBoard::parse(&start.to_text(), Dark), start);
}

#[test]
#[should_panic]
fn parse_rejects_piece_on_unplayable_square() {
    RefBoard::parse(
        "........\n........\n........\n........\n........\n........\n........\n.d......\n",
        Dark,
    );
}

#[test]
fn play_removes_captured_and_crowns() {
    let b = RefBoard::parse(
        "
        ........
        ..l.....
        .d......
        ........
        ........
        ........
        ........
        ........",
        Dark,
    );
    let moves = ref_legal_moves(American, &b);
    assert_eq!(moves, vec![cap(&[(1, 5), (3, 7)], &[(2, 6)], true)]);
    let after = b.play(&moves[0]);
    assert_eq!(after.turn, Light);
    assert_eq!(after.count(), (1, 0));
    assert_eq!(after.get((3, 7)), Some((Dark, true)));
    assert_eq!(after.get((1, 5)), None);
}

// ---------------------------------------------------------------------------------------------
// Quiet moves.

#[test]
fn men_move_forward_only_and_crown() {
    let b = RefBoard::parse(
        "
        ........
        ..d.....
        ........
        ........
        ........
        ........
        ...l....
        ........",
        Dark,
    );
    for rules in RefRules::ALL {
        assert_moves(
            rules,
            &b,
            vec![step((2, 6), (1, 7), true), step((2, 6), (3, 7), true)],
        );
    }
    let b = RefBoard { turn: Light, ..b };
    for rules in RefRules::ALL {
        assert_moves(
            rules,
            &b,
            vec![step((3, 1), (2, 0), true), step((3, 1), (4, 0), true)],
        );
    }
}

#[test]
fn short_and_flying_king_moves() {
    let b = RefBoard::parse(
        "
        .......l
        ........
        ........
        ........
        ........
        ........
        ........
        D.......",
        Dark,
    );
    assert_moves(American, &b, vec![step((0, 0), (1, 1), false)]);
    assert_moves(Italian, &b, vec![step((0, 0), (1, 1), false)]);
    let flying: Vec<RefMove> = (1..7).map(|i| step((0, 0), (i, i), false)).collect();
    for rules in [Russian, Brazilian, Spanish, Thai] {
        assert_moves(rules, &b, flying.clone());
    }
}

#[test]
fn captures_are_mandatory() {
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        ...l....
        ..d.....
        ........
        d.......",
        Dark,
    );
    for rules in RefRules::ALL {
        assert_moves(rules, &b, vec![cap(&[(2, 2), (4, 4)], &[(3, 3)], false)]);
    }
}

#[test]
fn men_capture_backward_only_in_russian_and_brazilian() {
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ..d.....
        .l......
        ........
        ........
        ........",
        Dark,
    );
    let back = cap(&[(2, 4), (0, 2)], &[(1, 3)], false);
    assert_moves(Russian, &b, vec![back.clone()]);
    assert_moves(Brazilian, &b, vec![back]);
    let quiet = vec![step((2, 4), (1, 5), false), step((2, 4), (3, 5), false)];
    for rules in [American, Spanish, Italian, Thai] {
        assert_moves(rules, &b, quiet.clone());
    }
}

// ---------------------------------------------------------------------------------------------
// Crowning during a capture.

/// Dark man on (1,5) jumps (2,6) to the far row; a light man on (5,5) is then only reachable
/// by a flying king.
#[test]
fn russian_crowned_mid_capture_continues_as_flying_king() {
    let b = RefBoard::parse(
        "
        ........
        ..l.....
        .d...l..
        ........
        ........
        ........
        ........
        ........",
        Dark,
    );
    assert_moves(
        Russian,
        &b,
        vec![
            cap(&[(1, 5), (3, 7), (6, 4)], &[(2, 6), (5, 5)], true),
            cap(&[(1, 5), (3, 7), (7, 3)], &[(2, 6), (5, 5)], true),
        ],
    );
    // Everyone else stops on the far row: forward-only men cannot go on, and a Brazilian man
    // that stays a man cannot reach the distant piece.
    for rules in [American, Brazilian, Spanish, Italian, Thai] {
        assert_moves(rules, &b, vec![cap(&[(1, 5), (3, 7)], &[(2, 6)], true)]);
    }
}

#[test]
fn brazilian_man_passes_far_row_and_stays_a_man() {
    let b = RefBoard::parse(
        "
        ........
        ..l.l...
        .d......
        ........
        ........
        ........
        ........
        ........",
        Dark,
    );
    assert_moves(
        Brazilian,
        &b,
        vec![cap(&[(1, 5), (3, 7), (5, 5)], &[(2, 6), (4, 6)], false)],
    );
    // As a Russian king it may land anywhere beyond (4,6).
    assert_moves(
        Russian,
        &b,
        vec![
            cap(&[(1, 5), (3, 7), (5, 5)], &[(2, 6), (4, 6)], true),
            cap(&[(1, 5), (3, 7), (6, 4)], &[(2, 6), (4, 6)], true),
            cap(&[(1, 5), (3, 7), (7, 3)], &[(2, 6), (4, 6)], true),
        ],
    );
    assert_moves(American, &b, vec![cap(&[(1, 5), (3, 7)], &[(2, 6)], true)]);
    // Ending on the far row in Brazilian does crown.
    let b = RefBoard::parse(
        "
        ........
        ..l.....
        .d......
        ........
        ........
        ........
        ........
        ........",
        Dark,
    );
    assert_moves(Brazilian, &b, vec![cap(&[(1, 5), (3, 7)], &[(2, 6)], true)]);
}

// ---------------------------------------------------------------------------------------------
// Majority.

#[test]
fn majority_capture() {
    let b = RefBoard::parse(
        "
        ........
        ........
        .....l..
        ........
        .l.l....
        ..d.....
        ........
        ........",
        Dark,
    );
    let short = cap(&[(2, 2), (0, 4)], &[(1, 3)], false);
    let long = cap(&[(2, 2), (4, 4), (6, 6)], &[(3, 3), (5, 5)], false);
    for rules in [American, Russian, Thai] {
        assert_moves(rules, &b, vec![short.clone(), long.clone()]);
    }
    for rules in [Brazilian, Spanish, Italian] {
        assert_moves(rules, &b, vec![long.clone()]);
    }
}

// ---------------------------------------------------------------------------------------------
// Italian.

#[test]
fn italian_men_cannot_capture_kings() {
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        ...L....
        ..d.....
        ........
        ........",
        Dark,
    );
    assert_moves(Italian, &b, vec![step((2, 2), (1, 3), false)]);
    assert_moves(Spanish, &b, vec![cap(&[(2, 2), (4, 4)], &[(3, 3)], false)]);

    // Mid-sequence too: the man takes (1,1) and must stop in front of the king on (3,3).
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        ...L....
        ........
        .l......
        d.......",
        Dark,
    );
    assert_moves(Italian, &b, vec![cap(&[(0, 0), (2, 2)], &[(1, 1)], false)]);
    assert_moves(
        Spanish,
        &b,
        vec![cap(&[(0, 0), (2, 2), (4, 4)], &[(1, 1), (3, 3)], false)],
    );
}

#[test]
fn italian_most_pieces_before_most_kings() {
    // The king on (3,3) can take the king on (4,4), or the two men on (2,4) and (2,6).
    let b = RefBoard::parse(
        "
        ........
        ..l.....
        ........
        ..l.L...
        ...D....
        ........
        ........
        ........",
        Dark,
    );
    assert_moves(
        Italian,
        &b,
        vec![cap(&[(3, 3), (1, 5), (3, 7)], &[(2, 4), (2, 6)], false)],
    );
}

#[test]
fn italian_most_kings() {
    // The king on (2,2) can take the man on (1,3) or the king on (3,3).
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        .l.L....
        ..D.....
        ........
        ........",
        Dark,
    );
    assert_moves(Italian, &b, vec![cap(&[(2, 2), (4, 4)], &[(3, 3)], false)]);
    assert_moves(
        American,
        &b,
        vec![
            cap(&[(2, 2), (0, 4)], &[(1, 3)], false),
            cap(&[(2, 2), (4, 4)], &[(3, 3)], false),
        ],
    );
}

#[test]
fn italian_capture_with_king_preferred() {
    // The man on (2,2) and the king on (6,2) can each take one man.
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        ...l....
        ..d...D.
        .....l..
        ........",
        Dark,
    );
    assert_moves(Italian, &b, vec![cap(&[(6, 2), (4, 0)], &[(5, 1)], false)]);
    assert_moves(
        American,
        &b,
        vec![
            cap(&[(2, 2), (4, 4)], &[(3, 3)], false),
            cap(&[(6, 2), (4, 0)], &[(5, 1)], false),
        ],
    );
}

#[test]
fn italian_king_captured_earliest() {
    // King on (3,3): either king (4,4) then man (6,4), or man (2,4) then king (2,6).
    let b = RefBoard::parse(
        "
        ........
        ..L.....
        ........
        ..l.L.l.
        ...D....
        ........
        ........
        ........",
        Dark,
    );
    let king_first = cap(&[(3, 3), (5, 5), (7, 3)], &[(4, 4), (6, 4)], false);
    let king_second = cap(&[(3, 3), (1, 5), (3, 7)], &[(2, 4), (2, 6)], false);
    assert_moves(Italian, &b, vec![king_first.clone()]);
    assert_moves(American, &b, vec![king_first, king_second]);
}

// ---------------------------------------------------------------------------------------------
// Flying kings.

#[test]
fn flying_king_multiple_landing_squares() {
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        ........
        ..l.....
        ........
        D.......",
        Dark,
    );
    let all: Vec<RefMove> = (3..8)
        .map(|i| cap(&[(0, 0), (i, i)], &[(2, 2)], false))
        .collect();
    for rules in [Russian, Brazilian, Spanish, Thai] {
        assert_moves(rules, &b, all.clone());
    }
    // Short kings need the victim adjacent.
    assert_moves(American, &b, vec![step((0, 0), (1, 1), false)]);
}

#[test]
fn flying_king_must_land_where_capture_continues() {
    // After taking (2,2) only (4,4) allows a further capture (of (5,3)), so the king must land
    // there; it may then stop on either square beyond (5,3).
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ........
        .....l..
        ..l.....
        ........
        D.......",
        Dark,
    );
    let expected = vec![
        cap(&[(0, 0), (4, 4), (6, 2)], &[(2, 2), (5, 3)], false),
        cap(&[(0, 0), (4, 4), (7, 1)], &[(2, 2), (5, 3)], false),
    ];
    for rules in [Russian, Brazilian, Spanish, Thai] {
        assert_moves(rules, &b, expected.clone());
    }
}

// ---------------------------------------------------------------------------------------------
// Paths revisiting squares, captured pieces blocking.

#[test]
fn path_returns_to_origin() {
    // A king circles four men and lands back on its own starting square, either way round.
    let b = RefBoard::parse(
        "
        ........
        ........
        .l.l....
        ........
        .l.l....
        ..D.....
        ........
        ........",
        Dark,
    );
    let ring = [(1, 3), (1, 5), (3, 3), (3, 5)];
    let expected = vec![
        cap(&[(2, 2), (4, 4), (2, 6), (0, 4), (2, 2)], &ring, false),
        cap(&[(2, 2), (0, 4), (2, 6), (4, 4), (2, 2)], &ring, false),
    ];
    assert_moves(American, &b, expected.clone());
    assert_moves(Italian, &b, expected);
    assert_eq!(ref_unique_moves(American, &b).len(), 1);
    assert_eq!(ref_perft(American, &b, 1, false), 2);
    assert_eq!(ref_perft(American, &b, 1, true), 1);
    let after = b.play(&ref_legal_moves(American, &b)[0]);
    assert_eq!(after.count(), (1, 0));
    assert_eq!(after.get((2, 2)), Some((Dark, true)));
}

#[test]
fn path_revisits_intermediate_square() {
    // The king jumps (1,1) to (2,2), circles back to (2,2) and leaves over (3,1).
    let b = RefBoard::parse(
        "
        ........
        ........
        .l.l....
        ........
        .l.l....
        ........
        .l.l....
        D.......",
        Dark,
    );
    let all = [(1, 1), (1, 3), (1, 5), (3, 1), (3, 3), (3, 5)];
    let clockwise = cap(
        &[(0, 0), (2, 2), (4, 4), (2, 6), (0, 4), (2, 2), (4, 0)],
        &all,
        false,
    );
    let anticlockwise = cap(
        &[(0, 0), (2, 2), (0, 4), (2, 6), (4, 4), (2, 2), (4, 0)],
        &all,
        false,
    );
    let moves = ref_legal_moves(American, &b);
    assert!(moves.contains(&clockwise), "{moves:?}");
    assert!(moves.contains(&anticlockwise), "{moves:?}");
    assert!(moves.contains(&cap(&[(0, 0), (2, 2), (4, 0)], &[(1, 1), (3, 1)], false)));
    // The majority rule leaves only the two full tours.
    assert_moves(Italian, &b, vec![clockwise, anticlockwise]);
}

#[test]
fn captured_piece_cannot_be_jumped_twice() {
    // After jumping (3,3) a backward-capturing man, or a king, stands next to it again with
    // the (now empty) origin behind it; it may not jump it a second time.
    for (rules, king) in [
        (Russian, false),
        (Brazilian, false),
        (American, true),
        (Italian, true),
    ] {
        let mut b = RefBoard::empty(Dark);
        b.set((2, 2), Some((Dark, king)));
        b.set((3, 3), Some((Light, false)));
        assert_moves(rules, &b, vec![cap(&[(2, 2), (4, 4)], &[(3, 3)], false)]);
    }
}

#[test]
fn captured_piece_blocks_flying_king() {
    // Russian king on (1,1). After taking (3,3) and then (6,4) and (6,2), the king on (5,1)
    // looks back along (4,2)-(3,3)-(2,4): (3,3) is still on the board, so the man on (2,4)
    // cannot be reached.
    let b = RefBoard::parse(
        "
        ........
        ........
        ........
        ..l...l.
        ...l....
        ......l.
        .D......
        ........",
        Dark,
    );
    assert_moves(
        Russian,
        &b,
        vec![
            cap(&[(1, 1), (4, 4), (7, 1)], &[(3, 3), (6, 2)], false),
            cap(
                &[(1, 1), (5, 5), (7, 3), (4, 0)],
                &[(3, 3), (6, 4), (6, 2)],
                false,
            ),
            cap(
                &[(1, 1), (5, 5), (7, 3), (5, 1)],
                &[(3, 3), (6, 4), (6, 2)],
                false,
            ),
        ],
    );
}
