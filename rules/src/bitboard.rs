//! Squares and bitboards over the 8×8 board, and the four diagonal shifts.
//!
//! The engine works in one internal frame for every rule set: files a–h are
//! 0–7 left to right, ranks 1–8 are 0–7 bottom to top, the first player's men
//! start at the bottom, and a1 is a playing square. Rule sets whose real board
//! is mirrored (Italian, Spanish) only differ in how squares are *named*; see
//! `notation`.

use std::fmt;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

/// One of the 64 squares, `rank * 8 + file` in the internal frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Square(u8);

impl Square {
    /// The square with this index (0..64).
    ///
    /// # Panics
    /// If `index >= 64`.
    pub const fn new(index: u8) -> Square {
        assert!(index < 64);
        Square(index)
    }

    pub const fn from_coords(file: u8, rank: u8) -> Option<Square> {
        if file < 8 && rank < 8 {
            Some(Square(rank * 8 + file))
        } else {
            None
        }
    }

    pub const fn index(self) -> usize {
        self.0 as usize
    }

    pub const fn file(self) -> u8 {
        self.0 & 7
    }

    pub const fn rank(self) -> u8 {
        self.0 >> 3
    }

    pub const fn bb(self) -> Bitboard {
        Bitboard(1 << self.0)
    }

    /// Pieces stand only on the 32 playing squares (a1, c1, …, b2, …).
    pub const fn is_playable(self) -> bool {
        (self.file() + self.rank()).is_multiple_of(2)
    }

    /// The neighbouring square in `dir`, if it is on the board.
    pub fn offset(self, dir: Direction) -> Option<Square> {
        let (df, dr) = dir.steps();
        let file = self.file() as i8 + df;
        let rank = self.rank() as i8 + dr;
        if (0..8).contains(&file) && (0..8).contains(&rank) {
            Some(Square((rank * 8 + file) as u8))
        } else {
            None
        }
    }

    /// All 32 playing squares in index order.
    pub fn playable() -> impl Iterator<Item = Square> {
        Bitboard::PLAYABLE.into_iter()
    }
}

impl fmt::Debug for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", (b'a' + self.file()) as char, self.rank() + 1)
    }
}

/// The four diagonal directions, named as seen from the first player's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    NorthEast,
    NorthWest,
    SouthEast,
    SouthWest,
}

impl Direction {
    pub const ALL: [Direction; 4] = [
        Direction::NorthEast,
        Direction::NorthWest,
        Direction::SouthEast,
        Direction::SouthWest,
    ];
    pub const NORTH: [Direction; 2] = [Direction::NorthEast, Direction::NorthWest];
    pub const SOUTH: [Direction; 2] = [Direction::SouthEast, Direction::SouthWest];

    /// (file step, rank step).
    pub const fn steps(self) -> (i8, i8) {
        match self {
            Direction::NorthEast => (1, 1),
            Direction::NorthWest => (-1, 1),
            Direction::SouthEast => (1, -1),
            Direction::SouthWest => (-1, -1),
        }
    }

    /// Moves every square of `bb` one step in this direction; squares that
    /// would leave the board vanish.
    #[inline]
    pub const fn shift(self, bb: Bitboard) -> Bitboard {
        Bitboard(match self {
            Direction::NorthEast => (bb.0 << 9) & !Bitboard::FILE_A.0,
            Direction::NorthWest => (bb.0 << 7) & !Bitboard::FILE_H.0,
            Direction::SouthEast => (bb.0 >> 7) & !Bitboard::FILE_A.0,
            Direction::SouthWest => (bb.0 >> 9) & !Bitboard::FILE_H.0,
        })
    }

    /// The direction pointing back the way this one came.
    pub const fn reverse(self) -> Direction {
        match self {
            Direction::NorthEast => Direction::SouthWest,
            Direction::NorthWest => Direction::SouthEast,
            Direction::SouthEast => Direction::NorthWest,
            Direction::SouthWest => Direction::NorthEast,
        }
    }
}

/// A set of squares, one bit per square.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Bitboard(pub u64);

impl Bitboard {
    pub const EMPTY: Bitboard = Bitboard(0);
    pub const PLAYABLE: Bitboard = Bitboard(0xAA55_AA55_AA55_AA55);
    pub const FILE_A: Bitboard = Bitboard(0x0101_0101_0101_0101);
    pub const FILE_H: Bitboard = Bitboard(0x8080_8080_8080_8080);

    /// The squares of ranks `from..to` (0-based, internal frame).
    pub const fn ranks(from: u8, to: u8) -> Bitboard {
        let mut bits = 0u64;
        let mut rank = from;
        while rank < to {
            bits |= 0xFF << (rank * 8);
            rank += 1;
        }
        Bitboard(bits)
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub const fn any(self) -> bool {
        self.0 != 0
    }

    pub const fn count(self) -> u32 {
        self.0.count_ones()
    }

    pub const fn contains(self, sq: Square) -> bool {
        self.0 & (1 << sq.0) != 0
    }

    pub fn first(self) -> Option<Square> {
        if self.0 == 0 {
            None
        } else {
            Some(Square(self.0.trailing_zeros() as u8))
        }
    }
}

impl fmt::Debug for Bitboard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(*self).finish()
    }
}

impl BitAnd for Bitboard {
    type Output = Bitboard;
    fn bitand(self, rhs: Bitboard) -> Bitboard {
        Bitboard(self.0 & rhs.0)
    }
}

impl BitOr for Bitboard {
    type Output = Bitboard;
    fn bitor(self, rhs: Bitboard) -> Bitboard {
        Bitboard(self.0 | rhs.0)
    }
}

impl BitAndAssign for Bitboard {
    fn bitand_assign(&mut self, rhs: Bitboard) {
        self.0 &= rhs.0;
    }
}

impl BitOrAssign for Bitboard {
    fn bitor_assign(&mut self, rhs: Bitboard) {
        self.0 |= rhs.0;
    }
}

impl Not for Bitboard {
    type Output = Bitboard;
    fn not(self) -> Bitboard {
        Bitboard(!self.0)
    }
}

impl From<Square> for Bitboard {
    fn from(sq: Square) -> Bitboard {
        sq.bb()
    }
}

/// Iterates the squares of a bitboard from a1 upwards.
#[derive(Debug)]
pub struct Squares(u64);

impl Iterator for Squares {
    type Item = Square;
    #[inline]
    fn next(&mut self) -> Option<Square> {
        if self.0 == 0 {
            return None;
        }
        let sq = Square(self.0.trailing_zeros() as u8);
        self.0 &= self.0 - 1;
        Some(sq)
    }
}

impl IntoIterator for Bitboard {
    type Item = Square;
    type IntoIter = Squares;
    fn into_iter(self) -> Squares {
        Squares(self.0)
    }
}

impl FromIterator<Square> for Bitboard {
    fn from_iter<I: IntoIterator<Item = Square>>(iter: I) -> Bitboard {
        iter.into_iter()
            .fold(Bitboard::EMPTY, |bb, sq| bb | sq.bb())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn playable_mask_matches_square_colour() {
        for i in 0..64 {
            let sq = Square::new(i);
            assert_eq!(Bitboard::PLAYABLE.contains(sq), sq.is_playable(), "{sq:?}");
        }
    }

    #[test]
    fn shifts_agree_with_offsets() {
        for sq in Square::playable() {
            for dir in Direction::ALL {
                let shifted = dir.shift(sq.bb());
                assert_eq!(shifted.first(), sq.offset(dir), "{sq:?} {dir:?}");
            }
        }
    }
}
