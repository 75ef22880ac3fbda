//! Callback decoding as a pure function: headers + raw body bytes + secrets + the current time in,
//! a typed [`Callback`] or a typed [`CallbackError`] out. No HTTP server, no database: the server
//! routes the request here, answers with [`CallbackError::http_status`] or the callback's
//! response, and de-duplicates with [`CardAction::dedup_key`] through its store.
//!
//! Sources: Feishu open-platform docs — event subscription (`url_verification`, the schema 2.0
//! envelope, Encrypt Key, `X-Lark-Signature`), the card callback `card.action.trigger`, and the
//! legacy message-card request URL (SHA-1 signature); the shapes follow the official SDKs.

use channel_core::Decision;
use chrono::{DateTime, TimeZone, Utc};
use http::HeaderMap;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::CallbackSecrets;
use crate::crypto::{self, DecryptError};

/// Bodies larger than this (1 MiB) are refused before any parsing.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// A numeric `X-Lark-Request-Timestamp` further than this from `now` (5 minutes, in seconds) is
/// refused as a replay.
pub const MAX_CLOCK_SKEW_SECS: i64 = 5 * 60;

/// The request-timestamp header (Unix seconds, decimal).
pub const HEADER_TIMESTAMP: &str = "x-lark-request-timestamp";
/// The request-nonce header.
pub const HEADER_NONCE: &str = "x-lark-request-nonce";
/// The signature header (lowercase hex; SHA-256 for new-style, SHA-1 for legacy card callbacks).
pub const HEADER_SIGNATURE: &str = "x-lark-signature";

/// A decoded, authenticated callback.
#[derive(Debug, Clone, PartialEq)]
#[expect(clippy::large_enum_variant, reason = "decoded once per request and matched at once; never stored in bulk")]
pub enum Callback {
    /// The challenge Feishu sends when the callback URL is configured. Answer
    /// [`challenge_response`] (`{"challenge": …}`) with HTTP 200 within 1 second.
    UrlVerification { challenge: String },
    /// A button on one of our cards was pressed (`card.action.trigger`, or a legacy card callback).
    CardAction(CardAction),
    /// Any other authenticated event (`event_type` as sent, e.g. `im.message.receive_v1`). Answer
    /// HTTP 200 with `{}`: unknown events are acknowledged, not errors.
    Other { event_type: String, event_id: Option<String> },
}

/// A card button press, parsed tolerantly from the shapes Feishu actually sends.
#[derive(Debug, Clone, PartialEq)]
pub struct CardAction {
    /// `confirmation_id` from `action.value` (object or JSON string); `None` when absent.
    pub confirmation_id: Option<String>,
    /// `decision` from `action.value` (`approve`/`reject`, see [`Decision::parse`]); `None` when
    /// absent or unrecognised. A press without both fields is not an approval: answer a toast.
    pub decision: Option<Decision>,
    /// `action.value` as sent, with a JSON-string value parsed to the JSON it holds; `Null` when
    /// absent.
    pub value: Value,
    /// `action.name` (the button's unique name), if sent.
    pub action_name: Option<String>,
    /// The operator's `open_id` (`ou_…`), if sent.
    pub operator_open_id: Option<String>,
    /// The operator's `user_id`, if sent (needs the app's user-id permission).
    pub operator_user_id: Option<String>,
    /// The card's message id (`om_…`), from `context.open_message_id` or top level.
    pub open_message_id: Option<String>,
    /// The chat id (`oc_…`), from `context.open_chat_id` or top level.
    pub open_chat_id: Option<String>,
    /// The card-update token (`c-…`), valid 30 minutes for two delayed updates.
    pub token: Option<String>,
    /// `header.event_id` (schema 2.0 only).
    pub event_id: Option<String>,
    /// `header.create_time`, whatever its unit (s, ms, µs or ns, decided by magnitude).
    pub create_time: Option<DateTime<Utc>>,
    /// The tenant key, from the header, the operator or top level.
    pub tenant_key: Option<String>,
    /// `true` for the legacy flat card callback (no `schema`): answer it with `{}` or a bare card,
    /// not with the `toast` envelope.
    pub legacy: bool,
}

impl CardAction {
    /// Who pressed: the operator's `open_id`, or its `user_id` when `open_id` is absent.
    pub fn operator_id(&self) -> Option<&str> {
        self.operator_open_id.as_deref().or(self.operator_user_id.as_deref())
    }

    /// The key the server de-duplicates deliveries on (keep ≥ 12 h): `header.event_id` for
    /// schema 2.0 callbacks; for legacy ones (no event id) `legacy:` + hex SHA-256 over message id,
    /// operator, the action value (compact JSON) and the update token.
    pub fn dedup_key(&self) -> String {
        if let Some(id) = self.event_id.as_deref().filter(|id| !id.is_empty()) {
            return id.to_owned();
        }
        let mut h = Sha256::new();
        for part in [
            self.open_message_id.as_deref().unwrap_or(""),
            self.operator_id().unwrap_or(""),
            &self.value.to_string(),
            self.token.as_deref().unwrap_or(""),
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        format!("legacy:{}", hex::encode(h.finalize()))
    }
}

/// Why a callback was refused. [`CallbackError::http_status`] gives the answer to send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// The body exceeds [`MAX_BODY_BYTES`]. → 400 (413 would also do; Feishu only sees non-200).
    #[error("callback body of {size} bytes exceeds the {max} byte limit")]
    TooLarge { size: usize, max: usize },
    /// A signed request without `X-Lark-Request-Timestamp`, `-Nonce` or `-Signature`. → 401
    #[error("missing signature header {0}")]
    MissingSignature(&'static str),
    /// `X-Lark-Signature` does not match the body. → 401
    #[error("bad callback signature")]
    BadSignature,
    /// The verification token in the body does not match. → 401
    #[error("bad verification token")]
    BadToken,
    /// A plain new-style body while an Encrypt Key is configured (Feishu encrypts everything
    /// then). → 401
    #[error("plaintext callback refused: an encrypt key is configured")]
    NotEncrypted,
    /// The signed timestamp is more than [`MAX_CLOCK_SKEW_SECS`] from now: a replay or a badly
    /// skewed clock. → 401 (it is an authentication failure, not a malformed request).
    #[error("stale callback: timestamp {timestamp} is {skew_secs} s from now")]
    Stale { timestamp: i64, skew_secs: i64 },
    /// An already-processed delivery. Never returned by [`decode_callback`]: the server's store
    /// detects it with [`CardAction::dedup_key`] and may use this variant. → 200
    #[error("duplicate callback delivery {key}")]
    Duplicate { key: String },
    /// The `encrypt` field could not be decrypted (bad base64, truncated, bad padding, wrong key,
    /// or no Encrypt Key configured). → 400
    #[error("undecryptable callback: {0}")]
    Undecryptable(String),
    /// Not JSON, not an object, or missing what its kind requires. → 400
    #[error("malformed callback: {0}")]
    Malformed(String),
}

impl CallbackError {
    /// The HTTP status to answer with: 401 for authentication failures (signature, token,
    /// unencrypted, stale), 400 for bodies we cannot read (too large, undecryptable, malformed),
    /// 200 for duplicates (acknowledge so Feishu stops retrying).
    pub fn http_status(&self) -> u16 {
        match self {
            CallbackError::MissingSignature(_)
            | CallbackError::BadSignature
            | CallbackError::BadToken
            | CallbackError::NotEncrypted
            | CallbackError::Stale { .. } => 401,
            CallbackError::TooLarge { .. } | CallbackError::Undecryptable(_) | CallbackError::Malformed(_) => 400,
            CallbackError::Duplicate { .. } => 200,
        }
    }
}

impl From<DecryptError> for CallbackError {
    fn from(e: DecryptError) -> Self {
        CallbackError::Undecryptable(e.to_string())
    }
}

/// Verifies, decrypts and parses one callback request.
///
/// `headers` are the request headers, `body` the exact raw bytes (before any JSON parsing),
/// `now` the current time (a parameter so tests can replay fixtures). Rules, in order:
///
/// 1. Bodies over [`MAX_BODY_BYTES`] → [`CallbackError::TooLarge`]; non-JSON-object → `Malformed`.
/// 2. `{"encrypt": …}`: needs an Encrypt Key (else `Undecryptable`). When `X-Lark-Signature` is
///    present, it must equal hex SHA-256(timestamp + nonce + encrypt_key + body) over the exact
///    bytes, checked *before* decrypting, and a numeric timestamp must be within
///    [`MAX_CLOCK_SKEW_SECS`] of `now`. Without signature headers only a `url_verification`
///    challenge is accepted (Feishu sends those unsigned); anything else → `MissingSignature`.
///    The plaintext is then handled as a plain body (without the "must be encrypted" rule).
/// 3. `type: "url_verification"`: the `token` must match → `UrlVerification`. Accepted plain even
///    with an Encrypt Key: it only echoes the challenge, after the token check.
/// 4. `schema` present (2.0 envelope): refused when an Encrypt Key is configured and the body was
///    not encrypted (`NotEncrypted`); `header.token` must match; a numeric timestamp header, if
///    sent, must be fresh. `card.action.trigger` → `CardAction`; other types → `Other`.
/// 5. `type: "event_callback"` (1.0 events): `token` must match → `Other`.
/// 6. Otherwise a legacy card callback (needs `action`): unless it came encrypted and signed, the
///    SHA-1 signature hex SHA-1(timestamp + nonce + verification_token + body) is required and the
///    timestamp must be fresh.
///
/// De-duplication is not done here: use [`CardAction::dedup_key`] with the store.
pub fn decode_callback(
    headers: &HeaderMap,
    body: &[u8],
    secrets: &CallbackSecrets,
    now: DateTime<Utc>,
) -> Result<Callback, CallbackError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(CallbackError::TooLarge { size: body.len(), max: MAX_BODY_BYTES });
    }
    let outer = parse_object(body)?;
    let sig = SignatureHeaders::from_headers(headers);

    let Some(encrypt) = outer.get("encrypt") else {
        return decode_plain(&outer, body, &sig, secrets, now, Origin::Plain);
    };
    let encrypt = encrypt.as_str().ok_or_else(|| CallbackError::Malformed("`encrypt` is not a string".into()))?;
    let Some(encrypt_key) = secrets.encrypt_key.as_deref() else {
        return Err(CallbackError::Undecryptable("no encrypt key is configured".into()));
    };
    let signed = match sig.signature {
        Some(signature) => {
            let (timestamp, nonce) = sig.timestamp_and_nonce()?;
            let expected = crypto::signature_sha256(timestamp, nonce, encrypt_key, body);
            if !crypto::ct_eq(&signature.to_ascii_lowercase(), &expected) {
                return Err(CallbackError::BadSignature);
            }
            check_fresh(timestamp, now)?;
            true
        }
        None => false,
    };
    let plaintext = crypto::decrypt(&crypto::aes_key(encrypt_key), encrypt)?;
    let inner = parse_object(&plaintext)?;
    let origin = if signed { Origin::EncryptedSigned } else { Origin::EncryptedUnsigned };
    decode_plain(&inner, &plaintext, &sig, secrets, now, origin)
}

/// The answer body for a challenge: `{"challenge": "<challenge>"}`.
pub fn challenge_response(challenge: &str) -> Value {
    serde_json::json!({ "challenge": challenge })
}

/// The kind of toast a card callback answer shows the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToastKind {
    Info,
    Success,
    Warning,
    Error,
}

impl ToastKind {
    fn as_str(self) -> &'static str {
        match self {
            ToastKind::Info => "info",
            ToastKind::Success => "success",
            ToastKind::Warning => "warning",
            ToastKind::Error => "error",
        }
    }
}

/// The answer body for a `card.action.trigger` callback (HTTP 200 within 3 s):
/// `{"toast": {"type", "content"}}`, plus `"card": {"type": "raw", "data": card}` when `card` is
/// given (the card replaces the clicked one for the operator at once; patch it for everyone with
/// `update_approval`). Shape: `tests/fixtures/feishu/callback_response_examples.json`.
pub fn card_action_response(kind: ToastKind, content: &str, card: Option<Value>) -> Value {
    let mut out = Map::new();
    out.insert("toast".into(), serde_json::json!({ "type": kind.as_str(), "content": content }));
    if let Some(card) = card {
        out.insert("card".into(), serde_json::json!({ "type": "raw", "data": card }));
    }
    Value::Object(out)
}

/// How the body being decoded reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Plain,
    EncryptedSigned,
    EncryptedUnsigned,
}

#[derive(Debug, Default)]
struct SignatureHeaders<'a> {
    timestamp: Option<&'a str>,
    nonce: Option<&'a str>,
    signature: Option<&'a str>,
}

impl<'a> SignatureHeaders<'a> {
    fn from_headers(headers: &'a HeaderMap) -> Self {
        let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        SignatureHeaders {
            timestamp: get(HEADER_TIMESTAMP),
            nonce: get(HEADER_NONCE),
            signature: get(HEADER_SIGNATURE).filter(|s| !s.is_empty()),
        }
    }

    fn timestamp_and_nonce(&self) -> Result<(&'a str, &'a str), CallbackError> {
        let timestamp = self.timestamp.ok_or(CallbackError::MissingSignature("X-Lark-Request-Timestamp"))?;
        let nonce = self.nonce.ok_or(CallbackError::MissingSignature("X-Lark-Request-Nonce"))?;
        Ok((timestamp, nonce))
    }
}

fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, CallbackError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(CallbackError::Malformed("the body is not a JSON object".into())),
        Err(e) => Err(CallbackError::Malformed(format!("the body is not JSON: {e}"))),
    }
}

/// Refuses a numeric timestamp (Unix seconds) more than [`MAX_CLOCK_SKEW_SECS`] from `now`. A
/// non-numeric one is left alone: the signature covers it, so it cannot be forged.
fn check_fresh(timestamp: &str, now: DateTime<Utc>) -> Result<(), CallbackError> {
    let Ok(ts) = timestamp.parse::<i64>() else { return Ok(()) };
    let skew = now.timestamp().saturating_sub(ts);
    if skew.checked_abs().is_none_or(|s| s > MAX_CLOCK_SKEW_SECS) {
        return Err(CallbackError::Stale { timestamp: ts, skew_secs: skew });
    }
    Ok(())
}

fn check_token(received: Option<&str>, secrets: &CallbackSecrets) -> Result<(), CallbackError> {
    match received {
        Some(token) if crypto::ct_eq(token, &secrets.verification_token) => Ok(()),
        _ => Err(CallbackError::BadToken),
    }
}

fn decode_plain(
    obj: &Map<String, Value>,
    raw: &[u8],
    sig: &SignatureHeaders<'_>,
    secrets: &CallbackSecrets,
    now: DateTime<Utc>,
    origin: Origin,
) -> Result<Callback, CallbackError> {
    let ty = str_at(obj, "type");
    if ty == Some("url_verification") {
        check_token(str_at(obj, "token"), secrets)?;
        let challenge = str_at(obj, "challenge")
            .ok_or_else(|| CallbackError::Malformed("url_verification without `challenge`".into()))?;
        return Ok(Callback::UrlVerification { challenge: challenge.to_owned() });
    }
    if origin == Origin::EncryptedUnsigned {
        // Only challenges may arrive encrypted without signature headers.
        return Err(CallbackError::MissingSignature("X-Lark-Signature"));
    }

    if obj.contains_key("schema") {
        if origin == Origin::Plain && secrets.encrypt_key.is_some() {
            return Err(CallbackError::NotEncrypted);
        }
        let header = obj
            .get("header")
            .and_then(Value::as_object)
            .ok_or_else(|| CallbackError::Malformed("schema 2.0 body without `header`".into()))?;
        check_token(str_at(header, "token"), secrets)?;
        if let (Origin::Plain, Some(timestamp)) = (origin, sig.timestamp) {
            check_fresh(timestamp, now)?;
        }
        let event_type = str_at(header, "event_type").unwrap_or("").to_owned();
        let event_id = str_at(header, "event_id").map(str::to_owned);
        if event_type == "card.action.trigger" {
            let event = obj
                .get("event")
                .and_then(Value::as_object)
                .ok_or_else(|| CallbackError::Malformed("card.action.trigger without `event`".into()))?;
            let mut action = parse_card_action(event, false);
            action.event_id = event_id;
            action.create_time = header.get("create_time").and_then(parse_create_time);
            action.tenant_key = str_at(header, "tenant_key").map(str::to_owned).or(action.tenant_key);
            return Ok(Callback::CardAction(action));
        }
        return Ok(Callback::Other { event_type, event_id });
    }

    if ty == Some("event_callback") {
        check_token(str_at(obj, "token"), secrets)?;
        let event_type = obj.get("event").and_then(|e| str_at(e.as_object()?, "type")).unwrap_or("").to_owned();
        let event_id = str_at(obj, "uuid").map(str::to_owned);
        return Ok(Callback::Other { event_type, event_id });
    }

    if !obj.contains_key("action") {
        return Err(CallbackError::Malformed(
            "neither a challenge, a schema 2.0 event, a 1.0 event nor a card callback".into(),
        ));
    }
    // A legacy card callback: its `token` is the card-update token, so the SHA-1 signature keyed
    // with the verification token is what authenticates it (unless it came encrypted and signed).
    if origin == Origin::Plain {
        let signature = sig.signature.ok_or(CallbackError::MissingSignature("X-Lark-Signature"))?;
        let (timestamp, nonce) = sig.timestamp_and_nonce()?;
        let expected = crypto::signature_sha1(timestamp, nonce, &secrets.verification_token, raw);
        if !crypto::ct_eq(&signature.to_ascii_lowercase(), &expected) {
            return Err(CallbackError::BadSignature);
        }
        check_fresh(timestamp, now)?;
    }
    Ok(Callback::CardAction(parse_card_action(obj, true)))
}

/// Parses the card-action fields shared by the 2.0 `event` object and the legacy flat body.
fn parse_card_action(ev: &Map<String, Value>, legacy: bool) -> CardAction {
    let action = ev.get("action").and_then(Value::as_object);
    let value = match action.and_then(|a| a.get("value")) {
        None | Some(Value::Null) => Value::Null,
        // Some clients send the value as a JSON string; keep the string when it is not JSON.
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
    };
    let value_obj = value.as_object();
    let confirmation_id =
        value_obj.and_then(|v| v.get("confirmation_id")).and_then(scalar_string).filter(|s| !s.is_empty());
    let decision = value_obj.and_then(|v| str_at(v, "decision")).and_then(Decision::parse);

    let operator = ev.get("operator").and_then(Value::as_object);
    let from_operator_or_top = |key: &str| {
        operator.and_then(|o| str_at(o, key)).or_else(|| str_at(ev, key)).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    let context = ev.get("context").and_then(Value::as_object);
    let from_context_or_top = |key: &str| {
        context.and_then(|c| str_at(c, key)).or_else(|| str_at(ev, key)).filter(|s| !s.is_empty()).map(str::to_owned)
    };

    CardAction {
        confirmation_id,
        decision,
        value,
        action_name: action.and_then(|a| str_at(a, "name")).map(str::to_owned),
        operator_open_id: from_operator_or_top("open_id"),
        operator_user_id: from_operator_or_top("user_id"),
        open_message_id: from_context_or_top("open_message_id"),
        open_chat_id: from_context_or_top("open_chat_id"),
        token: str_at(ev, "token").map(str::to_owned),
        event_id: None,
        create_time: None,
        tenant_key: from_operator_or_top("tenant_key"),
        legacy,
    }
}

fn str_at<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `create_time` as a string or a number of seconds, milliseconds, microseconds or nanoseconds
/// since the Unix epoch — Feishu uses several; the unit is decided by magnitude.
fn parse_create_time(v: &Value) -> Option<DateTime<Utc>> {
    let n: i64 = match v {
        Value::String(s) => s.trim().parse().ok()?,
        Value::Number(n) => n.as_i64()?,
        _ => return None,
    };
    if n < 0 {
        return None;
    }
    let (secs, nanos) = if n < 100_000_000_000 {
        (n, 0)
    } else if n < 100_000_000_000_000 {
        (n / 1_000, (n % 1_000) * 1_000_000)
    } else if n < 100_000_000_000_000_000 {
        (n / 1_000_000, (n % 1_000_000) * 1_000)
    } else {
        (n / 1_000_000_000, n % 1_000_000_000)
    };
    Utc.timestamp_opt(secs, u32::try_from(nanos).ok()?).single()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_time_units_are_decided_by_magnitude() {
        let expected = Utc.timestamp_opt(1_767_225_600, 0).unwrap();
        for raw in [
            serde_json::json!("1767225600"),
            serde_json::json!(1_767_225_600_000_i64),
            serde_json::json!("1767225600000000"),
            serde_json::json!(1_767_225_600_000_000_000_i64),
        ] {
            assert_eq!(parse_create_time(&raw), Some(expected), "{raw}");
        }
        assert_eq!(parse_create_time(&serde_json::json!("soon")), None);
    }

    #[test]
    fn stale_check_is_symmetric_and_ignores_non_numeric() {
        let now = Utc.timestamp_opt(1_000_000, 0).unwrap();
        assert!(check_fresh("1000300", now).is_ok());
        assert!(check_fresh("999700", now).is_ok());
        assert!(matches!(check_fresh("1000301", now), Err(CallbackError::Stale { .. })));
        assert!(matches!(check_fresh("999699", now), Err(CallbackError::Stale { .. })));
        assert!(matches!(check_fresh(&i64::MIN.to_string(), now), Err(CallbackError::Stale { .. })));
        assert!(check_fresh("abc", now).is_ok());
    }
}
