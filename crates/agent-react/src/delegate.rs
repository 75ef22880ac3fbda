use std::sync::{Arc, LazyLock};
use std::time::Duration;

use llm::ChatModel;
use serde_json::{Value, json};

use crate::ToolBuildError;
use crate::config::{AgentContextInfo, HookFactory};
use crate::run::{AgentRun, RunScope, RunStatus, Surface, run_agent};
use crate::tool::{SideEffect, Tool, ToolCallContext, ToolError, ToolOutput, is_valid_tool_name};

/// Loads a delegate agent and builds its own tools and model. Implemented by the server (it knows
/// the store and the connectors).
#[async_trait::async_trait]
pub trait AgentResolver: Send + Sync {
    /// The agent `agent_id`, as seen from the delegating run `parent` (same org).
    ///
    /// # Errors
    /// Why the agent cannot be loaded (unknown, another org, a model or tool that cannot be
    /// built); the delegating call's observation says so.
    async fn resolve(&self, agent_id: &str, parent: &RunScope) -> Result<ResolvedAgent, String>;
}

/// A delegate ready to run: its config and identity, its model and its tools.
#[derive(Clone)]
pub struct ResolvedAgent {
    pub info: AgentContextInfo,
    pub model: Arc<dyn ChatModel>,
    pub tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ResolvedAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedAgent")
            .field("info", &self.info)
            .field("model", &self.model.name())
            .field("tools", &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>())
            .finish()
    }
}

/// `call_agent__<name>`: hands a task to another agent and returns its answer.
///
/// The delegate runs with its own tools and its *own* hook registry, built by the
/// [`HookFactory`] from its own config (so its confirmation gate reads its own
/// `require_confirmation_for_all`); user and org are inherited; `surface = delegate` and
/// `parent_run_id` are set. A delegate whose hooks cannot be built does not run, and the call
/// fails with the reason. The delegate reports to the parent run's event sink under its own
/// `run_id`.
pub struct CallAgentTool {
    name: String,
    description: String,
    agent_id: String,
    resolver: Arc<dyn AgentResolver>,
    factory: Arc<dyn HookFactory>,
}

impl std::fmt::Debug for CallAgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallAgentTool")
            .field("name", &self.name)
            .field("agent_id", &self.agent_id)
            .finish_non_exhaustive()
    }
}

static PARAMETERS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {"task": {"type": "string", "description": "What the agent should do, in full sentences."}},
        "required": ["task"],
        "additionalProperties": false
    })
});

impl CallAgentTool {
    /// A tool named `call_agent__<agent_name>` delegating to `agent_id`.
    ///
    /// # Errors
    /// [`ToolBuildError::InvalidName`] when `agent_name` makes an invalid tool name.
    pub fn new(
        agent_id: impl Into<String>,
        agent_name: &str,
        description: Option<&str>,
        resolver: Arc<dyn AgentResolver>,
        factory: Arc<dyn HookFactory>,
    ) -> Result<Self, ToolBuildError> {
        let name = format!("call_agent__{agent_name}");
        if !is_valid_tool_name(&name) {
            return Err(ToolBuildError::InvalidName(name));
        }
        let description = description
            .map(str::to_owned)
            .unwrap_or_else(|| format!("Delegate a task to the agent '{agent_name}' and get its answer."));
        Ok(CallAgentTool { name, description, agent_id: agent_id.into(), resolver, factory })
    }
}

#[async_trait::async_trait]
impl Tool for CallAgentTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> &Value {
        &PARAMETERS
    }
    fn side_effect(&self) -> SideEffect {
        // The delegate's own hooks guard its own tools.
        SideEffect::Read
    }
    fn timeout(&self) -> Duration {
        // Bounded by the parent's wall time instead: the delegate may wait for approvals.
        Duration::from_secs(24 * 3600)
    }

    async fn call(&self, args: Value, ctx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
        let parent = &ctx.scope;
        if parent.depth >= ctx.limits.max_delegation_depth {
            return Err(ToolError::Refused(format!(
                "delegation is nested too deep (at most {} levels)",
                ctx.limits.max_delegation_depth
            )));
        }
        let task = args.get("task").and_then(Value::as_str).unwrap_or_default().to_owned();
        let resolved = self
            .resolver
            .resolve(&self.agent_id, parent)
            .await
            .map_err(|why| ToolError::Failed(format!("delegate agent '{}' cannot run: {why}", self.agent_id)))?;
        let hooks = self.factory.build(&resolved.info).map_err(|e| {
            ToolError::Failed(format!(
                "delegate agent '{}' was not run: its hooks cannot be built: {e}",
                resolved.info.name
            ))
        })?;
        let scope = RunScope {
            run_id: uuid::Uuid::new_v4().to_string(),
            org_id: parent.org_id.clone(),
            user_id: parent.user_id.clone(),
            agent_id: Some(resolved.info.agent_id.clone()),
            conversation_id: None,
            surface: Surface::Delegate,
            parent_run_id: Some(parent.run_id.clone()),
            step_id: parent.step_id.clone(),
            node_id: parent.node_id.clone(),
            depth: parent.depth + 1,
        };
        let outcome = run_agent(AgentRun {
            scope,
            instructions: resolved.info.config.instructions.clone(),
            history: Vec::new(),
            input: task,
            model: resolved.model,
            tools: resolved.tools,
            hooks: Arc::new(hooks),
            services: ctx.services.clone(),
            limits: ctx.limits,
            first_seq: 0,
        })
        .await;
        match outcome.status {
            RunStatus::Completed => Ok(ToolOutput::new(Value::String(outcome.answer.unwrap_or_default()))),
            RunStatus::Failed => Err(ToolError::Failed(format!(
                "delegate agent '{}' failed: {}",
                resolved.info.name,
                outcome.error.unwrap_or_default()
            ))),
        }
    }
}
