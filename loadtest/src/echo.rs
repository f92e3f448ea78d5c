//! The baseline: a bare tokio-tungstenite server that sends every data frame back as is.
//!
//! It accepts the Jumpgate subprotocols (echoing the first one offered), so the same
//! [`jumpgate_protocol::client::Client`] connects to it, and it uses the same frame
//! limits and read and write buffers as the Jumpgate server, so the two differ only in
//! the work done per message.

use std::future::Future;

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The largest frame or message accepted, as on the Jumpgate server.
const MAX_FRAME_BYTES: usize = 64 * 1024;

/// Serves echo connections on `listener` until `shutdown` resolves.
pub async fn serve(listener: TcpListener, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(echo_connection(stream));
                }
                // Out of descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            },
        }
    }
}

async fn echo_connection(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES))
        .read_buffer_size(4 * 1024)
        .write_buffer_size(4 * 1024)
        .max_write_buffer_size(256 * 1024);
    let Ok(mut socket) =
        tokio_tungstenite::accept_hdr_async_with_config(stream, choose_subprotocol, Some(config))
            .await
    else {
        return;
    };
    while let Some(Ok(message)) = socket.next().await {
        if message.is_text() || message.is_binary() {
            if socket.send(message).await.is_err() {
                return;
            }
        } else if message.is_close() {
            return;
        }
        // Pings are answered by tungstenite itself on the next write or flush.
    }
}

/// Answers with the first subprotocol the client offered.
#[allow(
    clippy::result_large_err,
    reason = "the signature tungstenite requires of a handshake callback"
)]
fn choose_subprotocol(
    request: &Request,
    mut response: Response,
) -> Result<Response, ErrorResponse> {
    let offered = request
        .headers()
        .get(SEC_WEBSOCKET_PROTOCOL)
        .and_then(|value| value.to_str().ok())
        .and_then(|list| list.split(',').next())
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .and_then(|name| name.parse().ok());
    if let Some(value) = offered {
        response.headers_mut().insert(SEC_WEBSOCKET_PROTOCOL, value);
    }
    Ok(response)
}
