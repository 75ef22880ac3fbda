//! The HTTP API (DESIGN §4). Only this crate knows routes.

pub mod admin;
pub mod confirmations;
pub mod runs;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;

use crate::error::ApiError;
use crate::state::AppState;

/// The largest request body accepted (1 MiB); larger ones answer 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "Tollgate", description = "Runtime enforcement for LLM agents: hooks, approvals, audit."),
    paths(
        admin::create_org, admin::get_org, admin::patch_org, admin::create_user, admin::create_api_key,
        admin::create_channel, admin::create_connector, admin::get_connector, admin::create_agent, admin::get_agent,
        runs::chat, runs::get_run, runs::run_events, runs::cancel_run, runs::get_tool_execution,
        confirmations::list_confirmations, confirmations::get_confirmation, confirmations::decide_confirmation,
        confirmations::feishu_callback, confirmations::connector_calls,
    ),
    tags((name = "orgs"), (name = "channels"), (name = "connectors"), (name = "agents"), (name = "runs"),
        (name = "confirmations"), (name = "audit"))
)]
pub struct ApiDoc;

/// The whole application: API routes, `/healthz`, `/metrics`, the OpenAPI document and the
/// demo upstream.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/orgs", post(admin::create_org))
        .route("/orgs/{id}", get(admin::get_org).patch(admin::patch_org))
        .route("/orgs/{id}/users", post(admin::create_user))
        .route("/users/{id}/api-keys", post(admin::create_api_key))
        .route("/channels", post(admin::create_channel))
        .route("/channels/{id}/feishu/callback", post(confirmations::feishu_callback))
        .route("/connectors", post(admin::create_connector))
        .route("/connectors/{id}", get(admin::get_connector))
        .route("/agents", post(admin::create_agent))
        .route("/agents/{id}", get(admin::get_agent))
        .route("/agents/{id}/chat", post(runs::chat))
        .route("/runs/{id}", get(runs::get_run))
        .route("/runs/{id}/events", get(runs::run_events))
        .route("/runs/{id}/cancel", post(runs::cancel_run))
        .route("/runs/{id}/tool-executions/{tool_call_id}", get(runs::get_tool_execution))
        .route("/confirmations", get(confirmations::list_confirmations))
        .route("/confirmations/{id}", get(confirmations::get_confirmation))
        .route("/confirmations/{id}/decision", post(confirmations::decide_confirmation))
        .route("/audit/connector-calls", get(confirmations::connector_calls))
        .route("/openapi.json", get(openapi))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/metrics", get(metrics))
        .nest("/api/v1", api)
        .nest_service(crate::demo_upstream::PREFIX, crate::demo_upstream::router())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
        .layer(TraceLayer::new_for_http())
}

async fn openapi() -> impl IntoResponse {
    Json(ApiDoc::openapi())
}

async fn metrics(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let pending = state.store().count_pending_confirmations().await?;
    Ok(([(CONTENT_TYPE, "text/plain; version=0.0.4")], state.metrics().render(pending)))
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed("this route does not take that method".to_owned())
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".to_owned())
}
