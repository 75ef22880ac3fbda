use std::time::Duration;

/// Why a model call failed, classified for the caller's retry decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// A failure that may pass on retry: connection refused or reset, timeout, HTTP 5xx, a broken
    /// stream. The client already retried (bounded) before returning it.
    #[error("transient model error: {0}")]
    Transient(String),
    /// A failure that will not pass on retry: HTTP 4xx (bad request, unauthorized, unknown model),
    /// an unreadable response.
    #[error("model error: {0}")]
    Permanent(String),
    /// The transcript is longer than the model's context window (OpenAI code
    /// `context_length_exceeded`).
    #[error("context length exceeded: {0}")]
    ContextLength(String),
    /// HTTP 429 still returned after the retries; `retry_after` from the `retry-after` header.
    #[error("rate limited by the model provider{}: {message}", retry_after.map(|d| format!(" (retry after {}s)", d.as_secs())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration>, message: String },
    /// The model configuration cannot be used (e.g. the API key's environment variable is unset).
    #[error("model configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// Whether retrying the same request later may succeed (transient or rate limited).
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::Transient(_) | LlmError::RateLimited { .. })
    }
}
