//! The operator API: read a wallet and its ledger, grant points, list the
//! stored lobbies that could not be resumed and settle their stakes. Guarded
//! by a bearer token from configuration; off when none is set.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::AppState;

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/admin/wallets/{account}", get(wallet))
        .route("/api/admin/wallets/{account}/grant", post(grant))
        .route("/api/admin/rooms/unresumable", get(unresumable))
        .route("/api/admin/rooms/{code}/settle", post(settle_unresumable))
        .with_state(state)
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(serde_json::json!({"error": code, "message": message})),
    )
        .into_response()
}

/// Compares the bearer token in constant time.
fn authorised(state: &AppState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let Some(expected) = &state.settings.admin_token else {
        return Err(Box::new(error(
            StatusCode::NOT_FOUND,
            "admin_disabled",
            "the operator API is off",
        )));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let same = given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        Ok(())
    } else {
        Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            "unauthorised",
            "a valid admin token is required",
        )))
    }
}

async fn wallet(
    State(state): State<Arc<AppState>>,
    Path(account): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorised(&state, &headers) {
        return *r;
    }
    match state.wallets.wallet(&account).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            &e.to_string(),
        ),
    }
}

#[derive(Debug, Deserialize)]
struct GrantBody {
    amount: u64,
    /// Idempotency key: a grant with a key already used does nothing.
    key: String,
}

async fn grant(
    State(state): State<Arc<AppState>>,
    Path(account): Path<String>,
    headers: HeaderMap,
    Json(body): Json<GrantBody>,
) -> Response {
    if let Err(r) = authorised(&state, &headers) {
        return *r;
    }
    if body.amount == 0 || body.amount > 1_000_000 || body.key.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "amount must be 1 to 1,000,000 and key non-empty",
        );
    }
    if let Err(e) = state.wallets.grant(&account, body.amount, &body.key).await {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            &e.to_string(),
        );
    }
    match state.wallets.wallet(&account).await {
        Ok(view) => Json(view).into_response(),
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            &e.to_string(),
        ),
    }
}

async fn unresumable(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorised(&state, &headers) {
        return *r;
    }
    let list = state
        .unresumable
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    Json(serde_json::json!({ "rooms": list })).into_response()
}

/// Releases the stakes an unresumable lobby holds, as its record says
/// (idempotent: settling twice moves nothing the second time).
async fn settle_unresumable(
    State(state): State<Arc<AppState>>,
    Path(code): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorised(&state, &headers) {
        return *r;
    }
    let stakes = state
        .unresumable
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|u| u.code == code)
        .map(|u| u.stakes.clone());
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
        .wallets
        .settle(&stakes.series, &stakes.settlement, crate::wallet::utc_day())
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
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            &e.to_string(),
        ),
    }
}
