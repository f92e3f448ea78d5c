//! A protocol client that counts the bytes of every WebSocket frame it sends and
//! receives, so that `bench` can say what a move costs on the wire in each protocol.
//!
//! It does what `jumpgate_protocol::client::Client` does for the load tester's needs
//! (connect with a subprotocol, send, receive and decode, `hello`, wait for an answer)
//! on its own tokio-tungstenite socket, because the protocol's client decodes each
//! frame and drops its length. The counts are of whole frames as RFC 6455 puts them on
//! the connection: header and payload, with the 4-byte mask of client frames; the TCP
//! and IP headers below are not counted.

use futures_util::{SinkExt, StreamExt};
use jumpgate_protocol::client::{ClientError, Greeting, Refusal};
use jumpgate_protocol::codec::{self, DecodeError, Frame, FrameKind};
use jumpgate_protocol::{ClientMessage, ServerMessage, Subprotocol};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{
    self, Message,
    client::IntoClientRequest,
    http::{HeaderValue, header::SEC_WEBSOCKET_PROTOCOL},
    protocol::WebSocketConfig,
};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The read buffer: the protocol client's size (a small buffer is not zeroed in full
/// before every read, as tungstenite's 128 KiB default is).
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// The bytes one WebSocket frame with `payload` bytes takes on the connection:
/// 2 header bytes, 2 or 8 more for a long payload, 4 for a client's mask.
pub fn frame_bytes(payload: usize, masked: bool) -> u64 {
    let length = match payload {
        0..=125 => 0,
        126..=65_535 => 2,
        _ => 8,
    };
    (2 + length + if masked { 4 } else { 0 } + payload) as u64
}

/// Frames and bytes counted on one connection since it opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Frames received from the server (data frames only; pings are answered by
    /// tungstenite and not counted).
    pub frames_in: u64,
    /// Their bytes, headers included.
    pub bytes_in: u64,
    /// Frames sent to the server.
    pub frames_out: u64,
    /// Their bytes, headers and masks included.
    pub bytes_out: u64,
}

impl Traffic {
    /// What was counted between `earlier` and `self`.
    pub fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            frames_in: self.frames_in - earlier.frames_in,
            bytes_in: self.bytes_in - earlier.bytes_in,
            frames_out: self.frames_out - earlier.frames_out,
            bytes_out: self.bytes_out - earlier.bytes_out,
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Traffic) {
        self.frames_in += other.frames_in;
        self.bytes_in += other.bytes_in;
        self.frames_out += other.frames_out;
        self.bytes_out += other.bytes_out;
    }
}

/// One connection to a Jumpgate (or echo) server, counting its frames.
#[derive(Debug)]
pub struct MeteredClient {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    subprotocol: Subprotocol,
    last_seq: u32,
    traffic: Traffic,
}

impl MeteredClient {
    /// Opens a WebSocket to `url` asking for `subprotocol`, with TCP_NODELAY, and
    /// checks that the server chose it.
    pub async fn connect(url: &str, subprotocol: Subprotocol) -> Result<Self, ClientError> {
        let expected = subprotocol.name();
        let mut request = url.into_client_request()?;
        request
            .headers_mut()
            .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(expected));
        let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
        let (socket, response) =
            tokio_tungstenite::connect_async_with_config(request, Some(config), true).await?;
        let chosen = response
            .headers()
            .get(SEC_WEBSOCKET_PROTOCOL)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        if chosen.as_deref() != Some(expected) {
            return Err(ClientError::Subprotocol { expected, chosen });
        }
        Ok(MeteredClient {
            socket,
            subprotocol,
            last_seq: 0,
            traffic: Traffic::default(),
        })
    }

    /// The protocol version and encoding this connection speaks.
    pub fn subprotocol(&self) -> Subprotocol {
        self.subprotocol
    }

    /// What was counted so far.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// A fresh sequence number: 1 on a new connection, then one more each call.
    pub fn next_seq(&mut self) -> u32 {
        self.last_seq = self.last_seq.wrapping_add(1);
        self.last_seq
    }

    /// Sends a message in the connection's encoding.
    pub async fn send(&mut self, message: &ClientMessage) -> Result<(), ClientError> {
        let message = match codec::encode_client(self.subprotocol.encoding, message) {
            Frame::Text(text) => Message::text(text),
            Frame::Binary(bytes) => Message::binary(bytes),
        };
        self.send_message(message).await
    }

    /// Sends a binary frame as is (the echo baseline's frames).
    pub async fn send_raw_binary(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.send_message(Message::binary(bytes)).await
    }

    async fn send_message(&mut self, message: Message) -> Result<(), ClientError> {
        self.traffic.frames_out += 1;
        self.traffic.bytes_out += frame_bytes(message.len(), true);
        self.socket.send(message).await?;
        Ok(())
    }

    /// The next message from the server; pings and pongs are skipped.
    pub async fn recv(&mut self) -> Result<ServerMessage, ClientError> {
        loop {
            let Some(message) = self.socket.next().await else {
                return Err(ClientError::Closed {
                    code: jumpgate_protocol::client::CLOSE_ABNORMAL,
                    reason: String::new(),
                });
            };
            let (kind, payload) = match message? {
                Message::Text(text) => (FrameKind::Text, tungstenite::Bytes::from(text)),
                Message::Binary(bytes) => (FrameKind::Binary, bytes),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                Message::Close(frame) => {
                    return Err(ClientError::Closed {
                        code: frame
                            .as_ref()
                            .map_or(jumpgate_protocol::client::CLOSE_NO_STATUS, |f| {
                                f.code.into()
                            }),
                        reason: frame
                            .map(|f| f.reason.as_str().to_owned())
                            .unwrap_or_default(),
                    });
                }
            };
            self.traffic.frames_in += 1;
            self.traffic.bytes_in += frame_bytes(payload.len(), false);
            return Ok(codec::decode_server_frame(
                self.subprotocol.encoding,
                kind,
                &payload,
            )?);
        }
    }

    /// The next message of a type this client knows.
    async fn recv_known(&mut self) -> Result<ServerMessage, ClientError> {
        loop {
            match self.recv().await {
                Err(ClientError::Decode(DecodeError::UnknownType { .. })) => continue,
                other => return other,
            }
        }
    }

    /// Sends `hello` (the protocol number of the subprotocol) and waits for `welcome`.
    pub async fn greet(&mut self, client: &str) -> Result<Greeting, ClientError> {
        let seq = self.next_seq();
        self.send(&ClientMessage::Hello {
            seq,
            protocol: self.subprotocol.version.number(),
            token: None,
            client: client.to_owned(),
            name: None,
        })
        .await?;
        loop {
            match self.recv_known().await? {
                ServerMessage::Welcome {
                    identity, token, ..
                } => return Ok(Greeting { identity, token }),
                ServerMessage::Error { code, message, .. } => {
                    return Err(ClientError::HelloRefused(Refusal { code, message }));
                }
                _ => {}
            }
        }
    }

    /// Waits for the answer to the request sent with `seq` (its `ack`, or its `error`
    /// as a refusal); every other message that comes first goes to `other`, in order.
    pub async fn answer(
        &mut self,
        seq: u32,
        mut other: impl FnMut(ServerMessage),
    ) -> Result<Result<(), Refusal>, ClientError> {
        loop {
            match self.recv_known().await? {
                ServerMessage::Ack { seq: s } if s == seq => return Ok(Ok(())),
                ServerMessage::Error {
                    seq: Some(s),
                    code,
                    message,
                } if s == seq => return Ok(Err(Refusal { code, message })),
                message => other(message),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_sizes_follow_rfc_6455() {
        assert_eq!(frame_bytes(0, false), 2);
        assert_eq!(frame_bytes(125, false), 127);
        assert_eq!(frame_bytes(126, false), 130);
        assert_eq!(frame_bytes(65_535, false), 65_539);
        assert_eq!(frame_bytes(65_536, false), 65_546);
        assert_eq!(frame_bytes(31, true), 37);
    }
}
