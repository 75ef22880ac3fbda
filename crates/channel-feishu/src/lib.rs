//! Feishu/Lark as an approval channel: the `tenant_access_token` cache, sending and patching
//! interactive cards, and verifying, decrypting and parsing callbacks as pure functions.
//!
//! - [`FeishuChannel`] implements [`channel_core::ApprovalChannel`] over a [`FeishuClient`].
//! - [`approval_card`] / [`final_card`] build card JSON (schema 2.0) from the vendor-free types.
//! - [`decode_callback`] turns headers + raw body + [`CallbackSecrets`] + now into a
//!   [`Callback`] or a [`CallbackError`] (with [`CallbackError::http_status`]);
//!   [`challenge_response`] and [`card_action_response`] build the answers.
//!
//! No axum and no database here: the server owns routes and de-duplication.

mod callback;
mod card;
mod channel;
mod client;
mod config;
pub mod crypto;

pub use callback::{
    Callback, CallbackError, CardAction, HEADER_NONCE, HEADER_SIGNATURE, HEADER_TIMESTAMP, MAX_BODY_BYTES,
    MAX_CLOCK_SKEW_SECS, ToastKind, card_action_response, challenge_response, decode_callback,
};
pub use card::{MAX_CARD_BYTES, approval_card, final_card};
pub use channel::FeishuChannel;
pub use client::{
    FeishuClient, RATE_LIMIT_CODE, RATE_LIMIT_RESET_HEADER, RetryPolicy, TOKEN_INVALID_CODES, TOKEN_REFRESH_MARGIN,
    default_http_client, idempotency_key,
};
pub use config::{CallbackSecrets, FEISHU_BASE_URL, FeishuConfig, LARK_BASE_URL};
