//! Extractors that turn bad input into [`ApiError`]s with the JSON error shape.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// `axum::Json`, with rejections answered in the API's error shape: 415 `unsupported_media_type`
/// without `Content-Type: application/json`, 400 `invalid_json` for a syntax error, 400
/// `invalid_body` for a body that does not fit the shape (unknown fields included), 413 for a
/// body over the limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            ApiError::UnsupportedMediaType("expected `Content-Type: application/json`".to_owned())
        }
        JsonRejection::JsonSyntaxError(e) => {
            ApiError::BadRequest { code: "invalid_json", message: format!("malformed JSON: {}", e.body_text()) }
        }
        JsonRejection::JsonDataError(e) => ApiError::BadRequest { code: "invalid_body", message: e.body_text() },
        JsonRejection::BytesRejection(e) => {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge("request body too large".to_owned())
            } else {
                ApiError::bad_request(e.body_text())
            }
        }
        other => ApiError::bad_request(other.body_text()),
    }
}
