//! The server's public HTTP pages for a lobby: its JSON summary and its finished games
//! as PDN, read with plain HTTP/1.1 GETs.

use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;

use super::LobbyAddress;
use crate::room::LobbySummary;

/// How long one GET may take, connecting included.
const PATIENCE: Duration = Duration::from_secs(10);
/// How many times a `503` (the lobby moving between instances, storage briefly down)
/// is asked again, after the `Retry-After` it gives (at most 5 s each).
const RETRIES: u32 = 5;
/// The most of a body this reads: the summary is a few hundred bytes; a long series'
/// PDN a few tens of kilobytes.
const BODY_LIMIT: usize = 4 << 20;

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The server URL is not a `ws://` or `http://` URL with a host.
    #[error("not a server URL this SDK can read pages from: {0:?}")]
    Url(String),
    /// The URL asks for TLS (`wss://`, `https://`), which this SDK does not speak:
    /// put it behind a proxy that ends TLS, or use a client with TLS.
    #[error("{0} needs TLS, which this SDK does not speak")]
    Tls(String),
    /// No answer: the connection was refused or dropped, or it took longer than 10 s.
    #[error("no answer from {url}: {reason}")]
    Unreachable {
        /// The page asked for.
        url: String,
        /// What went wrong, for people.
        reason: String,
    },
    /// The server answered with an error status. `code` is the stable code of its JSON
    /// error body (`unknown_lobby`, `room_unavailable`, `storage_unavailable`,
    /// `rate_limited`, PROTOCOL.md section 1), when it sent one.
    #[error("{url} answered {status}: {}", code.as_deref().unwrap_or("(no error code)"))]
    Status {
        /// The page asked for.
        url: String,
        /// The HTTP status, e.g. 404.
        status: u16,
        /// The error body's `error`.
        code: Option<String>,
        /// The error body's `message`.
        message: Option<String>,
    },
    /// The body is not what the page promises (not UTF-8, not a lobby summary, over
    /// 4 MiB).
    #[error("{url} sent a body this SDK cannot read: {reason}")]
    Body {
        /// The page asked for.
        url: String,
        /// What was wrong with it.
        reason: String,
    },
}

impl HttpError {
    /// The error body's stable code, if the server sent one: branch on this.
    pub fn code(&self) -> Option<&str> {
        match self {
            HttpError::Status { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

/// Reads a server's lobby pages (`GET /r/{CODE}` as JSON and `GET /r/{CODE}/games.pdn`,
/// PROTOCOL.md section 1) over plain HTTP.
///
/// Made from the WebSocket URL a session connects to (`ws://host:port/ws` reads pages
/// from `http://host:port`; a path before `/ws`, as an Ingress may add, is kept), or
/// taken from [`Session::pages`](super::Session::pages). A `503` is asked again up to
/// five times after its `Retry-After`; every other answer is returned as it is.
///
/// ```no_run
/// use jumpgate_protocol::session::{HttpPages, LobbyAddress};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let pages = HttpPages::new("ws://127.0.0.1:8080/ws")?;
/// let lobby: LobbyAddress = "http://127.0.0.1:8080/r/K7QP2DXM".parse()?;
/// let summary = pages.lobby_summary(&lobby).await?;
/// println!("{} lobby, {:?}", summary.rule_set, summary.phase);
/// print!("{}", pages.finished_games_pdn(&lobby).await?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPages {
    /// `host:port`, where the pages are.
    authority: String,
    /// The path the pages sit under, without a trailing `/` (empty at the root).
    prefix: String,
}

impl HttpPages {
    /// The pages of the server at `url`: its WebSocket URL (`ws://…/ws`) or its plain
    /// `http://` address.
    pub fn new(url: &str) -> Result<HttpPages, HttpError> {
        let uri: Uri = url.parse().map_err(|_| HttpError::Url(url.to_owned()))?;
        match uri.scheme_str() {
            Some("ws" | "http") => {}
            Some("wss" | "https") => return Err(HttpError::Tls(url.to_owned())),
            _ => return Err(HttpError::Url(url.to_owned())),
        }
        let Some(host) = uri.host().filter(|host| !host.is_empty()) else {
            return Err(HttpError::Url(url.to_owned()));
        };
        let authority = format!("{host}:{}", uri.port_u16().unwrap_or(80));
        let path = uri.path().trim_end_matches('/');
        let prefix = path.strip_suffix("/ws").unwrap_or(path).to_owned();
        Ok(HttpPages { authority, prefix })
    }

    /// The lobby's public summary (what `lobby_info` answers), read over HTTP.
    pub async fn lobby_summary(&self, lobby: &LobbyAddress) -> Result<LobbySummary, HttpError> {
        let path = format!(
            "{}/r/{}?format=json{}",
            self.prefix,
            lobby.code,
            invite(lobby, '&')
        );
        let (url, body) = self.get(&path, "application/json").await?;
        serde_json::from_slice(&body).map_err(|e| HttpError::Body {
            url,
            reason: e.to_string(),
        })
    }

    /// Every game of the lobby that has ended so far, as PDN text (empty when none has).
    pub async fn finished_games_pdn(&self, lobby: &LobbyAddress) -> Result<String, HttpError> {
        let path = format!(
            "{}/r/{}/games.pdn{}",
            self.prefix,
            lobby.code,
            invite(lobby, '?')
        );
        let (url, body) = self.get(&path, "application/x-pdn").await?;
        String::from_utf8(body.to_vec()).map_err(|e| HttpError::Body {
            url,
            reason: e.to_string(),
        })
    }

    /// GETs `path`, asking a `503` again; the page's URL and its body on `200`.
    async fn get(&self, path: &str, accept: &str) -> Result<(String, Bytes), HttpError> {
        let url = format!("http://{}{path}", self.authority);
        let mut tries = 0;
        loop {
            let answer = tokio::time::timeout(PATIENCE, self.get_once(path, accept))
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {} s", PATIENCE.as_secs())));
            let (status, retry_after, body) = answer.map_err(|reason| HttpError::Unreachable {
                url: url.clone(),
                reason,
            })?;
            if status == StatusCode::OK {
                return Ok((url, body));
            }
            if status == StatusCode::SERVICE_UNAVAILABLE && tries < RETRIES {
                tries += 1;
                tokio::time::sleep(retry_after.min(Duration::from_secs(5))).await;
                continue;
            }
            #[derive(serde::Deserialize)]
            struct ErrorBody {
                error: String,
                message: Option<String>,
            }
            let error: Option<ErrorBody> = serde_json::from_slice(&body).ok();
            return Err(HttpError::Status {
                url,
                status: status.as_u16(),
                code: error.as_ref().map(|e| e.error.clone()),
                message: error.and_then(|e| e.message),
            });
        }
    }

    /// One GET on a fresh connection: the status, its `Retry-After` (1 s when absent)
    /// and the body.
    async fn get_once(
        &self,
        path: &str,
        accept: &str,
    ) -> Result<(StatusCode, Duration, Bytes), String> {
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = Request::get(path)
            .header(hyper::header::HOST, &self.authority)
            .header(hyper::header::ACCEPT, accept)
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
            .map_or(Duration::from_secs(1), Duration::from_secs);
        let body = Limited::new(response.into_body(), BODY_LIMIT)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, retry_after, body))
    }
}

/// The lobby's invite as a query parameter led by `lead` (`?` or `&`), or nothing.
fn invite(lobby: &LobbyAddress, lead: char) -> String {
    let Some(invite) = &lobby.invite else {
        return String::new();
    };
    let mut query = format!("{lead}invite=");
    for byte in invite.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            query.push(char::from(byte));
        } else {
            query.push_str(&format!("%{byte:02X}"));
        }
    }
    query
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_sit_beside_the_websocket_path() {
        let root = HttpPages::new("ws://127.0.0.1:8080/ws").unwrap();
        assert_eq!(
            (root.authority.as_str(), root.prefix.as_str()),
            ("127.0.0.1:8080", "")
        );
        let prefixed = HttpPages::new("ws://play.example/checkers/ws/").unwrap();
        assert_eq!(prefixed.authority, "play.example:80");
        assert_eq!(prefixed.prefix, "/checkers");
        assert_eq!(HttpPages::new("http://localhost:9000").unwrap().prefix, "");
    }

    #[test]
    fn tls_and_other_urls_are_refused_by_name() {
        assert!(matches!(
            HttpPages::new("wss://play.example/ws"),
            Err(HttpError::Tls(_))
        ));
        for url in ["", "play.example", "ftp://play.example/", "ws:///ws"] {
            assert!(
                matches!(HttpPages::new(url), Err(HttpError::Url(_))),
                "{url:?}"
            );
        }
    }

    #[test]
    fn invites_are_written_into_the_query_safely() {
        let mut lobby = LobbyAddress::code("K7QP2DXM");
        assert_eq!(invite(&lobby, '?'), "");
        lobby.invite = Some("a-_9&x=1".to_owned());
        assert_eq!(invite(&lobby, '&'), "&invite=a-_9%26x%3D1");
    }
}
