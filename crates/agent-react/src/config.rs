use hook_core::HookRegistry;
use llm::ModelConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The current [`AgentConfig::version`].
pub const AGENT_CONFIG_VERSION: u32 = 1;

/// An agent's persisted configuration (DESIGN §4, `POST /api/v1/agents`), versioned and strict:
/// unknown fields are refused.
///
/// ```json
/// {"version": 1, "instructions": "You pay invoices.", "model": {"provider": "scripted", "turns": []},
///  "tools": ["current_time"], "connectors": ["<connector id>"], "delegates": ["<agent id>"],
///  "require_confirmation_for_all": false,
///  "confirmation": {"timeout_s": 120, "approver_scope": "org_admins", "channel_id": null},
///  "hooks": {"class_hooks": ["result_truncate", {"name": "result_truncate", "config": {"max_chars": 4000}}]}}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The format version; [`AGENT_CONFIG_VERSION`] when absent.
    #[serde(default = "current_version")]
    pub version: u32,
    /// The system prompt.
    pub instructions: String,
    pub model: ModelConfig,
    /// Built-in tool names (e.g. `current_time`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Connector ids; each action becomes a `<connector>__<action>` tool.
    #[serde(default)]
    pub connectors: Vec<String>,
    /// Agent ids this agent may delegate to through [`crate::CallAgentTool`].
    #[serde(default)]
    pub delegates: Vec<String>,
    /// Every tool call of this agent needs a human's approval (the confirmation gate reads it).
    #[serde(default)]
    pub require_confirmation_for_all: bool,
    #[serde(default)]
    pub confirmation: ConfirmationConfig,
    #[serde(default)]
    pub hooks: HooksConfig,
}

fn current_version() -> u32 {
    AGENT_CONFIG_VERSION
}

/// How the confirmation gate asks (DESIGN §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmationConfig {
    /// How long a request waits for a decision, in seconds. Default 120.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
    #[serde(default)]
    pub approver_scope: ApproverScope,
    /// The approval channel; the org's default channel when absent.
    #[serde(default)]
    pub channel_id: Option<String>,
}

fn default_timeout_s() -> u64 {
    120
}

impl Default for ConfirmationConfig {
    fn default() -> Self {
        ConfirmationConfig {
            timeout_s: default_timeout_s(),
            approver_scope: ApproverScope::default(),
            channel_id: None,
        }
    }
}

/// Who may approve a call (DESIGN §3, step 7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproverScope {
    /// The user who started the run.
    Initiator,
    AgentOwner,
    /// Any admin of the org (the default).
    #[default]
    OrgAdmins,
    OrgMembers,
}

/// The agent's class hooks, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    #[serde(default)]
    pub class_hooks: Vec<HookSpec>,
}

/// A hook reference: `"name"` or `{"name": "…", "config": {…}}` (no other keys).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum HookSpec {
    Name(String),
    WithConfig {
        name: String,
        #[serde(default)]
        config: Value,
    },
}

impl<'de> Deserialize<'de> for HookSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(deserializer)? {
            Value::String(name) => Ok(HookSpec::Name(name)),
            Value::Object(mut fields) => {
                if let Some(unknown) = fields.keys().find(|k| *k != "name" && *k != "config") {
                    return Err(D::Error::custom(format!(
                        "unknown field `{unknown}` in a hook spec, expected `name` or `config`"
                    )));
                }
                let name = match fields.remove("name") {
                    Some(Value::String(name)) => name,
                    _ => return Err(D::Error::custom("a hook spec object needs a string `name`")),
                };
                Ok(HookSpec::WithConfig { name, config: fields.remove("config").unwrap_or(Value::Null) })
            }
            other => Err(D::Error::custom(format!("expected a hook name or {{name, config}}, got {other}"))),
        }
    }
}

impl HookSpec {
    pub fn name(&self) -> &str {
        match self {
            HookSpec::Name(name) | HookSpec::WithConfig { name, .. } => name,
        }
    }

    /// The hook's configuration; `null` when none was given.
    pub fn config(&self) -> &Value {
        match self {
            HookSpec::Name(_) => &Value::Null,
            HookSpec::WithConfig { config, .. } => config,
        }
    }
}

/// What a [`HookFactory`] knows about the agent whose registry it builds.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentContextInfo {
    pub agent_id: String,
    pub org_id: String,
    pub name: String,
    /// The agent owner's user id, for `approver_scope = agent_owner`.
    pub owner_user_id: Option<String>,
    pub config: AgentConfig,
}

/// Builds an agent's [`HookRegistry`] from its config: the confirmation gate always (reading
/// `require_confirmation_for_all` and `confirmation`), the platform built-ins, and
/// `hooks.class_hooks` by name. Implemented by the server, which knows `hook-builtins` and the
/// store; `agent-react` depends on neither.
pub trait HookFactory: Send + Sync {
    /// # Errors
    /// [`HookBuildError`]: the agent must then not run (fail closed).
    fn build(&self, agent: &AgentContextInfo) -> Result<HookRegistry, HookBuildError>;
}

/// Why an agent's hooks cannot be built. The message says which hook and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookBuildError {
    #[error("unknown hook '{name}'")]
    UnknownHook { name: String },
    #[error("bad config for hook '{name}': {reason}")]
    BadConfig { name: String, reason: String },
    #[error("cannot build the hooks: {0}")]
    Other(String),
}
