//! The Tollgate server: the HTTP API, configuration and wiring of every other crate. The only crate
//! that knows HTTP routes.

use axum::routing::get;
use axum::{Json, Router};

/// The HTTP application.
pub fn app() -> Router {
    Router::new().route("/healthz", get(|| async { Json(serde_json::json!({"status": "ok"})) }))
}

/// Serves [`app`] on `listener` until the process is asked to stop (Ctrl-C).
pub async fn serve(listener: tokio::net::TcpListener) {
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    if let Err(error) = axum::serve(listener, app()).with_graceful_shutdown(shutdown).await {
        tracing::error!("server stopped: {error}");
    }
}
