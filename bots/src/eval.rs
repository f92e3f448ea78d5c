//! Static evaluation: material, kings, back rank, centre, tempo
//! (advancement) and mobility, with weights per rule set, because the rules
//! change what pieces are worth: a flying king is worth several men, a short
//! king little more than one and a half, and Thai starts with eight men.

use jumpgate_rules::{Bitboard, Color, Direction, Position, RuleSet, Rules};

/// Centipawn-like units: a man is worth 100.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weights {
    pub man: i32,
    pub king: i32,
    /// Per man still guarding its own back rank, fading out as pieces leave.
    pub back_rank: i32,
    /// Per man on the four central files of the middle ranks.
    pub centre: i32,
    /// Per king on a central square or, with flying kings, the long diagonal.
    pub king_post: i32,
    /// Per rank a man has advanced (tempo), growing as the board empties.
    pub tempo: i32,
    /// Extra for a man one step from crowning.
    pub near_crown: i32,
    /// Per available one-step move (men forward, kings any way).
    pub mobility: i32,
    /// Per piece off the board, times the sign of the material balance: the
    /// side ahead wants to trade.
    pub trade: i32,
    /// Men a side starts with, for the game phase.
    pub start_men: i32,
}

impl Weights {
    pub const fn for_rule_set(rule_set: RuleSet) -> Weights {
        let base = Weights {
            man: 100,
            king: 150,
            back_rank: 10,
            centre: 5,
            king_post: 6,
            tempo: 3,
            near_crown: 12,
            mobility: 2,
            trade: 4,
            start_men: 12,
        };
        match rule_set {
            // Short kings: worth about one and a half men.
            RuleSet::American => base,
            // Men cannot take kings, so a king is safer and worth a bit more.
            RuleSet::Italian => Weights { king: 170, ..base },
            // Flying kings dominate open boards.
            RuleSet::Russian | RuleSet::Brazilian => Weights {
                king: 320,
                king_post: 20,
                back_rank: 8,
                ..base
            },
            // Flying kings, but men only take forward: the back rank matters more.
            RuleSet::Spanish => Weights {
                king: 300,
                king_post: 20,
                back_rank: 12,
                ..base
            },
            // Eight men each: every man and every king counts for more.
            RuleSet::Thai => Weights {
                king: 300,
                king_post: 20,
                back_rank: 14,
                trade: 6,
                start_men: 8,
                ..base
            },
        }
    }
}

/// The long diagonal a1–h8 of the internal frame (both players' double
/// corners lie on it); a flying king there cuts the board in two.
const MAIN_DIAGONAL: Bitboard = Bitboard(0x8040_2010_0804_0201);
/// Files c–f of ranks 3–6.
const CENTRE: Bitboard = Bitboard(0x0000_3C3C_3C3C_0000);

/// The position's value for the side to move.
pub fn evaluate<R: Rules>(pos: &Position, w: &Weights) -> i32 {
    let dark = side_value::<R>(pos, Color::Dark, w);
    let light = side_value::<R>(pos, Color::Light, w);
    let mut score = dark - light;

    let material = |c: Color| {
        let p = pos.pieces(c);
        (p & !pos.kings()).count() as i32 * w.man + (p & pos.kings()).count() as i32 * w.king
    };
    let balance = material(Color::Dark) - material(Color::Light);
    let off_board = 2 * w.start_men - pos.occupied().count() as i32;
    score += balance.signum() * off_board * w.trade;

    match pos.turn() {
        Color::Dark => score,
        Color::Light => -score,
    }
}

fn side_value<R: Rules>(pos: &Position, us: Color, w: &Weights) -> i32 {
    let mine = pos.pieces(us);
    let men = mine & !pos.kings();
    let kings = mine & pos.kings();
    let empty = !pos.occupied() & Bitboard::PLAYABLE;
    let total = pos.occupied().count() as i32;
    let full = 2 * w.start_men;

    let mut score = men.count() as i32 * w.man + kings.count() as i32 * w.king;

    // Phase: 0 at the start, `full` with an empty board.
    let emptied = (full - total).max(0);

    let (home, forward) = match us {
        Color::Dark => (Bitboard::ranks(0, 1), Direction::NORTH),
        Color::Light => (Bitboard::ranks(7, 8), Direction::SOUTH),
    };
    let opponent_kings = (pos.pieces(us.opposite()) & pos.kings()).count() as i32;
    // The back rank matters until the opponent has kings anyway or the
    // board has emptied.
    if opponent_kings == 0 {
        score += (men & home).count() as i32 * w.back_rank * (full - emptied) / full;
    }
    score += (men & CENTRE).count() as i32 * w.centre;

    let mut advance = 0;
    let mut near = 0;
    for sq in men {
        let rank = match us {
            Color::Dark => sq.rank(),
            Color::Light => 7 - sq.rank(),
        } as i32;
        advance += rank;
        if rank == 6 {
            near += 1;
        }
    }
    // Advancing early is weak, advancing late wins the race to crown.
    score += advance * w.tempo * (full / 2 + emptied) / full;
    score += near * w.near_crown;

    let posts = if R::FLYING_KINGS {
        MAIN_DIAGONAL
    } else {
        CENTRE
    };
    score += (kings & posts).count() as i32 * w.king_post;

    let mut moves = 0;
    for dir in forward {
        moves += (dir.shift(men) & empty).count();
    }
    for dir in Direction::ALL {
        let mut reach = dir.shift(kings) & empty;
        moves += reach.count();
        if R::FLYING_KINGS {
            for _ in 0..6 {
                reach = dir.shift(reach) & empty;
                if reach.is_empty() {
                    break;
                }
                moves += reach.count();
            }
        }
    }
    score + moves as i32 * w.mobility
}

#[cfg(test)]
mod tests {
    use super::*;
    use jumpgate_rules::variant::{American, Russian};
    use jumpgate_rules::{Setup, Square};

    #[test]
    fn start_position_is_balanced() {
        for rs in RuleSet::ALL {
            let pos = Position::start(rs);
            let w = Weights::for_rule_set(rs);
            let score = jumpgate_rules::with_rules!(rs, R => evaluate::<R>(&pos, &w));
            assert_eq!(score, 0, "{rs}");
        }
    }

    #[test]
    fn flying_kings_are_worth_more() {
        let short = Weights::for_rule_set(RuleSet::American);
        let flying = Weights::for_rule_set(RuleSet::Russian);
        assert!(flying.king > 2 * short.king - short.man);
        let setup = Setup {
            by_color: [Square::new(27).bb(), Square::new(54).bb()],
            kings: Square::new(27).bb(),
            turn: Color::Dark,
        };
        let pos = Position::from_setup(setup).unwrap();
        assert!(evaluate::<Russian>(&pos, &flying) > evaluate::<American>(&pos, &short));
    }
}
