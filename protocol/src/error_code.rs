//! The stable error codes carried by `error` messages.

use serde::Serialize;

/// Why the server refused a message or could not serve it.
///
/// Codes are stable within protocol v1; clients branch on them, while the `message`
/// that comes with them is for people. `PROTOCOL.md` says when each one is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The frame could not be decoded into a message (bad bytes, wrong frame kind,
    /// missing or mistyped field, unknown enum value).
    MalformedMessage,
    /// The message decoded far enough to show a `type` the server does not know.
    UnknownMessageType,
    /// The frame was larger than [`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES).
    MessageTooLarge,
    /// `hello` asked for a protocol version the server does not speak.
    UnsupportedVersion,
    /// Something other than `hello` arrived before `welcome`.
    HelloRequired,
    /// A second `hello` arrived on a connection that already has a `welcome`.
    AlreadyGreeted,
    /// The token in `hello` is unknown, expired or forged.
    InvalidToken,
    /// A field holds a value the server does not accept (say, a series length of 4).
    InvalidOptions,
    /// No lobby has that code.
    UnknownLobby,
    /// Both seats of the lobby are taken.
    LobbyFull,
    /// The lobby is invite-only and the invite was missing or wrong.
    InviteRequired,
    /// The connection is already in a lobby, as a player or a spectator.
    AlreadyInLobby,
    /// The action needs a lobby and the connection is in none.
    NotInLobby,
    /// Spectators may only watch and leave.
    SpectatorsCannotAct,
    /// The action is only allowed on your own turn.
    NotYourTurn,
    /// The move is not legal, cannot be parsed, or is ambiguous.
    IllegalMove,
    /// The action needs a game being played and none is.
    NoGameInProgress,
    /// There is no draw offer from the opponent to accept or decline.
    NoDrawOffer,
    /// A draw offer already stands in this game.
    DrawAlreadyOffered,
    /// Only the lobby's host may do this.
    NotHost,
    /// The action is not valid in the room's current phase.
    NotNow,
    /// The client sent too many messages too quickly; the message was dropped.
    RateLimited,
    /// The server's storage is unreachable; the same message may succeed if retried.
    StorageUnavailable,
    /// The server failed in a way that is not the client's fault.
    InternalError,
    /// Staked (or ranked) play needs an account token; guests cannot.
    AccountRequired,
    /// A player cannot cover the lobby's stake; nothing was taken.
    InsufficientFunds,
    /// The lobby or solo game is being handed over between server instances (or its
    /// previous instance has not yet been declared gone); the same message may succeed
    /// if retried shortly, on a new connection that names the room.
    RoomUnavailable,
    /// `hello` named an identity that already has as many connections open as the
    /// server allows; the connection is closed (1008). Close another one first.
    TooManyConnections,
    /// `claim_forfeit` came before the claim window ran out; the message says how long is
    /// left, and `state.game.deadline` says when it runs out.
    ClaimTooEarly,
    /// `start_solo` against the computer while the server's searches are so far behind
    /// that the computer's moves would keep the player waiting past the server's bound
    /// (or no computer is available at all); nothing was started. Retryable: the
    /// `message` says roughly when to try again.
    ComputerBusy,
}

wire_names!(ErrorCode {
    MalformedMessage => "malformed_message",
    UnknownMessageType => "unknown_message_type",
    MessageTooLarge => "message_too_large",
    UnsupportedVersion => "unsupported_version",
    HelloRequired => "hello_required",
    AlreadyGreeted => "already_greeted",
    InvalidToken => "invalid_token",
    InvalidOptions => "invalid_options",
    UnknownLobby => "unknown_lobby",
    LobbyFull => "lobby_full",
    InviteRequired => "invite_required",
    AlreadyInLobby => "already_in_lobby",
    NotInLobby => "not_in_lobby",
    SpectatorsCannotAct => "spectators_cannot_act",
    NotYourTurn => "not_your_turn",
    IllegalMove => "illegal_move",
    NoGameInProgress => "no_game_in_progress",
    NoDrawOffer => "no_draw_offer",
    DrawAlreadyOffered => "draw_already_offered",
    NotHost => "not_host",
    NotNow => "not_now",
    RateLimited => "rate_limited",
    StorageUnavailable => "storage_unavailable",
    InternalError => "internal_error",
    AccountRequired => "account_required",
    InsufficientFunds => "insufficient_funds",
    RoomUnavailable => "room_unavailable",
    TooManyConnections => "too_many_connections",
    ClaimTooEarly => "claim_too_early",
    ComputerBusy => "computer_busy",
});

impl ErrorCode {
    /// Whether sending the same message again later may succeed without changing it.
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::RateLimited
                | ErrorCode::StorageUnavailable
                | ErrorCode::RoomUnavailable
                | ErrorCode::ComputerBusy
        )
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn names_match_serde() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            let back: ErrorCode = serde_json::from_str(&json).unwrap();
            assert_eq!(back, *code);
        }
        assert_eq!(ErrorCode::ALL.len(), 30);
    }
}
