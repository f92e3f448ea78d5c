//! Turning messages into WebSocket frames and back, in either of the two encodings.
//!
//! The WebSocket subprotocol fixes the encoding for the whole connection:
//! MessagePack maps with field names in binary frames, or JSON objects in text frames.
//! Decoding enforces [`MAX_MESSAGE_BYTES`], accepts exactly the same messages in both
//! encodings (a MessagePack message must say only what JSON can: see `PROTOCOL.md`, section 2),
//! tells an unknown `type` apart from other garbage so the server can answer with the
//! right [`ErrorCode`], and keeps the `seq` of a refused message whenever it can be read.

// Over 700 lines: the codec itself is under 500; the rest are its tests
// (what is accepted, defaulted, ignored and refused, in both encodings),
// kept beside the rules they pin.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::MAX_MESSAGE_BYTES;
use crate::error_code::ErrorCode;
use crate::message::{ClientMessage, ServerMessage};
use crate::outline::{self, Outline, TypeEntry};

/// Subprotocol name for protocol 1, MessagePack in binary frames.
pub const SUBPROTOCOL_MSGPACK: &str = "jumpgate.v1.msgpack";
/// Subprotocol name for protocol 1, JSON in text frames.
pub const SUBPROTOCOL_JSON: &str = "jumpgate.v1.json";
/// Subprotocol name for protocol 2, MessagePack in binary frames.
pub const SUBPROTOCOL_V2_MSGPACK: &str = "jumpgate.v2.msgpack";
/// Subprotocol name for protocol 2, JSON in text frames.
pub const SUBPROTOCOL_V2_JSON: &str = "jumpgate.v2.json";

/// Which protocol a connection speaks, fixed by its WebSocket subprotocol.
///
/// Both versions share the codec and every message type; they differ in how a room
/// reaches its members. Protocol 1 sends a full `state` after every change; protocol 2
/// sends a `snapshot` once and then one small versioned event per change (`moved`,
/// `changed`), see [`crate::v2`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// Full `state` messages.
    V1,
    /// `snapshot`, then `moved` and `changed` events.
    V2,
}

impl ProtocolVersion {
    /// Both versions, oldest first.
    pub const ALL: [ProtocolVersion; 2] = [ProtocolVersion::V1, ProtocolVersion::V2];

    /// The number a client sends in `hello.protocol` (and `welcome.protocols` lists).
    pub const fn number(self) -> u32 {
        match self {
            ProtocolVersion::V1 => 1,
            ProtocolVersion::V2 => 2,
        }
    }

    /// The version with this number, if the crate speaks it.
    pub fn from_number(number: u32) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL
            .into_iter()
            .find(|version| version.number() == number)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// What a WebSocket subprotocol fixes for a connection: the protocol version and the
/// encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subprotocol {
    /// Which protocol the connection speaks.
    pub version: ProtocolVersion,
    /// How its messages are written.
    pub encoding: Encoding,
}

impl Subprotocol {
    /// Every subprotocol this crate speaks, newest version first, MessagePack before
    /// JSON: the order a client offers them in when it has no preference.
    pub const ALL: [Subprotocol; 4] = [
        Subprotocol::new(ProtocolVersion::V2, Encoding::MsgPack),
        Subprotocol::new(ProtocolVersion::V2, Encoding::Json),
        Subprotocol::new(ProtocolVersion::V1, Encoding::MsgPack),
        Subprotocol::new(ProtocolVersion::V1, Encoding::Json),
    ];

    /// The subprotocol of `version` in `encoding`.
    pub const fn new(version: ProtocolVersion, encoding: Encoding) -> Subprotocol {
        Subprotocol { version, encoding }
    }

    /// Protocol 1 in `encoding`.
    pub const fn v1(encoding: Encoding) -> Subprotocol {
        Subprotocol::new(ProtocolVersion::V1, encoding)
    }

    /// Protocol 2 in `encoding`.
    pub const fn v2(encoding: Encoding) -> Subprotocol {
        Subprotocol::new(ProtocolVersion::V2, encoding)
    }

    /// The `Sec-WebSocket-Protocol` value, e.g. "jumpgate.v2.msgpack".
    pub const fn name(self) -> &'static str {
        match (self.version, self.encoding) {
            (ProtocolVersion::V1, Encoding::MsgPack) => SUBPROTOCOL_MSGPACK,
            (ProtocolVersion::V1, Encoding::Json) => SUBPROTOCOL_JSON,
            (ProtocolVersion::V2, Encoding::MsgPack) => SUBPROTOCOL_V2_MSGPACK,
            (ProtocolVersion::V2, Encoding::Json) => SUBPROTOCOL_V2_JSON,
        }
    }

    /// The subprotocol a name selects, if it is one of ours (exact match).
    pub fn from_name(name: &str) -> Option<Subprotocol> {
        Subprotocol::ALL
            .into_iter()
            .find(|subprotocol| subprotocol.name() == name)
    }
}

impl From<Encoding> for Subprotocol {
    /// Protocol 1, as before protocol 2 existed.
    fn from(encoding: Encoding) -> Subprotocol {
        Subprotocol::v1(encoding)
    }
}

impl fmt::Display for Subprotocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How messages are written on one connection, chosen by its WebSocket subprotocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// MessagePack, maps keyed by field name, in binary frames.
    MsgPack,
    /// JSON in text frames.
    Json,
}

impl Encoding {
    /// Both encodings.
    pub const ALL: [Encoding; 2] = [Encoding::MsgPack, Encoding::Json];

    /// The `Sec-WebSocket-Protocol` value that selects this encoding in protocol 1
    /// (see [`Subprotocol`] for protocol 2).
    pub const fn subprotocol(self) -> &'static str {
        match self {
            Encoding::MsgPack => SUBPROTOCOL_MSGPACK,
            Encoding::Json => SUBPROTOCOL_JSON,
        }
    }

    /// The encoding a protocol 1 subprotocol name selects, if it is one of ours (exact
    /// match); [`Subprotocol::from_name`] reads both versions.
    pub fn from_subprotocol(name: &str) -> Option<Encoding> {
        Encoding::ALL
            .into_iter()
            .find(|encoding| encoding.subprotocol() == name)
    }

    /// The kind of WebSocket frame that carries messages in this encoding.
    pub const fn frame_kind(self) -> FrameKind {
        match self {
            Encoding::MsgPack => FrameKind::Binary,
            Encoding::Json => FrameKind::Text,
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.subprotocol())
    }
}

/// The two kinds of WebSocket data frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A text frame (UTF-8).
    Text,
    /// A binary frame.
    Binary,
}

impl fmt::Display for FrameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrameKind::Text => "text",
            FrameKind::Binary => "binary",
        })
    }
}

/// The payload of one WebSocket data frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A text frame; what JSON connections carry.
    Text(String),
    /// A binary frame; what MessagePack connections carry.
    Binary(Vec<u8>),
}

impl Frame {
    /// Which kind of frame this is.
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Text(_) => FrameKind::Text,
            Frame::Binary(_) => FrameKind::Binary,
        }
    }

    /// The payload bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Frame::Text(text) => text.as_bytes(),
            Frame::Binary(bytes) => bytes,
        }
    }

    /// The payload length in bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }
}

/// Encoding a value failed; only possible for types the serializer cannot express,
/// never for [`ClientMessage`] or [`ServerMessage`].
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// serde_json refused the value.
    #[error("cannot encode as JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// rmp-serde refused the value.
    #[error("cannot encode as MessagePack: {0}")]
    MsgPack(#[from] rmp_serde::encode::Error),
}

/// Why an incoming frame is not a message.
///
/// [`DecodeError::seq`] and [`DecodeError::code`] are what the `error` answering it
/// carries. The `seq` is there whenever it could be read: the frame was of the right
/// kind and within the size limit, its bytes were a well-formed JSON or MessagePack map,
/// and that map held exactly one `seq`, an integer from 0 to 2^32 − 1. This holds however
/// wrong the rest of the message is, an unreadable or unknown `type` included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The payload is over [`MAX_MESSAGE_BYTES`]; it was not looked at.
    #[error("message of {len} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")]
    TooLarge {
        /// The payload length.
        len: usize,
    },
    /// A text frame on a MessagePack connection or a binary frame on a JSON one.
    #[error("{got} frame on a connection that uses {expected} frames")]
    WrongFrameKind {
        /// The kind the connection's encoding uses.
        expected: FrameKind,
        /// The kind that arrived.
        got: FrameKind,
    },
    /// The payload is not a valid message: bad bytes, not a map, a `type` that is not a
    /// string, a field missing or of the wrong type, an enum value that is not one of its
    /// names, or (in MessagePack) something JSON could not say.
    #[error("malformed message: {detail}")]
    Malformed {
        /// The message's `seq`, if it could be read.
        seq: Option<u32>,
        /// What the parser objected to, at most [`DecodeError::MAX_DETAIL_BYTES`] long.
        detail: String,
    },
    /// The payload is a map whose `type` is a string naming no message this side knows.
    #[error("unknown message type `{kind}`")]
    UnknownType {
        /// The message's `seq`, if it could be read.
        seq: Option<u32>,
        /// The unknown `type` value, cut to [`DecodeError::MAX_KIND_BYTES`].
        kind: String,
    },
}

impl DecodeError {
    /// The longest [`DecodeError::Malformed`] `detail`: parsers quote what they refuse,
    /// and an `error` must not echo a client's 16 KiB back at it.
    pub const MAX_DETAIL_BYTES: usize = 256;
    /// The longest [`DecodeError::UnknownType`] `kind`.
    pub const MAX_KIND_BYTES: usize = 64;

    fn malformed(seq: Option<u32>, detail: impl Into<String>) -> Self {
        DecodeError::Malformed {
            seq,
            detail: excerpt(detail.into(), Self::MAX_DETAIL_BYTES),
        }
    }

    fn unknown_type(seq: Option<u32>, kind: &str) -> Self {
        DecodeError::UnknownType {
            seq,
            kind: excerpt(kind.to_owned(), Self::MAX_KIND_BYTES),
        }
    }

    /// The error code the server answers this with.
    pub fn code(&self) -> ErrorCode {
        match self {
            DecodeError::TooLarge { .. } => ErrorCode::MessageTooLarge,
            DecodeError::WrongFrameKind { .. } | DecodeError::Malformed { .. } => {
                ErrorCode::MalformedMessage
            }
            DecodeError::UnknownType { .. } => ErrorCode::UnknownMessageType,
        }
    }

    /// The offending message's `seq`, when it could be read, to echo in the `error`.
    pub fn seq(&self) -> Option<u32> {
        match self {
            DecodeError::Malformed { seq, .. } | DecodeError::UnknownType { seq, .. } => *seq,
            DecodeError::TooLarge { .. } | DecodeError::WrongFrameKind { .. } => None,
        }
    }
}

/// `text` cut to at most `max` bytes at a character boundary, marked with `…` if cut.
fn excerpt(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Encodes any serializable value as a frame of the given encoding.
pub fn encode<T: Serialize + ?Sized>(encoding: Encoding, value: &T) -> Result<Frame, EncodeError> {
    Ok(match encoding {
        Encoding::MsgPack => Frame::Binary(rmp_serde::to_vec_named(value)?),
        Encoding::Json => Frame::Text(serde_json::to_string(value)?),
    })
}

/// Encodes a message the server sends.
pub fn encode_server(encoding: Encoding, message: &ServerMessage) -> Frame {
    encode(encoding, message).expect("server messages hold only strings, numbers, lists and maps")
}

/// Encodes a message a client sends.
pub fn encode_client(encoding: Encoding, message: &ClientMessage) -> Frame {
    encode(encoding, message).expect("client messages hold only strings, numbers, lists and maps")
}

/// Decodes the payload of a frame from a client, assuming it was of the right kind.
pub fn decode_client(encoding: Encoding, payload: &[u8]) -> Result<ClientMessage, DecodeError> {
    decode_message(encoding, payload, ClientMessage::TYPES, |_, payload| {
        parse_msgpack(payload)
    })
}

/// Decodes the payload of a frame from the server, assuming it was of the right kind.
pub fn decode_server(encoding: Encoding, payload: &[u8]) -> Result<ServerMessage, DecodeError> {
    decode_message(encoding, payload, ServerMessage::TYPES, |kind, payload| {
        // serde decodes an internally tagged enum by first copying the whole message
        // into a tree of its own, then reading the variant from that tree. States are
        // most of a client's traffic and its largest messages; the outline has already
        // read their `type`, so they are decoded straight into their struct, which skips
        // the `type` field like any field it does not know.
        match kind {
            "state" => parse_msgpack(payload).map(ServerMessage::State),
            "snapshot" => parse_msgpack(payload).map(ServerMessage::Snapshot),
            "moved" => parse_msgpack(payload).map(ServerMessage::Moved),
            "solo_state" => parse_msgpack(payload).map(ServerMessage::SoloState),
            _ => parse_msgpack(payload),
        }
    })
}
/// Decodes a frame from a client, first checking it is the kind `encoding` uses.
pub fn decode_client_frame(
    encoding: Encoding,
    kind: FrameKind,
    payload: &[u8],
) -> Result<ClientMessage, DecodeError> {
    check_frame(encoding, kind, payload)?;
    decode_client(encoding, payload)
}

/// Decodes a frame from the server, first checking it is the kind `encoding` uses.
pub fn decode_server_frame(
    encoding: Encoding,
    kind: FrameKind,
    payload: &[u8],
) -> Result<ServerMessage, DecodeError> {
    check_frame(encoding, kind, payload)?;
    decode_server(encoding, payload)
}

fn check_frame(encoding: Encoding, kind: FrameKind, payload: &[u8]) -> Result<(), DecodeError> {
    // Size first: an oversized frame is refused for its size whatever it holds.
    if payload.len() > MAX_MESSAGE_BYTES {
        return Err(DecodeError::TooLarge { len: payload.len() });
    }
    if kind != encoding.frame_kind() {
        return Err(DecodeError::WrongFrameKind {
            expected: encoding.frame_kind(),
            got: kind,
        });
    }
    Ok(())
}

/// Decodes a message whose `type` must be one of `known_types`. `parse_msgpack` decodes
/// a MessagePack message once its outline is known to be sound, given its `type`.
fn decode_message<T: DeserializeOwned>(
    encoding: Encoding,
    payload: &[u8],
    known_types: &[&str],
    parse_msgpack: impl FnOnce(&str, &[u8]) -> Result<T, String>,
) -> Result<T, DecodeError> {
    if payload.len() > MAX_MESSAGE_BYTES {
        return Err(DecodeError::TooLarge { len: payload.len() });
    }
    match encoding {
        // MessagePack reads its outline first, every time: it is one quick pass over the
        // bytes, and serde alone would take what JSON refuses.
        Encoding::MsgPack => {
            let outline =
                outline::msgpack(payload).map_err(|detail| DecodeError::malformed(None, detail))?;
            let kind = known_kind(&outline, known_types)?;
            if let Some(flaw) = outline.flaw {
                return Err(DecodeError::malformed(outline.seq, flaw));
            }
            parse_msgpack(kind, payload)
                .map_err(|detail| DecodeError::malformed(outline.seq, detail))
        }
        // serde_json is already strict about `type`; only a failure pays for the outline.
        Encoding::Json => {
            // serde reads an internally tagged enum from an array too, `type` first.
            if payload.trim_ascii_start().first() != Some(&b'{') {
                return Err(DecodeError::malformed(
                    None,
                    "a message must be a JSON object",
                ));
            }
            serde_json::from_slice(payload).map_err(|err| {
                let Some(outline) = outline::json(payload) else {
                    return DecodeError::malformed(None, err.to_string());
                };
                match known_kind(&outline, known_types) {
                    Ok(_) => DecodeError::malformed(outline.seq, err.to_string()),
                    Err(refusal) => refusal,
                }
            })
        }
    }
}

/// The message's `type` if it is a string naming one of `known_types`; the refusal
/// otherwise.
fn known_kind<'a>(outline: &'a Outline<'_>, known_types: &[&str]) -> Result<&'a str, DecodeError> {
    match &outline.kind {
        TypeEntry::Named(kind) if known_types.contains(&kind.as_ref()) => Ok(kind),
        TypeEntry::Named(kind) => Err(DecodeError::unknown_type(outline.seq, kind)),
        TypeEntry::Missing => Err(DecodeError::malformed(outline.seq, "no `type`")),
        TypeEntry::Unreadable => Err(DecodeError::malformed(
            outline.seq,
            "`type` must be one string",
        )),
    }
}

fn parse_msgpack<T: DeserializeOwned>(payload: &[u8]) -> Result<T, String> {
    // The outline has checked that the payload is exactly one map.
    rmp_serde::from_slice(payload).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::RuleSet;

    fn ping(seq: u32) -> ClientMessage {
        ClientMessage::Ping { seq }
    }

    /// A message with only a `type` and a `seq`, whatever the type.
    #[derive(Serialize)]
    struct TypeAndSeq {
        #[serde(rename = "type")]
        kind: &'static str,
        seq: u32,
    }

    #[test]
    fn subprotocols_round_trip() {
        for encoding in Encoding::ALL {
            assert_eq!(
                Encoding::from_subprotocol(encoding.subprotocol()),
                Some(encoding)
            );
        }
        assert_eq!(Encoding::from_subprotocol("jumpgate.v2.json"), None);
        assert_eq!(Encoding::from_subprotocol(" jumpgate.v1.json"), None);
        for subprotocol in Subprotocol::ALL {
            assert_eq!(
                Subprotocol::from_name(subprotocol.name()),
                Some(subprotocol)
            );
        }
        assert_eq!(
            Subprotocol::from_name("jumpgate.v2.json"),
            Some(Subprotocol::v2(Encoding::Json))
        );
        assert_eq!(Subprotocol::from_name("jumpgate.v3.json"), None);
        for encoding in Encoding::ALL {
            assert_eq!(Subprotocol::from(encoding).name(), encoding.subprotocol());
        }
        for version in ProtocolVersion::ALL {
            assert_eq!(
                ProtocolVersion::from_number(version.number()),
                Some(version)
            );
        }
        assert_eq!(ProtocolVersion::from_number(3), None);
    }

    #[test]
    fn frame_kind_follows_encoding() {
        assert_eq!(
            encode_client(Encoding::Json, &ping(1)).kind(),
            FrameKind::Text
        );
        assert_eq!(
            encode_client(Encoding::MsgPack, &ping(1)).kind(),
            FrameKind::Binary
        );
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let json = br#"{"type":"ping","seq":4,"colour":"blue","nested":{"a":[1,2]}}"#;
        assert_eq!(decode_client(Encoding::Json, json), Ok(ping(4)));

        #[derive(Serialize)]
        struct PingWithExtra {
            #[serde(rename = "type")]
            kind: &'static str,
            extra: Vec<u8>,
            seq: u32,
        }
        let bytes = rmp_serde::to_vec_named(&PingWithExtra {
            kind: "ping",
            extra: vec![1, 2, 3],
            seq: 4,
        })
        .unwrap();
        assert_eq!(decode_client(Encoding::MsgPack, &bytes), Ok(ping(4)));
    }

    #[test]
    fn missing_optional_fields_take_defaults() {
        let json = br#"{"type":"create_lobby","seq":2}"#;
        assert_eq!(
            decode_client(Encoding::Json, json),
            Ok(ClientMessage::CreateLobby {
                seq: 2,
                rule_set: RuleSet::American,
                series_length: 1,
                invite_only: false,
                stake: None,
                pace: None,
                draw_rules: None,
            })
        );
        let json = br#"{"type":"hello","seq":1,"protocol":1,"client":"t"}"#;
        assert_eq!(
            decode_client(Encoding::Json, json),
            Ok(ClientMessage::Hello {
                seq: 1,
                protocol: 1,
                token: None,
                client: "t".into(),
                name: None,
            })
        );
        let json = br#"{"type":"move","seq":9,"path":null}"#;
        assert_eq!(
            decode_client(Encoding::Json, json),
            Ok(ClientMessage::Move {
                seq: 9,
                notation: None,
                path: None,
            })
        );
        let json = br#"{"type":"error","code":"rate_limited","message":"slow down"}"#;
        assert_eq!(
            decode_server(Encoding::Json, json),
            Ok(ServerMessage::error(
                None,
                ErrorCode::RateLimited,
                "slow down"
            ))
        );
    }

    #[test]
    fn absent_options_are_not_written() {
        let frame = encode_client(
            Encoding::Json,
            &ClientMessage::JoinLobby {
                seq: 3,
                code: "ABCD".into(),
                invite: None,
            },
        );
        assert_eq!(
            frame,
            Frame::Text(r#"{"type":"join_lobby","seq":3,"code":"ABCD"}"#.into())
        );
    }

    #[test]
    fn oversized_messages_are_refused_unread() {
        let mut json = br#"{"type":"ping","seq":1,"pad":""#.to_vec();
        json.resize(MAX_MESSAGE_BYTES + 1 - 2, b'x');
        json.extend_from_slice(br#""}"#);
        assert_eq!(json.len(), MAX_MESSAGE_BYTES + 1);
        let err = decode_client(Encoding::Json, &json).unwrap_err();
        assert_eq!(
            err,
            DecodeError::TooLarge {
                len: MAX_MESSAGE_BYTES + 1
            }
        );
        assert_eq!(err.code(), ErrorCode::MessageTooLarge);
        assert_eq!(
            decode_client_frame(Encoding::MsgPack, FrameKind::Text, &json),
            Err(err)
        );

        // Exactly at the limit is still fine.
        json.truncate(MAX_MESSAGE_BYTES - 2);
        json.extend_from_slice(br#""}"#);
        assert_eq!(decode_client(Encoding::Json, &json), Ok(ping(1)));
    }

    #[test]
    fn unknown_types_are_told_apart() {
        let json = br#"{"type":"teleport","seq":7,"to":"h8"}"#;
        let err = decode_client(Encoding::Json, json).unwrap_err();
        assert_eq!(
            err,
            DecodeError::UnknownType {
                seq: Some(7),
                kind: "teleport".into()
            }
        );
        assert_eq!(err.code(), ErrorCode::UnknownMessageType);
        assert_eq!(err.seq(), Some(7));

        let bytes = rmp_serde::to_vec_named(&TypeAndSeq {
            kind: "teleport",
            seq: 8,
        })
        .unwrap();
        let err = decode_client(Encoding::MsgPack, &bytes).unwrap_err();
        assert_eq!(err.code(), ErrorCode::UnknownMessageType);
        assert_eq!(err.seq(), Some(8));

        // A server message type is unknown to the client decoder, and vice versa.
        let welcome_kind = br#"{"type":"welcome","seq":1}"#;
        assert_eq!(
            decode_client(Encoding::Json, welcome_kind)
                .unwrap_err()
                .code(),
            ErrorCode::UnknownMessageType
        );
        let hello_kind = br#"{"type":"hello","seq":1}"#;
        assert_eq!(
            decode_server(Encoding::Json, hello_kind)
                .unwrap_err()
                .code(),
            ErrorCode::UnknownMessageType
        );
    }

    #[test]
    fn malformed_messages_keep_their_seq_when_readable() {
        // Known type, missing field.
        let err = decode_client(Encoding::Json, br#"{"type":"resync","seq":5}"#).unwrap_err();
        assert!(
            matches!(err, DecodeError::Malformed { seq: Some(5), .. }),
            "{err:?}"
        );
        assert_eq!(err.code(), ErrorCode::MalformedMessage);

        // Known type, bad enum value.
        let err = decode_client(
            Encoding::Json,
            br#"{"type":"create_lobby","seq":6,"rule_set":"chess"}"#,
        )
        .unwrap_err();
        assert!(
            matches!(err, DecodeError::Malformed { seq: Some(6), .. }),
            "{err:?}"
        );

        for garbage in [
            &b""[..],
            b"not json",
            b"[]",
            b"42",
            br#"{"seq":1}"#,
            br#"{"type":12,"seq":1}"#,
            br#"{"type":"ping","seq":1} trailing"#,
        ] {
            let err = decode_client(Encoding::Json, garbage).unwrap_err();
            assert_eq!(err.code(), ErrorCode::MalformedMessage, "{garbage:?}");
        }
        for garbage in [&b""[..], b"\xc1", b"\x93\x01\x02", b"\x81\xa4type"] {
            let err = decode_client(Encoding::MsgPack, garbage).unwrap_err();
            assert_eq!(err.code(), ErrorCode::MalformedMessage, "{garbage:?}");
        }
    }

    #[test]
    fn refusals_quote_little_of_the_message() {
        let kind = "é".repeat(5_000);
        let json = format!(r#"{{"type":"{kind}","seq":3}}"#);
        let err = decode_client(Encoding::Json, json.as_bytes()).unwrap_err();
        let DecodeError::UnknownType { seq, kind } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*seq, Some(3));
        assert!(kind.len() <= DecodeError::MAX_KIND_BYTES && kind.ends_with('…'));

        let json = format!(r#"{{"type":"create_lobby","seq":3,"rule_set":"{kind}"}}"#);
        let err = decode_client(Encoding::Json, json.as_bytes()).unwrap_err();
        assert!(
            err.to_string().len() < 2 * DecodeError::MAX_DETAIL_BYTES,
            "{err}"
        );
        assert_eq!(err.seq(), Some(3));
    }

    #[test]
    fn msgpack_is_read_as_strictly_as_json() {
        // {"type": 14, "seq": 5}: 14 is `ping`'s index, which serde alone would take.
        let err = decode_client(Encoding::MsgPack, b"\x82\xa4type\x0e\xa3seq\x05").unwrap_err();
        assert_eq!(
            (err.code(), err.seq()),
            (ErrorCode::MalformedMessage, Some(5))
        );
        // {"type": "ping", 0: 5}: 0 is `seq`'s field index.
        let err = decode_client(Encoding::MsgPack, b"\x82\xa4type\xa4ping\x00\x05").unwrap_err();
        assert_eq!((err.code(), err.seq()), (ErrorCode::MalformedMessage, None));
        // `type` after other fields is fine.
        assert_eq!(
            decode_client(Encoding::MsgPack, b"\x82\xa3seq\x05\xa4type\xa4ping"),
            Ok(ping(5))
        );
        // serde would read an array as the message's fields in order.
        let err = decode_client(Encoding::Json, br#" ["ping", 5]"#).unwrap_err();
        assert_eq!((err.code(), err.seq()), (ErrorCode::MalformedMessage, None));
    }

    #[test]
    fn trailing_msgpack_bytes_are_malformed() {
        let Frame::Binary(mut bytes) = encode_client(Encoding::MsgPack, &ping(1)) else {
            panic!("msgpack encodes to binary");
        };
        assert_eq!(decode_client(Encoding::MsgPack, &bytes), Ok(ping(1)));
        bytes.push(0xc0);
        let err = decode_client(Encoding::MsgPack, &bytes).unwrap_err();
        assert!(
            matches!(err, DecodeError::Malformed { seq: Some(1), .. }),
            "{err:?}"
        );
    }

    #[test]
    fn wrong_frame_kind_is_malformed() {
        let Frame::Binary(bytes) = encode_client(Encoding::MsgPack, &ping(1)) else {
            panic!("msgpack encodes to binary");
        };
        let err = decode_client_frame(Encoding::Json, FrameKind::Binary, &bytes).unwrap_err();
        assert_eq!(
            err,
            DecodeError::WrongFrameKind {
                expected: FrameKind::Text,
                got: FrameKind::Binary
            }
        );
        assert_eq!(err.code(), ErrorCode::MalformedMessage);
        assert_eq!(
            decode_client_frame(Encoding::MsgPack, FrameKind::Binary, &bytes),
            Ok(ping(1))
        );
    }

    #[test]
    fn both_encodings_round_trip_every_seq_width() {
        for seq in [0, 1, 127, 128, 255, 256, 65_535, 65_536, u32::MAX] {
            for encoding in Encoding::ALL {
                let frame = encode_client(encoding, &ping(seq));
                assert_eq!(decode_client(encoding, frame.as_bytes()), Ok(ping(seq)));
            }
        }
    }
}
