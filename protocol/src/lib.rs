//! Jumpgate protocols 1 and 2: the wire messages, their two encodings and an optional
//! client.
//!
//! This crate is the only place that knows how Jumpgate talks on the wire. The server,
//! the load tester and the end-to-end tests all build [`ClientMessage`] and
//! [`ServerMessage`] values and hand them to [`codec`]; none of them touches JSON or
//! MessagePack directly. `PROTOCOL.md` at the repository root describes the same
//! protocol for people writing clients in other languages.
//!
//! A connection's WebSocket subprotocol ([`Subprotocol`]) fixes its encoding and its
//! protocol version. Protocol 2 shares every message with protocol 1 but replaces the
//! room's `state` with a `snapshot` followed by small versioned events; [`v2`] holds
//! those types and [`v2::RoomView`], which applies the events.
//!
//! The `client` cargo feature adds [`client::Client`], a small async WebSocket client
//! for one connection, and [`reconnect::ReconnectingClient`], which wraps it and
//! reconnects by itself: it re-enters its room and re-sends unanswered requests after a
//! dropped connection, a server restart or the room moving to another server instance.
//!
//! The `schema` cargo feature adds [`schema`], the JSON Schemas of both message sets,
//! generated from these types; `protocol/schema/` holds them for other languages.

/// Gives a fieldless wire enum its wire names: an `ALL` list, `as_str`, `Display`, and a
/// `Deserialize` that accepts exactly those strings.
///
/// serde's derived `Deserialize` would also take a variant's index (an integer) or the
/// externally tagged map form (`{"spanish":null}`), which MessagePack lets through; the
/// protocol allows only the name, in both encodings. `Serialize` stays derived; the
/// names must match what it writes, and `tests` in each module check that they do, so a
/// renamed variant cannot silently drift from its string.
macro_rules! wire_names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The value's name on the wire, in both encodings.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>
            where
                D: ::serde::Deserializer<'de>,
            {
                struct WireName;

                impl ::serde::de::Visitor<'_> for WireName {
                    type Value = $ty;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($ty), " name (a string)"))
                    }

                    // Only strings: the visitor's other methods refuse by default.
                    fn visit_str<E: ::serde::de::Error>(self, name: &str) -> Result<$ty, E> {
                        match name {
                            $($name => Ok($ty::$variant),)+
                            _ => Err(E::unknown_variant(name, &[$($name),+])),
                        }
                    }
                }

                deserializer.deserialize_str(WireName)
            }
        }
    };
}

#[cfg(feature = "client")]
pub mod client;
pub mod codec;
mod error_code;
mod game;
mod message;
mod outline;
#[cfg(feature = "client")]
pub mod reconnect;
mod room;
#[cfg(feature = "schema")]
pub mod schema;
#[cfg(feature = "client")]
pub mod session;
pub mod v2;

pub use codec::{
    DecodeError, EncodeError, Encoding, Frame, FrameKind, ProtocolVersion, Subprotocol,
};
pub use error_code::ErrorCode;
pub use game::{
    BoardGeometry, Boosts, Color, GameEndReason, GameResult, GameView, MoveView, PieceView, Points,
    RuleSet, SpaceView, SquareGeometry,
};
pub use message::{BotLevel, ClientMessage, Identity, ServerMessage, SoloMode, SoloState};
pub use room::{
    DrawRules, GameKind, HeadToHead, LobbySummary, MyGame, Pace, Phase, PlayerView, RecordView,
    RoomState, SeriesEndReason, SeriesResult, SeriesView,
};

/// Protocol 1's number, sent in `hello` on a `jumpgate.v1.*` connection.
pub const PROTOCOL_VERSION: u32 = 1;

/// Every protocol version this crate speaks, as `welcome.protocols` lists them.
pub const PROTOCOL_VERSIONS: [u32; 2] = [1, 2];

/// The largest message, in bytes of frame payload, either side may send.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Close code (in the range RFC 6455 leaves to applications) with which the server
/// closes a connection whose lobby or solo game moved to another server instance: not
/// the client's fault; reconnect at once, naming the room (`/ws?room=CODE`), and re-enter.
pub const CLOSE_ROOM_MOVED: u16 = 4001;

/// The series lengths a lobby may be created with (`create_lobby.series_length`).
pub const SERIES_LENGTHS: [u8; 4] = [1, 3, 5, 7];
