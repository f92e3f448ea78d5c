//! Space Checkers on the 25-square orbit board: a small, self-contained engine.
//!
//! Pure and synchronous: no I/O, no async, no wire format.
//!
//! # The board
//!
//! Twenty-five squares: the core `C`, the inner orbit `B1`..`B12` and the
//! outer orbit `A1`..`A12`. Twelve rays run out from the core and are numbered
//! clockwise, ray 1 being the leftmost ray of the top-right quadrant; ray `k`
//! holds `Bk` (inner) and `Ak` (outer). Along the inner orbit `Bk` touches
//! `B(k-1)` and `B(k+1)`, wrapping so that `B12` touches `B1`.
//!
//! # Moves
//!
//! A piece never jumps over or shares a square with another piece; every
//! square on its path, landing square included, must be empty.
//!
//! - From `Ak`: *proceed to core* `Ak -> C` (path `Bk`, `C`); *exit to inner
//!   rim* `Ak -> Bk`; *diagonal exit* `Ak -> B(k±1)` (path `Bk`, `B(k±1)`);
//!   *double diagonal exit* `Ak -> B(k±2)` (path `Bk`, `B(k±1)`, `B(k±2)`).
//!   The two diagonal exits are not allowed on that player's first turn.
//! - From `Bk`: *return* to `Ak`.
//! - From `C`: out along any one ray to `Ak` (path `Bk`, `Ak`).
//!
//! # Boosting
//!
//! After a diagonal exit (single or double) lands on `Bj`, if `Aj` — the other
//! square on the same ray — holds one of the mover's own pieces, the piece
//! must continue two more squares along the inner orbit in the same direction
//! (`B(j±1)`, `B(j±2)`, both empty). This repeats from the new square, up to
//! [`OrbitSetup::max_boosts`] (three) boosts. A blocked path means no (further)
//! boost; an opponent's piece on `Aj` means no boost. The square the mover
//! left is empty while boosting is decided.
//!
//! # Capture
//!
//! Only diagonal exits capture. When the piece comes to rest (after boosting)
//! on `Bj`, every opponent piece on `B(j-1)` or `B(j+1)` is removed. Because
//! the path must be clear, the square behind the piece is always empty, so in
//! practice only the square ahead of it can be captured; both neighbours are
//! still checked.
//!
//! # Decisions where the source is silent
//!
//! All of these live in [`ORBIT_SETUP`]:
//!
//! - six pieces each; Dark on `A12, A1, A2, A3, A4, A5`, Light on `A6`..`A11`
//!   (each side a contiguous half of the outer orbit); Dark moves first;
//! - "in a row" means on consecutive inner-orbit squares (cyclically);
//! - a player with no legal move passes automatically (inside [`OrbitGame::play`],
//!   a pass is not a ply); if neither player can move the game ends and is
//!   scored as it stands;
//! - the game ends when a player has all remaining pieces (at least one) in a
//!   row on the inner orbit, when a player has lost half their pieces (three
//!   of six), or after 200 plies (scored as it stands);
//! - scoring, for each player: all remaining pieces in a row on the inner
//!   orbit scores 3; all but one (with at least two pieces left) scores 1;
//!   and if the *opponent* has at most half of their original count (three)
//!   on the inner orbit, the player scores 2 more. More points wins; equal
//!   points is a draw.
//!
//! # Notation
//!
//! The short form is `from-to` with the final square after boosting, e.g.
//! `A3-B3`, `A3-B4`, `A3-C`, `C-A7`, `B5-A5`. Because boosting can bring two
//! different moves from the same square to the same final square, the long
//! form lists every square the piece passes through: `A3-B3-B4` (a diagonal
//! exit), `A3-B3-B4-B5-B6` (a diagonal exit boosted once). [`OrbitGame::play_text`]
//! accepts both and rejects an ambiguous short form; [`OrbitGame::move_text`]
//! writes the short form unless it is ambiguous.
//!
//! # Perft
//!
//! [`OrbitGame::perft`] counts the leaves of the legal-move tree: depth 0 is 1,
//! and a finished game has no moves.
//!
//! Over 700 lines: the variant's board geometry, move generator, scoring and
//! game share private helpers (`ray`, `generate`, `diagonal`) and read as one
//! rule set, as `space.rs` does.

use std::fmt;

/// Rays (and squares per orbit) on the board.
pub const RAYS: u8 = 12;

/// The choices the source text leaves open, gathered in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrbitSetup {
    /// Pieces each player starts with.
    pub pieces_per_side: u8,
    /// Rays of Dark's starting outer squares.
    pub dark_start: &'static [u8],
    /// Rays of Light's starting outer squares.
    pub light_start: &'static [u8],
    /// Who moves first.
    pub first: OrbitColor,
    /// Plies after which the game ends and is scored as it stands.
    pub ply_cap: u32,
    /// Most boosts a single diagonal exit can receive.
    pub max_boosts: u8,
    /// Pieces lost that end the game (half the starting count).
    pub loss_limit: u8,
    /// Inner-orbit count at or below which the opponent scores
    /// [`Self::points_for_weak_opponent`] (half the starting count).
    pub weak_inner_limit: u8,
    /// Points for all remaining pieces in a row on the inner orbit.
    pub points_all_in_row: u32,
    /// Points for all but one piece in a row on the inner orbit.
    pub points_all_but_one: u32,
    /// Points when the opponent has too few pieces on the inner orbit.
    pub points_for_weak_opponent: u32,
}

/// The setup used by [`OrbitGame::new`].
pub const ORBIT_SETUP: OrbitSetup = OrbitSetup {
    pieces_per_side: 6,
    dark_start: &[12, 1, 2, 3, 4, 5],
    light_start: &[6, 7, 8, 9, 10, 11],
    first: OrbitColor::Dark,
    ply_cap: 200,
    max_boosts: 3,
    loss_limit: 3,
    weak_inner_limit: 3,
    points_all_in_row: 3,
    points_all_but_one: 1,
    points_for_weak_opponent: 2,
};

/// A player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum OrbitColor {
    /// Moves first.
    Dark,
    /// Moves second.
    Light,
}

impl OrbitColor {
    /// The other player.
    pub fn opponent(self) -> Self {
        match self {
            Self::Dark => Self::Light,
            Self::Light => Self::Dark,
        }
    }

    /// 0 for Dark, 1 for Light.
    pub fn index(self) -> usize {
        match self {
            Self::Dark => 0,
            Self::Light => 1,
        }
    }
}

/// A square of the orbit board. Ray numbers run `1..=12`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum OrbitSquare {
    /// The core.
    C,
    /// `Bk`, the inner orbit.
    Inner(u8),
    /// `Ak`, the outer orbit.
    Outer(u8),
}

impl OrbitSquare {
    /// Every square: `C`, `B1..B12`, `A1..A12`.
    pub fn all() -> impl Iterator<Item = Self> {
        std::iter::once(Self::C)
            .chain((1..=RAYS).map(Self::Inner))
            .chain((1..=RAYS).map(Self::Outer))
    }

    /// Whether the ray number (if any) is in `1..=12`.
    pub fn is_valid(self) -> bool {
        match self {
            Self::C => true,
            Self::Inner(k) | Self::Outer(k) => (1..=RAYS).contains(&k),
        }
    }

    /// The name used in notation: `C`, `B3`, `A12`.
    pub fn name(self) -> String {
        match self {
            Self::C => "C".to_owned(),
            Self::Inner(k) => format!("B{k}"),
            Self::Outer(k) => format!("A{k}"),
        }
    }

    /// Parses `C`, `Bk` or `Ak` (case-insensitive, `k` in `1..=12`).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let mut chars = text.chars();
        let letter = chars.next()?.to_ascii_uppercase();
        let rest = chars.as_str();
        if letter == 'C' {
            return rest.is_empty().then_some(Self::C);
        }
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) || rest.starts_with('0') {
            return None;
        }
        let k: u8 = rest.parse().ok()?;
        let square = match letter {
            'A' => Self::Outer(k),
            'B' => Self::Inner(k),
            _ => return None,
        };
        square.is_valid().then_some(square)
    }

    /// Index into the board array: 0 is `C`, 1..=12 inner, 13..=24 outer.
    fn index(self) -> Option<usize> {
        if !self.is_valid() {
            return None;
        }
        Some(match self {
            Self::C => 0,
            Self::Inner(k) => usize::from(k),
            Self::Outer(k) => usize::from(RAYS + k),
        })
    }
}

impl fmt::Display for OrbitSquare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The ray `k + step`, wrapped into `1..=12`.
fn ray(k: u8, step: i32) -> u8 {
    let r = (i32::from(k) - 1 + step).rem_euclid(i32::from(RAYS)) + 1;
    u8::try_from(r).unwrap_or(1)
}

const SQUARES: usize = 1 + 2 * RAYS as usize;

/// A position: who stands where, whose turn, first-turn flags and losses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OrbitPosition {
    board: [Option<OrbitColor>; SQUARES],
    /// The player to move.
    pub turn: OrbitColor,
    /// Per player (indexed by [`OrbitColor::index`]): true until they have
    /// made their first move; diagonal exits are forbidden while true.
    pub first_turn: [bool; 2],
    /// Per player: how many of their pieces have been captured.
    pub captured: [u8; 2],
}

impl OrbitPosition {
    /// An empty board, `turn` to move, both players still on their first turn.
    pub fn empty(turn: OrbitColor) -> Self {
        Self {
            board: [None; SQUARES],
            turn,
            first_turn: [true; 2],
            captured: [0; 2],
        }
    }

    /// The starting position of [`ORBIT_SETUP`].
    pub fn start() -> Self {
        let mut pos = Self::empty(ORBIT_SETUP.first);
        for &k in ORBIT_SETUP.dark_start {
            pos.board[usize::from(RAYS + k)] = Some(OrbitColor::Dark);
        }
        for &k in ORBIT_SETUP.light_start {
            pos.board[usize::from(RAYS + k)] = Some(OrbitColor::Light);
        }
        pos
    }

    /// Builds a position from square lists (for tests and analysis).
    pub fn from_squares(
        dark: &[OrbitSquare],
        light: &[OrbitSquare],
        turn: OrbitColor,
    ) -> Result<Self, OrbitError> {
        let mut pos = Self::empty(turn);
        for (color, list) in [(OrbitColor::Dark, dark), (OrbitColor::Light, light)] {
            for &sq in list {
                if pos.get(sq).is_some() {
                    return Err(OrbitError::Occupied(sq));
                }
                pos.set(sq, Some(color))?;
            }
        }
        Ok(pos)
    }

    /// The piece on `square` (None for an empty or invalid square).
    pub fn get(&self, square: OrbitSquare) -> Option<OrbitColor> {
        square.index().and_then(|i| self.board[i])
    }

    /// Puts (or removes) a piece.
    pub fn set(
        &mut self,
        square: OrbitSquare,
        piece: Option<OrbitColor>,
    ) -> Result<(), OrbitError> {
        let i = square.index().ok_or(OrbitError::InvalidSquare(square))?;
        self.board[i] = piece;
        Ok(())
    }

    /// The squares holding `color`'s pieces, in board order.
    pub fn pieces(&self, color: OrbitColor) -> Vec<OrbitSquare> {
        OrbitSquare::all()
            .filter(|&s| self.get(s) == Some(color))
            .collect()
    }

    /// How many pieces `color` has on the board.
    pub fn count(&self, color: OrbitColor) -> usize {
        self.board.iter().filter(|&&p| p == Some(color)).count()
    }

    /// How many of `color`'s pieces are on the inner orbit.
    pub fn inner_count(&self, color: OrbitColor) -> usize {
        (1..=RAYS)
            .filter(|&k| self.get(OrbitSquare::Inner(k)) == Some(color))
            .count()
    }

    /// The longest run of `color`'s pieces on consecutive inner squares
    /// (cyclic).
    pub fn longest_inner_row(&self, color: OrbitColor) -> usize {
        let own = |k: u8| self.get(OrbitSquare::Inner(k)) == Some(color);
        if (1..=RAYS).all(own) {
            return usize::from(RAYS);
        }
        let mut best = 0;
        for start in 1..=RAYS {
            // Only count runs from their first square.
            if !own(start) || own(ray(start, -1)) {
                continue;
            }
            let mut len = 0;
            while len < usize::from(RAYS) && own(ray(start, i32::try_from(len).unwrap_or(0))) {
                len += 1;
            }
            best = best.max(len);
        }
        best
    }

    /// Whether `color` has all remaining pieces (at least one) in a row on
    /// the inner orbit.
    pub fn all_in_row(&self, color: OrbitColor) -> bool {
        let n = self.count(color);
        n > 0 && self.longest_inner_row(color) == n
    }

    fn is_empty(&self, square: OrbitSquare) -> bool {
        square.index().is_some_and(|i| self.board[i].is_none())
    }
}

/// The kind of a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum OrbitMoveKind {
    /// `Ak -> C`.
    Proceed,
    /// `Ak -> Bk`.
    Exit,
    /// `Ak -> B(k±1)`, then any boosts.
    Diagonal,
    /// `Ak -> B(k±2)`, then any boosts.
    DoubleDiagonal,
    /// `Bk -> Ak`.
    Return,
    /// `C -> Ak`.
    FromCore,
}

impl OrbitMoveKind {
    /// Whether this is a diagonal exit (the kinds that boost and capture).
    pub fn is_diagonal(self) -> bool {
        matches!(self, Self::Diagonal | Self::DoubleDiagonal)
    }
}

/// A move. `path` lists every square entered after `from`, ending with `to`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OrbitMove {
    /// Where the piece starts.
    pub from: OrbitSquare,
    /// Where it comes to rest (after boosting).
    pub to: OrbitSquare,
    /// What sort of move it is.
    pub kind: OrbitMoveKind,
    /// How many boosts it received (0..=3).
    pub boosts: u8,
    /// Opponent pieces removed, in board order.
    pub captures: Vec<OrbitSquare>,
    /// Squares passed through, `to` last.
    pub path: Vec<OrbitSquare>,
}

impl OrbitMove {
    /// Short notation: `from-to`.
    pub fn short_text(&self) -> String {
        format!("{}-{}", self.from, self.to)
    }

    /// Long notation: `from` then every square of `path`.
    pub fn long_text(&self) -> String {
        let mut s = self.from.name();
        for sq in &self.path {
            s.push('-');
            s.push_str(&sq.name());
        }
        s
    }
}

impl fmt::Display for OrbitMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.long_text())
    }
}

/// Why a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum OrbitEndReason {
    /// This player has all remaining pieces in a row on the inner orbit.
    InARow(OrbitColor),
    /// This player has lost half their pieces.
    HalfLost(OrbitColor),
    /// Neither player has a legal move.
    NoMoves,
    /// The ply cap was reached.
    PlyCap,
}

/// The result of a finished game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OrbitOutcome {
    /// Points for Dark and Light (indexed by [`OrbitColor::index`]).
    pub points: [u32; 2],
    /// The player with more points, or None for a draw.
    pub winner: Option<OrbitColor>,
    /// What ended the game.
    pub reason: OrbitEndReason,
}

/// Why a move or a position was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OrbitError {
    /// The game is already over.
    #[error("the game is over")]
    GameOver,
    /// The move is not among the legal moves.
    #[error("illegal move {0}")]
    IllegalMove(String),
    /// The text is not a move in orbit notation.
    #[error("cannot read move text {0:?}")]
    BadNotation(String),
    /// A short-form move matches more than one legal move.
    #[error("move text {0:?} is ambiguous; use the long form")]
    Ambiguous(String),
    /// A square outside the board.
    #[error("no such square {0:?}")]
    InvalidSquare(OrbitSquare),
    /// Two pieces on one square.
    #[error("square {0} is given twice")]
    Occupied(OrbitSquare),
    /// More pieces than the setup allows.
    #[error("too many pieces for one side")]
    TooManyPieces,
}

/// Legal moves of the side to move, ignoring whether the game is over.
fn generate(pos: &OrbitPosition) -> Vec<OrbitMove> {
    use OrbitSquare::{C, Inner, Outer};
    let me = pos.turn;
    let mut out = Vec::new();
    for k in 1..=RAYS {
        // From the outer orbit: every move passes through Bk.
        if pos.get(Outer(k)) == Some(me) && pos.is_empty(Inner(k)) {
            if pos.is_empty(C) {
                out.push(simple(Outer(k), OrbitMoveKind::Proceed, vec![Inner(k), C]));
            }
            out.push(simple(Outer(k), OrbitMoveKind::Exit, vec![Inner(k)]));
            if !pos.first_turn[me.index()] {
                for d in [1, -1] {
                    let one = Inner(ray(k, d));
                    if !pos.is_empty(one) {
                        continue;
                    }
                    out.push(diagonal(pos, k, d, OrbitMoveKind::Diagonal));
                    if pos.is_empty(Inner(ray(k, 2 * d))) {
                        out.push(diagonal(pos, k, d, OrbitMoveKind::DoubleDiagonal));
                    }
                }
            }
        }
        // From the inner orbit: back out along the ray.
        if pos.get(Inner(k)) == Some(me) && pos.is_empty(Outer(k)) {
            out.push(simple(Inner(k), OrbitMoveKind::Return, vec![Outer(k)]));
        }
    }
    if pos.get(C) == Some(me) {
        for k in 1..=RAYS {
            if pos.is_empty(Inner(k)) && pos.is_empty(Outer(k)) {
                out.push(simple(C, OrbitMoveKind::FromCore, vec![Inner(k), Outer(k)]));
            }
        }
    }
    out
}

fn simple(from: OrbitSquare, kind: OrbitMoveKind, path: Vec<OrbitSquare>) -> OrbitMove {
    OrbitMove {
        from,
        to: *path.last().unwrap_or(&from),
        kind,
        boosts: 0,
        captures: Vec::new(),
        path,
    }
}

/// A diagonal exit from `Ak` in direction `d`, path already known clear;
/// applies boosting and finds captures.
fn diagonal(pos: &OrbitPosition, k: u8, d: i32, kind: OrbitMoveKind) -> OrbitMove {
    use OrbitSquare::{Inner, Outer};
    let me = pos.turn;
    let mut board = pos.clone();
    board.board[usize::from(RAYS + k)] = None;
    let steps = if kind == OrbitMoveKind::DoubleDiagonal {
        2
    } else {
        1
    };
    let mut path = vec![Inner(k)];
    path.extend((1..=steps).map(|s| Inner(ray(k, s * d))));
    let mut j = ray(k, steps * d);
    let mut boosts = 0;
    while boosts < ORBIT_SETUP.max_boosts && board.get(Outer(j)) == Some(me) {
        let (a, b) = (Inner(ray(j, d)), Inner(ray(j, 2 * d)));
        if !board.is_empty(a) || !board.is_empty(b) {
            break;
        }
        path.push(a);
        path.push(b);
        j = ray(j, 2 * d);
        boosts += 1;
    }
    let mut captures: Vec<OrbitSquare> = [ray(j, -1), ray(j, 1)]
        .into_iter()
        .map(Inner)
        .filter(|&s| board.get(s) == Some(me.opponent()))
        .collect();
    captures.sort_by_key(|s| s.index());
    captures.dedup();
    OrbitMove {
        from: Outer(k),
        to: Inner(j),
        kind,
        boosts,
        captures,
        path,
    }
}

/// Points for both players in `pos` as it stands.
pub fn score(pos: &OrbitPosition) -> [u32; 2] {
    let mut points = [0; 2];
    for color in [OrbitColor::Dark, OrbitColor::Light] {
        let n = pos.count(color);
        let row = pos.longest_inner_row(color);
        let p = &mut points[color.index()];
        if n > 0 && row == n {
            *p += ORBIT_SETUP.points_all_in_row;
        } else if n >= 2 && row == n - 1 {
            *p += ORBIT_SETUP.points_all_but_one;
        }
        if pos.inner_count(color.opponent()) <= usize::from(ORBIT_SETUP.weak_inner_limit) {
            *p += ORBIT_SETUP.points_for_weak_opponent;
        }
    }
    points
}

/// A game: the position, the ply count and, once over, the outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrbitGame {
    position: OrbitPosition,
    ply: u32,
    outcome: Option<OrbitOutcome>,
}

impl Default for OrbitGame {
    fn default() -> Self {
        Self::new()
    }
}

impl OrbitGame {
    /// A game from the starting position.
    pub fn new() -> Self {
        // The start has no finished side and moves for Dark, so no settling.
        Self {
            position: OrbitPosition::start(),
            ply: 0,
            outcome: None,
        }
    }

    /// A game from any position (ply count 0). The end conditions are checked
    /// at once, and a side to move without moves passes.
    pub fn from_position(position: OrbitPosition) -> Result<Self, OrbitError> {
        let limit = usize::from(ORBIT_SETUP.pieces_per_side);
        if position.count(OrbitColor::Dark) > limit || position.count(OrbitColor::Light) > limit {
            return Err(OrbitError::TooManyPieces);
        }
        let mut game = Self {
            position,
            ply: 0,
            outcome: None,
        };
        game.settle(None);
        Ok(game)
    }

    /// The current position.
    pub fn position(&self) -> &OrbitPosition {
        &self.position
    }

    /// Plies played.
    pub fn ply(&self) -> u32 {
        self.ply
    }

    /// The player to move.
    pub fn turn(&self) -> OrbitColor {
        self.position.turn
    }

    /// The result, once the game is over.
    pub fn outcome(&self) -> Option<OrbitOutcome> {
        self.outcome
    }

    /// Legal moves; empty once the game is over.
    pub fn legal_moves(&self) -> Vec<OrbitMove> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        generate(&self.position)
    }

    /// Plays a move equal (in `from`, `to`, `kind` and `path`) to one of
    /// [`Self::legal_moves`]. On error the game is unchanged.
    pub fn play(&mut self, mv: &OrbitMove) -> Result<(), OrbitError> {
        if self.outcome.is_some() {
            return Err(OrbitError::GameOver);
        }
        let legal = generate(&self.position)
            .into_iter()
            .find(|m| m.from == mv.from && m.to == mv.to && m.kind == mv.kind && m.path == mv.path)
            .ok_or_else(|| OrbitError::IllegalMove(mv.long_text()))?;
        self.apply(&legal);
        Ok(())
    }

    /// Plays a move taken from [`Self::legal_moves`] of this very game
    /// without looking it up again: for the bots' search.
    pub fn play_listed(&mut self, mv: &OrbitMove) {
        debug_assert!(self.outcome.is_none());
        self.apply(mv);
    }

    /// Plays a move in short (`A3-B4`) or long (`A3-B3-B4`) notation.
    pub fn play_text(&mut self, text: &str) -> Result<(), OrbitError> {
        let mv = self.parse_move(text)?;
        self.play(&mv)
    }

    /// Finds the legal move written as `text`.
    pub fn parse_move(&self, text: &str) -> Result<OrbitMove, OrbitError> {
        if self.outcome.is_some() {
            return Err(OrbitError::GameOver);
        }
        let squares: Option<Vec<OrbitSquare>> =
            text.trim().split('-').map(OrbitSquare::parse).collect();
        let squares = squares.ok_or_else(|| OrbitError::BadNotation(text.to_owned()))?;
        if squares.len() < 2 {
            return Err(OrbitError::BadNotation(text.to_owned()));
        }
        let moves = generate(&self.position);
        let mut found: Vec<&OrbitMove> = if squares.len() == 2 {
            moves
                .iter()
                .filter(|m| m.from == squares[0] && m.to == squares[1])
                .collect()
        } else {
            moves
                .iter()
                .filter(|m| m.from == squares[0] && m.path[..] == squares[1..])
                .collect()
        };
        match found.len() {
            0 => Err(OrbitError::IllegalMove(text.to_owned())),
            1 => Ok(found.remove(0).clone()),
            _ => Err(OrbitError::Ambiguous(text.to_owned())),
        }
    }

    /// The short form of `mv` if no other legal move shares it, else the long
    /// form.
    pub fn move_text(&self, mv: &OrbitMove) -> String {
        let same = generate(&self.position)
            .iter()
            .filter(|m| m.from == mv.from && m.to == mv.to)
            .count();
        if same > 1 {
            mv.long_text()
        } else {
            mv.short_text()
        }
    }

    /// Leaf count of the legal-move tree to `depth`.
    pub fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let moves = self.legal_moves();
        if depth == 1 {
            return moves.len() as u64;
        }
        moves
            .iter()
            .map(|m| {
                let mut next = self.clone();
                next.apply(m);
                next.perft(depth - 1)
            })
            .sum()
    }

    fn apply(&mut self, mv: &OrbitMove) {
        let me = self.position.turn;
        let pos = &mut self.position;
        // Squares in a generated move are always valid.
        let _ = pos.set(mv.from, None);
        let _ = pos.set(mv.to, Some(me));
        for &sq in &mv.captures {
            let _ = pos.set(sq, None);
        }
        let taken = u8::try_from(mv.captures.len()).unwrap_or(u8::MAX);
        let lost = &mut pos.captured[me.opponent().index()];
        *lost = lost.saturating_add(taken);
        pos.first_turn[me.index()] = false;
        pos.turn = me.opponent();
        self.ply += 1;
        self.settle(Some(me));
    }

    /// Checks the end conditions (the mover's first) and passes for a side
    /// with no moves.
    fn settle(&mut self, mover: Option<OrbitColor>) {
        let first = mover.unwrap_or(self.position.turn);
        let order = [first, first.opponent()];
        let reason = order
            .iter()
            .rev()
            .find(|c| self.position.captured[c.index()] >= ORBIT_SETUP.loss_limit)
            .map(|&c| OrbitEndReason::HalfLost(c))
            .or_else(|| {
                order
                    .iter()
                    .find(|&&c| self.position.all_in_row(c))
                    .map(|&c| OrbitEndReason::InARow(c))
            })
            .or_else(|| (self.ply >= ORBIT_SETUP.ply_cap).then_some(OrbitEndReason::PlyCap))
            .or_else(|| {
                if !generate(&self.position).is_empty() {
                    return None;
                }
                self.position.turn = self.position.turn.opponent();
                if generate(&self.position).is_empty() {
                    self.position.turn = self.position.turn.opponent();
                    Some(OrbitEndReason::NoMoves)
                } else {
                    None
                }
            });
        if let Some(reason) = reason {
            let points = score(&self.position);
            let winner = match points[0].cmp(&points[1]) {
                std::cmp::Ordering::Greater => Some(OrbitColor::Dark),
                std::cmp::Ordering::Less => Some(OrbitColor::Light),
                std::cmp::Ordering::Equal => None,
            };
            self.outcome = Some(OrbitOutcome {
                points,
                winner,
                reason,
            });
        }
    }
}
