//! The operator API: read a wallet and its ledger, grant points. Guarded by
//! a bearer token from configuration; off when none is set.

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
