use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::events::RunServices;
use crate::run::{RunLimits, RunScope};

/// A tool the model may call.
///
/// Tools are held as `Arc<dyn Tool>` and shared by concurrent runs; a tool keeps no per-run state.
/// The loop validates the arguments against [`parameters`](Tool::parameters) before the
/// PreToolUse chain and again after any rewrite, so `call` receives schema-valid arguments.
#[async_trait::async_trait]
pub trait Tool: Send + Sync + fmt::Debug {
    /// The name the model calls it by: `^[A-Za-z0-9_-]{1,64}$` (OpenAI's rule), e.g.
    /// `erp__create_payment` for a connector action.
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// The arguments' JSON schema (an `object` schema), in the subset [`crate::schema`] checks.
    fn parameters(&self) -> &Value;
    /// Whether a human must approve each call (the confirmation gate reads it from the
    /// `requires_confirmation` metadata).
    fn requires_confirmation(&self) -> bool {
        false
    }
    /// Whether the tool reads or writes, for the `side_effect` metadata (DESIGN §3).
    fn side_effect(&self) -> SideEffect;
    /// The connector behind the tool, for connector tools.
    fn connector(&self) -> Option<&ConnectorIdentity> {
        None
    }
    /// Further metadata for the hooks (e.g. a connector's `rate_limit_per_minute`), merged into
    /// every context of this tool's calls.
    fn extra_metadata(&self) -> Map<String, Value> {
        Map::new()
    }
    /// How long one call may run before it fails with a timeout. Default 60 s.
    fn timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
    /// Runs the tool.
    ///
    /// # Errors
    /// [`ToolError`]; the loop turns it into the call's observation (`outcome = failed`).
    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, ToolError>;
}

/// `"read"` or `"write"`, as in the `side_effect` metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    Read,
    Write,
}

impl SideEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            SideEffect::Read => "read",
            SideEffect::Write => "write",
        }
    }
}

/// Which connector and action a tool belongs to (`connector_id`, `connector_name`, `action_name`
/// metadata).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorIdentity {
    pub id: String,
    pub name: String,
    pub action: String,
}

/// What a tool knows about the call it serves.
#[derive(Debug, Clone)]
pub struct ToolCallContext {
    /// The run the call belongs to.
    pub scope: Arc<RunScope>,
    /// The model's call id.
    pub tool_call_id: String,
    /// The run's event sink, journal and hub, for tools that start runs of their own
    /// ([`crate::CallAgentTool`]).
    pub services: RunServices,
    /// The run's limits (a delegate inherits them).
    pub limits: RunLimits,
}

/// A tool's successful result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result the model sees (after the PostToolUse chain): a JSON value; a string is shown
    /// as is.
    pub result: Value,
    /// The HTTP exchange, for HTTP connector tools (audit metadata).
    pub http: Option<HttpExchange>,
}

impl ToolOutput {
    /// A result without HTTP details.
    pub fn new(result: Value) -> Self {
        ToolOutput { result, http: None }
    }
}

/// One HTTP request a tool made, for the audit log (`request_method`, `request_url`,
/// `response_status`, `response_time_ms` metadata).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpExchange {
    pub method: String,
    pub url: String,
    /// `None` when no response arrived (connect error, timeout).
    pub status: Option<u16>,
    /// From sending the request to reading the whole body, in milliseconds.
    pub latency_ms: u64,
}

/// Why a tool call failed. The message is the model's observation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool (beyond the schema), e.g. a missing path parameter.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool refused to run, e.g. a connector URL pointing at a cloud metadata address.
    #[error("refused: {0}")]
    Refused(String),
    /// The HTTP request failed or answered with a non-2xx status.
    #[error("{message}")]
    Http { message: String, exchange: HttpExchange },
    /// The database connector failed (connect or SQL error).
    #[error("database error: {0}")]
    Database(String),
    /// Any other failure.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// The HTTP exchange behind the failure, if one was attempted.
    pub fn http_exchange(&self) -> Option<&HttpExchange> {
        match self {
            ToolError::Http { exchange, .. } => Some(exchange),
            _ => None,
        }
    }
}

/// Whether `name` is a valid tool name: 1–64 of `[A-Za-z0-9_-]`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
