//! What leaves for a connection: one bounded, ordered queue per connection
//! carries every reply, error and state to it ([`Outbound`]); a state is
//! encoded once per encoding and shared by every recipient
//! ([`SharedFrame`]); an error's text is bounded ([`bound_error_text`]) so
//! that no client input can make a server message large.

use std::sync::Arc;

use axum::extract::ws::Message;
use jumpgate_protocol as wire;
use jumpgate_protocol::{ErrorCode, ServerMessage};
use tokio::sync::{Notify, mpsc};

use crate::identity::Identity;

pub type ConnId = u64;

/// A message encoded once in both encodings, shared by every recipient.
#[derive(Debug)]
pub struct SharedFrame {
    message: ServerMessage,
    msgpack: std::sync::OnceLock<Message>,
    json: std::sync::OnceLock<Message>,
}

impl SharedFrame {
    pub fn new(message: ServerMessage) -> SharedFrame {
        SharedFrame {
            message,
            msgpack: std::sync::OnceLock::new(),
            json: std::sync::OnceLock::new(),
        }
    }

    /// The message itself.
    pub fn message(&self) -> &ServerMessage {
        &self.message
    }

    /// The message as a WebSocket frame in one encoding, encoded by the first
    /// connection that needs it and shared by the rest (a room whose members all
    /// speak MessagePack never pays for JSON). Cloning the frame shares its bytes.
    pub fn get(&self, encoding: wire::Encoding) -> &Message {
        let cell = match encoding {
            wire::Encoding::MsgPack => &self.msgpack,
            wire::Encoding::Json => &self.json,
        };
        cell.get_or_init(|| to_ws(wire::codec::encode_server(encoding, &self.message)))
    }
}

/// An encoded protocol frame as a WebSocket message.
pub fn to_ws(frame: wire::Frame) -> Message {
    match frame {
        wire::Frame::Text(text) => Message::Text(text.into()),
        wire::Frame::Binary(bytes) => Message::Binary(bytes.into()),
    }
}

/// What a room or a solo game sends to one connection.
#[derive(Debug)]
pub enum Outbound {
    Shared(Arc<SharedFrame>),
    Direct(Box<ServerMessage>),
    /// The room or solo game moved to another instance: after what is
    /// queued before this, the connection is told so and closed
    /// ([`CLOSE_ROOM_MOVED`](jumpgate_protocol::CLOSE_ROOM_MOVED)).
    Moved,
}

/// A connection inside a room.
#[derive(Debug, Clone)]
pub struct Member {
    pub conn: ConnId,
    /// The protocol it speaks: v1 members get `state`, v2 members events.
    pub version: wire::ProtocolVersion,
    pub identity: Identity,
    pub out: mpsc::Sender<Outbound>,
    /// Woken when the room drops this connection for falling behind.
    pub kick: Arc<Notify>,
}

/// A refusal sent back to the connection that asked: a stable code and a
/// human message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

/// An error quotes at most this many characters of any one piece of client
/// input (a move text, an unknown `type`, a value the decoder refused).
pub const EXCERPT_CHARS: usize = 64;

/// An error's whole text is at most this many characters (so at most 1 KiB
/// of UTF-8, whatever produced it).
pub const MAX_ERROR_TEXT_CHARS: usize = 256;

/// What stands for the part of a text that was cut.
const ELLIPSIS: char = '\u{2026}';

/// Bounds an error's human text in place: every quoted span (between `"`
/// or `` ` ``, as the decoder and the rules engine quote what they were
/// given) keeps its first [`EXCERPT_CHARS`] characters and an ellipsis, and
/// the whole text keeps its first [`MAX_ERROR_TEXT_CHARS`] (ellipsis
/// included). Cuts fall on character boundaries. Texts already within
/// bounds are left as they are.
pub fn bound_error_text(text: &mut String) {
    if text.chars().count() <= EXCERPT_CHARS {
        return;
    }
    let mut out = String::with_capacity(text.len().min(4 * MAX_ERROR_TEXT_CHARS));
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        // Inside a quoted span, up to its closing quote (a `\"` inside a
        // double-quoted span is escaped, not closing).
        let mut kept = 0;
        let mut escaped = false;
        let mut cut = false;
        for q in chars.by_ref() {
            if q == c && !escaped {
                out.push(q);
                break;
            }
            escaped = c == '"' && q == '\\' && !escaped;
            if kept < EXCERPT_CHARS {
                out.push(q);
                kept += 1;
            } else if !cut {
                // An escape cut in half would read as escaping the ellipsis.
                if out.ends_with('\\') {
                    out.pop();
                }
                out.push(ELLIPSIS);
                cut = true;
            }
        }
    }
    if out.chars().count() > MAX_ERROR_TEXT_CHARS {
        let end = out
            .char_indices()
            .nth(MAX_ERROR_TEXT_CHARS - 1)
            .map_or(out.len(), |(i, _)| i);
        out.truncate(end);
        out.push(ELLIPSIS);
    }
    *text = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(text: &str) -> String {
        let mut text = text.to_owned();
        bound_error_text(&mut text);
        text
    }

    #[test]
    fn short_texts_are_untouched() {
        for text in [
            "slow down",
            "",
            "cannot read move text \"zz\"",
            "unknown message type `warp`",
        ] {
            assert_eq!(bounded(text), text);
        }
        let expected =
            "unknown variant `chess`, expected one of `american`, `russian`, `pool`, `brazilian`";
        assert_eq!(bounded(expected), expected, "short quotes stay whole");
    }

    #[test]
    fn quoted_client_input_is_cut_to_an_excerpt() {
        let long = "x".repeat(10_000);
        let text = bounded(&format!("cannot read move text {long:?}"));
        assert_eq!(
            text,
            format!(
                "cannot read move text \"{}\u{2026}\"",
                "x".repeat(EXCERPT_CHARS)
            )
        );
        let text = bounded(&format!("unknown message type `{long}` (seq 4)"));
        assert_eq!(
            text,
            format!(
                "unknown message type `{}\u{2026}` (seq 4)",
                "x".repeat(EXCERPT_CHARS)
            )
        );
        // Four-byte characters are cut whole.
        let emoji = "\u{1F600}".repeat(500);
        let text = bounded(&format!("invalid type: string \"{emoji}\", expected u32"));
        assert_eq!(
            text,
            format!(
                "invalid type: string \"{}\u{2026}\", expected u32",
                "\u{1F600}".repeat(EXCERPT_CHARS)
            )
        );
        // Escaped quotes do not end the span; a cut escape is dropped.
        let escaped = format!("{:?}", format!("{}\"{}", "a".repeat(63), "b".repeat(100)));
        let text = bounded(&format!("bad {escaped} here"));
        assert_eq!(text, format!("bad \"{}\u{2026}\" here", "a".repeat(63)));
    }

    #[test]
    fn unquoted_input_is_bounded_by_the_total_cap() {
        let text = bounded(&format!("11-15{} is not a legal move", " ".repeat(20_000)));
        assert_eq!(text.chars().count(), MAX_ERROR_TEXT_CHARS);
        assert!(text.starts_with("11-15 ") && text.ends_with('\u{2026}'));
        // An unterminated quote keeps only its excerpt.
        let text = bounded(&format!("oops \"{}", "\u{00E9}".repeat(5_000)));
        assert_eq!(
            text,
            format!("oops \"{}\u{2026}", "\u{00E9}".repeat(EXCERPT_CHARS))
        );
    }
}
