//! Endgame knowledge for the Executive: king endings recognised as drawn
//! or won by their material, and, where the side ahead can win, a pull
//! towards the enemy king so that the search finds the way in.
//!
//! Drawn here means drawn with correct defence under the seeds' rules:
//! with flying kings two kings cannot catch one, nor three catch one that
//! holds the long diagonal; and with the no-progress rule of 20 king plies
//! in every rule set but American, a long king hunt ends in a draw anyway.
//! A drawn ending's score is shrunk towards zero rather than set to it, so
//! the search still prefers the better side of a draw and still sees the
//! material when it can win by force.

use jumpgate_rules::{Bitboard, Color, Position, Rules};

/// The long diagonal a1–h8.
const MAIN_DIAGONAL: Bitboard = Bitboard(0x8040_2010_0804_0201);
/// Drawn endings keep this share of their score.
const DRAWN_SHARE: i32 = 16;
/// Per square the strong side's nearest king is closer to the weak king.
const PULL: i32 = 6;

/// What the material of a king ending says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a king ending, or one the rules leave to the search.
    Open,
    /// Drawn with correct defence.
    Drawn,
    /// The side with more kings can win (short kings, long draw rule).
    Won(Color),
}

/// The verdict on `pos` from its material alone.
pub fn verdict<R: Rules>(pos: &Position) -> Verdict {
    let kings = pos.kings();
    if pos.occupied() != kings {
        return Verdict::Open;
    }
    let dark = pos.pieces(Color::Dark).count();
    let light = pos.pieces(Color::Light).count();
    if dark == 0 || light == 0 {
        return Verdict::Open;
    }
    let (strong, s, w) = if dark >= light {
        (Color::Dark, dark, light)
    } else {
        (Color::Light, light, dark)
    };
    if s == w {
        return Verdict::Drawn;
    }
    if R::FLYING_KINGS {
        let weak_pieces = pos.pieces(strong.opposite());
        let holds_diagonal = w == 1 && (weak_pieces & MAIN_DIAGONAL).any();
        if s <= 2 * w || (w == 1 && s == 3 && holds_diagonal) {
            return Verdict::Drawn;
        }
        return Verdict::Open;
    }
    if R::NO_PROGRESS_DRAW_PLIES >= 80 {
        Verdict::Won(strong)
    } else {
        Verdict::Open
    }
}

/// `raw`, the side to move's evaluation of `pos`, corrected by what the
/// ending's material says.
pub fn adjust<R: Rules>(pos: &Position, raw: i32) -> i32 {
    match verdict::<R>(pos) {
        Verdict::Open => raw,
        Verdict::Drawn => raw / DRAWN_SHARE,
        Verdict::Won(strong) => {
            let pull = PULL * (7 - nearest(pos.pieces(strong), pos.pieces(strong.opposite())));
            if pos.turn() == strong {
                raw + pull
            } else {
                raw - pull
            }
        }
    }
}

/// The smallest king-move distance from any square of `from` to any of `to`.
fn nearest(from: Bitboard, to: Bitboard) -> i32 {
    let mut best = 7;
    for a in from {
        for b in to {
            let d = a.file().abs_diff(b.file()).max(a.rank().abs_diff(b.rank()));
            best = best.min(i32::from(d));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use jumpgate_rules::variant::{American, Italian, Russian};
    use jumpgate_rules::{Setup, Square};

    fn kings(dark: &[(u8, u8)], light: &[(u8, u8)], turn: Color) -> Position {
        let bb = |list: &[(u8, u8)]| {
            list.iter()
                .map(|&(f, r)| Square::from_coords(f, r).expect("on the board"))
                .collect::<Bitboard>()
        };
        let (d, l) = (bb(dark), bb(light));
        Position::from_setup(Setup {
            by_color: [d, l],
            kings: d | l,
            turn,
        })
        .expect("a valid test position")
    }

    #[test]
    fn equal_kings_are_drawn_everywhere() {
        let pos = kings(&[(0, 0)], &[(7, 7)], Color::Dark);
        assert_eq!(verdict::<American>(&pos), Verdict::Drawn);
        assert_eq!(verdict::<Russian>(&pos), Verdict::Drawn);
        assert_eq!(adjust::<Russian>(&pos, 160), 10);
    }

    #[test]
    fn flying_kings_need_three_and_the_long_diagonal() {
        let two = kings(&[(2, 0), (4, 0)], &[(5, 5)], Color::Dark);
        assert_eq!(verdict::<Russian>(&two), Verdict::Drawn);
        // The lone king on e5 holds a1-h8 against three.
        let held = kings(&[(2, 0), (4, 0), (6, 0)], &[(4, 4)], Color::Dark);
        assert_eq!(verdict::<Russian>(&held), Verdict::Drawn);
        // Off it, three kings have a chance: the search decides.
        let off = kings(&[(2, 0), (4, 0), (6, 0)], &[(1, 7)], Color::Dark);
        assert_eq!(verdict::<Russian>(&off), Verdict::Open);
        // Men on the board: not a king ending.
        let mut men = off.to_setup();
        men.kings &= !Square::from_coords(2, 0).unwrap().bb();
        let men = Position::from_setup(men).unwrap();
        assert_eq!(verdict::<Russian>(&men), Verdict::Open);
    }

    #[test]
    fn short_kings_win_with_more_and_close_in() {
        let far = kings(&[(0, 0), (2, 0)], &[(7, 7)], Color::Dark);
        let near = kings(&[(5, 5), (2, 0)], &[(7, 7)], Color::Dark);
        assert_eq!(verdict::<American>(&far), Verdict::Won(Color::Dark));
        assert!(adjust::<American>(&near, 300) > adjust::<American>(&far, 300));
        // Light to move sees the same pull against it.
        let light_view = kings(&[(5, 5), (2, 0)], &[(7, 7)], Color::Light);
        assert!(adjust::<American>(&light_view, -300) < -300);
        // Italian's 20-ply rule leaves a king hunt to the search.
        assert_eq!(verdict::<Italian>(&far), Verdict::Open);
    }
}
