//! Test tools, hooks and a `check` helper that runs a scripted agent and returns its events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_react::{
    AgentEvent, AgentRun, ConnectorIdentity, RunLimits, RunOutcome, RunScope, RunServices, SideEffect, Tool,
    ToolCallContext, ToolError, ToolOutput, VecSink, run_agent,
};
use hook_core::{HookContext, HookError, HookRegistry, HookResult, PostToolUseHook, PreToolUseHook, SessionStartHook};
use llm::ModelConfig;
use serde_json::{Value, json};

pub const RUN_ID: &str = "run-1";

/// A connector-like tool that answers `{"ok": true, "tool": <name>, "args": <args>}`, or fails /
/// panics when the args say `{"fail": true}` / `{"panic": true}`.
#[derive(Debug)]
pub struct FakeTool {
    pub name: String,
    pub schema: Value,
    pub side_effect: SideEffect,
    pub requires_confirmation: bool,
    pub identity: ConnectorIdentity,
    pub result: Option<Value>,
}

impl FakeTool {
    pub fn new(name: &str, side_effect: SideEffect) -> Self {
        let (connector, action) = name.split_once("__").unwrap_or(("builtin", name));
        FakeTool {
            name: name.into(),
            schema: json!({"type": "object"}),
            side_effect,
            requires_confirmation: false,
            identity: ConnectorIdentity {
                id: format!("conn-{connector}"),
                name: connector.into(),
                action: action.into(),
            },
            result: None,
        }
    }

    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }

    pub fn confirm(mut self) -> Self {
        self.requires_confirmation = true;
        self
    }

    pub fn returning(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }

    pub fn arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

#[async_trait::async_trait]
impl Tool for FakeTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "a fake tool"
    }
    fn parameters(&self) -> &Value {
        &self.schema
    }
    fn requires_confirmation(&self) -> bool {
        self.requires_confirmation
    }
    fn side_effect(&self) -> SideEffect {
        self.side_effect
    }
    fn connector(&self) -> Option<&ConnectorIdentity> {
        Some(&self.identity)
    }
    async fn call(&self, args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
        if args.get("fail") == Some(&Value::Bool(true)) {
            return Err(ToolError::Failed("the upstream said no".into()));
        }
        if args.get("panic") == Some(&Value::Bool(true)) {
            panic!("tool panic on purpose");
        }
        Ok(ToolOutput::new(self.result.clone().unwrap_or_else(|| json!({"ok": true, "tool": self.name, "args": args}))))
    }
}

type PreFn = dyn Fn(&HookContext) -> Result<HookResult, HookError> + Send + Sync;
type PostFn = dyn Fn(&HookContext) -> Result<HookResult, HookError> + Send + Sync;

/// A Pre hook from a closure; `delay` makes it sleep first (for timeouts).
pub struct FnPre {
    pub name: &'static str,
    pub priority: i32,
    pub timeout: Duration,
    pub delay: Option<Duration>,
    pub f: Box<PreFn>,
}

impl FnPre {
    pub fn new(
        name: &'static str,
        f: impl Fn(&HookContext) -> Result<HookResult, HookError> + Send + Sync + 'static,
    ) -> Self {
        FnPre { name, priority: 50, timeout: Duration::from_secs(30), delay: None, f: Box::new(f) }
    }
}

#[async_trait::async_trait]
impl PreToolUseHook for FnPre {
    fn name(&self) -> &str {
        self.name
    }
    fn priority(&self) -> i32 {
        self.priority
    }
    fn timeout(&self) -> Duration {
        self.timeout
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        (self.f)(ctx)
    }
}

/// A Post hook from a closure.
pub struct FnPost {
    pub name: &'static str,
    pub priority: i32,
    pub f: Box<PostFn>,
}

impl FnPost {
    pub fn new(
        name: &'static str,
        priority: i32,
        f: impl Fn(&HookContext) -> Result<HookResult, HookError> + Send + Sync + 'static,
    ) -> Self {
        FnPost { name, priority, f: Box::new(f) }
    }
}

#[async_trait::async_trait]
impl PostToolUseHook for FnPost {
    fn name(&self) -> &str {
        self.name
    }
    fn priority(&self) -> i32 {
        self.priority
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        (self.f)(ctx)
    }
}

/// A SessionStart hook from a closure.
pub struct FnSession {
    pub name: &'static str,
    pub f: Box<PreFn>,
}

#[async_trait::async_trait]
impl SessionStartHook for FnSession {
    fn name(&self) -> &str {
        self.name
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        (self.f)(ctx)
    }
}

/// A Post hook recording every context it sees (priority 1000, like the audit log).
#[derive(Default)]
pub struct Recorder {
    pub seen: Mutex<Vec<HookContext>>,
}

#[async_trait::async_trait]
impl PostToolUseHook for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn priority(&self) -> i32 {
        1000
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        self.seen.lock().unwrap().push(ctx.clone());
        Ok(HookResult::allow())
    }
}

/// The scripted model of `turns` (DESIGN §4 JSON).
pub fn scripted(turns: Value) -> Arc<dyn llm::ChatModel> {
    let config: ModelConfig = serde_json::from_value(json!({"provider": "scripted", "turns": turns})).unwrap();
    config.build().unwrap()
}

pub fn scope() -> RunScope {
    let mut scope = RunScope::new("org-1");
    scope.run_id = RUN_ID.into();
    scope.user_id = Some("user-1".into());
    scope.agent_id = Some("agent-1".into());
    scope.conversation_id = Some("conv-1".into());
    scope
}

/// A run of `model` with `tools` and `hooks`, events collected in memory.
pub fn agent_run(
    model: Arc<dyn llm::ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    hooks: HookRegistry,
) -> (AgentRun, Arc<VecSink>) {
    let sink = Arc::new(VecSink::new());
    let run = AgentRun {
        scope: scope(),
        instructions: "You are a test agent.".into(),
        history: Vec::new(),
        input: "do the thing".into(),
        model,
        tools,
        hooks: Arc::new(hooks),
        services: RunServices::new(sink.clone()),
        limits: RunLimits::default(),
        first_seq: 0,
    };
    (run, sink)
}

/// Runs and returns the outcome and the events as JSON, with the run ids of delegates (random)
/// replaced by `[delegate_run_id]`.
pub async fn check(run: AgentRun, sink: &VecSink) -> (RunOutcome, Vec<Value>) {
    let outcome = run_agent(run).await;
    (outcome, redact(sink.events()))
}

pub fn redact(events: Vec<AgentEvent>) -> Vec<Value> {
    events
        .into_iter()
        .map(|e| {
            let mut v = serde_json::to_value(&e).unwrap();
            if e.run_id != RUN_ID {
                v["run_id"] = "[delegate_run_id]".into();
            }
            v
        })
        .collect()
}
