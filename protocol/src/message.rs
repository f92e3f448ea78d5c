//! The two closed sets of messages: what a client may send and what the server sends.

use serde::{Deserialize, Serialize};

use crate::error_code::ErrorCode;
use crate::game::RuleSet;
use crate::room::{DrawRules, LobbySummary, MyGame, Pace, RoomState};

fn default_series_length() -> u8 {
    1
}

/// A message from a client to the server.
///
/// Every variant carries `seq`, a number the client picks (counting up) so it can match
/// the server's `ack` or `error` to the message. On the wire each message is a map whose
/// `type` entry names the variant in snake_case; fields the server does not know are
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// The first message on every connection: protocol version and, to resume an
    /// identity, its token.
    Hello {
        /// This message's number, counting up and carried on across connections; an
        /// `error` refusing the `hello` carries it back (`welcome` does not).
        seq: u32,
        /// The protocol version the client speaks: the one its subprotocol names (1 on
        /// `jumpgate.v1.*`, 2 on `jumpgate.v2.*`).
        protocol: u32,
        /// The token from an earlier `welcome`; absent to start as a new guest.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
        /// The client's name and version, for the server's logs, e.g. "jumpgate-web/0.3".
        client: String,
        /// A guest's chosen display name, normalised by the server; ignored for an
        /// account. Absent: the name the token carries (or a made-up one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Create a lobby and sit in seat 0 as its host.
    CreateLobby {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
        #[serde(default)]
        /// The rules every game is played by; absent: `american`.
        rule_set: RuleSet,
        /// 1, 3, 5 or 7: the rounds of the series (absent: 1). A series that keeps
        /// drawing ends after twice as many (`series.max_rounds`).
        #[serde(default = "default_series_length")]
        series_length: u8,
        #[serde(default)]
        /// Whether joining and watching need the invite; absent: false.
        invite_only: bool,
        /// Bold Points each player stakes, 10 to 1,000; absent or 0 for a
        /// free lobby. Staked lobbies need an account.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stake: Option<u32>,
        /// How fast the lobby is played; absent: `live` (the move clock).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pace: Option<Pace>,
        /// Which draw rules the lobby's games are judged by; absent: `standard`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        draw_rules: Option<DrawRules>,
    },
    /// Take the free seat of a lobby.
    JoinLobby {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
        /// The lobby's code (8 characters; any case).
        code: String,
        /// Needed for an invite-only lobby.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        invite: Option<String>,
    },
    /// Watch a lobby as a spectator.
    Watch {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
        /// The lobby's code (8 characters; any case).
        code: String,
        /// Needed for an invite-only lobby.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        invite: Option<String>,
    },
    /// Leave the lobby; mid-series this concedes the series.
    Leave {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Play a move, given as exactly one of `notation` or `path`.
    Move {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
        /// The move in the rule set's notation, e.g. "11-15".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        notation: Option<String>,
        /// The start square and every landing square, e.g. ["c3", "e5", "g7"].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<Vec<String>>,
    },
    /// Offer a draw, on your own turn.
    OfferDraw {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Accept the opponent's standing draw offer.
    AcceptDraw {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Decline the opponent's standing draw offer.
    DeclineDraw {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Resign, conceding the whole series.
    Resign {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Ask to end the break between rounds early.
    NextRound {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Call a rematch, or accept the one the opponent called.
    Rematch {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// End the match for everyone (host only).
    EndMatch {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Protocol 1: ask for a full `state`. Protocol 2: ask for the events after
    /// `since`, the last room version the client holds (or a `snapshot` if the server no
    /// longer has them, or `since` is 0).
    Resync {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
        /// The room version the client holds; 0 when it holds none.
        since: u64,
    },
    /// Keep-alive and round-trip probe; answered by `ack`.
    Ping {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Start a game against the computer, or a same-device game (one
    /// connection plays both sides). Ranked games need an account and the
    /// Executive.
    StartSolo {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
        #[serde(default)]
        /// The rules every game is played by; absent: `american`.
        rule_set: RuleSet,
        #[serde(default)]
        /// Against the computer, or two people on one device; absent: `computer`.
        mode: SoloMode,
        /// The computer's level (computer mode); the Executive if absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<BotLevel>,
        #[serde(default)]
        /// Whether the game counts for the leaderboards (an account and the Executive needed); absent: false.
        ranked: bool,
    },
    /// Take back your last turn and the computer's reply (or, on one
    /// device, the last move). A ranked game becomes practice.
    Undo {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// Come back to your unfinished solo game (after a refresh or restart).
    ResumeSolo {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// In a correspondence lobby: end the game in play as a win for you,
    /// because your opponent, to move, has not moved within the claim window.
    ClaimForfeit {
        /// This request's number, counting up; the `ack` or `error` answering it carries it back.
        seq: u32,
    },
    /// What a lobby is (rule set, pace, series length, stake, host), to show
    /// before `join_lobby`; answered by `lobby_info`. Enters nothing.
    LobbyInfo {
        /// This request's number, counting up; the `lobby_info` or `error` answering it
        /// carries it back.
        seq: u32,
        /// The lobby's code (8 characters; any case).
        code: String,
        /// Needed for an invite-only lobby.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        invite: Option<String>,
    },
    /// The lobbies you hold a seat in and your solo game, where not finished;
    /// answered by `my_games`.
    MyGames {
        /// This request's number, counting up; the `my_games` or `error` answering it
        /// carries it back.
        seq: u32,
    },
}

impl ClientMessage {
    /// Every `type` a client message can have, in declaration order.
    pub const TYPES: &'static [&'static str] = &[
        "hello",
        "create_lobby",
        "join_lobby",
        "watch",
        "leave",
        "move",
        "offer_draw",
        "accept_draw",
        "decline_draw",
        "resign",
        "next_round",
        "rematch",
        "end_match",
        "resync",
        "ping",
        "start_solo",
        "undo",
        "resume_solo",
        "claim_forfeit",
        "lobby_info",
        "my_games",
    ];

    /// The client's sequence number for this message.
    pub fn seq(&self) -> u32 {
        match self {
            ClientMessage::Hello { seq, .. }
            | ClientMessage::CreateLobby { seq, .. }
            | ClientMessage::JoinLobby { seq, .. }
            | ClientMessage::Watch { seq, .. }
            | ClientMessage::Leave { seq }
            | ClientMessage::Move { seq, .. }
            | ClientMessage::OfferDraw { seq }
            | ClientMessage::AcceptDraw { seq }
            | ClientMessage::DeclineDraw { seq }
            | ClientMessage::Resign { seq }
            | ClientMessage::NextRound { seq }
            | ClientMessage::Rematch { seq }
            | ClientMessage::EndMatch { seq }
            | ClientMessage::Resync { seq, .. }
            | ClientMessage::Ping { seq }
            | ClientMessage::StartSolo { seq, .. }
            | ClientMessage::Undo { seq }
            | ClientMessage::ResumeSolo { seq }
            | ClientMessage::ClaimForfeit { seq }
            | ClientMessage::LobbyInfo { seq, .. }
            | ClientMessage::MyGames { seq } => *seq,
        }
    }

    /// The message's `type` on the wire, e.g. "create_lobby"; handy as a metrics label.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientMessage::Hello { .. } => "hello",
            ClientMessage::CreateLobby { .. } => "create_lobby",
            ClientMessage::JoinLobby { .. } => "join_lobby",
            ClientMessage::Watch { .. } => "watch",
            ClientMessage::Leave { .. } => "leave",
            ClientMessage::Move { .. } => "move",
            ClientMessage::OfferDraw { .. } => "offer_draw",
            ClientMessage::AcceptDraw { .. } => "accept_draw",
            ClientMessage::DeclineDraw { .. } => "decline_draw",
            ClientMessage::Resign { .. } => "resign",
            ClientMessage::NextRound { .. } => "next_round",
            ClientMessage::Rematch { .. } => "rematch",
            ClientMessage::EndMatch { .. } => "end_match",
            ClientMessage::Resync { .. } => "resync",
            ClientMessage::Ping { .. } => "ping",
            ClientMessage::StartSolo { .. } => "start_solo",
            ClientMessage::Undo { .. } => "undo",
            ClientMessage::ResumeSolo { .. } => "resume_solo",
            ClientMessage::ClaimForfeit { .. } => "claim_forfeit",
            ClientMessage::LobbyInfo { .. } => "lobby_info",
            ClientMessage::MyGames { .. } => "my_games",
        }
    }
}

/// Who the server knows a connection as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Identity {
    /// Stable id; the same on every connection that presents this identity's token.
    pub id: String,
    /// Display name shown to other players.
    pub name: String,
    /// Whether this is a guest identity the server made up at `hello`.
    pub guest: bool,
}

/// A message from the server to a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(
    clippy::large_enum_variant,
    reason = "states are the bulk of server traffic; boxing them would cost an allocation \
              each to save a few hundred bytes on the rarer messages"
)]
pub enum ServerMessage {
    /// The answer to a successful `hello`.
    Welcome {
        /// The server's build, for people and logs, e.g. "0.1.0".
        server_version: String,
        /// The protocol versions the server speaks.
        protocols: Vec<u32>,
        /// Who this connection is.
        identity: Identity,
        /// Present it in a later `hello` to be the same identity again.
        token: String,
        /// Whether this server accepts account tokens (signing in); `false`:
        /// guests only, so nothing that needs an account can be offered.
        /// Absent from servers before it: read as `false`.
        #[serde(default)]
        accounts: bool,
    },
    /// The message with this `seq` was accepted.
    Ack {
        /// The accepted message's `seq`.
        seq: u32,
    },
    /// A message was refused, or something went wrong.
    Error {
        /// The refused message's `seq`, when it could be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u32>,
        /// The stable code to branch on (PROTOCOL.md section 15).
        code: ErrorCode,
        /// A sentence for people; clients branch on `code`, not on this.
        message: String,
    },
    /// A full snapshot of the room; its fields sit beside `type`.
    State(RoomState),
    /// This connection is no longer in the lobby with this code.
    Left {
        /// The lobby's code.
        code: String,
    },
    /// The server is about to restart; reconnect after the delay.
    Shutdown {
        /// Why, for people (e.g. a restart for an update).
        reason: String,
        /// Milliseconds to wait before reconnecting.
        reconnect_after_ms: u32,
    },
    /// The full state of your solo game, after every change.
    SoloState(SoloState),
    /// The answer to `lobby_info`: what the lobby is, before joining it.
    LobbyInfo {
        /// The `seq` of the `lobby_info` this answers.
        seq: u32,
        /// The lobby.
        lobby: LobbySummary,
    },
    /// The answer to `my_games`: your unfinished lobbies and solo game.
    MyGames {
        /// The `seq` of the `my_games` this answers.
        seq: u32,
        /// Each unfinished lobby and solo game.
        games: Vec<MyGame>,
    },
    /// Protocol 2 only, in place of `state`: the whole room; its fields sit beside
    /// `type`.
    Snapshot(crate::v2::RoomSnapshot),
    /// Protocol 2 only: a move was played (the room's next version).
    Moved(crate::v2::Moved),
    /// Protocol 2 only: something other than a move changed (the room's next version).
    Changed(crate::v2::Changed),
}

impl ServerMessage {
    /// Every `type` a server message can have, in declaration order.
    pub const TYPES: &'static [&'static str] = &[
        "welcome",
        "ack",
        "error",
        "state",
        "left",
        "shutdown",
        "solo_state",
        "lobby_info",
        "my_games",
        "snapshot",
        "moved",
        "changed",
    ];

    /// The message's `type` on the wire, e.g. "state"; handy as a metrics label.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerMessage::Welcome { .. } => "welcome",
            ServerMessage::Ack { .. } => "ack",
            ServerMessage::Error { .. } => "error",
            ServerMessage::State(_) => "state",
            ServerMessage::Left { .. } => "left",
            ServerMessage::Shutdown { .. } => "shutdown",
            ServerMessage::SoloState(_) => "solo_state",
            ServerMessage::LobbyInfo { .. } => "lobby_info",
            ServerMessage::MyGames { .. } => "my_games",
            ServerMessage::Snapshot(_) => "snapshot",
            ServerMessage::Moved(_) => "moved",
            ServerMessage::Changed(_) => "changed",
        }
    }

    /// An `error` answering the message with sequence number `seq`.
    pub fn error(seq: Option<u32>, code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMessage::Error {
            seq,
            code,
            message: message.into(),
        }
    }
}

/// Who plays a solo game.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SoloMode {
    /// You against the computer.
    #[default]
    Computer,
    /// Two people on one device; always practice.
    SameDevice,
}

wire_names!(SoloMode {
    Computer => "computer",
    SameDevice => "same_device",
});

/// The computer's strength, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BotLevel {
    /// The weakest: a shallow search that often picks a weaker move on purpose.
    Tamer,
    /// A little deeper, still making deliberate slips.
    Driver,
    /// A search within a fixed node budget.
    Warden,
    /// The strongest: a timed search with an opening book and endgame knowledge.
    Executive,
}

wire_names!(BotLevel {
    Tamer => "tamer",
    Driver => "driver",
    Warden => "warden",
    Executive => "executive",
});

/// A solo game as the player sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SoloState {
    /// Rises with every change.
    pub version: u64,
    /// The game's id.
    pub id: String,
    /// The rules of the game.
    pub rule_set: RuleSet,
    /// Against the computer, or two people on one device.
    pub mode: SoloMode,
    /// The computer's level; absent on one device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<BotLevel>,
    /// Still counts for the leaderboard (false once undo was used, and for
    /// practice games).
    pub ranked: bool,
    /// The side you play against the computer; absent on one device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub you: Option<crate::Color>,
    /// The computer is choosing its move.
    pub thinking: bool,
    /// While `thinking`: where the computer's search stands among the searches the
    /// server has to do. Absent when the computer is not to move, or when the server
    /// cannot tell (then show only that it is thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<SearchQueuePlace>,
    /// The board, legal moves and result. There is no clock: `deadline` and
    /// `remaining_ms` are 0.
    pub game: crate::GameView,
}

/// Where a solo game's computer move stands in the server's queue of searches
/// (`solo_state.queue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchQueuePlace {
    /// The searches this one waits for: those queued before it and, until it
    /// starts, those running; 0 once it is running.
    pub ahead: u32,
    /// The server's estimate, in milliseconds from when this message was sent, of how
    /// long until the computer's move arrives; 0 when it cannot say.
    pub expected_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::{BotLevel, SoloMode};

    #[test]
    fn names_match_serde() {
        for mode in SoloMode::ALL {
            let json = serde_json::to_string(mode).unwrap();
            assert_eq!(json, format!("\"{mode}\""));
            assert_eq!(serde_json::from_str::<SoloMode>(&json).unwrap(), *mode);
        }
        for level in BotLevel::ALL {
            let json = serde_json::to_string(level).unwrap();
            assert_eq!(json, format!("\"{level}\""));
            assert_eq!(serde_json::from_str::<BotLevel>(&json).unwrap(), *level);
        }
    }
}
