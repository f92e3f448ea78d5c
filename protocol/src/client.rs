//! A small async WebSocket client for Jumpgate, for tests, the load tester and tools.
//!
//! It speaks plain `ws://` only. A [`Client`] is one connection and does no
//! reconnecting: when the connection ends, it is over. For a client that comes back by
//! itself (after a dropped connection, a server restart or its room moving to another
//! server instance), use [`ReconnectingClient`](crate::reconnect::ReconnectingClient),
//! which wraps this one.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{
    self, Message,
    client::IntoClientRequest,
    error::ProtocolError,
    http::{HeaderValue, header::SEC_WEBSOCKET_PROTOCOL},
    protocol::{CloseFrame, WebSocketConfig, frame::coding::CloseCode},
};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::codec::{self, DecodeError, Encoding, Frame, FrameKind, Subprotocol};
use crate::error_code::ErrorCode;
use crate::message::{ClientMessage, Identity, ServerMessage};

/// How long [`Client::close`] waits for the server to answer the close frame.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Close code reported when the connection ended without a close frame (RFC 6455 §7.1.5).
pub const CLOSE_ABNORMAL: u16 = 1006;
/// Close code reported when a close frame carried no code (RFC 6455 §7.1.5).
pub const CLOSE_NO_STATUS: u16 = 1005;

/// What can go wrong talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered the upgrade request with an HTTP error instead of a WebSocket.
    #[error("the server refused the WebSocket upgrade with HTTP {status}")]
    Refused {
        /// The HTTP status code, e.g. 400.
        status: u16,
    },
    /// The server did not pick the subprotocol the client asked for.
    #[error("asked for subprotocol {expected}, server chose {chosen:?}")]
    Subprotocol {
        /// The subprotocol requested.
        expected: &'static str,
        /// What the server's `Sec-WebSocket-Protocol` header said, if anything.
        chosen: Option<String>,
    },
    /// The connection is over. `code` is the close frame's code, 1005 if it had none,
    /// or 1006 if the connection ended without a close frame.
    #[error("connection closed with code {code}: {reason:?}")]
    Closed {
        /// The WebSocket close code, e.g. 1001 when the server shuts down.
        code: u16,
        /// The close frame's reason text.
        reason: String,
    },
    /// The server sent a frame that is not a valid message.
    #[error("undecodable message from the server: {0}")]
    Decode(#[from] DecodeError),
    /// Any other WebSocket or I/O failure.
    #[error("websocket error: {0}")]
    WebSocket(Box<tungstenite::Error>),
    /// The server refused `hello` (see [`Client::greet`]).
    #[error("hello refused: {0}")]
    HelloRefused(Refusal),
}

/// Who the server says this connection is, from its `welcome`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// Who the connection is: id, display name, and whether a guest.
    pub identity: Identity,
    /// Send it in a later `hello` to be the same identity again.
    pub token: String,
}

/// A request the server refused: its stable code and a human message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Refusal {
    /// The stable code to branch on.
    pub code: ErrorCode,
    /// The server's sentence for people; its wording may change.
    pub message: String,
}

impl From<tungstenite::Error> for ClientError {
    fn from(err: tungstenite::Error) -> Self {
        match err {
            tungstenite::Error::Http(response) => ClientError::Refused {
                status: response.status().as_u16(),
            },
            tungstenite::Error::ConnectionClosed
            | tungstenite::Error::AlreadyClosed
            | tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
                ClientError::Closed {
                    code: CLOSE_ABNORMAL,
                    reason: String::new(),
                }
            }
            other => ClientError::WebSocket(Box::new(other)),
        }
    }
}

/// The client's WebSocket read buffer.
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// One connection to a Jumpgate server.
#[derive(Debug)]
pub struct Client {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    subprotocol: Subprotocol,
    last_seq: u32,
}

impl Client {
    /// Opens a WebSocket to `url` (e.g. `ws://127.0.0.1:8080/ws`), asking for
    /// `subprotocol` (an [`Encoding`] alone means protocol 1 in it), and checks the
    /// server chose it.
    ///
    /// Nothing is sent yet: the first message should be `hello`.
    pub async fn connect(
        url: &str,
        subprotocol: impl Into<Subprotocol>,
    ) -> Result<Client, ClientError> {
        Client::open(url, subprotocol.into(), None).await
    }

    /// Like [`connect`](Self::connect), over a TCP connection the caller opened
    /// (bound to a chosen local address, say, or through a tunnel). `url` names the
    /// server for the handshake; only `ws://` (no TLS) on such a stream.
    pub async fn connect_on(
        stream: TcpStream,
        url: &str,
        subprotocol: impl Into<Subprotocol>,
    ) -> Result<Client, ClientError> {
        Client::open(url, subprotocol.into(), Some(stream)).await
    }

    async fn open(
        url: &str,
        subprotocol: Subprotocol,
        stream: Option<TcpStream>,
    ) -> Result<Client, ClientError> {
        let expected = subprotocol.name();
        let mut request = url.into_client_request()?;
        request
            .headers_mut()
            .insert(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(expected));
        // tungstenite zeroes its whole read buffer (128 KiB by default) before
        // every read; messages are at most 16 KiB, so a small buffer saves that
        // work on every message and costs a second read only for large ones.
        let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
        // Messages are small and latency-bound: send them at once (no Nagle),
        // as browsers do for WebSockets.
        let connected = match stream {
            None => tokio_tungstenite::connect_async_with_config(request, Some(config), true).await,
            Some(stream) => {
                stream.set_nodelay(true).map_err(tungstenite::Error::Io)?;
                tokio_tungstenite::client_async_with_config(
                    request,
                    MaybeTlsStream::Plain(stream),
                    Some(config),
                )
                .await
            }
        };
        let (socket, response) = match connected {
            Ok(connected) => connected,
            // tungstenite checks the answer itself; report its refusal in our terms.
            Err(tungstenite::Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(_))) => {
                return Err(ClientError::Subprotocol {
                    expected,
                    chosen: None,
                });
            }
            Err(err) => return Err(err.into()),
        };
        let chosen = response
            .headers()
            .get(SEC_WEBSOCKET_PROTOCOL)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        if chosen.as_deref() != Some(expected) {
            return Err(ClientError::Subprotocol { expected, chosen });
        }
        Ok(Client {
            socket,
            subprotocol,
            last_seq: 0,
        })
    }

    /// The encoding this connection uses.
    pub fn encoding(&self) -> Encoding {
        self.subprotocol.encoding
    }

    /// The protocol version and encoding this connection uses.
    pub fn subprotocol(&self) -> Subprotocol {
        self.subprotocol
    }

    /// A fresh sequence number: 1 on a new client, then one more each call.
    pub fn next_seq(&mut self) -> u32 {
        self.last_seq = self.last_seq.wrapping_add(1);
        self.last_seq
    }

    /// Continues numbering after `seq`, e.g. to carry a counter across a reconnect.
    pub fn set_last_seq(&mut self, seq: u32) {
        self.last_seq = seq;
    }

    /// The sequence number used last (0 before any), e.g. to carry the counter over to
    /// the next connection.
    pub fn last_seq(&self) -> u32 {
        self.last_seq
    }

    /// Sends a message in the connection's encoding.
    pub async fn send(&mut self, message: &ClientMessage) -> Result<(), ClientError> {
        let message = match codec::encode_client(self.subprotocol.encoding, message) {
            Frame::Text(text) => Message::text(text),
            Frame::Binary(bytes) => Message::binary(bytes),
        };
        self.socket.send(message).await?;
        Ok(())
    }

    /// Sends a text frame as is, whatever the encoding; for testing bad input.
    pub async fn send_raw_text(&mut self, text: String) -> Result<(), ClientError> {
        self.socket.send(Message::text(text)).await?;
        Ok(())
    }

    /// Sends a binary frame as is, whatever the encoding; for testing bad input.
    pub async fn send_raw_binary(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.socket.send(Message::binary(bytes)).await?;
        Ok(())
    }

    /// Waits for the next message from the server.
    ///
    /// Ping and pong frames are answered and skipped. When the server closes the
    /// connection this returns [`ClientError::Closed`] with its code and reason.
    pub async fn recv(&mut self) -> Result<ServerMessage, ClientError> {
        loop {
            let Some(message) = self.socket.next().await else {
                return Err(ClientError::Closed {
                    code: CLOSE_ABNORMAL,
                    reason: String::new(),
                });
            };
            let (kind, payload) = match message? {
                Message::Text(text) => (FrameKind::Text, text.as_bytes().to_vec()),
                Message::Binary(bytes) => (FrameKind::Binary, bytes.to_vec()),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                Message::Close(frame) => return Err(closed(frame)),
            };
            return Ok(codec::decode_server_frame(
                self.subprotocol.encoding,
                kind,
                &payload,
            )?);
        }
    }

    /// Sends `hello` with the next seq (and `token`, to come back as the
    /// same identity), and waits for `welcome`. Messages of types this
    /// client does not know are skipped, as PROTOCOL.md asks of clients.
    pub async fn greet(
        &mut self,
        token: Option<String>,
        client: &str,
    ) -> Result<Greeting, ClientError> {
        let seq = self.next_seq();
        self.send(&ClientMessage::Hello {
            seq,
            protocol: self.subprotocol.version.number(),
            token,
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

    /// Waits for the answer to the request sent with `seq`: `Ok(Ok(()))`
    /// for its `ack`, `Ok(Err(refusal))` for its `error`. Every other
    /// message that arrives first (states, other answers) goes to `other`,
    /// in order; messages of unknown types are skipped.
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

    /// The next message of a type this client knows.
    async fn recv_known(&mut self) -> Result<ServerMessage, ClientError> {
        loop {
            match self.recv().await {
                Err(ClientError::Decode(DecodeError::UnknownType { .. })) => continue,
                other => return other,
            }
        }
    }

    /// Closes the connection with code 1000 and waits briefly for the server's reply.
    ///
    /// Messages still arriving meanwhile are dropped.
    pub async fn close(mut self) -> Result<(), ClientError> {
        self.socket
            .close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            }))
            .await?;
        let drain = async {
            while let Some(Ok(message)) = self.socket.next().await {
                if message.is_close() {
                    break;
                }
            }
        };
        // A server that never answers should not hang the caller.
        let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
        Ok(())
    }
}

fn closed(frame: Option<CloseFrame>) -> ClientError {
    match frame {
        Some(frame) => ClientError::Closed {
            code: frame.code.into(),
            reason: frame.reason.as_str().to_owned(),
        },
        None => ClientError::Closed {
            code: CLOSE_NO_STATUS,
            reason: String::new(),
        },
    }
}
