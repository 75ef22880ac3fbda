//! The outbound open-platform client: `tenant_access_token` cache, sending and patching messages,
//! rate-limit and token-invalid retries.
//!
//! Source: Feishu open-platform docs — `auth/v3/tenant_access_token/internal` (fields at top
//! level, `expire` in seconds), `im/v1/messages` (create, `uuid` idempotency for 1 hour; patch for
//! `update_multi` cards), error codes 99991663/99991664/99991671 (token invalid) and 99991400 /
//! HTTP 429 with `x-ogw-ratelimit-reset` (seconds) for rate limits.

use std::time::Duration;

use channel_core::ChannelError;
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::config::FeishuConfig;

const CHANNEL: &str = "feishu";
/// Tokens are refreshed this long (3 minutes) before Feishu says they expire.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(180);
/// Codes meaning "the tenant access token is invalid or expired": evict it and retry once.
pub const TOKEN_INVALID_CODES: [i64; 3] = [99_991_663, 99_991_664, 99_991_671];
/// The "too many requests" code (also sent as HTTP 429).
pub const RATE_LIMIT_CODE: i64 = 99_991_400;
/// The rate-limit header: seconds until the window resets.
pub const RATE_LIMIT_RESET_HEADER: &str = "x-ogw-ratelimit-reset";
/// Longest idempotency key Feishu accepts in `uuid`, in characters.
const MAX_UUID_CHARS: usize = 50;

/// How rate-limited requests are retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after a rate-limit answer before giving up with [`ChannelError::RateLimited`].
    pub max_rate_limit_retries: u32,
    /// The longest single wait, whatever `x-ogw-ratelimit-reset` says.
    pub max_wait: Duration,
    /// The wait when a rate-limit answer has no (readable) reset header.
    pub default_wait: Duration,
}

impl Default for RetryPolicy {
    /// 3 retries, waits capped at 10 s, 1 s when the header is missing.
    fn default() -> Self {
        RetryPolicy {
            max_rate_limit_retries: 3,
            max_wait: Duration::from_secs(10),
            default_wait: Duration::from_secs(1),
        }
    }
}

/// A Feishu/Lark open-platform client for one app and one chat. Cheap to share behind an `Arc`;
/// all methods take `&self`.
#[derive(Debug)]
pub struct FeishuClient {
    http: reqwest::Client,
    config: FeishuConfig,
    base: Url,
    retry: RetryPolicy,
    /// The cached token. Held across a refresh, so concurrent callers wait for one fetch.
    token: Mutex<Option<CachedToken>>,
}

#[derive(Debug, Clone)]
struct CachedToken {
    value: String,
    refresh_at: Instant,
}

#[derive(Debug, Deserialize)]
struct Envelope {
    code: i64,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    data: Value,
    #[serde(default)]
    tenant_access_token: Option<String>,
    #[serde(default)]
    expire: Option<u64>,
}

/// A reqwest client for production use: rustls with the `ring` provider (installed as the process
/// default if none is), platform certificate verification, 5 s connect and 15 s total timeouts.
///
/// # Errors
/// [`ChannelError::Transport`] if the TLS backend cannot be initialised.
pub fn default_http_client() -> Result<reqwest::Client, ChannelError> {
    // Fails only when a provider is already installed, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|e| transport(&e))
}

/// The `uuid` idempotency key for a confirmation's card: `tg-<confirmation_id>`, or `tg-` + 40
/// hex chars of its SHA-256 when that would exceed Feishu's 50 characters.
pub fn idempotency_key(confirmation_id: &str) -> String {
    let key = format!("tg-{confirmation_id}");
    if key.chars().count() <= MAX_UUID_CHARS && key.is_ascii() {
        return key;
    }
    let digest = hex::encode(Sha256::digest(confirmation_id.as_bytes()));
    format!("tg-{}", &digest[..40])
}

impl FeishuClient {
    /// A client with the default [`RetryPolicy`].
    ///
    /// # Errors
    /// [`ChannelError::Config`] when `app_id`, `app_secret`, `verification_token` or `chat_id` is
    /// empty, or `base_url` is not an http(s) URL.
    pub fn new(config: FeishuConfig, http: reqwest::Client) -> Result<Self, ChannelError> {
        Self::with_retry_policy(config, http, RetryPolicy::default())
    }

    /// Like [`FeishuClient::new`] with an explicit retry policy.
    ///
    /// # Errors
    /// As [`FeishuClient::new`].
    pub fn with_retry_policy(
        config: FeishuConfig,
        http: reqwest::Client,
        retry: RetryPolicy,
    ) -> Result<Self, ChannelError> {
        for (name, value) in [
            ("app_id", &config.app_id),
            ("app_secret", &config.app_secret),
            ("verification_token", &config.verification_token),
            ("chat_id", &config.chat_id),
        ] {
            if value.trim().is_empty() {
                return Err(ChannelError::Config(format!("feishu: `{name}` is empty")));
            }
        }
        let base = Url::parse(config.base_url())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
            .ok_or_else(|| {
                ChannelError::Config(format!("feishu: `base_url` {:?} is not an http(s) URL", config.base_url()))
            })?;
        Ok(FeishuClient { http, config, base, retry, token: Mutex::new(None) })
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &FeishuConfig {
        &self.config
    }

    /// A valid `tenant_access_token`, from the cache or freshly fetched. Cached until
    /// [`TOKEN_REFRESH_MARGIN`] before its `expire`; one fetch at a time however many callers.
    ///
    /// # Errors
    /// Feishu's `code`/`msg` as [`ChannelError::Api`], transport failures, exhausted rate limits.
    pub async fn tenant_access_token(&self) -> Result<String, ChannelError> {
        let mut cached = self.token.lock().await;
        if let Some(token) = cached.as_ref().filter(|t| Instant::now() < t.refresh_at) {
            return Ok(token.value.clone());
        }
        let body = json!({ "app_id": self.config.app_id, "app_secret": self.config.app_secret });
        let url = self.url(&["auth", "v3", "tenant_access_token", "internal"]);
        let env = self.send_with_retries(Method::POST, url, &body, None).await?;
        let value = env
            .tenant_access_token
            .filter(|t| !t.is_empty())
            .ok_or_else(|| transport_msg("token answer without `tenant_access_token`"))?;
        let lifetime = Duration::from_secs(env.expire.unwrap_or(0));
        let token = CachedToken {
            value: value.clone(),
            refresh_at: Instant::now() + lifetime.saturating_sub(TOKEN_REFRESH_MARGIN),
        };
        *cached = Some(token);
        Ok(value)
    }

    /// Posts an interactive card to the configured chat (`receive_id_type=chat_id`, `content` =
    /// the card as a JSON string, `uuid` = `idempotency_key`); returns `data.message_id`.
    ///
    /// # Errors
    /// As [`FeishuClient::call`].
    pub async fn send_card(&self, card: &Value, idempotency_key: Option<&str>) -> Result<String, ChannelError> {
        let mut body = json!({
            "receive_id": self.config.chat_id,
            "msg_type": "interactive",
            "content": card.to_string(),
        });
        if let Some(key) = idempotency_key {
            body["uuid"] = Value::String(key.to_owned());
        }
        self.create_message(&body).await
    }

    /// Posts a plain text message to the configured chat; returns `data.message_id`.
    ///
    /// # Errors
    /// As [`FeishuClient::call`].
    pub async fn send_text(&self, text: &str) -> Result<String, ChannelError> {
        let body = json!({
            "receive_id": self.config.chat_id,
            "msg_type": "text",
            "content": json!({ "text": text }).to_string(),
        });
        self.create_message(&body).await
    }

    /// Replaces the card of `message_id` for everyone (`PATCH im/v1/messages/{message_id}`). Only
    /// cards sent by this app with `update_multi = true`, younger than 14 days.
    ///
    /// # Errors
    /// As [`FeishuClient::call`].
    pub async fn patch_card(&self, message_id: &str, card: &Value) -> Result<(), ChannelError> {
        let url = self.url(&["im", "v1", "messages", message_id]);
        self.call(Method::PATCH, url, &json!({ "content": card.to_string() })).await.map(|_| ())
    }

    /// One authenticated API call: bearer token from the cache, JSON body, `data` of the answer.
    /// A token-invalid code evicts the token and retries once with a fresh one; rate limits wait
    /// `x-ogw-ratelimit-reset` seconds (bounded by the [`RetryPolicy`]).
    ///
    /// # Errors
    /// [`ChannelError::Api`] with Feishu's `code` and `msg`; [`ChannelError::RateLimited`] when
    /// retries run out; [`ChannelError::Transport`] when the request fails or the answer is not
    /// Feishu's JSON envelope.
    pub async fn call(&self, method: Method, url: Url, body: &Value) -> Result<Value, ChannelError> {
        let mut token = self.tenant_access_token().await?;
        match self.send_with_retries(method.clone(), url.clone(), body, Some(&token)).await {
            Err(ChannelError::Api { code, .. }) if TOKEN_INVALID_CODES.contains(&code) => {
                tracing::debug!(code, "feishu token rejected; refreshing and retrying once");
                self.evict(&token).await;
                token = self.tenant_access_token().await?;
                self.send_with_retries(method, url, body, Some(&token)).await.map(|env| env.data)
            }
            other => other.map(|env| env.data),
        }
    }

    /// `{base_url}/open-apis/{segments…}`, each segment percent-encoded.
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push("open-apis").extend(segments);
        }
        url
    }

    async fn create_message(&self, body: &Value) -> Result<String, ChannelError> {
        let mut url = self.url(&["im", "v1", "messages"]);
        url.query_pairs_mut().append_pair("receive_id_type", "chat_id");
        let data = self.call(Method::POST, url, body).await?;
        data.get("message_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| transport_msg("message answer without `data.message_id`"))
    }

    async fn evict(&self, rejected: &str) {
        let mut cached = self.token.lock().await;
        // Another caller may already have replaced it with a fresh token: keep that one.
        if cached.as_ref().is_some_and(|t| t.value == rejected) {
            *cached = None;
        }
    }

    async fn send_with_retries(
        &self,
        method: Method,
        url: Url,
        body: &Value,
        token: Option<&str>,
    ) -> Result<Envelope, ChannelError> {
        let mut retries = 0;
        loop {
            let mut request = self.http.request(method.clone(), url.clone()).json(body);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let response = request.send().await.map_err(|e| transport(&e))?;
            let status = response.status();
            let reset = response
                .headers()
                .get(RATE_LIMIT_RESET_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let bytes = response.bytes().await.map_err(|e| transport(&e))?;
            let envelope = serde_json::from_slice::<Envelope>(&bytes).ok();
            let code = envelope.as_ref().map(|e| e.code);

            if status == StatusCode::TOO_MANY_REQUESTS || code == Some(RATE_LIMIT_CODE) {
                if retries >= self.retry.max_rate_limit_retries {
                    return Err(ChannelError::RateLimited { channel: CHANNEL });
                }
                retries += 1;
                let wait = reset.map_or(self.retry.default_wait, Duration::from_secs).min(self.retry.max_wait);
                tracing::debug!(?wait, retries, "feishu rate limit; waiting");
                tokio::time::sleep(wait).await;
                continue;
            }
            return match envelope {
                Some(env) if env.code == 0 && status.is_success() => Ok(env),
                Some(env) => Err(ChannelError::Api { channel: CHANNEL, code: env.code, msg: env.msg }),
                None => Err(transport_msg(&format!("HTTP {status} with an unreadable body"))),
            };
        }
    }
}

fn transport(e: &reqwest::Error) -> ChannelError {
    ChannelError::Transport { channel: CHANNEL, message: e.to_string() }
}

fn transport_msg(message: &str) -> ChannelError {
    ChannelError::Transport { channel: CHANNEL, message: message.to_owned() }
}
