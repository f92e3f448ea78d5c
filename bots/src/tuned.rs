//! The Executive's evaluation: a position's features times weights fitted
//! to the outcomes of self-play games ([`crate::texel`]), each weight with
//! a middlegame and an endgame value blended by how empty the board is;
//! then the endgame knowledge of [`crate::endgame`].
//!
//! The features are the hand-set evaluation's ([`crate::eval`]) and a few
//! more: men with a free run to the crown, the side to move's pieces that
//! the opponent can take next move, a king held alone, and where each man
//! stands (one feature per square, seen from its owner's side). The lower
//! levels keep the hand-set evaluation, so they play as they always did.

use jumpgate_rules::notation::board_name;
use jumpgate_rules::{Bitboard, Color, Direction, Position, RuleSet, Rules, Square};

use crate::endgame;

/// The features that are not squares: [`NAMES`].
pub const NAMED_FEATURES: usize = 13;
/// Men by square: one feature per playing square, counted from the man's
/// own side (Light's squares turned half a turn), after the named ones.
pub const MAN_SQUARES: usize = 32;
/// How many features a position has.
pub const FEATURES: usize = NAMED_FEATURES + MAN_SQUARES;

/// The named features, in order, for the tuning tool's output.
pub const NAMES: [&str; NAMED_FEATURES] = [
    "men",
    "kings",
    "back_rank",
    "centre",
    "tempo",
    "near_crown",
    "king_post",
    "mobility",
    "runaway",
    "trade",
    "king_alone",
    "threatened",
    "to_move",
];

/// A feature's name: one of [`NAMES`], or `man_<square>` for a man on
/// that square of its own side's board (Dark's view, named on the rule
/// set's real board).
pub fn feature_name(rule_set: RuleSet, i: usize) -> String {
    match NAMES.get(i) {
        Some(name) => (*name).to_string(),
        None => {
            // `man_square` numbers the playing squares in index order.
            let square = Square::playable()
                .nth(i - NAMED_FEATURES)
                .expect("a man-square feature is one of the 32 playing squares");
            format!("man_{}", board_name(rule_set, square))
        }
    }
}

/// The man-square feature of a man of `us` on `sq`: the squares are
/// numbered 0–31 from a1 along the ranks, Light's turned half a turn so
/// that every man sees the board from its own side.
fn man_square(us: Color, sq: Square) -> usize {
    let own = match us {
        Color::Dark => sq.index(),
        Color::Light => 63 - sq.index(),
    };
    NAMED_FEATURES + own / 2
}

/// Features counted for the side to move only (the rest are Dark's count
/// minus Light's, then seen from the side to move).
const THREATENED: usize = 11;
const TO_MOVE: usize = 12;

/// Weights per feature: `mg` on a full board, `eg` on an empty one, in
/// hundredths of a man.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TunedWeights {
    pub mg: [i32; FEATURES],
    pub eg: [i32; FEATURES],
    /// Men a side starts with, for the game phase.
    pub start_men: i32,
}

/// A position's features from the side to move's view, with its phase
/// (`emptied` of `full` squares' worth of pieces gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub values: [i32; FEATURES],
    pub emptied: i32,
    pub full: i32,
}

impl Features {
    /// The weights' verdict on these features, before endgame knowledge.
    pub fn score(&self, w: &TunedWeights) -> i32 {
        // Weights stay within a few thousand and values within a few
        // dozen, so the sums fit in 32 bits (and vectorise).
        let (mut mg, mut eg) = (0i32, 0i32);
        for i in 0..FEATURES {
            mg += w.mg[i] * self.values[i];
            eg += w.eg[i] * self.values[i];
        }
        let (mg, eg) = (i64::from(mg), i64::from(eg));
        let (full, emptied) = (i64::from(self.full), i64::from(self.emptied));
        ((mg * (full - emptied) + eg * emptied) / full) as i32
    }
}

/// The long diagonal a1–h8 (both double corners lie on it).
const MAIN_DIAGONAL: Bitboard = Bitboard(0x8040_2010_0804_0201);
/// Files c–f of ranks 3–6.
const CENTRE: Bitboard = Bitboard(0x0000_3C3C_3C3C_0000);

/// The squares ahead of a man that an enemy piece must stand on to stop
/// it: the widening triangle up to the far rank, per colour and square.
const CONES: [[u64; 64]; 2] = {
    let mut cones = [[0u64; 64]; 2];
    let mut sq: usize = 0;
    while sq < 64 {
        let (file, rank) = ((sq % 8) as i32, (sq / 8) as i32);
        let mut target: usize = 0;
        while target < 64 {
            let (f, r) = ((target % 8) as i32, (target / 8) as i32);
            let df = if f > file { f - file } else { file - f };
            if r > rank && df <= r - rank {
                cones[0][sq] |= 1 << target;
            }
            if r < rank && df <= rank - r {
                cones[1][sq] |= 1 << target;
            }
            target += 1;
        }
        sq += 1;
    }
    cones
};

/// The features of `pos`.
pub fn features<R: Rules>(pos: &Position, start_men: i32) -> Features {
    let full = 2 * start_men;
    let total = pos.occupied().count() as i32;
    let emptied = (full - total).clamp(0, full);
    let dark = side::<R>(pos, Color::Dark);
    let light = side::<R>(pos, Color::Light);
    let mut values = [0; FEATURES];
    for i in 0..FEATURES {
        values[i] = dark[i] - light[i];
    }
    let material = |c: Color| {
        let p = pos.pieces(c);
        (p & !pos.kings()).count() as i32 * 100 + (p & pos.kings()).count() as i32 * 250
    };
    let balance = material(Color::Dark) - material(Color::Light);
    values[9] = balance.signum() * (full - total).max(0);
    if pos.turn() == Color::Light {
        for v in &mut values {
            *v = -*v;
        }
    }
    values[THREATENED] = threatened::<R>(pos);
    values[TO_MOVE] = 1;
    Features {
        values,
        emptied,
        full,
    }
}

/// One side's share of the symmetric features.
fn side<R: Rules>(pos: &Position, us: Color) -> [i32; FEATURES] {
    let mine = pos.pieces(us);
    let theirs = pos.pieces(us.opposite());
    let men = mine & !pos.kings();
    let kings = mine & pos.kings();
    let empty = !pos.occupied() & Bitboard::PLAYABLE;
    let (home, forward) = match us {
        Color::Dark => (Bitboard::ranks(0, 1), Direction::NORTH),
        Color::Light => (Bitboard::ranks(7, 8), Direction::SOUTH),
    };
    let their_kings = (theirs & pos.kings()).count();
    let mut f = [0; FEATURES];
    f[0] = men.count() as i32;
    f[1] = kings.count() as i32;
    if their_kings == 0 {
        f[2] = (men & home).count() as i32;
    }
    f[3] = (men & CENTRE).count() as i32;
    for sq in men {
        let rank = match us {
            Color::Dark => sq.rank(),
            Color::Light => 7 - sq.rank(),
        } as i32;
        f[4] += rank;
        if rank == 6 {
            f[5] += 1;
        }
        if theirs.0 & CONES[us.index()][sq.index()] == 0 {
            f[8] += 1;
        }
        f[man_square(us, sq)] += 1;
    }
    let posts = if R::FLYING_KINGS {
        MAIN_DIAGONAL
    } else {
        CENTRE
    };
    f[6] = (kings & posts).count() as i32;
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
    f[7] = moves as i32;
    f[10] = i32::from(kings.any() && their_kings == 0);
    f
}

/// The side to move's pieces that an adjacent enemy piece could jump next
/// move if nothing changed (flying kings' long-range captures are left
/// to the search).
pub(crate) fn threatened<R: Rules>(pos: &Position) -> i32 {
    let us = pos.turn();
    let mine = pos.pieces(us);
    let theirs = pos.pieces(us.opposite());
    let their_kings = theirs & pos.kings();
    let their_men = theirs & !pos.kings();
    let empty = !pos.occupied() & Bitboard::PLAYABLE;
    let their_forward = match us {
        Color::Dark => Direction::SOUTH,
        Color::Light => Direction::NORTH,
    };
    let men_targets = if R::MEN_CAPTURE_KINGS {
        mine
    } else {
        mine & !pos.kings()
    };
    let mut hit = Bitboard::EMPTY;
    for dir in Direction::ALL {
        let landing_free = dir.reverse().shift(empty);
        let by_men = R::MEN_CAPTURE_BACKWARD || their_forward.contains(&dir);
        let mut attacked = dir.shift(their_kings) & mine;
        if by_men {
            attacked |= dir.shift(their_men) & men_targets;
        }
        hit |= attacked & landing_free;
    }
    hit.count() as i32
}

/// The Executive's value of `pos` for the side to move.
pub fn evaluate<R: Rules>(pos: &Position, w: &TunedWeights) -> i32 {
    let raw = features::<R>(pos, w.start_men).score(w);
    endgame::adjust::<R>(pos, raw)
}

impl TunedWeights {
    /// The fitted weights of a rule set.
    pub const fn for_rule_set(rule_set: RuleSet) -> &'static TunedWeights {
        match rule_set {
            RuleSet::American => &crate::weights::AMERICAN,
            RuleSet::Brazilian => &crate::weights::BRAZILIAN,
            RuleSet::Russian => &crate::weights::RUSSIAN,
            RuleSet::Spanish => &crate::weights::SPANISH,
            RuleSet::Italian => &crate::weights::ITALIAN,
            RuleSet::Thai => &crate::weights::THAI,
        }
    }

    /// The weights the second Executive (V2) plays with, frozen for
    /// matches: the first fits, before the man squares.
    pub const fn second_version(rule_set: RuleSet) -> &'static TunedWeights {
        match rule_set {
            RuleSet::American => &crate::weights::V2_AMERICAN,
            RuleSet::Brazilian => &crate::weights::V2_BRAZILIAN,
            RuleSet::Russian => &crate::weights::V2_RUSSIAN,
            _ => TunedWeights::for_rule_set(rule_set),
        }
    }

    /// The weights an Executive version evaluates with in `rule_set`;
    /// none for V1, which keeps the hand-set evaluation.
    pub const fn of_version(
        version: crate::ExecutiveVersion,
        rule_set: RuleSet,
    ) -> Option<&'static TunedWeights> {
        match version {
            crate::ExecutiveVersion::Current => Some(TunedWeights::for_rule_set(rule_set)),
            crate::ExecutiveVersion::V2 => Some(TunedWeights::second_version(rule_set)),
            crate::ExecutiveVersion::V1 => None,
        }
    }

    /// The hand-set weights of [`crate::eval::Weights`] in this form: the
    /// tuning's starting point.
    pub const fn from_hand_set(w: &crate::eval::Weights) -> TunedWeights {
        let mg = [
            w.man,
            w.king,
            w.back_rank,
            w.centre,
            w.tempo / 2,
            w.near_crown,
            w.king_post,
            w.mobility,
            0,
            w.trade,
            0,
            0,
            0,
        ];
        let eg = [
            w.man,
            w.king,
            0,
            w.centre,
            w.tempo * 3 / 2,
            w.near_crown,
            w.king_post,
            w.mobility,
            0,
            w.trade,
            0,
            0,
            0,
        ];
        TunedWeights::named(mg, eg, w.start_men)
    }

    /// Weights for the named features only, every man square at zero.
    pub const fn named(
        mg: [i32; NAMED_FEATURES],
        eg: [i32; NAMED_FEATURES],
        start_men: i32,
    ) -> TunedWeights {
        let mut w = TunedWeights {
            mg: [0; FEATURES],
            eg: [0; FEATURES],
            start_men,
        };
        let mut i = 0;
        while i < NAMED_FEATURES {
            w.mg[i] = mg[i];
            w.eg[i] = eg[i];
            i += 1;
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jumpgate_rules::with_rules;

    #[test]
    fn start_positions_are_level_but_for_the_move() {
        for rs in RuleSet::ALL {
            let pos = Position::start(rs);
            let w = TunedWeights::for_rule_set(rs);
            let f = with_rules!(rs, R => features::<R>(&pos, w.start_men));
            let mut expected = [0; FEATURES];
            expected[TO_MOVE] = 1;
            assert_eq!(f.values, expected, "{rs}");
        }
    }

    #[test]
    fn the_second_version_keeps_the_first_fits() {
        // V2 plays the first fits everywhere: no weight on a man square.
        for rs in RuleSet::ALL {
            let w = TunedWeights::second_version(rs);
            assert!(w.mg[NAMED_FEATURES..].iter().all(|&v| v == 0), "{rs}");
            assert!(w.eg[NAMED_FEATURES..].iter().all(|&v| v == 0), "{rs}");
        }
        // Where the second fit was kept, the current weights differ.
        for rs in [RuleSet::Russian, RuleSet::American, RuleSet::Brazilian] {
            let current = TunedWeights::for_rule_set(rs);
            assert!(current.mg[NAMED_FEATURES..].iter().any(|&v| v != 0), "{rs}");
        }
    }

    #[test]
    fn man_squares_are_seen_from_each_side() {
        use jumpgate_rules::Setup;
        use jumpgate_rules::notation::parse_board_name;
        use jumpgate_rules::variant::Russian;
        // Dark to move with one man a side.
        let men = |dark: &str, light: &str| {
            let square = |name| parse_board_name(RuleSet::Russian, name).unwrap();
            let pos = Position::from_setup(Setup {
                by_color: [square(dark).bb(), square(light).bb()],
                kings: Bitboard::EMPTY,
                turn: Color::Dark,
            })
            .unwrap();
            features::<Russian>(&pos, 12)
        };
        // A Dark man on c3 and a Light man on f6 (c3 turned half a turn)
        // stand on the same square of their own boards: level.
        let f = men("c3", "f6");
        assert!(f.values[NAMED_FEATURES..].iter().all(|&v| v == 0));
        // Against a Light man on d6 instead, Dark's c3 counts +1 and
        // Light's d6 (e3 from its side) −1, under their own names.
        let f = men("c3", "d6");
        let named: Vec<(String, i32)> = (NAMED_FEATURES..FEATURES)
            .filter(|&i| f.values[i] != 0)
            .map(|i| (feature_name(RuleSet::Russian, i), f.values[i]))
            .collect();
        assert_eq!(
            named,
            [("man_c3".to_string(), 1), ("man_e3".to_string(), -1)]
        );
        // Every man square is a playing square, each named once.
        let names: std::collections::HashSet<String> = (NAMED_FEATURES..FEATURES)
            .map(|i| feature_name(RuleSet::Russian, i))
            .collect();
        assert_eq!(names.len(), MAN_SQUARES);
        for sq in Square::playable() {
            let name = format!("man_{}", board_name(RuleSet::Russian, sq));
            assert!(names.contains(&name), "{name}");
        }
    }

    #[test]
    fn a_man_in_front_of_an_enemy_with_room_behind_is_threatened() {
        use jumpgate_rules::{Setup, Square};
        // Dark to move, its man on c3 with a Light man on d4 and b2 empty.
        let c3 = Square::from_coords(2, 2).unwrap();
        let d4 = Square::from_coords(3, 3).unwrap();
        let pos = Position::from_setup(Setup {
            by_color: [c3.bb(), d4.bb()],
            kings: Bitboard::EMPTY,
            turn: Color::Dark,
        })
        .unwrap();
        use jumpgate_rules::variant::{American, Russian};
        assert_eq!(threatened::<American>(&pos), 1);
        assert_eq!(threatened::<Russian>(&pos), 1);
        // Light's man stands behind: only Russian men take backwards.
        let b2 = Square::from_coords(1, 1).unwrap();
        let behind = Position::from_setup(Setup {
            by_color: [c3.bb(), b2.bb()],
            kings: Bitboard::EMPTY,
            turn: Color::Dark,
        })
        .unwrap();
        assert_eq!(threatened::<American>(&behind), 0);
        assert_eq!(threatened::<Russian>(&behind), 1);
    }
}
