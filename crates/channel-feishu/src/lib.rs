//! Feishu/Lark as an approval channel: the `tenant_access_token` cache, sending and patching
//! interactive cards, and verifying, decrypting and parsing callbacks as pure functions.
//!
//! Filled in by the channel-feishu issue.
