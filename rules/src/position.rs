//! A validated position (pieces and side to move), the unchecked [`Setup`]
//! it is built from, and the [`Move`] type.

use super::bitboard::{Bitboard, Square};
use super::variant::RuleSet;

/// A side. Dark always moves first; in PDN it is Black for American and
/// Thai and White for the other rule sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Color {
    Dark,
    Light,
}

impl Color {
    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn opposite(self) -> Color {
        match self {
            Color::Dark => Color::Light,
            Color::Light => Color::Dark,
        }
    }

    /// The rank (internal frame) on which this side's men are crowned.
    pub const fn far_rank(self) -> Bitboard {
        match self {
            Color::Dark => Bitboard::ranks(7, 8),
            Color::Light => Bitboard::ranks(0, 1),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Color::Dark => "dark",
            Color::Light => "light",
        }
    }
}

/// A piece's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Man,
    King,
}

/// A board as read from text: not yet checked for sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Setup {
    pub by_color: [Bitboard; 2],
    pub kings: Bitboard,
    pub turn: Color,
}

/// Why a [`Setup`] is not a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("a piece stands on a square that is not a playing square")]
    UnplayableSquare,
    #[error("a square holds pieces of both colours")]
    Overlap,
    #[error("a king is marked on an empty square")]
    KingWithoutPiece,
    #[error("a side has more than 12 pieces")]
    TooManyPieces,
    #[error("a man stands on the row where it would already have been crowned")]
    ManOnFarRow,
}

/// A legal arrangement of pieces with a side to move.
///
/// Invariants: pieces only on playing squares, no square of both colours,
/// kings only where pieces are, at most 12 pieces a side, no man on its own
/// crowning row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    by_color: [Bitboard; 2],
    kings: Bitboard,
    turn: Color,
}

impl Position {
    /// The starting position of a rule set.
    pub fn start(rule_set: RuleSet) -> Position {
        let rows = rule_set.start_rows();
        Position {
            by_color: [
                Bitboard::ranks(0, rows) & Bitboard::PLAYABLE,
                Bitboard::ranks(8 - rows, 8) & Bitboard::PLAYABLE,
            ],
            kings: Bitboard::EMPTY,
            turn: Color::Dark,
        }
    }

    pub fn from_setup(setup: Setup) -> Result<Position, SetupError> {
        let [dark, light] = setup.by_color;
        let all = dark | light;
        if (all & !Bitboard::PLAYABLE).any() {
            return Err(SetupError::UnplayableSquare);
        }
        if (dark & light).any() {
            return Err(SetupError::Overlap);
        }
        if (setup.kings & !all).any() {
            return Err(SetupError::KingWithoutPiece);
        }
        if dark.count() > 12 || light.count() > 12 {
            return Err(SetupError::TooManyPieces);
        }
        let men = all & !setup.kings;
        if (men & dark & Color::Dark.far_rank()).any()
            || (men & light & Color::Light.far_rank()).any()
        {
            return Err(SetupError::ManOnFarRow);
        }
        Ok(Position {
            by_color: setup.by_color,
            kings: setup.kings,
            turn: setup.turn,
        })
    }

    pub fn to_setup(&self) -> Setup {
        Setup {
            by_color: self.by_color,
            kings: self.kings,
            turn: self.turn,
        }
    }

    #[inline]
    pub const fn turn(&self) -> Color {
        self.turn
    }

    #[inline]
    pub const fn pieces(&self, color: Color) -> Bitboard {
        self.by_color[color.index()]
    }

    #[inline]
    pub const fn kings(&self) -> Bitboard {
        self.kings
    }

    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }

    pub fn piece_at(&self, sq: Square) -> Option<(Color, Role)> {
        let color = if self.by_color[0].contains(sq) {
            Color::Dark
        } else if self.by_color[1].contains(sq) {
            Color::Light
        } else {
            return None;
        };
        let role = if self.kings.contains(sq) {
            Role::King
        } else {
            Role::Man
        };
        Some((color, role))
    }

    /// Plays a move known to be legal here. The caller guarantees legality
    /// (it came from this position's move list).
    #[inline]
    pub fn play_unchecked(&mut self, m: &Move) {
        let us = self.turn.index();
        let them = 1 - us;
        let from = m.from().bb();
        let to = m.to().bb();
        let was_king = self.kings & from;
        self.by_color[us] = (self.by_color[us] & !from) | to;
        self.by_color[them] &= !m.captured();
        self.kings &= !(from | m.captured());
        if was_king.any() || m.crowns() {
            self.kings |= to;
        }
        self.turn = self.turn.opposite();
    }

    /// This position after `m`, which must be legal here.
    #[inline]
    pub fn after(&self, m: &Move) -> Position {
        let mut next = *self;
        next.play_unchecked(m);
        next
    }
}

/// The longest path a move can have: a jumped piece never stands on the
/// edge, so at most 18 captures (the interior playing squares), 19 squares.
pub const MAX_PATH: usize = 20;

/// A move: its path (origin, then every landing square) and the set of
/// captured squares. Quiet moves have a path of two squares.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Move {
    path: [Square; MAX_PATH],
    len: u8,
    captured: Bitboard,
    crowns: bool,
    by_king: bool,
    kings_taken: u8,
    /// Bit `31 - i` is set when the i-th captured piece is a king (Italian
    /// priority: earlier kings compare higher).
    king_order: u32,
    /// The captured squares in capture order, 6 bits each.
    capture_order: u128,
}

impl Move {
    pub fn quiet(from: Square, to: Square, by_king: bool, crowns: bool) -> Move {
        let mut path = [Square::default(); MAX_PATH];
        path[0] = from;
        path[1] = to;
        Move {
            path,
            len: 2,
            captured: Bitboard::EMPTY,
            crowns,
            by_king,
            kings_taken: 0,
            king_order: 0,
            capture_order: 0,
        }
    }

    pub fn start_capture(from: Square, by_king: bool) -> Move {
        let mut path = [Square::default(); MAX_PATH];
        path[0] = from;
        Move {
            path,
            len: 1,
            captured: Bitboard::EMPTY,
            crowns: false,
            by_king,
            kings_taken: 0,
            king_order: 0,
            capture_order: 0,
        }
    }

    /// Extends an in-progress capture by one jump.
    #[inline]
    pub fn push_jump(&mut self, victim: Square, victim_is_king: bool, landing: Square) {
        let index = self.captured.count();
        self.path[self.len as usize] = landing;
        self.len += 1;
        self.captured |= victim.bb();
        self.capture_order |= (victim.index() as u128) << (6 * index);
        if victim_is_king {
            self.kings_taken += 1;
            self.king_order |= 1 << (31 - index);
        }
    }

    /// Undoes the last [`push_jump`](Self::push_jump).
    #[inline]
    pub fn pop_jump(&mut self, victim: Square, victim_was_king: bool) {
        self.len -= 1;
        self.path[self.len as usize] = Square::default();
        self.captured = Bitboard(self.captured.0 & !victim.bb().0);
        let index = self.captured.count();
        self.capture_order &= !(0x3F_u128 << (6 * index));
        if victim_was_king {
            self.kings_taken -= 1;
            self.king_order &= !(1 << (31 - index));
        }
    }

    #[inline]
    pub fn set_crowns(&mut self, crowns: bool) {
        self.crowns = crowns;
    }

    #[inline]
    pub fn from(&self) -> Square {
        self.path[0]
    }

    #[inline]
    pub fn to(&self) -> Square {
        self.path[self.len as usize - 1]
    }

    /// Origin, then every landing square.
    pub fn path(&self) -> &[Square] {
        &self.path[..self.len as usize]
    }

    #[inline]
    pub fn captured(&self) -> Bitboard {
        self.captured
    }

    /// The captured squares in the order they are jumped.
    pub fn captured_in_order(&self) -> impl Iterator<Item = Square> + '_ {
        (0..self.captured.count()).map(|i| {
            let index = ((self.capture_order >> (6 * i)) & 0x3F) as u8;
            Square::new(index)
        })
    }

    pub fn is_capture(&self) -> bool {
        self.captured.any()
    }

    /// A man is crowned by this move.
    #[inline]
    pub fn crowns(&self) -> bool {
        self.crowns
    }

    /// The moving piece is a king.
    pub fn by_king(&self) -> bool {
        self.by_king
    }

    pub fn kings_taken(&self) -> u32 {
        u32::from(self.kings_taken)
    }

    /// Italian priority key: larger is preferred.
    pub fn italian_key(&self) -> (u32, u8, bool, u32) {
        (
            self.captured.count(),
            self.kings_taken,
            self.by_king,
            self.king_order,
        )
    }

    /// Identifies a capture *sequence*: origin, destination and the captured
    /// pieces in order. A flying king that may land on several squares
    /// between two captures makes several paths with one sequence.
    pub fn sequence_key(&self) -> (Square, Square, u128) {
        (self.from(), self.to(), self.capture_order)
    }

    /// Two moves with the same origin, destination and captured set have the
    /// same result and are one move for play.
    pub fn result_key(&self) -> (Square, Square, Bitboard) {
        (self.from(), self.to(), self.captured)
    }
}

impl std::fmt::Debug for Move {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sep = if self.is_capture() { "x" } else { "-" };
        for (i, sq) in self.path().iter().enumerate() {
            if i > 0 {
                f.write_str(sep)?;
            }
            write!(f, "{sq:?}")?;
        }
        Ok(())
    }
}
