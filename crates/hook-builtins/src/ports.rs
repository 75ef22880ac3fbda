//! The ports: the only way the built-in hooks reach the outside world.
//!
//! `store` implements them on SQLite/PostgreSQL; tests and downstream crates may implement them in
//! memory. Every method that touches storage returns [`PortError`] on failure, and every hook
//! treats a `PortError` as a failure of its own (fail closed by default).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A storage failure behind a port (database down, constraint violation, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PortError(pub String);

impl PortError {
    pub fn new(message: impl Into<String>) -> Self {
        PortError(message.into())
    }
}

// ---------------------------------------------------------------------------------------------
// Audit log

/// What happened to a tool call, as the audit log records it (`connector_call_logs.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    Executed,
    Blocked,
    Failed,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Executed => "executed",
            CallOutcome::Blocked => "blocked",
            CallOutcome::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<CallOutcome> {
        match s {
            "executed" => Some(CallOutcome::Executed),
            "blocked" => Some(CallOutcome::Blocked),
            "failed" => Some(CallOutcome::Failed),
            _ => None,
        }
    }
}

/// One `connector_call_logs` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectorCallRecord {
    pub org_id: Option<String>,
    pub connector_id: Option<String>,
    pub connector_name: Option<String>,
    pub action_name: Option<String>,
    pub run_id: String,
    pub tool_call_id: String,
    pub conversation_id: Option<String>,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    /// `react`, `dag`, `delegate` or `workflow`.
    pub surface: Option<String>,
    pub request_method: Option<String>,
    pub request_url: Option<String>,
    /// Hex SHA-256 of the canonical JSON of the arguments the model asked for.
    pub original_args_sha256: String,
    /// Hex SHA-256 of the canonical JSON of the arguments after every rewrite.
    pub effective_args_sha256: String,
    pub outcome: CallOutcome,
    /// The hook that blocked the call, when `outcome` is `Blocked`.
    pub blocked_by: Option<String>,
    pub response_status: Option<i32>,
    pub response_time_ms: Option<i64>,
    pub success: bool,
    /// The block reason or the failure's message.
    pub error_message: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Where the audit log writes.
#[async_trait::async_trait]
pub trait AuditSink: Send + Sync {
    /// Records one connector call. Idempotent on (`run_id`, `tool_call_id`): a second record for
    /// the same call changes nothing and is not an error.
    async fn record_connector_call(&self, record: &ConnectorCallRecord) -> Result<(), PortError>;
}

// ---------------------------------------------------------------------------------------------
// Org policy

/// The org-level switches the guards read on every call (never cached, so a flip applies to the
/// very next call).
#[async_trait::async_trait]
pub trait OrgPolicy: Send + Sync {
    /// Whether the org is read-only. An unknown org is an error.
    async fn is_read_only(&self, org_id: &str) -> Result<bool, PortError>;
}

// ---------------------------------------------------------------------------------------------
// Confirmations

/// `confirmation_requests.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
    Cancelled,
}

impl ConfirmationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmationStatus::Pending => "pending",
            ConfirmationStatus::Approved => "approved",
            ConfirmationStatus::Rejected => "rejected",
            ConfirmationStatus::Expired => "expired",
            ConfirmationStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<ConfirmationStatus> {
        match s {
            "pending" => Some(ConfirmationStatus::Pending),
            "approved" => Some(ConfirmationStatus::Approved),
            "rejected" => Some(ConfirmationStatus::Rejected),
            "expired" => Some(ConfirmationStatus::Expired),
            "cancelled" => Some(ConfirmationStatus::Cancelled),
            _ => None,
        }
    }

    pub fn is_final(self) -> bool {
        self != ConfirmationStatus::Pending
    }
}

/// Who may decide a request (`confirmation_requests.approver_scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApproverScope {
    /// Only the user who started the run.
    Initiator,
    /// Only the agent's owner.
    AgentOwner,
    /// Any admin of the org (the default).
    #[default]
    OrgAdmins,
    /// Any user of the org.
    OrgMembers,
}

impl ApproverScope {
    pub fn as_str(self) -> &'static str {
        match self {
            ApproverScope::Initiator => "initiator",
            ApproverScope::AgentOwner => "agent_owner",
            ApproverScope::OrgAdmins => "org_admins",
            ApproverScope::OrgMembers => "org_members",
        }
    }

    pub fn parse(s: &str) -> Option<ApproverScope> {
        match s {
            "initiator" => Some(ApproverScope::Initiator),
            "agent_owner" => Some(ApproverScope::AgentOwner),
            "org_admins" => Some(ApproverScope::OrgAdmins),
            "org_members" => Some(ApproverScope::OrgMembers),
            _ => None,
        }
    }
}

/// What happens when the approval card cannot be delivered (`confirmation_requests.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryMode {
    /// Fall back to API approval: the row stays decidable through the decision API.
    #[default]
    Auto,
    /// Block the call and cancel the row.
    ChannelOnly,
}

impl DeliveryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::Auto => "auto",
            DeliveryMode::ChannelOnly => "channel_only",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryMode> {
        match s {
            "auto" => Some(DeliveryMode::Auto),
            "channel_only" => Some(DeliveryMode::ChannelOnly),
            _ => None,
        }
    }
}

/// A new pending ConfirmationRequest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewConfirmation {
    /// A UUID string.
    pub id: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
    pub org_id: String,
    pub channel_id: Option<String>,
    pub tool_name: String,
    pub tool_args: Value,
    /// Hex SHA-256 of the canonical JSON of `tool_args`.
    pub args_sha256: String,
    pub mode: DeliveryMode,
    pub approver_scope: ApproverScope,
    pub expires_at: DateTime<Utc>,
}

/// A `confirmation_requests` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationRecord {
    pub id: String,
    pub status: ConfirmationStatus,
    pub run_id: String,
    pub tool_call_id: String,
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
    pub org_id: String,
    pub channel_id: Option<String>,
    pub tool_name: String,
    pub tool_args: Value,
    pub args_sha256: String,
    pub mode: DeliveryMode,
    pub approver_scope: ApproverScope,
    pub message_id: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub responded_at: Option<DateTime<Utc>>,
    pub responded_by_open_id: Option<String>,
    pub responded_by_user_id: Option<String>,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A transition out of `pending`, applied with a compare-and-set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionUpdate {
    /// The target status; never `Pending`.
    pub status: ConfirmationStatus,
    pub responded_by_open_id: Option<String>,
    pub responded_by_user_id: Option<String>,
    pub reason: Option<String>,
    pub at: DateTime<Utc>,
}

/// The answer of [`ConfirmationStore::decide`].
#[derive(Debug, Clone, PartialEq)]
// A decision is rare and its outcome short-lived: boxing the record would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum DecideOutcome {
    /// This update won: the row as it is now.
    Decided(ConfirmationRecord),
    /// Someone else decided first; the row's current status.
    AlreadyDecided(ConfirmationStatus),
    NotFound,
}

/// Where ConfirmationRequests live. The row is the truth: waiters, restarts and other replicas all
/// read it.
#[async_trait::async_trait]
pub trait ConfirmationStore: Send + Sync {
    /// The request for this tool call, if one exists (a restarted run re-attaches to it).
    async fn find_by_call(&self, run_id: &str, tool_call_id: &str) -> Result<Option<ConfirmationRecord>, PortError>;

    /// Inserts a pending request. When a row for (`run_id`, `tool_call_id`) already exists (a
    /// concurrent insert), returns that row instead of failing.
    async fn insert_pending(&self, new: &NewConfirmation) -> Result<ConfirmationRecord, PortError>;

    /// Stores the channel's message id on the row.
    async fn set_message_id(&self, id: &str, message_id: &str) -> Result<(), PortError>;

    async fn get(&self, id: &str) -> Result<Option<ConfirmationRecord>, PortError>;

    /// The current status of each of `ids` that exists, in one query (the shared poll of all
    /// waiters of a process).
    async fn statuses(&self, ids: &[String]) -> Result<Vec<(String, ConfirmationStatus)>, PortError>;

    /// One conditional update `… WHERE id = ? AND status = 'pending'`.
    async fn decide(&self, id: &str, update: &DecisionUpdate) -> Result<DecideOutcome, PortError>;
}

/// A user as the approver check sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approver {
    pub user_id: String,
    pub org_id: String,
    pub name: String,
    /// `admin` or `member`.
    pub role: String,
    pub feishu_open_id: Option<String>,
}

/// Who is who, for approver-scope checks.
#[async_trait::async_trait]
pub trait ApproverDirectory: Send + Sync {
    /// The user of `org_id` whose `feishu_open_id` is `open_id`.
    async fn user_by_open_id(&self, org_id: &str, open_id: &str) -> Result<Option<Approver>, PortError>;
    async fn user(&self, user_id: &str) -> Result<Option<Approver>, PortError>;
    /// The id of the agent's owner.
    async fn agent_owner(&self, agent_id: &str) -> Result<Option<String>, PortError>;

    /// The agent's display name, for approval cards rebuilt by the decision path. The default
    /// answers `None` (the card then shows the agent id).
    async fn agent_name(&self, _agent_id: &str) -> Result<Option<String>, PortError> {
        Ok(None)
    }
}

/// Wakes in-process waiters when a decision is committed. The decision path (API, channel
/// callback, PostgreSQL NOTIFY listener) calls it after its CAS succeeded.
pub trait ApprovalNotifier: Send + Sync {
    fn notify_decided(&self, confirmation_id: &str);
}
