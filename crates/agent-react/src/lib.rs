//! The ReAct loop: the [`Tool`] trait and tool kinds, the loop that runs every tool call through
//! the PreToolUse and PostToolUse chains ([`run_agent`]), [`CallAgentTool`] delegation and the
//! run event stream ([`AgentEvent`]).
//!
//! Built-in hooks reach an agent through a [`HookFactory`] the server implements (usually a
//! [`HookCatalog`] of named builders): this crate depends on `hook-core` and `llm` only, never on
//! `hook-builtins` or `store`.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_react::{AgentRun, CurrentTimeTool, RunLimits, RunScope, RunServices, RunStatus, VecSink, run_agent};
//! use hook_core::HookRegistry;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let model: llm::ModelConfig = serde_json::from_value(serde_json::json!({
//!     "provider": "scripted",
//!     "turns": [{"tool_calls": [{"name": "current_time", "arguments": {}}]}, {"content": "It is late."}]
//! })).unwrap();
//! let sink = Arc::new(VecSink::new());
//! let outcome = run_agent(AgentRun {
//!     scope: RunScope::new("org-1"),
//!     instructions: "You tell the time.".into(),
//!     history: Vec::new(),
//!     input: "What time is it?".into(),
//!     model: model.build().unwrap(),
//!     tools: vec![Arc::new(CurrentTimeTool)],
//!     hooks: Arc::new(HookRegistry::new()),
//!     services: RunServices::new(sink.clone()),
//!     limits: RunLimits::default(),
//!     first_seq: 0,
//! })
//! .await;
//! assert_eq!(outcome.status, RunStatus::Completed);
//! assert_eq!(outcome.answer.as_deref(), Some("It is late."));
//! let names: Vec<&str> = sink.events().iter().map(|e| e.name()).collect();
//! assert_eq!(names, ["run_started", "tool_call", "tool_result", "answer", "run_completed"]);
//! # }
//! ```
//!
//! Choices worth knowing:
//! - Argument schemas are checked by a small validator of our own ([`schema`]), not the
//!   `jsonschema` crate.
//! - Hooks that emit events (the confirmation gate) reach a run's stream through a [`RunHub`]
//!   the server shares between its runs ([`RunServices::hub`]) and its implementation of the
//!   gate's `ConfirmationEvents` callbacks, which call [`RunHub::emit_now`] (synchronous; the event
//!   still lands in `seq` order). `hook-core` has no event plumbing.
//! - The `tool_call` events of a turn are emitted before its calls run; the `tool_result` events
//!   after all of them ended, in call order — so a transcript is deterministic even though the
//!   calls run concurrently. `awaiting_confirmation` comes in between, while the gate waits.
//! - `requires_confirmation` metadata is the tool's own flag; the agent's
//!   `require_confirmation_for_all` reaches the gate through the [`HookFactory`] (it is in the
//!   agent's config).
//! - A call that is not valid JSON, fails its schema, names an unknown tool or exceeds
//!   [`RunLimits::max_tool_calls`] is *blocked* (`blocked_by` = [`BLOCKED_BY_VALIDATION`],
//!   [`BLOCKED_BY_UNKNOWN_TOOL`], [`BLOCKED_BY_RUN_LIMITS`]) without running the PreToolUse chain;
//!   the PostToolUse chain still fires for it with `outcome = blocked`.
//! - A delegate's run reports to its parent's event sink; its events carry its own `run_id` and
//!   `run_started.parent_run_id`.

mod builtin;
mod catalog;
mod config;
mod delegate;
mod events;
mod http;
mod run;
pub mod schema;
mod sql;
mod tool;

pub use builtin::{CurrentTimeTool, builtin_tool};
pub use catalog::{HookBuilder, HookCatalog, HookEntry};
pub use config::{
    AGENT_CONFIG_VERSION, AgentConfig, AgentContextInfo, ApproverScope, ConfirmationConfig, HookBuildError,
    HookFactory, HookSpec, HooksConfig,
};
pub use delegate::{AgentResolver, CallAgentTool, ResolvedAgent};
pub use events::{
    AgentEvent, ChannelSink, EventKind, EventSink, NullSink, RunEmitter, RunHub, RunJournal, RunServices, ToolStart,
    VecSink,
};
pub use http::{
    ConnectorAuth, HttpAction, HttpActionTool, HttpConnector, MAX_RESPONSE_BYTES, RateLimit, http_client,
    http_connector_tools,
};
pub use run::{
    AgentRun, BLOCKED_BY_RUN_LIMITS, BLOCKED_BY_UNKNOWN_TOOL, BLOCKED_BY_VALIDATION, RunLimits, RunOutcome, RunScope,
    RunStatus, Surface, UNKNOWN_OUTCOME, run_agent,
};
pub use sql::{DatabaseConnector, SqlQueryTool};
pub use tool::{
    ConnectorIdentity, HttpExchange, SideEffect, Tool, ToolCallContext, ToolError, ToolOutput, is_valid_tool_name,
};

/// Why a tool cannot be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolBuildError {
    /// The name is not `^[A-Za-z0-9_-]{1,64}$`.
    #[error("invalid tool name '{0}': use 1-64 of A-Z a-z 0-9 _ -")]
    InvalidName(String),
    #[error("invalid connector '{connector}': {reason}")]
    InvalidConnector { connector: String, reason: String },
    #[error("unknown built-in tool '{0}'")]
    UnknownBuiltin(String),
}
