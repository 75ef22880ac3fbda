//! The vendor-free approval-channel contract.
//!
//! Hooks decide *when* a human must approve a tool call (the confirmation gate in
//! `hook-builtins`); channels know *where* and *how* to ask (Feishu in `channel-feishu`, others
//! later). The gate talks to a channel only through [`ApprovalChannel`], with the vendor-free
//! [`ApprovalCard`] and [`CardState`] types. No vendor name appears in this crate.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an approval card shows: one pending `ConfirmationRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalCard {
    /// The ConfirmationRequest's id (a UUID string). Channels put it in the buttons' callback value
    /// and derive their idempotency key from it.
    pub confirmation_id: String,
    /// The agent that wants to run the tool.
    pub agent_name: String,
    /// Who started the run (a display name).
    pub requester: String,
    /// The tool's name, e.g. `erp__create_payment`.
    pub tool_name: String,
    /// The exact arguments that will run if approved.
    pub tool_args: Value,
    /// When the request expires unanswered.
    pub expires_at: DateTime<Utc>,
}

/// An operator's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    /// `"approve"` or `"reject"`, as written in callback values and the decision API.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        }
    }

    /// Parses `"approve"` / `"reject"` (also `"approved"` / `"rejected"`), case-insensitively.
    pub fn parse(s: &str) -> Option<Decision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "approve" | "approved" => Some(Decision::Approve),
            "reject" | "rejected" => Some(Decision::Reject),
            _ => None,
        }
    }
}

/// The final state an approval card is updated to. Final cards have no buttons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CardState {
    /// Approved by `decided_by` (a display name) at `decided_at`.
    Approved { decided_by: String, decided_at: DateTime<Utc> },
    /// Rejected by `decided_by` at `decided_at`, with the operator's reason if given.
    Rejected { decided_by: String, decided_at: DateTime<Utc>, reason: Option<String> },
    /// Nobody decided before the deadline.
    Expired { at: DateTime<Utc> },
    /// The request was withdrawn (run cancelled, delivery policy), with why.
    Cancelled { at: DateTime<Utc>, reason: String },
}

/// A channel failure, with the vendor's own code and message where it gave one.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The vendor answered with an error (`code`, `msg` as the vendor sent them).
    #[error("{channel} API error {code}: {msg}")]
    Api { channel: &'static str, code: i64, msg: String },
    /// Rate limited, and the bounded retries ran out.
    #[error("{channel} rate limit: retries exhausted")]
    RateLimited { channel: &'static str },
    /// The request did not reach the vendor or its answer was unreadable.
    #[error("{channel} transport error: {message}")]
    Transport { channel: &'static str, message: String },
    /// The channel is misconfigured (missing chat id, bad secret, …).
    #[error("channel configuration: {0}")]
    Config(String),
}

/// Where and how the confirmation gate asks humans.
///
/// Implementations must be idempotent per `confirmation_id`: sending the same card twice (a
/// restart that re-attaches) must not post two messages where the vendor offers an idempotency key.
#[async_trait::async_trait]
pub trait ApprovalChannel: Send + Sync {
    /// A short name of the channel kind, e.g. `"feishu"`.
    fn kind(&self) -> &str;

    /// Posts an interactive approval card with Approve / Reject buttons; returns the vendor's
    /// message id, which the gate stores on the ConfirmationRequest row.
    async fn send_approval(&self, card: &ApprovalCard) -> Result<String, ChannelError>;

    /// Replaces the card behind `message_id` with its final state, for everyone who sees it.
    async fn update_approval(
        &self,
        message_id: &str,
        card: &ApprovalCard,
        state: &CardState,
    ) -> Result<(), ChannelError>;

    /// Posts a plain text message; returns the message id.
    async fn send_text(&self, text: &str) -> Result<String, ChannelError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_parse_tolerantly() {
        assert_eq!(Decision::parse(" Approve"), Some(Decision::Approve));
        assert_eq!(Decision::parse("rejected"), Some(Decision::Reject));
        assert_eq!(Decision::parse("maybe"), None);
        assert_eq!(Decision::Approve.as_str(), "approve");
    }
}
