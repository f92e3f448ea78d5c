//! What a client sees of one game (one round of a series): board, clock, moves, result.
//!
//! Squares are always named in the wire frame, "a1".."h8" seen from Dark's side, whatever
//! the rule set; move `notation` is the rule set's own. `PROTOCOL.md` describes both.

use serde::{Deserialize, Serialize};

/// The rules a lobby plays by.
///
/// Later protocol versions may add rule sets, so clients of other languages should
/// tolerate rule-set names they do not know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RuleSet {
    /// American checkers (English draughts).
    #[default]
    American,
    /// Brazilian draughts: the international rules on an 8×8 board.
    Brazilian,
    /// Russian draughts (shashki).
    Russian,
    /// Spanish draughts.
    Spanish,
    /// Italian draughts, played on the mirrored board.
    Italian,
    /// Thai checkers (mak-hot).
    Thai,
    /// Space Mode: American checkers with two wormholes and three thruster boosts a
    /// side; the game view carries [`SpaceView`].
    Space,
    /// Space Checkers on the 25-square orbit board; the game view carries
    /// [`BoardGeometry`] and [`Points`].
    Orbit,
}

wire_names!(RuleSet {
    American => "american",
    Brazilian => "brazilian",
    Russian => "russian",
    Spanish => "spanish",
    Italian => "italian",
    Thai => "thai",
    Space => "space",
    Orbit => "orbit",
});

/// A side of the board. Dark always moves first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Color {
    /// The first-moving side, whose men start on ranks 1–3.
    Dark,
    /// The second-moving side, whose men start on ranks 6–8.
    Light,
}

wire_names!(Color {
    Dark => "dark",
    Light => "light",
});

impl Color {
    /// The other side.
    pub const fn opponent(self) -> Color {
        match self {
            Color::Dark => Color::Light,
            Color::Light => Color::Dark,
        }
    }
}

/// The game of the current round, as everyone in the room sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GameView {
    /// Which seat (0 or 1) plays Dark this round; the other plays Light.
    pub dark_seat: u8,
    /// The position in the rule set's FEN dialect.
    pub fen: String,
    /// Every piece on the board.
    pub pieces: Vec<PieceView>,
    /// The side to move (or that was to move when the game ended).
    pub turn: Color,
    /// Half-moves played so far this round.
    pub ply: u32,
    /// The notation of every move of this round, in order.
    pub moves: Vec<String>,
    /// The move just played, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_move: Option<MoveView>,
    /// Every legal move for the side to move; empty once the game is over.
    pub legal_moves: Vec<MoveView>,
    /// Squares of the pieces that can capture, when a capture is compulsory; else empty.
    pub must_capture: Vec<String>,
    /// Unix time in milliseconds at which the side to move loses on time.
    pub deadline: u64,
    /// Milliseconds the side to move had left when this state was produced.
    pub remaining_ms: u32,
    /// The side whose draw offer stands, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_offer: Option<Color>,
    /// The side whose draw offer the opponent has just declined (with `decline_draw` or
    /// by moving), until that side moves or offers again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_declined: Option<Color>,
    /// Set once the game is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<GameResult>,
    /// The board's squares and lines, for boards other than the 8×8 one (`orbit`).
    /// Absent: the usual 8×8 board named "a1".."h8".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardGeometry>,
    /// Wormholes and thruster charges (`space` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<SpaceView>,
    /// The points each side would score if the game ended now (`orbit` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Points>,
}

/// A board that is not the 8×8 grid: every square with a place to draw it, and the
/// lines that join neighbouring squares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BoardGeometry {
    /// Every square of the board.
    pub squares: Vec<SquareGeometry>,
    /// Pairs of square names joined by a line on the board (the rays and the rings).
    pub lines: Vec<[String; 2]>,
}

/// Where one square of a [`BoardGeometry`] is drawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SquareGeometry {
    /// The square's name, as used in pieces, paths and notation (e.g. "A3", "C").
    pub name: String,
    /// Its centre in a 1000 × 1000 box: x to the right, y downwards.
    pub x: u16,
    /// See `x`.
    pub y: u16,
}

/// Space Mode's extra state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpaceView {
    /// The two linked squares (board names). A piece landing on one comes out of
    /// the other if it is empty.
    pub wormholes: [String; 2],
    /// Thruster boosts each side has left.
    pub boosts: Boosts,
}

/// Thruster charges left, per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Boosts {
    /// Dark's charges.
    pub dark: u8,
    /// Light's charges.
    pub light: u8,
}

/// Points per side in an `orbit` game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Points {
    /// Dark's points.
    pub dark: u32,
    /// Light's points.
    pub light: u32,
}

/// One piece on the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PieceView {
    /// Where it stands, e.g. "c3".
    pub square: String,
    /// Whose it is.
    pub color: Color,
    /// Whether it has been crowned.
    pub king: bool,
}

/// A move, both as the rule set writes it and as squares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MoveView {
    /// The rule set's notation, e.g. "11-15" or "c3:e5".
    pub notation: String,
    /// The start square and every square landed on, in order.
    pub path: Vec<String>,
    /// Squares of the pieces taken, in the order they were jumped; empty for a quiet move.
    pub captures: Vec<String>,
    /// A Space Mode thruster boost (spends one charge); absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub boost: bool,
    /// Space Mode wormhole jumps made by the move, as [entrance, exit], in order;
    /// absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teleports: Vec<[String; 2]>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GameResult {
    /// The side that won; absent for a draw or a game ended without a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<Color>,
    /// Why the game ended.
    pub reason: GameEndReason,
    /// The points each side scored (`orbit` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Points>,
}

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GameEndReason {
    /// The loser has no pieces left.
    NoPieces,
    /// The loser, to move, has no legal move (in `orbit`: neither side can move).
    NoMoves,
    /// A player resigned (which also concedes the series).
    Resigned,
    /// The side to move let its clock run out.
    Timeout,
    /// One player offered a draw and the other accepted.
    DrawAgreed,
    /// The same position came up often enough for the rule set to call a draw.
    Repetition,
    /// The rule set's no-progress rule ended the game as a draw.
    MoveLimit,
    /// Federation draw rules: the move limit for this endgame ran out (e.g. three kings
    /// against a lone king in `russian`).
    EndgameLimit,
    /// Federation draw rules (`russian`): kings on both sides and the balance of forces
    /// unchanged (no capture, no crowning) for as many moves as the rules allow.
    MaterialUnchanged,
    /// A player left the lobby mid-series.
    Left,
    /// The host ended the match.
    EndedByHost,
    /// `orbit`: a side has all its remaining pieces in a row on the inner orbit.
    InARow,
    /// `orbit`: a side has lost half its pieces.
    HalfLost,
    /// `orbit`: the ply limit was reached; scored as the board stands.
    PlyLimit,
    /// Correspondence: the side to move had not moved within the claim window, and the
    /// opponent claimed the game.
    ForfeitClaimed,
    /// Correspondence: the lobby had no move for its expiry window; no winner.
    Expired,
}

wire_names!(GameEndReason {
    NoPieces => "no_pieces",
    NoMoves => "no_moves",
    Resigned => "resigned",
    Timeout => "timeout",
    DrawAgreed => "draw_agreed",
    Repetition => "repetition",
    MoveLimit => "move_limit",
    EndgameLimit => "endgame_limit",
    MaterialUnchanged => "material_unchanged",
    Left => "left",
    EndedByHost => "ended_by_host",
    InARow => "in_a_row",
    HalfLost => "half_lost",
    PlyLimit => "ply_limit",
    ForfeitClaimed => "forfeit_claimed",
    Expired => "expired",
});

#[cfg(test)]
mod tests {
    use super::{Color, GameEndReason, RuleSet};
    use serde::{Serialize, de::DeserializeOwned};
    use std::fmt::Debug;

    fn check_names<T: Serialize + DeserializeOwned + PartialEq + Debug + Copy>(
        all: &[T],
        name: impl Fn(T) -> &'static str,
    ) {
        for value in all {
            let json = serde_json::to_string(value).unwrap();
            assert_eq!(json, format!("\"{}\"", name(*value)));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), *value);
        }
    }

    #[test]
    fn names_match_serde() {
        check_names(RuleSet::ALL, RuleSet::as_str);
        check_names(Color::ALL, Color::as_str);
        check_names(GameEndReason::ALL, GameEndReason::as_str);
    }

    #[test]
    fn american_is_the_default_rule_set() {
        assert_eq!(RuleSet::default(), RuleSet::American);
    }

    #[test]
    fn opponent_flips() {
        assert_eq!(Color::Dark.opponent(), Color::Light);
        assert_eq!(Color::Light.opponent(), Color::Dark);
    }
}
