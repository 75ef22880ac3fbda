//! `CallAgentTool`: the delegate builds its own registry, inherits user and org, and meets its own
//! gate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_react::{
    AgentConfig, AgentContextInfo, AgentResolver, CallAgentTool, EventKind, HookBuildError, HookFactory, ResolvedAgent,
    RunHub, RunScope, RunStatus, SideEffect, Tool,
};
use chrono::TimeZone;
use hook_core::{HookContext, HookError, HookRegistry, HookResult, PreToolUseHook, meta};
use serde_json::{Value, json};

use crate::support::{FakeTool, Recorder, agent_run, check, scripted};

/// A gate-like Pre hook: for calls that need confirmation, it announces a request through the
/// hub, "receives" a rejection and blocks — the shape of the real confirmation gate.
struct GateLike {
    hub: Arc<RunHub>,
    require_all: bool,
    seen: Arc<Mutex<Vec<HookContext>>>,
}

#[async_trait::async_trait]
impl PreToolUseHook for GateLike {
    fn name(&self) -> &str {
        "confirmation_gate"
    }
    fn priority(&self) -> i32 {
        i32::MAX
    }
    fn should_trigger(&self, ctx: &HookContext) -> bool {
        self.require_all || ctx.metadata.get(meta::REQUIRES_CONFIRMATION) == Some(&Value::Bool(true))
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        self.seen.lock().unwrap().push(ctx.clone());
        let run_id = ctx.meta_str(meta::RUN_ID).ok_or_else(|| HookError::msg("no run id"))?;
        let tool_call_id = ctx.meta_str(meta::TOOL_CALL_ID).unwrap_or_default().to_owned();
        let expires_at = chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 5, 0).unwrap();
        // The real gate reports through synchronous callbacks: use the synchronous path.
        let announced = self.hub.emit_now(
            run_id,
            EventKind::AwaitingConfirmation {
                confirmation_id: "conf-1".into(),
                tool_call_id,
                tool_name: ctx.tool_name.clone(),
                arguments: ctx.tool_args.clone(),
                expires_at,
            },
        );
        assert!(announced, "the run is live in the hub");
        self.hub.emit_now(
            run_id,
            EventKind::ConfirmationResolved {
                confirmation_id: "conf-1".into(),
                status: "rejected".into(),
                decided_by: Some("user-2".into()),
            },
        );
        Ok(HookResult::block("Tool call was rejected by an operator"))
    }
}

/// The server's role: gate always, class hooks by name, unknown names refused.
struct Factory {
    hub: Arc<RunHub>,
    gate_seen: Arc<Mutex<Vec<HookContext>>>,
    recorder: Arc<Recorder>,
}

impl HookFactory for Factory {
    fn build(&self, agent: &AgentContextInfo) -> Result<HookRegistry, HookBuildError> {
        let mut registry = HookRegistry::new();
        registry.register_pre(Arc::new(GateLike {
            hub: self.hub.clone(),
            require_all: agent.config.require_confirmation_for_all,
            seen: self.gate_seen.clone(),
        }));
        registry.register_post(self.recorder.clone());
        for spec in &agent.config.hooks.class_hooks {
            match spec.name() {
                "recorder" => {}
                other => return Err(HookBuildError::UnknownHook { name: other.into() }),
            }
        }
        Ok(registry)
    }
}

struct Resolver {
    agents: HashMap<String, (AgentConfig, Vec<Arc<dyn Tool>>)>,
    seen_parents: Mutex<Vec<RunScope>>,
}

#[async_trait::async_trait]
impl AgentResolver for Resolver {
    async fn resolve(&self, agent_id: &str, parent: &RunScope) -> Result<ResolvedAgent, String> {
        self.seen_parents.lock().unwrap().push(parent.clone());
        let (config, tools) = self.agents.get(agent_id).ok_or_else(|| format!("unknown agent {agent_id}"))?;
        Ok(ResolvedAgent {
            info: AgentContextInfo {
                agent_id: agent_id.into(),
                org_id: parent.org_id.clone(),
                name: agent_id.trim_start_matches("agent-").into(),
                owner_user_id: None,
                config: config.clone(),
            },
            model: config.model.build().map_err(|e| e.to_string())?,
            tools: tools.clone(),
        })
    }
}

fn config(value: Value) -> AgentConfig {
    serde_json::from_value(value).unwrap()
}

fn setup() -> (Arc<Factory>, Arc<Resolver>) {
    let hub = Arc::new(RunHub::new());
    let factory = Arc::new(Factory { hub, gate_seen: Default::default(), recorder: Default::default() });
    let payer = config(json!({
        "instructions": "You pay invoices.",
        "model": {"provider": "scripted", "turns": [
            {"tool_calls": [{"name": "payments__purchase_pay", "arguments": {"invoice_id": "INV-1", "amount_cny": 60000}}]},
            {"content": "The payment was rejected by an operator."}
        ]},
        "connectors": ["conn-payments"],
        "hooks": {"class_hooks": ["recorder"]}
    }));
    let broken = config(json!({
        "instructions": "x",
        "model": {"provider": "scripted", "turns": [{"content": "should never run"}]},
        "hooks": {"class_hooks": [{"name": "no_such_hook", "config": {"a": 1}}]}
    }));
    let pay: Arc<dyn Tool> = FakeTool::new("payments__purchase_pay", SideEffect::Write).confirm().arc();
    let agents =
        HashMap::from([("agent-payer".to_owned(), (payer, vec![pay])), ("agent-broken".to_owned(), (broken, vec![]))]);
    (factory, Arc::new(Resolver { agents, seen_parents: Default::default() }))
}

#[tokio::test(flavor = "multi_thread")]
async fn delegated_call_reaches_the_gate() {
    let (factory, resolver) = setup();
    let delegate: Arc<dyn Tool> =
        Arc::new(CallAgentTool::new("agent-payer", "payer", None, resolver.clone(), factory.clone()).unwrap());
    let model = scripted(json!([
        {"tool_calls": [{"name": "call_agent__payer", "arguments": {"task": "Pay INV-1 (60000 CNY)"}}]},
        {"content": "The payer reports the payment was rejected."}
    ]));
    // The parent's own registry is empty: only the delegate's registry has the gate.
    let (mut run, sink) = agent_run(model, vec![delegate], HookRegistry::new());
    run.services.hub = Some(factory.hub.clone());
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Completed);
    insta::assert_json_snapshot!(events);
    // Finished runs leave the hub.
    assert!(!factory.hub.emit_now(crate::support::RUN_ID, EventKind::Answer { content: "late".into() }));

    // The gate saw the delegate's call with the delegate surface, inherited user and org.
    let gate = factory.gate_seen.lock().unwrap();
    assert_eq!(gate.len(), 1);
    let ctx = &gate[0];
    assert_eq!(ctx.user_id.as_deref(), Some("user-1"));
    assert_eq!(ctx.agent_id.as_deref(), Some("agent-payer"));
    assert_eq!(ctx.meta_str(meta::ORG_ID), Some("org-1"));
    assert_eq!(ctx.meta_str(meta::SURFACE), Some("delegate"));
    assert_eq!(ctx.meta_str(meta::PARENT_RUN_ID), Some(crate::support::RUN_ID));
    assert_ne!(ctx.meta_str(meta::RUN_ID), Some(crate::support::RUN_ID));
    assert_eq!(resolver.seen_parents.lock().unwrap()[0].run_id, crate::support::RUN_ID);
    // Post fired in the delegate for the blocked call.
    let post = factory.recorder.seen.lock().unwrap();
    assert_eq!(post[0].meta_str(meta::OUTCOME), Some("blocked"));
    assert_eq!(post[0].meta_str(meta::BLOCKED_BY), Some("confirmation_gate"));
}

#[tokio::test(flavor = "multi_thread")]
async fn delegate_whose_hooks_cannot_be_built_is_not_run() {
    let (factory, resolver) = setup();
    let delegate: Arc<dyn Tool> =
        Arc::new(CallAgentTool::new("agent-broken", "broken", None, resolver, factory.clone()).unwrap());
    let model = scripted(json!([
        {"tool_calls": [{"name": "call_agent__broken", "arguments": {"task": "anything"}}]},
        {"content": "it could not run"}
    ]));
    let (run, sink) = agent_run(model, vec![delegate], HookRegistry::new());
    let (_, events) = check(run, &sink).await;
    // No delegate run started.
    assert_eq!(events.iter().filter(|e| e["event"] == "run_started").count(), 1);
    let result = events.iter().find(|e| e["event"] == "tool_result").unwrap();
    assert_eq!(
        result["error"],
        "delegate agent 'broken' was not run: its hooks cannot be built: unknown hook 'no_such_hook'"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn require_confirmation_for_all_is_read_from_the_delegates_own_config() {
    let (factory, _) = setup();
    // A delegate whose config asks for confirmation of every call, with a read-only tool.
    let reader = config(json!({
        "instructions": "You read.",
        "model": {"provider": "scripted", "turns": [
            {"tool_calls": [{"name": "docs__read", "arguments": {}}]}, {"content": "blocked"}
        ]},
        "require_confirmation_for_all": true
    }));
    let mut agents = HashMap::new();
    agents.insert("agent-reader".to_owned(), (reader, vec![FakeTool::new("docs__read", SideEffect::Read).arc()]));
    let resolver = Arc::new(Resolver { agents, seen_parents: Default::default() });
    let tool = CallAgentTool::new("agent-reader", "reader", None, resolver, factory.clone()).unwrap();
    let model = scripted(
        json!([{"tool_calls": [{"name": "call_agent__reader", "arguments": {"task": "read"}}]}, {"content": "x"}]),
    );
    let (mut run, sink) = agent_run(model, vec![Arc::new(tool)], HookRegistry::new());
    run.services.hub = Some(factory.hub.clone());
    check(run, &sink).await;
    assert_eq!(factory.gate_seen.lock().unwrap().len(), 1);
}
