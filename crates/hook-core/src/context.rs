use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fixed points of a run at which hooks fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookPoint {
    /// After the model picked a tool, before the tool runs.
    PreToolUse,
    /// After the tool call ended (executed, blocked or failed), before the model sees the result.
    PostToolUse,
    /// Before the first model call of a run.
    SessionStart,
}

impl HookPoint {
    /// The point's name as written in traces and events: `pre_tool_use`, `post_tool_use`,
    /// `session_start`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::PreToolUse => "pre_tool_use",
            HookPoint::PostToolUse => "post_tool_use",
            HookPoint::SessionStart => "session_start",
        }
    }
}

impl std::fmt::Display for HookPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook sees.
///
/// `tool_args` are the arguments as this hook sees them, after the rewrites of earlier hooks.
/// `metadata` carries the well-known keys of [`crate::meta`] (org, run, tool call, connector, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookContext {
    pub hook_point: HookPoint,
    /// The tool's name; `""` at [`HookPoint::SessionStart`].
    pub tool_name: String,
    /// The tool's arguments (a JSON object for every tool Tollgate exposes).
    pub tool_args: Value,
    /// The tool's result, at [`HookPoint::PostToolUse`] only.
    pub tool_result: Option<Value>,
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
    pub metadata: Map<String, Value>,
}

impl HookContext {
    /// A context for [`HookPoint::PreToolUse`] with empty metadata.
    pub fn pre_tool_use(tool_name: impl Into<String>, tool_args: Value) -> Self {
        Self::new(HookPoint::PreToolUse, tool_name.into(), tool_args, None)
    }

    /// A context for [`HookPoint::PostToolUse`] with empty metadata.
    pub fn post_tool_use(tool_name: impl Into<String>, tool_args: Value, tool_result: Value) -> Self {
        Self::new(HookPoint::PostToolUse, tool_name.into(), tool_args, Some(tool_result))
    }

    /// A context for [`HookPoint::SessionStart`]: no tool, `null` args, empty metadata.
    pub fn session_start() -> Self {
        Self::new(HookPoint::SessionStart, String::new(), Value::Null, None)
    }

    fn new(hook_point: HookPoint, tool_name: String, tool_args: Value, tool_result: Option<Value>) -> Self {
        HookContext {
            hook_point,
            tool_name,
            tool_args,
            tool_result,
            agent_id: None,
            user_id: None,
            metadata: Map::new(),
        }
    }

    /// The string value of a metadata key, if present and a string.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(Value::as_str)
    }
}

/// A hook's verdict, and the combined verdict of a registry.
///
/// [`HookResult::default()`] and [`HookResult::allow()`] allow and change nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookResult {
    pub allow: bool,
    /// Shown to the model (as the tool's observation) when the call is blocked.
    pub error: Option<String>,
    /// Pre: replaces `tool_args` for later hooks and for the tool.
    pub modified_args: Option<Value>,
    /// Post: replaces the observation.
    pub modified_result: Option<Value>,
    /// SessionStart: appended to the initial prompt.
    pub additional_context: Option<String>,
    /// Audit trail, merged into the run trace.
    pub side_effects: Vec<String>,
}

impl Default for HookResult {
    fn default() -> Self {
        HookResult {
            allow: true,
            error: None,
            modified_args: None,
            modified_result: None,
            additional_context: None,
            side_effects: Vec::new(),
        }
    }
}

impl HookResult {
    /// Allow, change nothing.
    pub fn allow() -> Self {
        Self::default()
    }

    /// Block with `reason`, which the model sees as the tool's observation.
    pub fn block(reason: impl Into<String>) -> Self {
        HookResult { allow: false, error: Some(reason.into()), ..Self::default() }
    }

    /// Allow with rewritten arguments (Pre).
    pub fn with_args(args: Value) -> Self {
        HookResult { modified_args: Some(args), ..Self::default() }
    }

    /// Allow with a rewritten result (Post).
    pub fn with_result(result: Value) -> Self {
        HookResult { modified_result: Some(result), ..Self::default() }
    }

    /// Allow and inject `context` into the initial prompt (SessionStart).
    pub fn with_context(context: impl Into<String>) -> Self {
        HookResult { additional_context: Some(context.into()), ..Self::default() }
    }
}
