//! Square names and move text in each rule set's own notation: numeric
//! squares 1–32 (English, Italian, Spanish, Thai) or algebraic a1–h8
//! (Russian, Brazilian), `-` for a quiet move, `x` (`:` in Russian) between
//! the squares of a capture.

use std::fmt::Write as _;

use super::bitboard::Square;
use super::position::Move;
use super::variant::{RuleSet, SquareNaming};

/// The file as seen on the rule set's real board (mirrored for Italian and
/// Spanish).
fn physical_file(rule_set: RuleSet, sq: Square) -> u8 {
    if rule_set.mirrored_board() {
        7 - sq.file()
    } else {
        sq.file()
    }
}

/// The square's number 1–32 in a numeric rule set's numbering.
pub fn square_number(rule_set: RuleSet, sq: Square) -> u8 {
    let file = physical_file(rule_set, sq);
    match rule_set.square_naming() {
        // Bottom-right first, right to left, bottom to top.
        SquareNaming::NumericFromBottomRight => sq.rank() * 4 + (7 - file) / 2 + 1,
        // Top-left first, left to right, top to bottom. The algebraic rule
        // sets use this numbering where a number is wanted (FEN input), as
        // Russian draughts programs commonly do (1 = b8, 32 = g1).
        SquareNaming::NumericFromTopLeft | SquareNaming::Algebraic => {
            (7 - sq.rank()) * 4 + file / 2 + 1
        }
    }
}

/// The square with number `n` (1–32).
pub fn square_from_number(rule_set: RuleSet, n: u8) -> Option<Square> {
    if !(1..=32).contains(&n) {
        return None;
    }
    Square::playable().find(|&sq| square_number(rule_set, sq) == n)
}

/// The algebraic name of the square on the rule set's real board, as the
/// wire protocol names it (`a1` is bottom-left from the first player's side).
pub fn board_name(rule_set: RuleSet, sq: Square) -> String {
    let file = physical_file(rule_set, sq);
    format!("{}{}", (b'a' + file) as char, sq.rank() + 1)
}

/// Reads an algebraic board name (`a1`–`h8`, any case) on the rule set's real
/// board. Only playing squares are accepted.
pub fn parse_board_name(rule_set: RuleSet, text: &str) -> Option<Square> {
    let bytes = text.trim().as_bytes();
    let [f, r] = bytes else { return None };
    let f = f.to_ascii_lowercase();
    if !(b'a'..=b'h').contains(&f) || !(b'1'..=b'8').contains(r) {
        return None;
    }
    let mut file = f - b'a';
    if rule_set.mirrored_board() {
        file = 7 - file;
    }
    Square::from_coords(file, r - b'1').filter(|sq| sq.is_playable())
}

/// The square's name in the rule set's notation.
pub fn square_name(rule_set: RuleSet, sq: Square) -> String {
    match rule_set.square_naming() {
        SquareNaming::Algebraic => board_name(rule_set, sq),
        _ => square_number(rule_set, sq).to_string(),
    }
}

/// Reads a square in the rule set's notation.
pub fn parse_square(rule_set: RuleSet, text: &str) -> Option<Square> {
    match rule_set.square_naming() {
        SquareNaming::Algebraic => parse_board_name(rule_set, text),
        _ => text
            .trim()
            .parse::<u8>()
            .ok()
            .and_then(|n| square_from_number(rule_set, n)),
    }
}

/// A move written with its full path.
pub fn full_text(rule_set: RuleSet, m: &Move) -> String {
    let sep = if m.is_capture() {
        rule_set.capture_separator()
    } else {
        '-'
    };
    let mut out = String::new();
    for (i, &sq) in m.path().iter().enumerate() {
        if i > 0 {
            out.push(sep);
        }
        let _ = write!(out, "{}", square_name(rule_set, sq));
    }
    out
}

/// A move written by origin and destination only.
pub fn short_text(rule_set: RuleSet, m: &Move) -> String {
    let sep = if m.is_capture() {
        rule_set.capture_separator()
    } else {
        '-'
    };
    format!(
        "{}{sep}{}",
        square_name(rule_set, m.from()),
        square_name(rule_set, m.to())
    )
}

/// The move's text: origin and destination when no other legal move shares
/// them, the full path otherwise. `legal` is the position's legal moves.
pub fn move_text(rule_set: RuleSet, m: &Move, legal: &[Move]) -> String {
    // A capture that returns to its origin is clearer with its path.
    let ambiguous = m.from() == m.to()
        || legal
            .iter()
            .any(|o| o.from() == m.from() && o.to() == m.to() && o.captured() != m.captured());
    if ambiguous {
        full_text(rule_set, m)
    } else {
        short_text(rule_set, m)
    }
}

/// A move as written, before it is matched against the legal moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveText {
    pub squares: Vec<Square>,
    /// Written with a capture separator.
    pub capture: bool,
}

/// Why a move's text could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MoveTextError {
    #[error("no such square: {0:?}")]
    NoSuchSquare(String),
    #[error("a move needs at least two squares")]
    TooShort,
    #[error("a move has at most {} squares", super::position::MAX_PATH)]
    TooLong,
}

/// Reads `11-15`, `9x18x27`, `c3-d4`, `c3:e5:g3` (separators `-`, `x`, `:`).
pub fn parse_move_text(rule_set: RuleSet, text: &str) -> Result<MoveText, MoveTextError> {
    let text = text.trim();
    let capture = text.contains(['x', 'X', ':']);
    let mut squares = Vec::new();
    for part in text.split(['-', 'x', 'X', ':']) {
        if squares.len() >= super::position::MAX_PATH {
            return Err(MoveTextError::TooLong);
        }
        let sq = parse_square(rule_set, part)
            .ok_or_else(|| MoveTextError::NoSuchSquare(part.trim().to_owned()))?;
        squares.push(sq);
    }
    if squares.len() < 2 {
        return Err(MoveTextError::TooShort);
    }
    Ok(MoveText { squares, capture })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_numbering_has_the_single_corners_at_4_and_29() {
        let rs = RuleSet::American;
        // In our frame Dark (Black) is at the bottom: 1 is g1, 4 is a1.
        assert_eq!(square_name(rs, Square::from_coords(6, 0).unwrap()), "1");
        assert_eq!(square_name(rs, Square::from_coords(0, 0).unwrap()), "4");
        assert_eq!(square_name(rs, Square::from_coords(7, 7).unwrap()), "29");
        assert_eq!(square_name(rs, Square::from_coords(1, 7).unwrap()), "32");
    }

    #[test]
    fn italian_numbering_starts_top_left_on_the_mirrored_board() {
        let rs = RuleSet::Italian;
        let one = square_from_number(rs, 1).unwrap();
        assert_eq!(board_name(rs, one), "a8");
        let last = square_from_number(rs, 32).unwrap();
        assert_eq!(board_name(rs, last), "h1");
    }

    #[test]
    fn spanish_numbering_starts_bottom_right_on_the_mirrored_board() {
        let rs = RuleSet::Spanish;
        assert_eq!(board_name(rs, square_from_number(rs, 1).unwrap()), "h1");
        assert_eq!(board_name(rs, square_from_number(rs, 4).unwrap()), "b1");
        assert_eq!(board_name(rs, square_from_number(rs, 32).unwrap()), "a8");
    }

    #[test]
    fn every_rule_set_names_32_distinct_squares_and_reads_them_back() {
        for rs in RuleSet::ALL {
            let mut seen = std::collections::HashSet::new();
            for sq in Square::playable() {
                let name = square_name(rs, sq);
                assert!(seen.insert(name.clone()));
                assert_eq!(parse_square(rs, &name), Some(sq));
                assert_eq!(parse_board_name(rs, &board_name(rs, sq)), Some(sq));
            }
            assert_eq!(seen.len(), 32);
        }
    }

    #[test]
    fn move_text_rejects_bad_squares() {
        let rs = RuleSet::American;
        assert!(matches!(
            parse_move_text(rs, "11-33"),
            Err(MoveTextError::NoSuchSquare(_))
        ));
        assert_eq!(parse_move_text(rs, "11"), Err(MoveTextError::TooShort));
        assert!(parse_move_text(RuleSet::Russian, "c3:e5").unwrap().capture);
    }
}
