//! The HTTP front: the WebSocket endpoint (with subprotocol negotiation),
//! lobby summaries behind invite links (the web client's page for
//! browsers), finished games as PDN, the running game position by position,
//! health.

use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use jumpgate_protocol::Subprotocol;

use crate::app::App;
use crate::limits::ClientAddr;
use crate::room::{RoomHandle, RoomStopped};

/// Frames larger than this close the connection; between the protocol's
/// 16 KiB limit and this, a message is refused with `message_too_large` and
/// the connection stays open.
const MAX_FRAME_BYTES: usize = 64 * 1024;

pub fn router(state: Arc<App>) -> Router {
    let timeout = state.settings.http_request_timeout;
    // What a client may ask for, each request counted against its
    // address's rate.
    let public = Router::new()
        .route("/ws", get(upgrade))
        .route("/r/{code}", get(lobby_summary))
        .route("/r/{code}/games.pdn", get(lobby_games))
        .route("/r/{code}/positions", get(lobby_positions))
        .route("/api/leaderboards/{rule_set}", get(leaderboard))
        .route("/api/my-games", get(my_games))
        // The operator API is not here: it has a listener of its own
        // (`crate::admin`, `--admin-listen`).
        .merge(crate::web::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limit_rate,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            after_resume,
        ));
    // The balancer's and Prometheus's: never rate limited. With an internal
    // listener (`--metrics-listen`) the metrics are served only there, so
    // nothing but the private network sees them.
    let mut probes = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready));
    if state.settings.metrics_listen.is_none() {
        probes = probes.route("/metrics", get(metrics));
    }
    public
        .merge(probes)
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            timeout,
        ))
        // Requests at debug level; a 5xx (a refusal at the connection cap,
        // a timeout) is the server working as designed, counted in the
        // metrics, not an error to log once per request.
        .layer(
            tower_http::trace::TraceLayer::new_for_http().on_failure(
                tower_http::trace::DefaultOnFailure::new().level(tracing::Level::DEBUG),
            ),
        )
        .with_state(state)
}

/// Refuses a request past its client address's rate with `429`, the JSON
/// error body and `Retry-After`.
async fn limit_rate(
    State(state): State<Arc<App>>,
    client: ClientAddr,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match state.limits.http_request(client) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            crate::metrics::METRICS
                .edge_refusals
                .with_label_values(&["http_rate"])
                .inc();
            too_many(wait, "too many requests from your address; slow down")
        }
    }
}

/// `429 Too Many Requests` with `Retry-After` and the error body.
fn too_many(wait: crate::limits::TryAgain, message: &str) -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, wait.secs().to_string())],
        Json(serde_json::json!({"error": "rate_limited", "message": message})),
    )
        .into_response()
}

/// A query parameter as a number, read leniently: anything that is not an
/// integer counts as absent, and integers are clamped into `u32`.
fn number_param(params: &[(String, String)], name: &str) -> Option<u32> {
    let value = params.iter().find(|(n, _)| n == name)?.1.trim();
    let n: i128 = value.parse().ok()?;
    Some(n.clamp(0, i128::from(u32::MAX)) as u32)
}

/// A public leaderboard page: names and scores only, read by rank (see
/// `crate::leaderboard`), and cacheable.
async fn leaderboard(
    State(state): State<Arc<App>>,
    Path(rule_set): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let page = number_param(&params, "page").unwrap_or(1);
    let per_page = number_param(&params, "per_page").unwrap_or(25);
    let Ok(rs) = rule_set.parse::<crate::rules::Variant>() else {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": "unknown_rule_set", "message": "no such rule set"})),
        )
            .into_response();
    };
    match state
        .backends
        .leaderboards
        .page(rs.name(), page, per_page)
        .await
    {
        // A board changes only when a ranked game ends, and anyone may
        // ask for it: caches and browsers may keep a page briefly, which
        // bounds what a busy page costs Redis however often it is asked.
        Ok(page) => ([(header::CACHE_CONTROL, LEADERBOARD_CACHE)], Json(page)).into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CACHE_CONTROL, "no-store")],
            Json(serde_json::json!({"error": "storage_unavailable", "message": e.to_string()})),
        )
            .into_response(),
    }
}

/// How long a leaderboard page may be reused by any cache: a few seconds
/// fresh, then served stale while it is fetched again in the background.
const LEADERBOARD_CACHE: &str = "public, max-age=10, stale-while-revalidate=30";

/// What the internal `--metrics-listen` address serves: `/metrics`, and
/// `/healthz` and `/readyz` for probes that must answer even when the
/// public listener is full.
pub fn internal_router(state: Arc<App>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(state)
}

async fn metrics() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        crate::metrics::METRICS.render(),
    )
}

/// Holds a request until the stored rooms without a live owner are back
/// (at start), so none is answered as if a lobby did not exist; the probes
/// answer meanwhile (`/healthz` yes, `/readyz` not yet).
async fn after_resume(
    State(state): State<Arc<App>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut resumed = state.lifecycle.resumed();
    let _ = resumed.wait().await;
    next.run(request).await
}

/// Ready to serve: the stored rooms are back, not shutting down, and the
/// store answers.
async fn ready(State(state): State<Arc<App>>) -> Response {
    if !state.lifecycle.is_resumed() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "starting: taking the stored rooms back\n",
        )
            .into_response();
    }
    if state.lifecycle.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: handing rooms over\n",
        )
            .into_response();
    }
    match state.backends.store.ping().await {
        Ok(()) => "ready\n".into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("store: {e}\n")).into_response(),
    }
}

/// Picks the first subprotocol the client offers that we speak: the client
/// lists them in its order of preference, version and encoding together.
fn choose_subprotocol(headers: &HeaderMap) -> Option<Subprotocol> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|p| Subprotocol::from_name(p.trim()))
}

async fn upgrade(
    State(state): State<Arc<App>>,
    client: ClientAddr,
    headers: HeaderMap,
    Query(params): Query<Vec<(String, String)>>,
    ws: WebSocketUpgrade,
) -> Response {
    // The room the client names for the balancer (`/ws?room=CODE`): only
    // for that room may this connection make another instance hand one
    // over (see `ownership::acquire`).
    let named = params
        .iter()
        .find(|(name, _)| name == "room")
        .map(|(_, value)| value.to_ascii_uppercase());
    // Past the cap a new connection is refused before the upgrade, and the
    // health, readiness and metrics endpoints still answer.
    let Some(slot) =
        crate::net::ConnectionSlot::take(&state.lifecycle, state.settings.max_connections)
    else {
        crate::metrics::METRICS
            .edge_refusals
            .with_label_values(&["websocket_cap"])
            .inc();
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            "the server is at its connection limit; retry shortly\n",
        )
            .into_response();
    };
    // ... and so is one past its address's share.
    let Some(address_slot) = state.limits.connect(client) else {
        crate::metrics::METRICS
            .edge_refusals
            .with_label_values(&["address_connections_cap"])
            .inc();
        return too_many(
            crate::limits::TryAgain(std::time::Duration::from_secs(5)),
            "too many connections from your address; close one first",
        );
    };
    let Some(subprotocol) = choose_subprotocol(&headers) else {
        return (
            StatusCode::BAD_REQUEST,
            "offer a WebSocket subprotocol: jumpgate.v2.msgpack, jumpgate.v2.json, \
             jumpgate.v1.msgpack or jumpgate.v1.json\n",
        )
            .into_response();
    };
    let admission = crate::net::Admission {
        subprotocol,
        named_room: named,
        client,
        slot,
        address_slot,
    };
    ws.protocols([subprotocol.name()])
        .max_message_size(MAX_FRAME_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        // Small buffers keep an idle connection cheap; permessage-deflate
        // is not offered (tungstenite does not implement it). tungstenite
        // zeroes and keeps the whole read buffer from the first read on;
        // client messages are tens of bytes, and a larger one grows the
        // buffer for itself.
        .read_buffer_size(1024)
        .write_buffer_size(4 * 1024)
        .max_write_buffer_size(256 * 1024)
        .on_upgrade(move |socket| crate::net::serve(socket, state, admission))
}

/// `GET /api/my-games`: the unfinished games of the identity whose token
/// (a guest's or an account's) is in `Authorization: Bearer …`.
async fn my_games(State(state): State<Arc<App>>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            // The scheme's name is case-insensitive (RFC 9110).
            let (scheme, token) = v.trim_start().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(token)
        })
        .map(str::trim);
    let identity = match token.map(|t| state.identities.verify(t)) {
        Some(Ok(identity)) => identity,
        Some(Err(_)) | None => {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                Json(serde_json::json!({
                    "error": "invalid_token",
                    "message": "send the token from your welcome as Authorization: Bearer TOKEN",
                })),
            )
                .into_response();
        }
    };
    match state.my_games(&identity).await {
        Ok(games) => (
            [(header::CACHE_CONTROL, "no-store")],
            Json(serde_json::json!({ "games": games })),
        )
            .into_response(),
        Err(refusal) => try_again(&refusal),
    }
}

/// The `invite` query parameter, as invite links carry it
/// (`/r/{CODE}?invite=…`; see `room::view`).
fn invite_param(params: &[(String, String)]) -> Option<String> {
    params
        .iter()
        .find(|(name, _)| name == "invite")
        .map(|(_, value)| value.clone())
}

/// The lobby's JSON summary for API clients; the web client's page for
/// browsers (see [`crate::web::wants_json`]), the same page whatever the
/// code. An invite-only lobby asked without its `?invite=` answers exactly
/// as a code without a lobby.
async fn lobby_summary(
    State(state): State<Arc<App>>,
    Path(code): Path<String>,
    RawQuery(query): RawQuery,
    Query(params): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    if !crate::web::wants_json(&headers, query.as_deref()) {
        return crate::web::index(headers).await;
    }
    let invite = invite_param(&params);
    match ask_room(&state, &code, |room| async move {
        room.summary(None, invite).await
    })
    .await
    {
        Ok(summary) => Json(summary).into_response(),
        Err(response) => response,
    }
}

/// The lobby's finished games as PDN, behind the same invite rule as its
/// summary.
async fn lobby_games(
    State(state): State<Arc<App>>,
    Path(code): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let invite = invite_param(&params);
    match ask_room(
        &state,
        &code,
        |room| async move { room.games(invite).await },
    )
    .await
    {
        Ok(games) => (
            [(header::CONTENT_TYPE, "application/x-pdn; charset=utf-8")],
            games.join("\n"),
        )
            .into_response(),
        Err(response) => response,
    }
}

/// The current game's position after every ply, replayed by the rules
/// engine, behind the same invite rule as the summary: a page that came in
/// mid-game shows the moves played before it arrived. The room only hands
/// over its moves; the replay runs on a blocking thread, not in the room.
async fn lobby_positions(
    State(state): State<Arc<App>>,
    Path(code): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let invite = invite_param(&params);
    let replay = match ask_room(
        &state,
        &code,
        |room| async move { room.positions(invite).await },
    )
    .await
    {
        Ok(replay) => replay,
        Err(response) => return response,
    };
    match tokio::task::spawn_blocking(move || replay.replay()).await {
        Ok(positions) => ([(header::CACHE_CONTROL, "no-store")], Json(positions)).into_response(),
        Err(error) => {
            tracing::error!(%code, %error, "replaying a game's positions failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Asks the room with this code (taken over if it runs elsewhere) and
/// waits for its answer. No room, a room that stopped, and a room that
/// does not show itself to this request (`None`) all answer [`not_found`].
async fn ask_room<T, F>(
    state: &Arc<App>,
    code: &str,
    ask: impl FnOnce(RoomHandle) -> F,
) -> Result<T, Response>
where
    F: std::future::Future<Output = Result<Option<T>, RoomStopped>>,
{
    // A code exactly as issued (any case): the balancer hashes only those,
    // so a padded one could reach an instance the room's players do not,
    // and make the room move back and forth.
    if code.trim() != code {
        return Err(not_found());
    }
    match state.ownership.ask_room(code, true, ask).await {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => Err(not_found()),
        Err(refusal) => Err(try_again(&refusal)),
    }
}

/// The room exists but cannot be served this moment (it is moving
/// between instances, or its owner cannot be read): retryable.
fn try_again(refusal: &crate::outbound::Refusal) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        Json(serde_json::json!({"error": refusal.code.as_str(), "message": refusal.message})),
    )
        .into_response()
}

/// What a code without a lobby gets, word for word what a WebSocket
/// `join_lobby` gets.
fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(serde_json::json!({
            "error": "unknown_lobby",
            "message": crate::lobby::NO_SUCH_LOBBY,
        })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};
    use jumpgate_protocol::{Encoding, Subprotocol};

    use super::choose_subprotocol;

    fn offered(lines: &[&str]) -> Option<Subprotocol> {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(
                header::SEC_WEBSOCKET_PROTOCOL,
                HeaderValue::from_str(line).unwrap(),
            );
        }
        choose_subprotocol(&headers)
    }

    #[test]
    fn the_clients_first_choice_we_speak_wins() {
        assert_eq!(
            offered(&["jumpgate.v2.msgpack, jumpgate.v1.msgpack"]),
            Some(Subprotocol::v2(Encoding::MsgPack))
        );
        assert_eq!(
            offered(&["jumpgate.v1.json, jumpgate.v2.json"]),
            Some(Subprotocol::v1(Encoding::Json))
        );
        assert_eq!(
            offered(&["jumpgate.v3.msgpack", "jumpgate.v2.json"]),
            Some(Subprotocol::v2(Encoding::Json))
        );
        assert_eq!(offered(&["chat, jumpgate.v9.json"]), None);
        assert_eq!(offered(&[]), None);
    }
}
