//! The operator API: read a wallet and its ledger, grant points, list the
//! stored lobbies that could not be resumed and settle their stakes.
//!
//! It is served only on its own listener (`--admin-listen`), never on the
//! public one, and is guarded by a bearer token from configuration (off
//! without one). The token is checked before anything of the request is
//! read, and every answer, refusals included, is JSON
//! `{"error": CODE, "message": …}` or the documented success body.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::app::App;

/// The longest grant key accepted, in bytes (keys are kept for ever).
const MAX_GRANT_KEY_BYTES: usize = 200;

/// The most points one grant may add.
const MAX_GRANT: u64 = 1_000_000;

pub fn router(state: Arc<App>) -> Router {
    Router::new()
        .route("/api/admin/wallets/{account}", get(wallet))
        .route("/api/admin/wallets/{account}/grant", post(grant))
        .route("/api/admin/rooms/unresumable", get(unresumable))
        .route("/api/admin/rooms/{code}/settle", post(settle_unresumable))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "not_found", "no such endpoint") })
        .method_not_allowed_fallback(|| async {
            error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this endpoint takes another method",
            )
        })
        // A layer, not a check in each handler: it runs before the
        // handlers' extractors, so nothing of a request without the token
        // is parsed, and it guards the fallbacks too.
        .layer(middleware::from_fn_with_state(state.clone(), authorise))
        .with_state(state)
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(serde_json::json!({"error": code, "message": message})),
    )
        .into_response()
}

fn storage_unavailable(e: &impl std::fmt::Display) -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "storage_unavailable",
        &e.to_string(),
    )
}

/// Lets a request through only with the configured bearer token, compared
/// in constant time.
async fn authorise(State(state): State<Arc<App>>, request: Request, next: Next) -> Response {
    let Some(expected) = &state.settings.admin_token else {
        return error(
            StatusCode::NOT_FOUND,
            "admin_disabled",
            "the operator API is off",
        );
    };
    if bearer_matches(request.headers(), expected) {
        next.run(request).await
    } else {
        let mut refused = error(
            StatusCode::UNAUTHORIZED,
            "unauthorised",
            "a valid admin token is required",
        );
        refused.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        refused
    }
}

fn bearer_matches(headers: &HeaderMap, expected: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// A path segment that could not be read (say, invalid UTF-8 once decoded).
fn bad_path() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_path",
        "a path segment is not readable text",
    )
}

async fn wallet(
    State(state): State<Arc<App>>,
    account: Result<Path<String>, PathRejection>,
) -> Response {
    let Path(account) = match account {
        Ok(path) => path,
        Err(_) => return bad_path(),
    };
    match state.backends.wallets.wallet(&account).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => storage_unavailable(&e),
    }
}

#[derive(Debug, Deserialize)]
struct GrantBody {
    amount: u64,
    /// Idempotency key, per account: a grant to the same account with a
    /// key already used there does nothing.
    key: String,
}

/// Reads a grant body; the error is the `invalid_grant` message.
fn read_grant(body: &[u8]) -> Result<GrantBody, String> {
    let grant: GrantBody = serde_json::from_slice(body).map_err(|e| {
        // The kind of problem only: serde's own text quotes the input.
        let problem = match e.classify() {
            serde_json::error::Category::Io | serde_json::error::Category::Syntax => {
                "not valid JSON"
            }
            serde_json::error::Category::Eof => "the JSON ends too soon",
            serde_json::error::Category::Data => "a field is missing or of the wrong type",
        };
        format!("the body must be JSON {{\"amount\": N, \"key\": \"…\"}}: {problem}")
    })?;
    if grant.amount == 0 || grant.amount > MAX_GRANT {
        return Err("amount must be 1 to 1,000,000".into());
    }
    if grant.key.is_empty() || grant.key.len() > MAX_GRANT_KEY_BYTES {
        return Err(format!("key must be 1 to {MAX_GRANT_KEY_BYTES} bytes"));
    }
    Ok(grant)
}

/// The idempotency key a grant is stored under: the operator's key scoped
/// to the account, so one key may grant to many accounts, each once. The
/// account is escaped so that no two (account, key) pairs give one key.
fn scoped_grant_key(account: &str, key: &str) -> String {
    let account = account.replace('%', "%25").replace(':', "%3A");
    format!("{account}:{key}")
}

async fn grant(
    State(state): State<Arc<App>>,
    account: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let Path(account) = match account {
        Ok(path) => path,
        Err(_) => return bad_path(),
    };
    let parsed = match &body {
        Ok(bytes) => read_grant(bytes),
        Err(_) => Err("the body could not be read".to_owned()),
    };
    let body = match parsed {
        Ok(body) => body,
        Err(why) => return error(StatusCode::BAD_REQUEST, "invalid_grant", &why),
    };
    let key = scoped_grant_key(&account, &body.key);
    if let Err(e) = state
        .backends
        .wallets
        .grant(&account, body.amount, &key)
        .await
    {
        return storage_unavailable(&e);
    }
    match state.backends.wallets.wallet(&account).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => storage_unavailable(&e),
    }
}

/// At start, until the stored rooms without a live owner are taken back,
/// the unresumable list is not complete: the room endpoints say so (`503
/// starting`, retry after a second) rather than answer from part of it.
fn still_starting(state: &App) -> Option<Response> {
    if state.lifecycle.is_resumed() {
        return None;
    }
    let mut response = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "starting",
        "the stored rooms are still being taken back; ask again in a moment",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    Some(response)
}

async fn unresumable(State(state): State<Arc<App>>) -> Response {
    if let Some(starting) = still_starting(&state) {
        return starting;
    }
    let list = state.registry.unresumable();
    Json(serde_json::json!({ "rooms": list })).into_response()
}

/// Releases the stakes an unresumable lobby holds, as its record says
/// (idempotent: settling twice moves nothing the second time).
async fn settle_unresumable(
    State(state): State<Arc<App>>,
    code: Result<Path<String>, PathRejection>,
) -> Response {
    let Path(code) = match code {
        Ok(path) => path,
        Err(_) => return bad_path(),
    };
    if let Some(starting) = still_starting(&state) {
        return starting;
    }
    let stakes = state
        .registry
        .unresumable()
        .into_iter()
        .find(|u| u.code == code)
        .map(|u| u.stakes);
    let Some(stakes) = stakes else {
        return error(
            StatusCode::NOT_FOUND,
            "unknown_lobby",
            "no unresumable lobby has that code",
        );
    };
    let Some(stakes) = stakes else {
        return Json(serde_json::json!({"series": null, "paid": 0, "refunded": 0})).into_response();
    };
    match state
        .backends
        .wallets
        .settle(
            &stakes.series,
            &stakes.settlement,
            crate::wallet::utc_day(),
            0,
        )
        .await
    {
        Ok(settled) => {
            tracing::info!(room = %code, series = %stakes.series, paid = settled.paid, refunded = settled.refunded, "operator settled an unresumable lobby");
            Json(serde_json::json!({
                "series": stakes.series,
                "paid": settled.paid,
                "refunded": settled.refunded,
            }))
            .into_response()
        }
        Err(e) => storage_unavailable(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_keys_are_scoped_to_their_account_without_collisions() {
        assert_eq!(scoped_grant_key("a_ann", "seed-1"), "a_ann:seed-1");
        assert_ne!(
            scoped_grant_key("a_ann", "k"),
            scoped_grant_key("a_bob", "k")
        );
        // An account id may hold ':' (it is `a_` and the issuer's `sub`).
        assert_ne!(
            scoped_grant_key("a_x:y", "z"),
            scoped_grant_key("a_x", "y:z")
        );
        assert_ne!(
            scoped_grant_key("a_x%3Ay", "z"),
            scoped_grant_key("a_x:y", "z")
        );
    }

    #[test]
    fn grant_bodies_are_read_strictly_and_explained_without_echo() {
        assert!(read_grant(br#"{"amount": 5, "key": "k"}"#).is_ok());
        for bad in [
            &br#"{"amount": 0, "key": "k"}"#[..],
            br#"{"amount": 1000001, "key": "k"}"#,
            br#"{"amount": -5, "key": "k"}"#,
            br#"{"amount": 5, "key": ""}"#,
            br#"{"amount": 5}"#,
            br#"{"amount": "5", "key": "k"}"#,
            b"amount=5&key=k",
            b"",
        ] {
            let why = read_grant(bad).unwrap_err();
            assert!(!why.contains("1000001") && !why.contains("key=k"), "{why}");
        }
        let long = format!(r#"{{"amount": 5, "key": "{}"}}"#, "k".repeat(201));
        assert!(read_grant(long.as_bytes()).is_err());
    }
}
