//! The channel's configuration and the subset of it that callbacks need.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The Feishu (China) open-platform base URL, the default.
pub const FEISHU_BASE_URL: &str = "https://open.feishu.cn";
/// The Lark (international) open-platform base URL.
pub const LARK_BASE_URL: &str = "https://open.larksuite.com";

/// One Feishu/Lark channel: a custom app (`app_id` / `app_secret`) posting into one chat.
///
/// This is the `config` object of `POST /api/v1/channels` with `type: "feishu"`. Unknown fields
/// are refused so that a typo (`encryptKey`) does not silently disable encryption. `Debug` redacts
/// the secrets.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeishuConfig {
    /// The app's id, `cli_…`.
    pub app_id: String,
    /// The app's secret, used only to obtain `tenant_access_token`s.
    pub app_secret: String,
    /// The "Verification Token" of the app's event/callback settings: checked on every callback
    /// (`header.token`, or `token` on challenges) and the key of legacy SHA-1 card signatures.
    pub verification_token: String,
    /// The "Encrypt Key" of the app's event/callback settings. When set, callbacks arrive as
    /// `{"encrypt": …}` signed with `X-Lark-Signature`, and plain new-style bodies are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypt_key: Option<String>,
    /// The chat approval cards are posted to, `oc_…` (sent with `receive_id_type=chat_id`).
    pub chat_id: String,
    /// The open-platform origin, without `/open-apis`: [`FEISHU_BASE_URL`] (default) or
    /// [`LARK_BASE_URL`]; tests point it at a local mock server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

impl FeishuConfig {
    /// The base URL to use, without a trailing slash: `base_url`, or [`FEISHU_BASE_URL`].
    pub fn base_url(&self) -> &str {
        self.base_url.as_deref().map(|u| u.trim_end_matches('/')).filter(|u| !u.is_empty()).unwrap_or(FEISHU_BASE_URL)
    }

    /// The secrets [`crate::decode_callback`] needs.
    pub fn callback_secrets(&self) -> CallbackSecrets {
        CallbackSecrets {
            verification_token: self.verification_token.clone(),
            encrypt_key: self.encrypt_key.clone().filter(|k| !k.is_empty()),
        }
    }
}

impl fmt::Debug for FeishuConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FeishuConfig")
            .field("app_id", &self.app_id)
            .field("app_secret", &"<redacted>")
            .field("verification_token", &"<redacted>")
            .field("encrypt_key", &self.encrypt_key.as_ref().map(|_| "<redacted>"))
            .field("chat_id", &self.chat_id)
            .field("base_url", &self.base_url)
            .finish()
    }
}

/// What verifying a callback needs: the app's Verification Token and, if configured, its Encrypt
/// Key. `Debug` redacts both.
#[derive(Clone, PartialEq, Eq)]
pub struct CallbackSecrets {
    /// Compared (in constant time) with the token in the body; the key of legacy SHA-1 signatures.
    pub verification_token: String,
    /// When `Some`, bodies must be `{"encrypt": …}` (except challenges and legacy card callbacks,
    /// see [`crate::decode_callback`]).
    pub encrypt_key: Option<String>,
}

impl fmt::Debug for CallbackSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackSecrets")
            .field("verification_token", &"<redacted>")
            .field("encrypt_key", &self.encrypt_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}
