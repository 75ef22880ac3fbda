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

/// `axum::extract::Query`, with rejections (unknown or malformed parameters) answered as 400
/// `invalid_query` in the API's error shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::BadRequest { code: "invalid_query", message: rejection.body_text() }),
        }
    }
}

/// The raw body, with a body over the limit answered as 413 in the API's error shape.
#[derive(Debug, Clone, Default)]
pub struct ApiBytes(pub axum::body::Bytes);

impl<S> FromRequest<S> for ApiBytes
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::body::Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(ApiBytes(bytes)),
            Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge("request body too large".to_owned()))
            }
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}
