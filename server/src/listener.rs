//! The public listener: accepts TCP connections under a cap that keeps file
//! descriptors in reserve, serves each with HTTP/1.1 under a header-read
//! deadline (which also bounds the WebSocket handshake, an HTTP request),
//! and hands the router the peer's address.
//!
//! `axum::serve` does neither deadline nor cap, so the accept loop is ours;
//! hyper does the HTTP.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

use crate::app::App;
use crate::limits::{ClientAddr, HeldSlot};
use crate::metrics::METRICS;

/// Connections on the public listener beyond `--max-connections` that may
/// still be in HTTP (requests for pages, summaries, health, and upgrades
/// that will be answered 503): at most this many, or an eighth of the
/// file-descriptor limit when that is lower.
pub const HTTP_HEADROOM: usize = 1024;

/// File descriptors never used by the public listener: Redis connections,
/// the metrics and operator listeners, logs.
pub const FD_RESERVE: usize = 128;

/// The caps the file-descriptor limit allows: `(max_connections,
/// http_headroom)`, each at most what was asked. Raises the soft limit to
/// the hard one first. Lowering a cap the operator `chose` is a warning;
/// lowering the default is what it is documented to do, so only reported.
pub fn fit_to_fd_limit(
    max_connections: usize,
    chosen: bool,
    http_headroom: usize,
) -> (usize, usize) {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => usize::try_from(limit).unwrap_or(usize::MAX),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the file-descriptor limit");
            return (max_connections, http_headroom);
        }
    };
    let headroom = http_headroom.min(limit / 8).max(1);
    let room = limit.saturating_sub(FD_RESERVE + headroom).max(1);
    if max_connections > room {
        if chosen {
            tracing::warn!(
                fd_limit = limit,
                max_connections,
                lowered_to = room,
                "the file-descriptor limit is too low for --max-connections; lowered it (raise `ulimit -n` to serve more)"
            );
        } else {
            tracing::info!(
                fd_limit = limit,
                default = max_connections,
                max_connections = room,
                "connection cap set by the file-descriptor limit (raise `ulimit -n` to serve more)"
            );
        }
        (room, headroom)
    } else {
        (max_connections, headroom)
    }
}

/// Serves HTTP on `listener` until `stop` resolves; then stops accepting,
/// lets every connection finish the request it is in (an upgraded
/// WebSocket has left HTTP by then and is not waited for) and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    state: Arc<App>,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let settings = state.settings.clone();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(settings.header_read_timeout)
        // Request heads larger than this are answered 431.
        .max_buf_size(64 * 1024);
    let http = Arc::new(http);
    // Connections not yet upgraded (or done); shutdown waits for zero.
    let (open_tx, mut open_rx) = watch::channel(0usize);
    let open_tx = Arc::new(open_tx);
    let (closing_tx, closing_rx) = watch::channel(false);
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors (or memory): wait for some to
                    // be given back instead of spinning. Errors of a single
                    // connection (reset before accept) need no wait.
                    if !is_per_connection(&e) {
                        tracing::warn!(error = %e, "accept failed; pausing");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Some(held) = admit(&state, &open_tx, peer) else {
            drop(tcp);
            continue;
        };
        if let Err(e) = tcp.set_nodelay(settings.tcp_nodelay) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        tokio::spawn(serve_connection(
            tcp,
            peer,
            app.clone(),
            http.clone(),
            held,
            closing_rx.clone(),
        ));
    }
    drop(listener);
    let _ = closing_tx.send(true);
    let _ = open_rx.wait_for(|n| *n == 0).await;
    Ok(())
}

/// Whether an accept error concerns one connection only.
fn is_per_connection(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::ConnectionRefused | K::ConnectionAborted | K::ConnectionReset
    )
}

/// What an admitted connection holds until it closes: its place under the
/// listener's cap and under its address's.
struct Admitted {
    open: Arc<watch::Sender<usize>>,
    _address: Option<HeldSlot<ClientAddr>>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.open.send_modify(|n| *n -= 1);
        METRICS.http_connections_open.dec();
    }
}

/// Takes a place for a new connection from `peer`, or `None` (the socket
/// is closed at once) when the listener or the peer's address is full.
/// WebSocket connections leave the count when they upgrade: they are
/// under `--max-connections` (and the address's WebSocket cap) from then.
fn admit(state: &Arc<App>, open: &Arc<watch::Sender<usize>>, peer: SocketAddr) -> Option<Admitted> {
    let limits = &state.settings.limits;
    let websockets = state.lifecycle.connections();
    let cap = state.settings.max_connections + state.settings.http_headroom;
    if *open.borrow() + websockets >= cap {
        METRICS
            .edge_refusals
            .with_label_values(&["connections_cap"])
            .inc();
        return None;
    }
    // A trusted proxy carries many clients: they are told apart (and
    // capped) by the address it names, once the request is read.
    let address = if limits.is_trusted(peer.ip()) {
        None
    } else {
        match state.limits.accept(ClientAddr::new(peer.ip())) {
            Some(slot) => Some(slot),
            None => {
                METRICS
                    .edge_refusals
                    .with_label_values(&["address_connections_cap"])
                    .inc();
                return None;
            }
        }
    };
    open.send_modify(|n| *n += 1);
    METRICS.http_connections_open.inc();
    Some(Admitted {
        open: open.clone(),
        _address: address,
    })
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    app: Router,
    http: Arc<hyper::server::conn::http1::Builder>,
    held: Admitted,
    mut closing: watch::Receiver<bool>,
) {
    let app = app.map_request(move |mut request: axum::http::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    });
    let connection = http
        .serve_connection(TokioIo::new(tcp), TowerToHyperService::new(app))
        .with_upgrades();
    tokio::pin!(connection);
    let closed = async move {
        let _ = closing.wait_for(|c| *c).await;
    };
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = closed => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, %peer, "HTTP connection ended with an error");
    }
    drop(held);
}
