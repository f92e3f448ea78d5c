//! Protocol 2: a room is sent in full once (`snapshot`), then as one small event per
//! version (`moved` for a move, `changed` for anything else).
//!
//! The messages are variants of [`ServerMessage`](crate::ServerMessage) like every
//! other (`Snapshot`, `Moved`, `Changed`); the server sends them only on a protocol 2
//! connection, where they take the place of `state`. [`RoomView`] applies them to a
//! local copy of the room and says when a version was missed, so that the client asks
//! `resync { since }`. `PROTOCOL.md` ("Protocol 2") describes the same for other
//! languages.
//!
//! What a `snapshot` leaves out compared with v1's `state`: the game's `fen` (it follows
//! from `pieces`, `turn` and the rule set) and each legal move's notation: a legal move
//! is its path (`legal`; Space Mode's boosted moves listed apart in `legal_boosts`), with
//! what it takes and where wormholes carry it listed beside the paths only when some move
//! does (see [`CompactLegal`]).

mod changes;
mod view;

use serde::{Deserialize, Serialize};

use crate::game::{
    BoardGeometry, Boosts, Color, GameResult, MoveView, PieceView, Points, RuleSet, SpaceView,
};
use crate::room::{DrawRules, HeadToHead, Pace, Phase, PlayerView, SeriesView};

pub use view::{Gap, RoomView, Update};

/// A legal move as the squares it goes through: the start square and every square
/// landed on (on the orbit board, every square passed through), as in
/// [`MoveView::path`] and in a `move` request's `path`.
pub type Path = Vec<String>;

/// The whole of one lobby as a protocol 2 client holds it: what v1's `state` says, with
/// a compact game ([`GameSnapshot`]).
///
/// Sent as `snapshot` on joining or watching, when a `resync` asks from a version the
/// server no longer has the events for, and when the server showed several versions at
/// once. Seat-indexed lists (`players`, `next_round`, `rematch`, `series.wins`) always
/// have two entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RoomSnapshot {
    /// The room version this snapshot shows; the next event carries this plus one.
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
    /// Correspondence lobbies: Unix milliseconds at which the lobby expires with no
    /// winner unless a move is played before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Which draw rules the games are judged by; absent: `standard`.
    #[serde(default, skip_serializing_if = "DrawRules::is_standard")]
    pub draw_rules: DrawRules,
    /// Bold Points each player stakes; absent: 0, a free lobby.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stake: u32,
    /// The invite of an invite-only lobby; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite: Option<String>,
    /// The link to share: `{public_url}/r/{CODE}`, with `?invite=…` when needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite_link: Option<String>,
    /// The identity id of the host, who may end the match.
    pub host: String,
    /// Who sits in each seat; `null` for an empty seat.
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
    pub game: Option<GameSnapshot>,
    /// The board's geometry while there is no `game` yet (`orbit` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardGeometry>,
    /// Unix milliseconds at which the break ends; only during a break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_ends_at: Option<u64>,
    /// By seat: whether that player has asked to start the next round now.
    pub next_round: Vec<bool>,
    /// By seat: whether that player has called (or accepted) a rematch.
    pub rematch: Vec<bool>,
}

/// The game of the current round in a [`RoomSnapshot`]: v1's game view without the
/// FEN, with legal moves as paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GameSnapshot {
    /// Which seat (0 or 1) plays Dark this round.
    pub dark_seat: u8,
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
    /// The paths of the side to move's legal moves (boosted ones excepted); empty once
    /// the game is over.
    pub legal: Vec<Path>,
    /// By legal move (same order and length as `legal`): the squares it takes, in jump
    /// order; absent when no legal move takes anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_captures: Vec<Vec<String>>,
    /// Space Mode, by legal move (same order and length as `legal`): its wormhole
    /// jumps as [entrance, exit]; absent when no legal move enters a wormhole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_teleports: Vec<Vec<[String; 2]>>,
    /// Space Mode: the paths of the legal moves that are thruster boosts (each spends a
    /// charge); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_boosts: Vec<Path>,
    /// Space Mode, by boosted move (same order and length as `legal_boosts`): its
    /// wormhole jumps; absent when none enters a wormhole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_boost_teleports: Vec<Vec<[String; 2]>>,
    /// Squares of the pieces that can capture, when a capture is compulsory; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_capture: Vec<String>,
    /// Unix milliseconds at which the side to move loses on time; 0 once over.
    pub deadline: u64,
    /// Milliseconds the side to move had left when this was sent; 0 once over.
    pub remaining_ms: u32,
    /// The side whose draw offer stands, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_offer: Option<Color>,
    /// The side whose draw offer the opponent has just declined, until that side moves
    /// or offers again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_declined: Option<Color>,
    /// Set once the game is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<GameResult>,
    /// The board's squares and lines for boards other than 8×8 (`orbit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardGeometry>,
    /// Wormholes and thruster charges (`space` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<SpaceView>,
    /// The points each side would score if the game ended now (`orbit` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Points>,
}

/// One move, as every member of the room receives it: the room's next version.
///
/// Applied to the game of the room at `version - 1`: the piece on `path[0]` goes to
/// [`to`](Moved::to) (crowned if `crowned`), the pieces on `captures` leave the board,
/// `notation` joins `moves`, the move ([`played`](Moved::played)) becomes `last_move`,
/// and every other field here replaces the game's. Fields marked "when changed" keep the
/// game's value when absent.
///
/// The move's own fields (`notation`, `path`, `captures`, `boost`, `teleports`) are
/// those of a [`MoveView`], written beside the others to save a nesting level, with
/// empty ones left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Moved {
    /// The room version this move made.
    pub version: u64,
    /// The rule set's notation of the move, e.g. "11-15".
    pub notation: String,
    /// The start square and every square landed on.
    pub path: Path,
    /// Squares of the pieces taken, in jump order; absent for a quiet move.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<String>,
    /// A Space Mode thruster boost (spent one charge); absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub boost: bool,
    /// Space Mode wormhole jumps, as [entrance, exit], in order; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teleports: Vec<[String; 2]>,
    /// The square the piece ends on, when it is not the path's last square (a wormhole
    /// moved it); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Whether the move crowned the piece; absent when not.
    #[serde(default, skip_serializing_if = "is_false")]
    pub crowned: bool,
    /// The side to move now (or that was to move when the game ended).
    pub turn: Color,
    /// Half-moves played this round, this move included (and any pass it forced).
    pub ply: u32,
    /// Unix milliseconds at which the side to move loses on time; 0 if the move ended
    /// the game.
    pub deadline: u64,
    /// Milliseconds the side to move has; 0 if the move ended the game.
    pub remaining_ms: u32,
    /// The new legal moves' paths (boosted ones excepted); empty if the game is over.
    pub legal: Vec<Path>,
    /// By new legal move (same order and length as `legal`): the squares it takes;
    /// absent when none takes anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_captures: Vec<Vec<String>>,
    /// Space Mode, by new legal move (same order and length as `legal`): its wormhole
    /// jumps; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_teleports: Vec<Vec<[String; 2]>>,
    /// Space Mode: the new legal boosted moves' paths; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_boosts: Vec<Path>,
    /// Space Mode, by new boosted move (same order and length as `legal_boosts`): its
    /// wormhole jumps; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legal_boost_teleports: Vec<Vec<[String; 2]>>,
    /// Squares of the pieces that must capture; absent when no capture is compulsory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_capture: Vec<String>,
    /// The side whose draw offer stands after the move; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_offer: Option<Color>,
    /// The side whose offer was declined, after the move; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_declined: Option<Color>,
    /// Space Mode: thruster charges left, when changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boosts: Option<Boosts>,
    /// Space Mode: the wormholes' squares, when they moved (they relocate after
    /// every Light move once both sides have moved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wormholes: Option<[String; 2]>,
    /// Orbit: the points each side would score now, when changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Points>,
    /// How the game ended, when this move ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<GameResult>,
    /// What else the move changed in the room (the series score and phase when it ended
    /// a game, a correspondence lobby's expiry…); absent when nothing.
    #[serde(
        default,
        skip_serializing_if = "RoomChanges::is_empty",
        deserialize_with = "map_only::deserialize"
    )]
    pub room: RoomChanges,
}

/// A change that is not a move, as every member receives it: the room's next version.
///
/// `room` replaces whole top-level fields of the snapshot, `game` small fields of its
/// game in place. A field absent from either keeps its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Changed {
    /// The room version this change made.
    pub version: u64,
    /// Top-level fields that changed; absent when none did.
    #[serde(
        default,
        skip_serializing_if = "RoomChanges::is_empty",
        deserialize_with = "map_only::deserialize"
    )]
    pub room: RoomChanges,
    /// Fields of the game that changed in place; absent when none did.
    #[serde(
        default,
        skip_serializing_if = "GameChanges::is_empty",
        deserialize_with = "map_only::deserialize"
    )]
    pub game: GameChanges,
}

/// New values of a [`RoomSnapshot`]'s top-level fields; an absent field is unchanged.
/// For a field that may be absent from the snapshot, `null` here removes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RoomChanges {
    /// The host's identity id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Both seats in full, when someone sat down, left or was re-ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub players: Option<Vec<Option<PlayerView>>>,
    /// By seat: `players[i].connected`, when only that changed (an empty seat's entry is
    /// `false` and ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected: Option<Vec<bool>>,
    /// The seated accounts' head-to-head record; `null`: none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<HeadToHead>"))]
    pub head_to_head: Option<Option<HeadToHead>>,
    /// How many connections are watching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spectators: Option<u32>,
    /// Where the room is in its life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The series score, in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<SeriesView>,
    /// A correspondence lobby's expiry; `null`: none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub expires_at: Option<Option<u64>>,
    /// A whole new game (a round started); `null`: no game.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Box<GameSnapshot>>"))]
    pub game: Option<Option<Box<GameSnapshot>>>,
    /// The board geometry shown while there is no game; `null`: none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<BoardGeometry>"))]
    pub board: Option<Option<BoardGeometry>>,
    /// When the break ends; `null`: no break.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub break_ends_at: Option<Option<u64>>,
    /// By seat: asked to start the next round now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_round: Option<Vec<bool>>,
    /// By seat: called (or accepted) a rematch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rematch: Option<Vec<bool>>,
}

/// New values of small fields of the room's [`GameSnapshot`], changed in place (an
/// offer, a declined offer, a game ended by resignation, time or agreement); an absent
/// field is unchanged, `null` removes an optional one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GameChanges {
    /// Unix milliseconds at which the side to move loses on time (0: game over).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// Milliseconds the side to move has (0: game over).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_ms: Option<u32>,
    /// The legal moves' paths (emptied when the game ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal: Option<Vec<Path>>,
    /// By legal move (same order and length as the game's `legal`): the squares it
    /// takes (empty list: none takes anything). Sent whenever it changes, so an absent
    /// list still lines up with a new `legal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_captures: Option<Vec<Vec<String>>>,
    /// Space Mode, by legal move (same order and length as the game's `legal`): its
    /// wormhole jumps (empty list: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_teleports: Option<Vec<Vec<[String; 2]>>>,
    /// Space Mode: the legal boosted moves' paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_boosts: Option<Vec<Path>>,
    /// Space Mode, by boosted move (same order and length as the game's
    /// `legal_boosts`): its wormhole jumps (empty list: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_boost_teleports: Option<Vec<Vec<[String; 2]>>>,
    /// Squares of the pieces that must capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_capture: Option<Vec<String>>,
    /// The side whose draw offer stands; `null`: none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Color>"))]
    pub draw_offer: Option<Option<Color>>,
    /// The side whose offer was just declined; `null`: none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Color>"))]
    pub draw_declined: Option<Option<Color>>,
    /// How the game ended; `null`: not over.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<GameResult>"))]
    pub result: Option<Option<GameResult>>,
    /// Orbit: the points each side would score now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Points>,
}

impl RoomChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == RoomChanges::default()
    }
}

impl GameChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        *self == GameChanges::default()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Moved {
    /// The move as a [`MoveView`], as `last_move` holds it.
    pub fn played(&self) -> MoveView {
        MoveView {
            notation: self.notation.clone(),
            path: self.path.clone(),
            captures: self.captures.clone(),
            boost: self.boost,
            teleports: self.teleports.clone(),
        }
    }

    /// The square the piece ends on.
    pub fn to(&self) -> Option<&str> {
        self.to.as_deref().or(self.path.last().map(String::as_str))
    }
}

/// Reads a struct whose fields are all optional from a map only: serde's derived code
/// would also read one from a list of its fields in order, and an empty list would then
/// pass for "no changes", which JSON Schema (and `PROTOCOL.md`) says is not a message.
mod map_only {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        struct MapOnly<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for MapOnly<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }

        deserializer.deserialize_map(MapOnly(PhantomData))
    }
}

/// Reads a field that may be absent (unchanged), `null` (removed) or a value.
mod nullable {
    use serde::{Deserialize, Deserializer};

    /// Called only when the field is present, so `null` becomes `Some(None)`; an absent
    /// field takes the `Default` (`None`).
    pub fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

impl From<crate::room::RoomState> for RoomSnapshot {
    /// The protocol 2 form of a v1 `state`: the same room, with a compact game.
    fn from(state: crate::room::RoomState) -> RoomSnapshot {
        RoomSnapshot {
            version: state.version,
            code: state.code,
            rule_set: state.rule_set,
            series_length: state.series_length,
            invite_only: state.invite_only,
            pace: state.pace,
            expires_at: state.expires_at,
            draw_rules: state.draw_rules,
            stake: state.stake,
            invite: state.invite,
            invite_link: state.invite_link,
            host: state.host,
            players: state.players,
            head_to_head: state.head_to_head,
            spectators: state.spectators,
            phase: state.phase,
            series: state.series,
            game: state.game.map(GameSnapshot::from),
            board: state.board,
            break_ends_at: state.break_ends_at,
            next_round: state.next_round,
            rematch: state.rematch,
        }
    }
}

impl From<crate::game::GameView> for GameSnapshot {
    /// The compact form of a v1 game view: no FEN, legal moves as paths.
    fn from(game: crate::game::GameView) -> GameSnapshot {
        let legal = CompactLegal::from_moves(game.legal_moves);
        GameSnapshot {
            dark_seat: game.dark_seat,
            pieces: game.pieces,
            turn: game.turn,
            ply: game.ply,
            moves: game.moves,
            last_move: game.last_move,
            legal: legal.legal,
            legal_captures: legal.legal_captures,
            legal_teleports: legal.legal_teleports,
            legal_boosts: legal.legal_boosts,
            legal_boost_teleports: legal.legal_boost_teleports,
            must_capture: game.must_capture,
            deadline: game.deadline,
            remaining_ms: game.remaining_ms,
            draw_offer: game.draw_offer,
            draw_declined: game.draw_declined,
            result: game.result,
            board: game.board,
            space: game.space,
            points: game.points,
        }
    }
}

/// Legal moves in protocol 2's compact form, as the fields of the same names in
/// [`GameSnapshot`], [`Moved`] and [`GameChanges`] hold them: each move's path, and
/// beside the paths, by move, what it takes and where wormholes carry it, left empty
/// when no move in the list takes anything or enters a wormhole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactLegal {
    /// Paths of the moves that are not boosts.
    pub legal: Vec<Path>,
    /// By move of `legal`: the squares it takes; empty when none takes anything.
    pub legal_captures: Vec<Vec<String>>,
    /// By move of `legal`: its wormhole jumps; empty when none enters a wormhole.
    pub legal_teleports: Vec<Vec<[String; 2]>>,
    /// Paths of the thruster boosts.
    pub legal_boosts: Vec<Path>,
    /// By move of `legal_boosts`: its wormhole jumps; empty when none.
    pub legal_boost_teleports: Vec<Vec<[String; 2]>>,
}

impl CompactLegal {
    /// The compact form of a list of legal moves, in their order.
    pub fn from_moves(moves: impl IntoIterator<Item = MoveView>) -> CompactLegal {
        let mut legal = CompactLegal::default();
        for m in moves {
            if m.boost {
                legal.legal_boosts.push(m.path);
                legal.legal_boost_teleports.push(m.teleports);
            } else {
                legal.legal.push(m.path);
                legal.legal_captures.push(m.captures);
                legal.legal_teleports.push(m.teleports);
            }
        }
        clear_if_all_empty(&mut legal.legal_captures);
        clear_if_all_empty(&mut legal.legal_teleports);
        clear_if_all_empty(&mut legal.legal_boost_teleports);
        legal
    }
}

fn clear_if_all_empty<T>(lists: &mut Vec<Vec<T>>) {
    if lists.iter().all(Vec::is_empty) {
        lists.clear();
    }
}
