//! Well-known keys of [`HookContext::metadata`](crate::HookContext::metadata).
//!
//! Every surface (ReAct chat, DAG steps, delegates, workflow nodes) fills in the keys that apply to
//! it, so that a hook written once works everywhere.

/// The caller's organization id (string).
pub const ORG_ID: &str = "org_id";
/// The conversation id (string), when the run belongs to one.
pub const CONVERSATION_ID: &str = "conversation_id";
/// The run id (string).
pub const RUN_ID: &str = "run_id";
/// The model's `tool_call_id` (string); unique within a run.
pub const TOOL_CALL_ID: &str = "tool_call_id";
/// Whether the tool is marked `requires_confirmation` (bool).
pub const REQUIRES_CONFIRMATION: &str = "requires_confirmation";
/// The connector's id (string), for connector tools.
pub const CONNECTOR_ID: &str = "connector_id";
/// The connector's name (string), for connector tools.
pub const CONNECTOR_NAME: &str = "connector_name";
/// The connector action's name (string), for connector tools.
pub const ACTION_NAME: &str = "action_name";
/// `"read"` or `"write"`.
pub const SIDE_EFFECT: &str = "side_effect";
/// Where the call happens: `"react"`, `"dag"`, `"delegate"` or `"workflow"`.
pub const SURFACE: &str = "surface";
/// The DAG step id (string), on the `dag` surface.
pub const STEP_ID: &str = "step_id";
/// The workflow node id (string), on the `workflow` surface.
pub const NODE_ID: &str = "node_id";
/// The delegating run's id (string), on the `delegate` surface.
pub const PARENT_RUN_ID: &str = "parent_run_id";
/// PostToolUse only: `"executed"`, `"blocked"` or `"failed"`.
pub const OUTCOME: &str = "outcome";
/// PostToolUse, when `outcome` is `"blocked"`: the name of the hook that blocked the call (string).
pub const BLOCKED_BY: &str = "blocked_by";
/// PostToolUse, when `outcome` is `"blocked"` or `"failed"`: the block reason or the failure's
/// message (string).
pub const ERROR: &str = "error";
/// PostToolUse, HTTP connector calls: the request's method, e.g. `"POST"` (string).
pub const REQUEST_METHOD: &str = "request_method";
/// PostToolUse, HTTP connector calls: the request's full URL (string).
pub const REQUEST_URL: &str = "request_url";
/// PostToolUse, HTTP connector calls: the response's HTTP status (integer), when one arrived.
pub const RESPONSE_STATUS: &str = "response_status";
/// PostToolUse, HTTP connector calls: the request's duration in milliseconds (integer).
pub const RESPONSE_TIME_MS: &str = "response_time_ms";
/// PostToolUse: the arguments as the model asked for them, before any Pre hook rewrote them (JSON
/// value). `HookContext::tool_args` holds the effective arguments.
pub const ORIGINAL_ARGS: &str = "original_args";
/// PreToolUse, connector tools: the connector's own quota in requests per minute (integer), when
/// the connector declares a `rate_limit`.
pub const RATE_LIMIT_PER_MINUTE: &str = "rate_limit_per_minute";
/// PreToolUse, connector tools: the connector's burst size (integer), with
/// [`RATE_LIMIT_PER_MINUTE`].
pub const RATE_LIMIT_BURST: &str = "rate_limit_burst";
/// PreToolUse, SQL tools (`<connector>__sql_query`): the database's SQL dialect, `"postgresql"` or
/// `"sqlite"` (string); absent means unknown, and the SQL must then be a read in every dialect.
pub const SQL_DIALECT: &str = "sql_dialect";
