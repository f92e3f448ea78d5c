//! A plain HTTP/1.1 GET on a fresh connection, for readiness and HAProxy's
//! statistics page (and the load tester's `/metrics` reads).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long one GET may take before it counts as no answer.
const GET_PATIENCE: Duration = Duration::from_secs(5);

/// The answer to [`http_get`].
#[derive(Debug, Clone)]
pub struct HttpAnswer {
    /// The status code.
    pub status: u16,
    /// The response head, lower-cased.
    pub head: String,
    /// The body, as text.
    pub body: String,
}

impl HttpAnswer {
    /// The value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim())
        })
    }
}

/// `GET path` with `Connection: close`; `None` if anything fails or takes
/// more than five seconds.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<HttpAnswer> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: jumpgate-harness\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.ok()?;
        Some(raw)
    };
    let raw = tokio::time::timeout(GET_PATIENCE, exchange).await.ok()??;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let head = head.to_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some(HttpAnswer {
        status,
        head,
        body: body.to_owned(),
    })
}
