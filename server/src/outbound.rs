//! What leaves for a connection: one bounded, ordered queue per connection
//! carries every reply, error and state to it ([`Outbound`]); a state is
//! encoded once per encoding and shared by every recipient
//! ([`SharedFrame`]).

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
