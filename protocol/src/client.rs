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
    /// The URL is not a WebSocket URL (`ws://` or `wss://`): an `http://` address, say,
    /// or a lobby's invite link, which [`LobbyAddress`](crate::session::LobbyAddress)
    /// reads instead.
    #[error(
        "{0} is not a WebSocket URL: give the server's ws:// address, such as \
         ws://127.0.0.1:8080/ws (an invite link, http://…/r/CODE, names a lobby to join)"
    )]
    NotWebSocketUrl(String),
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

/// The bytes one WebSocket frame carrying `payload` bytes takes on the connection, as
/// RFC 6455 section 5.2 lays it out: a 2-byte header, 2 or 8 more bytes of length for
/// a payload over 125 or 65,535 bytes, and a 4-byte mask on every frame a client sends
/// (`masked`). TCP and IP headers are not included.
///
/// ```
/// use jumpgate_protocol::client::frame_bytes;
///
/// assert_eq!(frame_bytes(31, true), 37); // a small message from a client
/// assert_eq!(frame_bytes(200, false), 204); // a larger one from the server
/// ```
pub fn frame_bytes(payload: usize, masked: bool) -> u64 {
    let length = match payload {
        0..=125 => 0,
        126..=65_535 => 2,
        _ => 8,
    };
    let mask = if masked { 4 } else { 0 };
    (2 + length + mask + payload) as u64
}

/// The data frames (messages) one [`Client`] has sent and received since it
/// connected, and their bytes on the connection by [`frame_bytes`]. Control frames
/// (ping, pong, close) and the HTTP upgrade are not counted.
///
/// Counting costs two additions per frame; read it with [`Client::traffic`], and take
/// the difference of two readings with [`since`](Self::since) to see what one exchange
/// cost, as the load tester does for each move.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Frames received from the server.
    pub frames_in: u64,
    /// Their bytes, headers included.
    pub bytes_in: u64,
    /// Frames sent to the server.
    pub frames_out: u64,
    /// Their bytes, headers and masks included.
    pub bytes_out: u64,
}

impl Traffic {
    /// What was counted between the reading `earlier` and this one.
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

/// One connection to a Jumpgate server.
#[derive(Debug)]
pub struct Client {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    subprotocol: Subprotocol,
    last_seq: u32,
    traffic: Traffic,
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
        let scheme = url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("ws" | "wss")) {
            return Err(ClientError::NotWebSocketUrl(url.to_owned()));
        }
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
            traffic: Traffic::default(),
        })
    }

    /// The frames and bytes sent and received so far on this connection.
    pub fn traffic(&self) -> Traffic {
        self.traffic
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
        self.send_frame(message).await
    }

    /// Sends a text frame as is, whatever the encoding; for testing bad input.
    pub async fn send_raw_text(&mut self, text: String) -> Result<(), ClientError> {
        self.send_frame(Message::text(text)).await
    }

    /// Sends a binary frame as is, whatever the encoding; for testing bad input, or
    /// frames of a chosen size.
    pub async fn send_raw_binary(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.send_frame(Message::binary(bytes)).await
    }

    async fn send_frame(&mut self, message: Message) -> Result<(), ClientError> {
        let bytes = frame_bytes(message.len(), true);
        self.socket.send(message).await?;
        // Counted once written: a failed send put nothing on the wire.
        self.traffic.frames_out += 1;
        self.traffic.bytes_out += bytes;
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
                Message::Text(text) => (FrameKind::Text, tungstenite::Bytes::from(text)),
                Message::Binary(bytes) => (FrameKind::Binary, bytes),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                Message::Close(frame) => return Err(closed(frame)),
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

    /// Sends `hello` with the next seq (and `token`, to come back as the
    /// same identity), and waits for `welcome`. Messages of types this
    /// client does not know are skipped, as PROTOCOL.md asks of clients.
    pub async fn greet(
        &mut self,
        token: Option<String>,
        client: &str,
    ) -> Result<Greeting, ClientError> {
        self.greet_as(token, client, None).await
    }

    /// [`greet`](Self::greet), asking for the display name `name` for a guest (the
    /// server normalises it; an account keeps its own).
    pub async fn greet_as(
        &mut self,
        token: Option<String>,
        client: &str,
        name: Option<String>,
    ) -> Result<Greeting, ClientError> {
        let seq = self.next_seq();
        self.send(&ClientMessage::Hello {
            seq,
            protocol: self.subprotocol.version.number(),
            token,
            client: client.to_owned(),
            name,
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

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

    use super::*;

    #[tokio::test]
    async fn only_a_websocket_url_is_connected_to() {
        for url in [
            "http://127.0.0.1:8080/r/K7QP2DXM",
            "https://example.test/ws",
            "127.0.0.1:8080",
        ] {
            match Client::connect(url, Subprotocol::v2(Encoding::Json)).await {
                Err(ClientError::NotWebSocketUrl(given)) => {
                    assert_eq!(given, url);
                    let said = ClientError::NotWebSocketUrl(given).to_string();
                    assert!(said.contains("ws://127.0.0.1:8080/ws"), "{said}");
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn frame_sizes_follow_rfc_6455() {
        assert_eq!(frame_bytes(0, false), 2);
        assert_eq!(frame_bytes(125, false), 127);
        assert_eq!(frame_bytes(126, false), 130);
        assert_eq!(frame_bytes(65_535, false), 65_539);
        assert_eq!(frame_bytes(65_536, false), 65_546);
        assert_eq!(frame_bytes(31, true), 37);
        assert_eq!(frame_bytes(126, true), 134);
    }

    #[test]
    fn traffic_differences_and_sums() {
        let earlier = Traffic {
            frames_in: 1,
            bytes_in: 40,
            frames_out: 2,
            bytes_out: 60,
        };
        let mut later = Traffic {
            frames_in: 4,
            bytes_in: 300,
            frames_out: 3,
            bytes_out: 97,
        };
        let step = later.since(earlier);
        assert_eq!(
            step,
            Traffic {
                frames_in: 3,
                bytes_in: 260,
                frames_out: 1,
                bytes_out: 37,
            }
        );
        later.add(step);
        assert_eq!((later.frames_in, later.bytes_out), (7, 134));
    }

    /// A real WebSocket server in the test: it reads the client's two frames and
    /// answers with a short message and a long one (over 125 bytes, so its header has
    /// two more length bytes). The client's counts must be the frames' sizes exactly.
    #[tokio::test]
    async fn traffic_counts_every_frame_with_its_header_and_mask() {
        let encoding = Encoding::Json;
        let short = codec::encode_server(encoding, &ServerMessage::Ack { seq: 1 });
        let long = codec::encode_server(
            encoding,
            &ServerMessage::Error {
                seq: Some(2),
                code: ErrorCode::MalformedMessage,
                message: "a reason long enough to need the longer header ".repeat(4),
            },
        );
        assert!(short.len() <= 125 && (126..=65_535).contains(&long.len()));
        let replies = [short.as_bytes().to_vec(), long.as_bytes().to_vec()];

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            #[allow(
                clippy::result_large_err,
                reason = "tungstenite's handshake callback returns its own error type"
            )]
            let choose = |_: &Request, mut response: Response| {
                response.headers_mut().insert(
                    SEC_WEBSOCKET_PROTOCOL,
                    HeaderValue::from_static(Subprotocol::from(encoding).name()),
                );
                Ok(response)
            };
            let mut socket = tokio_tungstenite::accept_hdr_async(stream, choose)
                .await
                .unwrap();
            let mut received = Vec::new();
            for _ in 0..2 {
                received.push(socket.next().await.unwrap().unwrap().len());
            }
            for reply in replies {
                let text = String::from_utf8(reply).unwrap();
                socket.send(Message::text(text)).await.unwrap();
            }
            // Stay open until the client has read both.
            while let Some(Ok(message)) = socket.next().await {
                if message.is_close() {
                    break;
                }
            }
            received
        });

        let mut client = Client::connect(&format!("ws://{addr}/ws"), encoding)
            .await
            .unwrap();
        assert_eq!(client.traffic(), Traffic::default());
        let ping = ClientMessage::Ping { seq: 1 };
        let ping_len = codec::encode_client(encoding, &ping).len();
        client.send(&ping).await.unwrap();
        client.send_raw_text("x".repeat(200)).await.unwrap();
        let sent = client.traffic();
        assert_eq!(
            (sent.frames_out, sent.bytes_out),
            (2, (ping_len + 6 + 200 + 8) as u64),
            "2 header bytes and a 4-byte mask; 2 more length bytes over 125"
        );
        assert_eq!(client.recv().await.unwrap(), ServerMessage::Ack { seq: 1 });
        assert!(matches!(
            client.recv().await.unwrap(),
            ServerMessage::Error { seq: Some(2), .. }
        ));
        assert_eq!(
            client.traffic().since(sent),
            Traffic {
                frames_in: 2,
                bytes_in: (short.len() + 2 + long.len() + 4) as u64,
                frames_out: 0,
                bytes_out: 0,
            },
            "no mask on the server's frames"
        );
        client.close().await.unwrap();
        assert_eq!(
            server.await.unwrap(),
            [ping_len, 200],
            "what the server read"
        );
    }
}
