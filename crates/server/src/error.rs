//! The one error type of the HTTP API: every failure leaves as
//! `{"error":{"code":"<stable_snake_case>","message":"…"}}` with the matching status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An API failure. Each variant maps to one HTTP status and one stable `code` string.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 `bad_request`, or a more precise code (`invalid_json`, `validation_failed`, …).
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    /// 401 `unauthorized`.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 `forbidden`.
    #[error("{0}")]
    Forbidden(String),
    /// 404 `not_found`. Also what another org's ids answer.
    #[error("{0}")]
    NotFound(String),
    /// 405 `method_not_allowed`.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 409 `conflict`, or a more precise code (`already_decided`).
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// 413 `payload_too_large`.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 415 `unsupported_media_type`.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 500 `internal`: the message is logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
    /// 503 `unavailable` (database unreachable, …).
    #[error("{0}")]
    Unavailable(String),
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::BadRequest { code: "bad_request", message: message.into() }
    }

    pub fn validation(message: impl Into<String>) -> Self {
        ApiError::BadRequest { code: "validation_failed", message: message.into() }
    }

    pub fn not_found(what: &str) -> Self {
        ApiError::NotFound(format!("{what} not found"))
    }

    pub fn internal(error: impl std::fmt::Display) -> Self {
        ApiError::Internal(error.to_string())
    }

    /// The HTTP status and the stable code.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest { code, .. } => (StatusCode::BAD_REQUEST, code),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed(_) => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Conflict { code, .. } => (StatusCode::CONFLICT, code),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::UnsupportedMediaType(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let message = match &self {
            ApiError::Internal(detail) => {
                tracing::error!(code, "internal error: {detail}");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        (status, Json(json!({"error": {"code": code, "message": message}}))).into_response()
    }
}

impl From<store::StoreError> for ApiError {
    fn from(error: store::StoreError) -> Self {
        use store::StoreError;
        match error {
            StoreError::NotFound(what) => ApiError::NotFound(format!("not found: {what}")),
            StoreError::Conflict(what) => ApiError::Conflict { code: "conflict", message: format!("conflict: {what}") },
            StoreError::Database(message) => {
                tracing::error!("database error: {message}");
                ApiError::Unavailable("the database is unavailable; nothing was changed".to_owned())
            }
            other => ApiError::internal(other),
        }
    }
}
