//! One connection to a server with its send pacing ([`MIN_SEND_GAP`] between
//! messages).

use super::*;

/// One connection with its send pacing.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) last_send: Option<Instant>,
}

impl Conn {
    pub(super) async fn connect(
        url: &str,
        protocol: ProtocolVersion,
        limit: Instant,
    ) -> Result<Conn, String> {
        let subprotocol = Subprotocol::new(protocol, Encoding::MsgPack);
        let client = timeout_at(limit, Client::connect(url, subprotocol))
            .await
            .map_err(|_| format!("connecting to {url} timed out"))?
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        Ok(Conn {
            client,
            last_send: None,
        })
    }

    /// When this connection may send again ([`MIN_SEND_GAP`] after its last message).
    pub(super) fn ready_at(&self) -> Instant {
        self.last_send
            .map_or_else(Instant::now, |last| last + MIN_SEND_GAP)
    }

    /// Waits until this connection may send again.
    pub(super) async fn pace(&mut self) {
        sleep_until(self.ready_at()).await;
    }

    pub(super) async fn send(&mut self, message: &ClientMessage) -> Result<(), String> {
        self.pace().await;
        self.last_send = Some(Instant::now());
        self.client.send(message).await.map_err(|e| e.to_string())
    }

    /// The next message, skipping unknown types; `Ok(None)` once `limit` passes.
    pub(super) async fn recv(&mut self, limit: Instant) -> Result<Option<ServerMessage>, String> {
        loop {
            match timeout_at(limit, self.client.recv()).await {
                Err(_) => return Ok(None),
                Ok(Ok(message)) => return Ok(Some(message)),
                Ok(Err(ClientError::Decode(DecodeError::UnknownType { .. }))) => continue,
                Ok(Err(e)) => return Err(e.to_string()),
            }
        }
    }
}
