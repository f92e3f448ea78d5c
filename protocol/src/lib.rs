//! Jumpgate protocols 1 and 2: the wire messages, their two encodings, and a client SDK.
//!
//! This crate is the only place that knows how Jumpgate talks on the wire. The server,
//! the load tester and the end-to-end tests all build [`ClientMessage`] and
//! [`ServerMessage`] values and hand them to [`codec`]; none of them touches JSON or
//! MessagePack directly. `PROTOCOL.md` at the repository root describes the same
//! protocol for people writing clients in other languages.
//!
//! ```
//! use jumpgate_protocol::codec::{self, Encoding, Frame};
//! use jumpgate_protocol::{ClientMessage, ServerMessage};
//!
//! // What a client sends first, in JSON…
//! let hello = ClientMessage::Hello {
//!     seq: 1,
//!     protocol: 1,
//!     token: None,
//!     client: "my-bot/0.1".into(),
//!     name: None,
//! };
//! let Frame::Text(json) = codec::encode_client(Encoding::Json, &hello) else {
//!     unreachable!("JSON goes in text frames")
//! };
//! assert_eq!(json, r#"{"type":"hello","seq":1,"protocol":1,"client":"my-bot/0.1"}"#);
//!
//! // …and how an answer is read, in MessagePack.
//! let ack = ServerMessage::Ack { seq: 1 };
//! let frame = codec::encode_server(Encoding::MsgPack, &ack);
//! assert_eq!(codec::decode_server(Encoding::MsgPack, frame.as_bytes()).unwrap(), ack);
//! ```
//!
//! A connection's WebSocket subprotocol ([`Subprotocol`]) fixes its encoding and its
//! protocol version. Protocol 2 shares every message with protocol 1 but replaces the
//! room's `state` with a `snapshot` followed by small versioned events; [`v2`] holds
//! those types and [`v2::RoomView`], which applies the events:
//!
//! ```
//! use jumpgate_protocol::codec::{self, Encoding};
//! use jumpgate_protocol::v2::{Gap, RoomView, Update};
//! use jumpgate_protocol::ServerMessage;
//!
//! let read = |json: &str| codec::decode_server(Encoding::Json, json.as_bytes()).unwrap();
//! let snapshot = read(include_str!("../tests/vectors/server_v2_snapshot_playing.json"));
//! let mut view = RoomView::new();
//! assert_eq!(view.apply(&snapshot), Ok(Update::Replaced));
//! assert_eq!(view.version(), Some(42));
//!
//! // Version 43 changes who is connected…
//! let changed = read(r#"{"type":"changed","version":43,"room":{"connected":[true,false]}}"#);
//! assert_eq!(view.apply(&changed), Ok(Update::Applied));
//! let guest = view.room().unwrap().players[1].as_ref().unwrap();
//! assert!(!guest.connected);
//!
//! // …and an event for version 45 means 44 was missed: ask `resync { since: 43 }`.
//! let late = read(r#"{"type":"changed","version":45,"room":{"spectators":4}}"#);
//! let gap = view.apply(&late).unwrap_err();
//! assert_eq!(gap, Gap::Missed { have: 43, got: 45 });
//! assert_eq!(gap.since(), 43);
//! ```
//!
//! The `client` cargo feature adds the SDK: [`session::Session`], which greets, matches
//! answers to requests, keeps the room (or solo game) current and reconnects by itself;
//! [`reconnect::ReconnectingClient`], the reconnecting connection it is built on (it
//! re-enters its room and re-sends unanswered requests after a dropped connection, a
//! server restart or the room moving to another server instance); and
//! [`client::Client`], one plain WebSocket connection. The crate's README shows a whole
//! client, and `protocol/examples/` holds runnable ones.
//!
//! The `schema` cargo feature adds the `schema` module, the JSON Schemas of both message sets,
//! generated from these types; `protocol/schema/` holds them for other languages.

// Every public item is documented, the wire types' fields included: their docs are
// also the JSON Schemas' descriptions.
#![warn(missing_docs)]

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
pub use message::{
    BotLevel, ClientMessage, Identity, SearchQueuePlace, ServerMessage, SoloMode, SoloState,
};
pub use room::{
    DrawRules, GameKind, HeadToHead, LobbySummary, MyGame, Pace, Phase, PlayerView, RecordView,
    RoomState, SeriesEndReason, SeriesResult, SeriesView,
};

// The README's examples are compiled (and the runnable ones run) as doctests.
#[cfg(all(doctest, feature = "client"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

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
