//! What a lobby's transitions leave for the I/O layer to carry out, as plain
//! values: the moves to store ([`StoredMove`], with their [`MoveEffects`]),
//! the money to move ([`Settlement`]), the finished series to count
//! ([`SeriesRecord`]), and who took part ([`Identity`]). The room task turns
//! them into store writes; nothing here knows how they are written.

use serde::{Deserialize, Serialize};

/// One move in a room's log: `(game_no, ply)` orders it and makes a
/// retried write harmless.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMove {
    pub game_no: u64,
    /// 1-based ply within the game.
    pub ply: u32,
    /// The path as internal square indices, comma-separated.
    pub path: String,
    /// The move as written in the rule set's notation when it was played.
    pub text: String,
    pub seat: u8,
    pub seq: u32,
    /// What the move changed besides the game, for a move appended to the
    /// log on its own (the stored record does not hold it); `None` for a
    /// move stored with a record that holds it.
    pub effects: Option<MoveEffects>,
}

/// What a move appended without its record changed in the lobby besides
/// the game (which replays from the paths): enough to bring a record
/// written before the move up to the lobby after it. The draw offer
/// follows from who moved, so it is not stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveEffects {
    /// The lobby's version after the move.
    pub version: u64,
    /// When the move was played (Unix ms): the lobby's last move and the
    /// start of its expiry window.
    pub at_ms: u64,
    /// The deadline (live) or claim time (correspondence) it set, Unix ms.
    pub deadline_ms: u64,
    /// The seat to move after it.
    pub to_move: Option<u8>,
    /// The action as the player submitted it (JSON), which a re-sent
    /// action with the same seq is compared with.
    pub submitted: String,
}

/// How a staked series ends for the money.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Settlement {
    /// The winner takes the pot, up to the daily cap.
    Winner { winner: String, loser: String },
    /// Every stake goes back.
    Refund { players: [String; 2] },
}

/// A finished series to record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesRecord {
    pub series: String,
    pub rule_set: String,
    pub players: [String; 2],
    /// Index into `players`; `None` for a drawn series.
    pub winner: Option<usize>,
    /// When the series ended (Unix ms; 0 in records written before this
    /// was stored, taken as now): a record decided longer ago than the
    /// idempotency window allows is refused, never counted twice.
    #[serde(default)]
    pub decided: u64,
}

/// A player as the server knows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Stable id, shown to other clients (never an email).
    pub id: String,
    /// Display name.
    pub name: String,
    pub guest: bool,
}
