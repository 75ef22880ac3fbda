//! The domain structs repositories take and return (never sea-orm models).
//!
//! Enums stored as text have `as_str` / `parse` with exactly the column's spellings.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use hook_builtins::ports::ConnectorCallRecord;

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// The column's spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The variant spelled `text`, if any.
            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }
    };
}

text_enum!(
    /// `users.role`.
    Role { Admin = "admin", Member = "member" }
);
text_enum!(
    /// `connectors.type`.
    ConnectorKind { Http = "http", Database = "database" }
);
text_enum!(
    /// `connector_actions.side_effect`.
    SideEffect { Read = "read", Write = "write" }
);
text_enum!(
    /// `runs.status`.
    RunStatus {
        Running = "running",
        /// Paused on a confirmation request; resumed on restart.
        AwaitingConfirmation = "awaiting_confirmation",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
);
text_enum!(
    /// `tool_executions.status`.
    ToolExecutionStatus {
        Executing = "executing",
        Completed = "completed",
        Failed = "failed",
        Blocked = "blocked",
    }
);

/// An `orgs` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Org {
    pub id: String,
    pub name: String,
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
}

/// A new user.
#[derive(Debug, Clone, PartialEq)]
pub struct NewUser {
    pub org_id: String,
    pub name: String,
    pub role: Role,
    /// Unique within the org when present.
    pub feishu_open_id: Option<String>,
}

/// A `users` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub role: Role,
    pub feishu_open_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// The answer of `Store::create_api_key`: the only time the plaintext key exists.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedApiKey {
    /// The `api_keys.id` (for revocation).
    pub id: String,
    /// `tg_` + 64 hex characters. Show it once; only its SHA-256 is stored.
    pub api_key: String,
    /// The first 11 characters (`tg_` + 8 hex), stored to let people tell keys apart.
    pub prefix: String,
}

/// A new channel. `config` is encrypted at rest.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChannel {
    pub org_id: String,
    /// `channels.type`, e.g. `feishu`.
    pub kind: String,
    pub name: String,
    /// Vendor configuration including secrets (e.g. Feishu `app_secret`).
    pub config: Value,
    pub is_active: bool,
}

/// A `channels` row with its config decrypted.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    pub id: String,
    pub org_id: String,
    pub kind: String,
    pub name: String,
    pub config: Value,
    pub is_active: bool,
    pub created_at: DateTime<Utc>,
}

/// `connectors.rate_limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    pub per_minute: u32,
    pub burst: u32,
}

/// A new connector action.
#[derive(Debug, Clone, PartialEq)]
pub struct NewConnectorAction {
    pub name: String,
    pub description: String,
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// Path appended to the connector's `base_url`.
    pub path: String,
    /// JSON Schema of the arguments.
    pub parameters_schema: Value,
    pub requires_confirmation: bool,
    pub side_effect: SideEffect,
}

/// A `connector_actions` row.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorAction {
    pub id: String,
    pub connector_id: String,
    pub name: String,
    pub description: String,
    pub method: String,
    pub path: String,
    pub parameters_schema: Value,
    pub requires_confirmation: bool,
    pub side_effect: SideEffect,
}

/// A new connector with its actions. `auth` and `url` are encrypted at rest.
#[derive(Debug, Clone, PartialEq)]
pub struct NewConnector {
    pub org_id: String,
    /// Unique within the org.
    pub name: String,
    pub kind: ConnectorKind,
    /// HTTP connectors.
    pub base_url: Option<String>,
    /// Database connectors: a SQLite or PostgreSQL URL (may carry a password).
    pub url: Option<String>,
    /// Credentials, e.g. `{"type":"bearer","token":"…"}`.
    pub auth: Option<Value>,
    pub rate_limit: Option<RateLimit>,
    pub actions: Vec<NewConnectorAction>,
}

/// A `connectors` row with secrets decrypted and its actions (ordered by name).
#[derive(Debug, Clone, PartialEq)]
pub struct Connector {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub kind: ConnectorKind,
    pub base_url: Option<String>,
    pub url: Option<String>,
    pub auth: Option<Value>,
    pub rate_limit: Option<RateLimit>,
    pub created_at: DateTime<Utc>,
    pub actions: Vec<ConnectorAction>,
}

/// A new agent.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAgent {
    pub org_id: String,
    pub owner_user_id: Option<String>,
    pub name: String,
    pub instructions: String,
    pub require_confirmation_for_all: bool,
    /// The agent's configuration document (`model_config_json`): model, tools, connectors,
    /// delegates, hooks, confirmation settings. Its schema belongs to the server.
    pub model_config: Value,
}

/// An `agents` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub id: String,
    pub org_id: String,
    pub owner_user_id: Option<String>,
    pub name: String,
    pub instructions: String,
    pub require_confirmation_for_all: bool,
    pub model_config: Value,
    pub created_at: DateTime<Utc>,
}

/// A new conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct NewConversation {
    pub org_id: String,
    pub agent_id: String,
    pub user_id: Option<String>,
    pub title: Option<String>,
}

/// A `conversations` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub org_id: String,
    pub agent_id: String,
    pub user_id: Option<String>,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A new run.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// The run's id, or `None` for a fresh UUID (callers that emit events before inserting pick
    /// their own).
    pub id: Option<String>,
    pub agent_id: String,
    pub org_id: String,
    pub user_id: Option<String>,
    pub conversation_id: Option<String>,
    pub parent_run_id: Option<String>,
    /// `react`, `dag`, `delegate` or `workflow`.
    pub surface: String,
    pub status: RunStatus,
    /// The user's message that started the run (kept to resume it after a restart).
    pub input: Option<String>,
    /// The process that runs it and its lease (set at insert, so no other process takes over a
    /// run that is starting).
    pub owner: Option<String>,
    pub lease_until: Option<DateTime<Utc>>,
}

/// A `runs` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    pub agent_id: String,
    pub org_id: String,
    pub user_id: Option<String>,
    pub conversation_id: Option<String>,
    pub parent_run_id: Option<String>,
    pub surface: String,
    pub status: RunStatus,
    pub input: Option<String>,
    pub answer: Option<String>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A change of a run: the new status, and the answer / error when `Some` (a `None` keeps the
/// stored value).
#[derive(Debug, Clone, PartialEq)]
pub struct RunUpdate {
    pub status: RunStatus,
    pub answer: Option<String>,
    pub error: Option<String>,
}

/// A `run_events` row: one SSE event of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    pub run_id: String,
    /// Position in the run's stream, chosen by the run's writer; unique per run.
    pub seq: i64,
    /// The SSE event name, e.g. `tool_call`.
    pub event: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

/// A tool call about to run.
#[derive(Debug, Clone, PartialEq)]
pub struct NewToolExecution {
    pub run_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// The arguments the model asked for.
    pub original_args: Value,
    /// The arguments after every PreToolUse rewrite, when known.
    pub effective_args: Option<Value>,
}

/// The end of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolExecutionFinish {
    pub status: ToolExecutionStatus,
    /// Replaces the stored effective arguments when `Some`.
    pub effective_args: Option<Value>,
    /// The observation the model got.
    pub result: Option<Value>,
}

/// A `tool_executions` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecution {
    pub run_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub original_args: Value,
    pub effective_args: Option<Value>,
    pub status: ToolExecutionStatus,
    pub result: Option<Value>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A `connector_call_logs` row: its id and the record the audit hook wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectorCallLog {
    pub id: String,
    #[serde(flatten)]
    pub record: ConnectorCallRecord,
}
