//! The room snapshot sent in every `state` message: seats, series score and phase.

use serde::{Deserialize, Serialize};

use crate::game::{BoardGeometry, GameView, RuleSet};

/// A full snapshot of one lobby, sent after every change to everyone in it.
///
/// Seat-indexed lists (`players`, `next_round`, `rematch`, `series.wins`) always have
/// two entries; index 0 is seat 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RoomState {
    /// Increases with every change to the room; see "Room versions" in `PROTOCOL.md`.
    pub version: u64,
    /// The lobby's code, as used in `join_lobby` and `watch`.
    pub code: String,
    /// The rules every game of the lobby is played by.
    pub rule_set: RuleSet,
    /// Rounds in a series as chosen at creation: 1, 3, 5 or 7.
    pub series_length: u8,
    /// Whether joining or watching needs the invite.
    pub invite_only: bool,
    /// How fast the lobby is played; absent: `live`.
    #[serde(default, skip_serializing_if = "Pace::is_live")]
    pub pace: Pace,
    /// In a correspondence lobby: Unix milliseconds at which the lobby expires
    /// with no winner unless a move is played before. Absent in live lobbies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Which draw rules the games are judged by; absent: `standard`.
    #[serde(default, skip_serializing_if = "DrawRules::is_standard")]
    pub draw_rules: DrawRules,
    /// Bold Points each player stakes (0: a free lobby). Fixed at creation,
    /// so anyone who opens the lobby sees it before taking a seat.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stake: u32,
    /// The invite of an invite-only lobby, for its members to pass on; absent otherwise.
    ///
    /// Everyone in such a lobby either created it or needed the invite to get in, so
    /// showing it to them gives nothing away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite: Option<String>,
    /// The link to share: `{public_url}/r/{CODE}`, with `?invite=…` for an
    /// invite-only lobby. Always sent by this server; optional on the wire so
    /// that older states still decode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite_link: Option<String>,
    /// The identity id of the host, who may end the match.
    pub host: String,
    /// Who sits in each seat; `null` (`None`) for an empty seat.
    pub players: Vec<Option<PlayerView>>,
    /// When both seats hold accounts: their head-to-head record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_to_head: Option<HeadToHead>,
    /// How many connections are watching.
    pub spectators: u32,
    /// Where the room is in its life.
    pub phase: Phase,
    /// The score of the current (or last) series.
    pub series: SeriesView,
    /// The current round's game; during a break or after a series, the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game: Option<GameView>,
    /// The board's geometry while there is no `game` yet, so the empty board can be
    /// drawn (`orbit` only; once a game exists, `game.board` carries it). Absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardGeometry>,
    /// Unix time in milliseconds at which the break ends; only during a break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_ends_at: Option<u64>,
    /// By seat: whether that player has asked to start the next round now.
    pub next_round: Vec<bool>,
    /// By seat: whether that player has called (or accepted) a rematch.
    pub rematch: Vec<bool>,
}

/// A seated player.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PlayerView {
    /// Identity id, as in `welcome.identity.id`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Whether the player has a live connection right now.
    pub connected: bool,
    /// An account's lasting record (absent for guests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordView>,
}

/// A player's record as others see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RecordView {
    /// Rookie, Contender, Hustler, Shark, Kingpin or Legend.
    pub rank: String,
    /// Series won, in every rule set.
    pub series_won: u32,
    /// Series won in a row in this lobby's rule set.
    pub streak: u32,
    /// The longest such run so far.
    pub best_streak: u32,
}

/// The all-time series results between the two seated accounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HeadToHead {
    /// Series won, by seat.
    pub wins: Vec<u32>,
    /// Series drawn.
    pub draws: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Where a room is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Fewer than two players; no series has started.
    Waiting,
    /// A round is being played.
    Playing,
    /// Between two rounds of a series.
    Break,
    /// The series is over; both players may call a rematch.
    Finished,
    /// The host ended the match; nothing more will be played here.
    Ended,
}

wire_names!(Phase {
    Waiting => "waiting",
    Playing => "playing",
    Break => "break",
    Finished => "finished",
    Ended => "ended",
});

/// The score of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesView {
    /// The current round, counting from 1.
    pub round: u32,
    /// The most rounds this series can last: twice its length (drawn rounds are
    /// replayed, up to this many); for series scored by points, its length.
    pub max_rounds: u32,
    /// By seat: rounds won.
    pub wins: Vec<u32>,
    /// Rounds drawn.
    pub draws: u32,
    /// Points per seat, in series scored by points (`orbit`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Vec<u32>>,
    /// Set once the series is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<SeriesResult>,
}

/// How a series ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SeriesResult {
    /// The winning seat; absent when the series was drawn or ended without a winner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<u8>,
    /// Why the series ended.
    pub reason: SeriesEndReason,
}

/// Why a series ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SeriesEndReason {
    /// A player won a majority of the series length.
    Majority,
    /// The round limit (twice the length) was reached; the leader wins, or it is drawn.
    RoundLimit,
    /// A player resigned.
    Resigned,
    /// A player left the lobby.
    Left,
    /// The host ended the match.
    EndedByHost,
    /// A correspondence lobby had no move for its expiry window: no winner.
    Expired,
    /// A series scored by points (`orbit`) ended: every game was played, or the
    /// trailing seat could no longer catch up.
    Points,
}

wire_names!(SeriesEndReason {
    Majority => "majority",
    RoundLimit => "round_limit",
    Resigned => "resigned",
    Left => "left",
    EndedByHost => "ended_by_host",
    Expired => "expired",
    Points => "points",
});

/// How fast a lobby is played, chosen at creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// Both players at the board: the move clock forfeits a side that runs out of time.
    #[default]
    Live,
    /// Each plays whenever they can: no clock forfeits by itself; after the claim window
    /// the opponent may claim the game, and a lobby with no move for the expiry window
    /// ends with no winner.
    Correspondence,
}

wire_names!(Pace {
    Live => "live",
    Correspondence => "correspondence",
});

impl Pace {
    /// Whether this is the default pace (left out of `state`).
    pub fn is_live(&self) -> bool {
        *self == Pace::Live
    }
}

/// Which draw rules a lobby's games are judged by, chosen at creation (`rules/RULES.md`,
/// "Draws"). Threefold repetition draws under both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DrawRules {
    /// The default: a run of plies with no capture and no man move (80 in `american` and
    /// `space`, 20 in the other 8×8 rule sets) draws.
    #[default]
    Standard,
    /// The rule set's federation draw rules where they differ: longer king-only runs and
    /// move limits for some endgames (`russian`, `brazilian`, `italian`). The same as
    /// `standard` in the other rule sets.
    Federation,
}

wire_names!(DrawRules {
    Standard => "standard",
    Federation => "federation",
});

impl DrawRules {
    /// Whether these are the default rules (left out of `state` and `lobby_info`).
    pub fn is_standard(&self) -> bool {
        *self == DrawRules::Standard
    }
}

/// What a lobby is, as shown before joining it (`lobby_info`, and the JSON of
/// `GET /r/{CODE}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LobbySummary {
    /// The lobby's code.
    pub code: String,
    /// The rules every game is played by.
    pub rule_set: RuleSet,
    /// Live (a move clock) or correspondence (days per move).
    pub pace: Pace,
    /// Games in the series: 1, 3, 5 or 7.
    pub series_length: u8,
    /// Whether joining and watching need the invite.
    pub invite_only: bool,
    /// Bold Points each player stakes; 0 for a free lobby.
    pub stake: u32,
    /// The host's display name (the host created the lobby, or took it over
    /// when the creator left); absent if the host holds no seat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// Whether the host holds a seat but has no connection in the lobby
    /// (their page is closed or offline), so that a series there waits for
    /// them to come back; absent: `false`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub host_away: bool,
    /// Display names by seat; `null` (`None`) for an empty seat.
    pub players: Vec<Option<String>>,
    /// Connections watching.
    pub spectators: u32,
    /// Where the lobby is in its life: waiting, playing, break or finished.
    pub phase: Phase,
    /// Correspondence lobbies: when the lobby expires unless a move is played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Which draw rules the games are judged by; absent: `standard`.
    #[serde(default, skip_serializing_if = "DrawRules::is_standard")]
    pub draw_rules: DrawRules,
}

/// Whether a [`MyGame`] is a lobby or a solo game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GameKind {
    /// A lobby, entered by `join_lobby` with its code.
    Lobby,
    /// A solo game, entered by `resume_solo`.
    Solo,
}

wire_names!(GameKind {
    Lobby => "lobby",
    Solo => "solo",
});

/// One unfinished lobby or solo game of yours, in `my_games`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MyGame {
    /// The lobby's code, or the solo game's id (`S` and a code).
    pub code: String,
    /// A lobby or a solo game.
    pub kind: GameKind,
    /// The rules it is played by.
    pub rule_set: RuleSet,
    /// `live` for solo games.
    pub pace: Pace,
    /// The lobby's phase; absent for solo games.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The opponent's display name: the other seat (absent while it is empty), or the
    /// computer's level in a solo game (absent on one device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opponent: Option<String>,
    /// Whether a game is in play and it is your move.
    pub your_turn: bool,
    /// With a game in play: in a live lobby, when the side to move loses on time; in a
    /// correspondence lobby, when the side to move may be claimed against (by you, if it
    /// is your opponent's turn). Unix milliseconds. Absent in solo games.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// When the last move was played (Unix milliseconds); absent before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_move_at: Option<u64>,
    /// Correspondence lobbies: when the lobby expires unless a move is played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::{DrawRules, GameKind, Pace, Phase, SeriesEndReason};

    #[test]
    fn names_match_serde() {
        for phase in Phase::ALL {
            assert_eq!(
                serde_json::to_string(phase).unwrap(),
                format!("\"{phase}\"")
            );
        }
        for pace in Pace::ALL {
            assert_eq!(serde_json::to_string(pace).unwrap(), format!("\"{pace}\""));
        }
        for rules in DrawRules::ALL {
            assert_eq!(
                serde_json::to_string(rules).unwrap(),
                format!("\"{rules}\"")
            );
            assert_eq!(
                serde_json::from_str::<DrawRules>(&format!("\"{rules}\"")).unwrap(),
                *rules
            );
        }
        assert_eq!(DrawRules::default(), DrawRules::Standard);
        for kind in GameKind::ALL {
            assert_eq!(serde_json::to_string(kind).unwrap(), format!("\"{kind}\""));
        }
        for reason in SeriesEndReason::ALL {
            assert_eq!(
                serde_json::to_string(reason).unwrap(),
                format!("\"{reason}\"")
            );
        }
    }
}
