//! Where a lobby is in its life and how its games and series end, stored
//! by these names (the same as the protocol's, which the room maps them to).

use jumpgate_rules::Color;
use jumpgate_rules::variant_game::EndReason;

/// Where the lobby is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Waiting,
    Playing,
    Break,
    Finished,
    Ended,
}

/// Why a game ended (stored by these names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GameEnd {
    NoPieces,
    NoMoves,
    Resigned,
    Timeout,
    DrawAgreed,
    Repetition,
    MoveLimit,
    /// Federation draw rules: an endgame's move limit ran out.
    EndgameLimit,
    /// Federation draw rules: the balance of forces stood unchanged too long.
    MaterialUnchanged,
    Left,
    EndedByHost,
    InARow,
    HalfLost,
    PlyLimit,
    /// Correspondence: the opponent claimed the game after the claim window.
    ForfeitClaimed,
    /// Correspondence: no move for the expiry window.
    Expired,
}

impl GameEnd {
    /// The name for why the rules ended a game.
    pub fn from_rules(reason: EndReason) -> GameEnd {
        match reason {
            EndReason::NoPieces => GameEnd::NoPieces,
            EndReason::NoMoves => GameEnd::NoMoves,
            EndReason::Repetition => GameEnd::Repetition,
            EndReason::NoProgress => GameEnd::MoveLimit,
            EndReason::EndgameLimit => GameEnd::EndgameLimit,
            EndReason::MaterialUnchanged => GameEnd::MaterialUnchanged,
            EndReason::InARow => GameEnd::InARow,
            EndReason::HalfLost => GameEnd::HalfLost,
            EndReason::PlyLimit => GameEnd::PlyLimit,
        }
    }
}

/// Points per side (orbit), stored as `{"dark", "light"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Points {
    pub dark: u32,
    pub light: u32,
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GameResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<Color>,
    pub reason: GameEnd,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Points>,
}

/// Why a series ended (stored by these names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesEnd {
    Majority,
    RoundLimit,
    Resigned,
    Left,
    EndedByHost,
    Points,
    /// Correspondence: no move for the expiry window; no winner.
    Expired,
}

/// How a series ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SeriesResult {
    /// The winning seat; `None` for a drawn series or one ended by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<u8>,
    pub reason: SeriesEnd,
}
