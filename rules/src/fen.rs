//! PDN FEN: `B:W21-32:B1-12` — side to move, then each colour's squares,
//! `K` before a king, ranges allowed for numeric squares.
//!
//! The colour letters follow PDN: the first player is `B` in American and
//! Thai, `W` elsewhere. Algebraic rule sets (Russian, Brazilian) write
//! algebraic squares and also accept numbers (1 = b8 … 32 = g1).

use std::fmt::Write as _;

use super::bitboard::{Bitboard, Square};
use super::notation::{parse_board_name, square_from_number, square_name, square_number};
use super::position::{Color, Position, Setup, SetupError};
use super::variant::{RuleSet, SquareNaming};

/// Why a FEN could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenError {
    #[error("FEN must look like `B:W21-32:B1-12`")]
    Shape,
    #[error("side to move must be W or B")]
    Turn,
    #[error("unknown colour {0:?} (expected W or B)")]
    Colour(String),
    #[error("no such square: {0:?}")]
    Square(String),
    #[error("square listed twice")]
    Duplicate,
    #[error(transparent)]
    Setup(#[from] SetupError),
}

fn color_of(rule_set: RuleSet, letter: char) -> Option<Color> {
    let first = rule_set.first_player_letter();
    match letter.to_ascii_uppercase() {
        l if l == first => Some(Color::Dark),
        'W' | 'B' => Some(Color::Light),
        _ => None,
    }
}

fn letter_of(rule_set: RuleSet, color: Color) -> char {
    let first = rule_set.first_player_letter();
    match color {
        Color::Dark => first,
        Color::Light if first == 'W' => 'B',
        Color::Light => 'W',
    }
}

fn parse_one_square(rule_set: RuleSet, text: &str) -> Result<Square, FenError> {
    let t = text.trim();
    let sq = match t.parse::<u8>() {
        Ok(n) => square_from_number(rule_set, n),
        Err(_) if rule_set.square_naming() == SquareNaming::Algebraic => {
            parse_board_name(rule_set, t)
        }
        Err(_) => None,
    };
    sq.ok_or_else(|| FenError::Square(t.to_owned()))
}

/// Reads a FEN into an unchecked setup.
pub fn parse_setup(rule_set: RuleSet, fen: &str) -> Result<Setup, FenError> {
    let fen = fen.trim().trim_matches('"').trim_end_matches('.');
    let mut parts = fen.split(':');
    let turn = match parts.next().map(str::trim) {
        Some(t) if t.len() == 1 => {
            color_of(rule_set, t.chars().next().unwrap_or(' ')).ok_or(FenError::Turn)?
        }
        _ => return Err(FenError::Turn),
    };
    let mut setup = Setup {
        by_color: [Bitboard::EMPTY; 2],
        kings: Bitboard::EMPTY,
        turn,
    };
    let mut seen = Bitboard::EMPTY;
    let mut sections = 0;
    for part in parts {
        let part = part.trim();
        let mut chars = part.chars();
        let letter = chars.next().ok_or(FenError::Shape)?;
        let color = color_of(rule_set, letter).ok_or_else(|| FenError::Colour(letter.into()))?;
        sections += 1;
        let rest = chars.as_str();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (king, body) = match item.strip_prefix(['K', 'k']) {
                Some(b) => (true, b),
                None => (false, item),
            };
            let squares: Vec<Square> = match body.split_once('-') {
                Some((a, b)) => {
                    let a: u8 = a
                        .trim()
                        .parse()
                        .map_err(|_| FenError::Square(item.into()))?;
                    let b: u8 = b
                        .trim()
                        .parse()
                        .map_err(|_| FenError::Square(item.into()))?;
                    if a > b {
                        return Err(FenError::Square(item.into()));
                    }
                    (a..=b)
                        .map(|n| parse_one_square(rule_set, &n.to_string()))
                        .collect::<Result<_, _>>()?
                }
                None => vec![parse_one_square(rule_set, body)?],
            };
            for sq in squares {
                if seen.contains(sq) {
                    return Err(FenError::Duplicate);
                }
                seen |= sq.bb();
                setup.by_color[color.index()] |= sq.bb();
                if king {
                    setup.kings |= sq.bb();
                }
            }
        }
    }
    if sections == 0 || sections > 2 {
        return Err(FenError::Shape);
    }
    Ok(setup)
}

/// Reads a FEN into a validated position.
pub fn parse(rule_set: RuleSet, fen: &str) -> Result<Position, FenError> {
    Ok(Position::from_setup(parse_setup(rule_set, fen)?)?)
}

/// Writes a position as FEN, squares in ascending order, runs of three or
/// more men as ranges where squares are numeric.
pub fn write(rule_set: RuleSet, pos: &Position) -> String {
    let mut out = String::new();
    out.push(letter_of(rule_set, pos.turn()));
    // Colours in PDN order: W first.
    let colors = if letter_of(rule_set, Color::Dark) == 'W' {
        [Color::Dark, Color::Light]
    } else {
        [Color::Light, Color::Dark]
    };
    for color in colors {
        out.push(':');
        out.push(letter_of(rule_set, color));
        let pieces = pos.pieces(color);
        let items = if rule_set.square_naming() == SquareNaming::Algebraic {
            let mut squares: Vec<Square> = pieces.into_iter().collect();
            squares.sort_by_key(|&sq| square_name(rule_set, sq));
            squares
                .into_iter()
                .map(|sq| {
                    let k = if pos.kings().contains(sq) { "K" } else { "" };
                    format!("{k}{}", square_name(rule_set, sq))
                })
                .collect::<Vec<_>>()
        } else {
            numeric_items(rule_set, pos, pieces)
        };
        out.push_str(&items.join(","));
    }
    out
}

fn numeric_items(rule_set: RuleSet, pos: &Position, pieces: Bitboard) -> Vec<String> {
    let mut numbered: Vec<(u8, bool)> = pieces
        .into_iter()
        .map(|sq| (square_number(rule_set, sq), pos.kings().contains(sq)))
        .collect();
    numbered.sort_unstable();
    let mut items = Vec::new();
    let mut i = 0;
    while i < numbered.len() {
        let (start, king) = numbered[i];
        let mut j = i;
        while j + 1 < numbered.len()
            && numbered[j + 1].0 == numbered[j].0 + 1
            && numbered[j + 1].1 == king
        {
            j += 1;
        }
        let mut item = String::new();
        if king {
            item.push('K');
        }
        if j - i >= 2 {
            let _ = write!(item, "{start}-{}", numbered[j].0);
            i = j + 1;
        } else {
            let _ = write!(item, "{start}");
            i += 1;
        }
        items.push(item);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_positions_round_trip() {
        for rs in RuleSet::ALL {
            let start = Position::start(rs);
            let text = write(rs, &start);
            assert_eq!(parse(rs, &text), Ok(start), "{rs}: {text}");
        }
        assert_eq!(
            write(RuleSet::American, &Position::start(RuleSet::American)),
            "B:W21-32:B1-12"
        );
        assert_eq!(
            write(RuleSet::Italian, &Position::start(RuleSet::Italian)),
            "W:W21-32:B1-12"
        );
        assert_eq!(
            write(RuleSet::Thai, &Position::start(RuleSet::Thai)),
            "B:W1-8:B25-32"
        );
    }

    #[test]
    fn kings_and_lists_parse() {
        let pos = parse(RuleSet::American, "W:WK3,21:B5,K30").unwrap();
        assert_eq!(pos.turn(), Color::Light);
        assert_eq!(pos.kings().count(), 2);
        assert_eq!(write(RuleSet::American, &pos), "W:WK3,21:B5,K30");
    }

    #[test]
    fn russian_accepts_numbers_and_names() {
        let a = parse(RuleSet::Russian, "W:Wa1,c3:Bb8").unwrap();
        let b = parse(RuleSet::Russian, "W:W29,22:B1").unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn bad_fens_are_refused() {
        let rs = RuleSet::American;
        assert_eq!(parse(rs, "X:W1:B2"), Err(FenError::Turn));
        assert!(matches!(parse(rs, "B:W33:B1"), Err(FenError::Square(_))));
        assert_eq!(parse(rs, "B:W1:B1"), Err(FenError::Duplicate));
        assert!(matches!(
            parse(rs, "B:W1-13:B20-32"),
            Err(FenError::Setup(_))
        ));
    }
}
