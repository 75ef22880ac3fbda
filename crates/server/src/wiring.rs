//! Wiring: how a stored agent becomes a run — its tools, its hook registry (the confirmation gate
//! and the built-ins), its channel, and the sinks that persist and stream its events.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agent_react::{
    AgentConfig, AgentContextInfo, AgentEvent, AgentResolver, AgentRun, CallAgentTool, ConnectorAuth,
    DatabaseConnector, EventKind, EventSink, HookBuildError, HookFactory, HttpAction, HttpActionTool, HttpConnector,
    ResolvedAgent, RunJournal, RunLimits, RunScope, RunServices, SideEffect, SqlQueryTool, Surface, Tool, ToolStart,
    builtin_tool, run_agent,
};
use channel_core::ApprovalChannel;
use hook_builtins::ports::{
    ApprovalNotifier, ApproverScope, ConfirmationRecord, ConfirmationStatus, DecideOutcome, DecisionUpdate,
    DeliveryMode,
};
use hook_builtins::{
    AuditLogConfig, AuditLogHook, ConfirmationEvents, ConfirmationGateHook, ConnectorRateLimitConfig, GateConfig,
    GateDeps, ReadOnlyGuard, ReadOnlyGuardConfig, ResultTruncateConfig, ResultTruncateHook,
};
use hook_core::{FailurePolicy, HookContext, HookError, HookRegistry, HookResult, PreToolUseHook, meta};
use serde::de::DeserializeOwned;
use serde_json::Value;
use store::{ConnectorKind, RunStatus, RunUpdate};
use tokio::sync::broadcast;

use crate::error::ApiError;
use crate::state::AppState;

/// Builds the approval channel of a stored channel row.
pub fn build_channel(row: &store::Channel, http: &reqwest::Client) -> Result<Arc<dyn ApprovalChannel>, ApiError> {
    match row.kind.as_str() {
        "feishu" => {
            let config: channel_feishu::FeishuConfig = serde_json::from_value(row.config.clone())
                .map_err(|e| ApiError::internal(format!("channel {} has a bad stored config: {e}", row.id)))?;
            let channel = channel_feishu::FeishuChannel::new(config, http.clone())
                .map_err(|e| ApiError::internal(format!("channel {}: {e}", row.id)))?;
            Ok(Arc::new(channel))
        }
        other => Err(ApiError::internal(format!("channel {} has unsupported type '{other}'", row.id))),
    }
}

/// Parses a stored agent's configuration document.
pub fn agent_config(agent: &store::Agent) -> Result<AgentConfig, String> {
    serde_json::from_value(agent.model_config.clone()).map_err(|e| format!("agent {} has a bad config: {e}", agent.id))
}

fn context_info(agent: &store::Agent, config: AgentConfig) -> AgentContextInfo {
    AgentContextInfo {
        agent_id: agent.id.clone(),
        org_id: agent.org_id.clone(),
        name: agent.name.clone(),
        owner_user_id: agent.owner_user_id.clone(),
        config,
    }
}

/// The hook factory of the server: every agent gets the platform built-ins (`read_only_guard`,
/// `connector_rate_limit`, `result_truncate`, `audit_log`) and the `confirmation_gate`;
/// `hooks.class_hooks` entries configure them by name (`{name, config}`). An unknown name or a bad
/// config fails the build, and the agent does not run.
#[derive(Clone)]
pub struct ServerHookFactory {
    state: AppState,
    /// The org's active channels by id, resolved before the (synchronous) build.
    channels: HashMap<String, Arc<dyn ApprovalChannel>>,
    /// The org's default channel: the first active one.
    default_channel: Option<String>,
}

impl std::fmt::Debug for ServerHookFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHookFactory")
            .field("channels", &self.channels.keys().collect::<Vec<_>>())
            .field("default_channel", &self.default_channel)
            .finish_non_exhaustive()
    }
}

impl ServerHookFactory {
    /// Loads the org's active channels so that `build` can pick the agent's.
    pub async fn for_org(state: &AppState, org_id: &str) -> Result<ServerHookFactory, ApiError> {
        let mut channels = HashMap::new();
        let mut default_channel = None;
        for row in state.store().list_channels(org_id).await? {
            if !row.is_active {
                continue;
            }
            if let Some(channel) = state.channel(&row.id).await? {
                default_channel.get_or_insert_with(|| row.id.clone());
                channels.insert(row.id.clone(), channel);
            }
        }
        Ok(ServerHookFactory { state: state.clone(), channels, default_channel })
    }
}

fn hook_config<T: DeserializeOwned + Default>(name: &str, config: Option<&Value>) -> Result<T, HookBuildError> {
    match config {
        None | Some(Value::Null) => Ok(T::default()),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|e| HookBuildError::BadConfig { name: name.to_owned(), reason: e.to_string() }),
    }
}

impl HookFactory for ServerHookFactory {
    fn build(&self, agent: &AgentContextInfo) -> Result<HookRegistry, HookBuildError> {
        let mut configs: HashMap<&str, &Value> = HashMap::new();
        for spec in &agent.config.hooks.class_hooks {
            let name = match spec.name() {
                hook_builtins::FEISHU_GATE_ALIAS => hook_builtins::CONFIRMATION_GATE,
                other => other,
            };
            if !hook_builtins::builtin_names().contains(&name) {
                return Err(HookBuildError::UnknownHook { name: spec.name().to_owned() });
            }
            configs.insert(name, spec.config());
        }
        let store = Arc::new(self.state.store().clone());
        let mut registry = HookRegistry::new();

        let guard: ReadOnlyGuardConfig =
            hook_config(hook_builtins::READ_ONLY_GUARD, configs.get(hook_builtins::READ_ONLY_GUARD).copied())?;
        let read_only = Arc::new(ReadOnlyGuard::new(store.clone(), guard));
        registry.register_pre(read_only.clone());

        match configs.get(hook_builtins::CONNECTOR_RATE_LIMIT).copied() {
            None | Some(Value::Null) => registry.register_pre(self.state.rate_limit().clone()),
            Some(value) => {
                let config: ConnectorRateLimitConfig = hook_config(hook_builtins::CONNECTOR_RATE_LIMIT, Some(value))?;
                registry.register_pre(self.state.rate_limit_for(config));
            }
        }

        let truncate: ResultTruncateConfig =
            hook_config(hook_builtins::RESULT_TRUNCATE, configs.get(hook_builtins::RESULT_TRUNCATE).copied())?;
        registry.register_post(Arc::new(ResultTruncateHook::new(truncate)));

        let audit: AuditLogConfig =
            hook_config(hook_builtins::AUDIT_LOG, configs.get(hook_builtins::AUDIT_LOG).copied())?;
        registry.register_post(Arc::new(AuditLogHook::new(store.clone(), audit)));

        let gate = self.gate_config(agent, configs.get(hook_builtins::CONFIRMATION_GATE).copied())?;
        let channel = gate.channel_id.as_ref().and_then(|id| self.channels.get(id)).cloned();
        if let (Some(id), None) = (&gate.channel_id, &channel)
            && gate.mode == DeliveryMode::ChannelOnly
        {
            return Err(HookBuildError::BadConfig {
                name: hook_builtins::CONFIRMATION_GATE.to_owned(),
                reason: format!("channel {id} is not an active channel of the organization"),
            });
        }
        let deps = GateDeps {
            store: store.clone(),
            directory: store,
            hub: self.state.confirmations().clone(),
            channel,
            events: Some(Arc::new(GateEvents { state: self.state.clone() })),
        };
        let require_all = gate.require_confirmation_for_all;
        registry.register_pre(Arc::new(ConfirmationGateHook::new(deps, gate)));
        // The org may turn read-only while a human decides: check again after the gate (equal
        // priorities keep registration order), so an approved write never runs in a read-only org.
        registry.register_pre(Arc::new(ReadOnlyAfterApproval { guard: read_only, require_all }));
        Ok(registry)
    }
}

/// `read_only_guard` once more, after the confirmation gate, for calls that waited for a human.
struct ReadOnlyAfterApproval {
    guard: Arc<ReadOnlyGuard>,
    require_all: bool,
}

#[async_trait::async_trait]
impl PreToolUseHook for ReadOnlyAfterApproval {
    fn name(&self) -> &str {
        self.guard.name()
    }
    fn priority(&self) -> i32 {
        i32::MAX
    }
    fn should_trigger(&self, ctx: &HookContext) -> bool {
        let gated = self.require_all || ctx.metadata.get(meta::REQUIRES_CONFIRMATION) == Some(&Value::Bool(true));
        gated && self.guard.should_trigger(ctx)
    }
    fn timeout(&self) -> std::time::Duration {
        self.guard.timeout()
    }
    fn failure_policy(&self) -> FailurePolicy {
        self.guard.failure_policy()
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        self.guard.execute(ctx).await
    }
}

impl ServerHookFactory {
    /// The gate's configuration: the agent's `confirmation` settings, overridden field by field by
    /// a `confirmation_gate` class-hook config.
    fn gate_config(&self, agent: &AgentContextInfo, override_: Option<&Value>) -> Result<GateConfig, HookBuildError> {
        let confirmation = &agent.config.confirmation;
        let mut base = serde_json::json!({
            "timeout_s": confirmation.timeout_s,
            "approver_scope": scope_name(confirmation.approver_scope),
            "require_confirmation_for_all": agent.config.require_confirmation_for_all,
            "agent_name": agent.name,
            "channel_id": confirmation.channel_id.clone().or_else(|| self.default_channel.clone()),
        });
        if let Some(Value::Object(fields)) = override_ {
            for (k, v) in fields {
                base[k] = v.clone();
            }
        } else if let Some(other) = override_.filter(|v| !v.is_null()) {
            return Err(HookBuildError::BadConfig {
                name: hook_builtins::CONFIRMATION_GATE.to_owned(),
                reason: format!("expected an object, got {other}"),
            });
        }
        hook_config(hook_builtins::CONFIRMATION_GATE, Some(&base))
    }
}

fn scope_name(scope: agent_react::ApproverScope) -> &'static str {
    let scope = match scope {
        agent_react::ApproverScope::Initiator => ApproverScope::Initiator,
        agent_react::ApproverScope::AgentOwner => ApproverScope::AgentOwner,
        agent_react::ApproverScope::OrgAdmins => ApproverScope::OrgAdmins,
        agent_react::ApproverScope::OrgMembers => ApproverScope::OrgMembers,
    };
    scope.as_str()
}

/// Emits the gate's `awaiting_confirmation` / `confirmation_resolved` into the run's stream and
/// keeps `runs.status` in step.
struct GateEvents {
    state: AppState,
}

impl ConfirmationEvents for GateEvents {
    fn on_awaiting(&self, _ctx: &HookContext, record: &ConfirmationRecord) {
        let live = self.state.runs().emit_now(
            &record.run_id,
            EventKind::AwaitingConfirmation {
                confirmation_id: record.id.clone(),
                tool_call_id: record.tool_call_id.clone(),
                tool_name: record.tool_name.clone(),
                arguments: record.tool_args.clone(),
                expires_at: record.expires_at,
            },
        );
        // A live run's sink records the status in event order; a spawned write could land late.
        if !live {
            self.set_status(&record.run_id, RunStatus::AwaitingConfirmation);
        }
    }

    fn on_resolved(&self, _ctx: &HookContext, record: &ConfirmationRecord) {
        let live = self.state.runs().emit_now(
            &record.run_id,
            EventKind::ConfirmationResolved {
                confirmation_id: record.id.clone(),
                status: record.status.as_str().to_owned(),
                decided_by: record.responded_by_user_id.clone(),
            },
        );
        if !live {
            self.set_status(&record.run_id, RunStatus::Running);
        }
    }
}

impl GateEvents {
    fn set_status(&self, run_id: &str, status: RunStatus) {
        let store = self.state.store().clone();
        let run_id = run_id.to_owned();
        tokio::spawn(async move {
            if let Err(e) = store.update_active_run(&run_id, &RunUpdate { status, answer: None, error: None }).await {
                tracing::warn!(run_id, "cannot record the run's status: {e}");
            }
        });
    }
}

/// Builds an agent's tools: its connectors' actions, its built-in tools and one
/// `call_agent__<name>` per delegate.
pub async fn build_tools(
    state: &AppState,
    agent: &store::Agent,
    config: &AgentConfig,
    factory: Arc<dyn HookFactory>,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for connector_id in &config.connectors {
        let connector = state
            .store()
            .get_connector(connector_id)
            .await
            .map_err(|e| e.to_string())?
            .filter(|c| c.org_id == agent.org_id)
            .ok_or_else(|| format!("connector {connector_id} not found"))?;
        tools.extend(connector_tools(state, &connector)?);
    }
    for name in &config.tools {
        tools.push(builtin_tool(name).map_err(|e| e.to_string())?);
    }
    let resolver: Arc<dyn AgentResolver> = Arc::new(Resolver { state: state.clone() });
    for delegate_id in &config.delegates {
        let delegate = state
            .store()
            .get_agent(delegate_id)
            .await
            .map_err(|e| e.to_string())?
            .filter(|a| a.org_id == agent.org_id)
            .ok_or_else(|| format!("delegate agent {delegate_id} not found"))?;
        let tool = CallAgentTool::new(
            delegate.id.clone(),
            &tool_safe_name(&delegate.name),
            None,
            resolver.clone(),
            factory.clone(),
        )
        .map_err(|e| e.to_string())?;
        tools.push(Arc::new(tool));
    }
    Ok(tools)
}

/// An agent name as a tool-name suffix: characters outside `[A-Za-z0-9_-]` become `_`.
fn tool_safe_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(50).collect()
}

fn connector_tools(state: &AppState, connector: &store::Connector) -> Result<Vec<Arc<dyn Tool>>, String> {
    match connector.kind {
        ConnectorKind::Http => {
            let auth: ConnectorAuth = match &connector.auth {
                None | Some(Value::Null) => ConnectorAuth::None,
                Some(value) => serde_json::from_value(value.clone())
                    .map_err(|e| format!("connector '{}' has a bad auth config: {e}", connector.name))?,
            };
            let http = Arc::new(HttpConnector {
                id: connector.id.clone(),
                name: connector.name.clone(),
                base_url: connector.base_url.clone().unwrap_or_default(),
                auth,
                rate_limit: connector
                    .rate_limit
                    .map(|r| agent_react::RateLimit { per_minute: r.per_minute, burst: r.burst }),
                allow_private_metadata: false,
                timeout_s: 30,
            });
            connector
                .actions
                .iter()
                .map(|action| {
                    let tool = HttpActionTool::new(
                        http.clone(),
                        HttpAction {
                            name: action.name.clone(),
                            description: action.description.clone(),
                            method: action.method.clone(),
                            path: action.path.clone(),
                            parameters_schema: action.parameters_schema.clone(),
                            requires_confirmation: action.requires_confirmation,
                            side_effect: Some(match action.side_effect {
                                store::SideEffect::Read => SideEffect::Read,
                                store::SideEffect::Write => SideEffect::Write,
                            }),
                        },
                        state.http().clone(),
                    )
                    .map_err(|e| e.to_string())?;
                    Ok(Arc::new(tool) as Arc<dyn Tool>)
                })
                .collect()
        }
        ConnectorKind::Database => {
            let url = connector.url.clone().ok_or_else(|| format!("connector '{}' has no url", connector.name))?;
            let tool =
                SqlQueryTool::new(DatabaseConnector { id: connector.id.clone(), name: connector.name.clone(), url })
                    .map_err(|e| e.to_string())?;
            Ok(vec![tool as Arc<dyn Tool>])
        }
    }
}

/// Loads delegates for `CallAgentTool`.
struct Resolver {
    state: AppState,
}

#[async_trait::async_trait]
impl AgentResolver for Resolver {
    async fn resolve(&self, agent_id: &str, parent: &RunScope) -> Result<ResolvedAgent, String> {
        let agent = self
            .state
            .store()
            .get_agent(agent_id)
            .await
            .map_err(|e| e.to_string())?
            .filter(|a| a.org_id == parent.org_id)
            .ok_or_else(|| format!("agent {agent_id} not found"))?;
        let config = agent_config(&agent)?;
        let factory: Arc<dyn HookFactory> =
            Arc::new(ServerHookFactory::for_org(&self.state, &agent.org_id).await.map_err(|e| e.to_string())?);
        let model = config.model.build().map_err(|e| e.to_string())?;
        let tools = build_tools(&self.state, &agent, &config, factory).await?;
        Ok(ResolvedAgent { info: context_info(&agent, config), model, tools })
    }
}

/// Persists every event of a run tree (`run_events`) and forwards it to the top-level run's live
/// stream. The top-level run's terminal event is preceded by its `runs` row update, so a client
/// that saw `run_completed` / `run_failed` reads the final status from `GET /runs/{id}`.
struct StreamSink {
    state: AppState,
    stream: broadcast::Sender<AgentEvent>,
    /// The top-level run.
    run_id: String,
    org_id: String,
    user_id: Option<String>,
    /// Each run's last `answer` (the top-level run's and its delegates'), recorded with its
    /// terminal status.
    answers: std::sync::Mutex<HashMap<String, String>>,
}

impl StreamSink {
    fn new(state: &AppState, stream: broadcast::Sender<AgentEvent>, start: &StartRun) -> StreamSink {
        StreamSink {
            state: state.clone(),
            stream,
            run_id: start.run_id.clone(),
            org_id: start.agent.org_id.clone(),
            user_id: start.user_id.clone(),
            answers: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Keeps `runs.status` in step with the events, before each goes out (so in `seq` order, and
    /// a client that saw an event reads a status at least as recent): `awaiting_confirmation` and
    /// `confirmation_resolved` for any run of the tree, the end for the top-level run.
    async fn record_status(&self, event: &AgentEvent) {
        if let EventKind::RunStarted { agent_id, parent_run_id: Some(parent) } = &event.kind
            && event.run_id != self.run_id
        {
            self.record_delegate(&event.run_id, agent_id.as_deref(), parent).await;
            return;
        }
        let update = match &event.kind {
            EventKind::AwaitingConfirmation { .. } => {
                RunUpdate { status: RunStatus::AwaitingConfirmation, answer: None, error: None }
            }
            EventKind::ConfirmationResolved { .. } => {
                RunUpdate { status: RunStatus::Running, answer: None, error: None }
            }
            EventKind::Answer { content } => {
                self.answers.lock().unwrap_or_else(|e| e.into_inner()).insert(event.run_id.clone(), content.clone());
                return;
            }
            EventKind::RunCompleted { .. } => {
                let answer = self.answers.lock().unwrap_or_else(|e| e.into_inner()).remove(&event.run_id);
                RunUpdate { status: RunStatus::Completed, answer, error: None }
            }
            EventKind::RunFailed { error } => {
                RunUpdate { status: RunStatus::Failed, answer: None, error: Some(error.clone()) }
            }
            _ => return,
        };
        // Conditional: a cancelled run keeps `cancelled` whatever its task still reports.
        if let Err(e) = self.state.store().update_active_run(&event.run_id, &update).await {
            tracing::warn!(run_id = %event.run_id, "cannot record the run's status: {e}");
        }
    }

    /// A delegate's run gets its own `runs` row (`surface = delegate`, `parent_run_id` set), leased
    /// by this process like its parent.
    async fn record_delegate(&self, run_id: &str, agent_id: Option<&str>, parent: &str) {
        let new = store::NewRun {
            id: Some(run_id.to_owned()),
            agent_id: agent_id.unwrap_or_default().to_owned(),
            org_id: self.org_id.clone(),
            user_id: self.user_id.clone(),
            conversation_id: None,
            parent_run_id: Some(parent.to_owned()),
            surface: "delegate".to_owned(),
            status: RunStatus::Running,
            input: None,
            owner: Some(self.state.instance_id().to_owned()),
            lease_until: Some(lease_until()),
        };
        if let Err(e) = self.state.store().create_run(&new).await {
            tracing::warn!(run_id, "cannot record the delegate run: {e}");
        }
    }
}

#[async_trait::async_trait]
impl EventSink for StreamSink {
    async fn emit(&self, event: AgentEvent) {
        if let EventKind::ToolResult { blocked, error, .. } = &event.kind {
            let outcome = if *blocked {
                "blocked"
            } else if error.is_some() {
                "failed"
            } else {
                "executed"
            };
            self.state.metrics().tool_call(outcome);
        }
        if let Err(e) =
            self.state.store().append_run_event(&event.run_id, event.seq as i64, event.name(), &event.data()).await
        {
            tracing::warn!(run_id = %event.run_id, seq = event.seq, "cannot persist run event: {e}");
        }
        self.record_status(&event).await;
        // No receiver is fine: the run goes on without a listener.
        let _ = self.stream.send(event);
    }
}

/// Persists `tool_executions`: `executing` before the tool starts, the final status after.
struct StoreJournal {
    store: store::Store,
}

#[async_trait::async_trait]
impl RunJournal for StoreJournal {
    async fn tool_started(&self, run_id: &str, tool_call_id: &str, tool_name: &str, arguments: &Value) -> ToolStart {
        let new = store::NewToolExecution {
            run_id: run_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            original_args: arguments.clone(),
            effective_args: Some(arguments.clone()),
        };
        match self.store.start_tool_execution(&new).await {
            Ok((_, true)) => ToolStart::Run,
            Ok((existing, false)) => replay_of(existing),
            Err(e) => {
                // Without the `executing` record the call could run twice after a crash: refuse it.
                tracing::error!(run_id, tool_call_id, "cannot record the tool execution: {e}");
                ToolStart::Done {
                    result: serde_json::json!({"error": format!("the tool did not run: its execution could not be recorded ({e})")}),
                    failed: true,
                }
            }
        }
    }

    async fn recorded(&self, run_id: &str, tool_call_id: &str) -> Option<ToolStart> {
        match self.store.get_tool_execution(run_id, tool_call_id).await {
            Ok(None) => None,
            Ok(Some(existing)) => Some(replay_of(existing)),
            Err(e) => {
                // The journal cannot be read: the call goes on to `tool_started`, which refuses to
                // run a tool it cannot record.
                tracing::warn!(run_id, tool_call_id, "cannot read the tool journal: {e}");
                None
            }
        }
    }

    async fn tool_finished(&self, run_id: &str, tool_call_id: &str, outcome: &str, result: &Value) {
        let status = if outcome == "executed" {
            store::ToolExecutionStatus::Completed
        } else {
            store::ToolExecutionStatus::Failed
        };
        let finish = store::ToolExecutionFinish { status, effective_args: None, result: Some(result.clone()) };
        if let Err(e) = self.store.finish_tool_execution(run_id, tool_call_id, &finish).await {
            tracing::warn!(run_id, tool_call_id, "cannot record the tool result: {e}");
        }
    }
}

/// What a recorded tool execution means for a resumed run: a call still `executing` has an unknown
/// outcome; a finished one is replayed from its record.
fn replay_of(existing: store::ToolExecution) -> ToolStart {
    match existing.status {
        store::ToolExecutionStatus::Executing => ToolStart::Unknown,
        status => ToolStart::Done {
            result: existing.result.unwrap_or(Value::Null),
            failed: status != store::ToolExecutionStatus::Completed,
        },
    }
}

/// A run ready to start: the caller has already created its `runs` row.
#[derive(Debug)]
pub struct StartRun {
    pub run_id: String,
    pub agent: store::Agent,
    pub user_id: Option<String>,
    pub conversation_id: Option<String>,
    pub message: String,
    /// The `seq` of the run's first new event: 0 for a new run, one past the last stored event for
    /// a resumed one.
    pub first_seq: u64,
}

/// Prepares and spawns a top-level run; returns a receiver of its live events (subscribed before
/// the run starts, so nothing is missed). The run goes on if the receiver is dropped.
///
/// A run whose model, tools or hooks cannot be built is failed at once with `run_failed` (fail
/// closed: it never reaches the model).
pub async fn start_run(state: &AppState, start: StartRun) -> broadcast::Receiver<AgentEvent> {
    let (stream, receiver) = state.open_run_stream(&start.run_id);
    let sink: Arc<dyn EventSink> = Arc::new(StreamSink::new(state, stream, &start));
    let services = RunServices {
        events: sink.clone(),
        journal: Some(Arc::new(StoreJournal { store: state.store().clone() })),
        hub: Some(state.runs().clone()),
    };
    let task_state = state.clone();
    state.metrics().run_started();
    let run_id = start.run_id.clone();
    // The task waits until it is tracked, so that its end always finds (and removes) its entry.
    let (tracked_tx, tracked_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = tracked_rx.await;
        let state = task_state;
        let run_id = start.run_id.clone();
        // A panic anywhere in the run (model client, sink, loop) still ends the run and its stream.
        let body = AssertUnwindSafe(async {
            match prepare(&state, &start, services.clone()).await {
                Ok(run) => {
                    let outcome = run_agent(run).await;
                    match outcome.status {
                        agent_react::RunStatus::Completed => (RunStatus::Completed, outcome.answer, None),
                        agent_react::RunStatus::Failed => (RunStatus::Failed, None, outcome.error),
                    }
                }
                Err(why) => {
                    let emitter = agent_react::RunEmitter::with_first_seq(&run_id, sink.clone(), start.first_seq);
                    emitter
                        .emit(EventKind::RunStarted { agent_id: Some(start.agent.id.clone()), parent_run_id: None })
                        .await;
                    emitter.emit(EventKind::RunFailed { error: why.clone() }).await;
                    (RunStatus::Failed, None, Some(why))
                }
            }
        });
        let (status, answer, error) = match futures::FutureExt::catch_unwind(body).await {
            Ok(end) => end,
            Err(_) => {
                // The run's own emitter is gone with the panic: continue its stream after the
                // last stored event.
                let why = "the run failed: internal error (panic)".to_owned();
                let next = state.store().last_run_event_seq(&run_id).await.ok().flatten().map_or(0, |s| s as u64 + 1);
                let emitter = agent_react::RunEmitter::with_first_seq(&run_id, sink.clone(), next);
                emitter.emit(EventKind::RunFailed { error: why.clone() }).await;
                (RunStatus::Failed, None, Some(why))
            }
        };
        state.metrics().run_finished(status == RunStatus::Completed);
        let end = RunUpdate { status, answer, error };
        if let Err(e) = state.store().update_active_run(&run_id, &end).await {
            tracing::error!(run_id, "cannot record the run's end: {e}");
        }
        state.finish_run(&run_id);
    });
    state.track_run(&run_id, task.abort_handle());
    let _ = tracked_tx.send(());
    receiver
}

/// How long a run lease lasts without renewal.
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(4);

/// The end of a lease taken now.
pub fn lease_until() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::Duration::from_std(LEASE).unwrap_or_else(|_| chrono::Duration::seconds(4))
}

/// The leases of a process. One task renews this process's run leases every second; if renewing
/// has failed for a whole lease period, another process may have taken the runs over, so this one
/// stops its runs (fencing) rather than run them twice. Another task takes over (resumes) active
/// runs whose lease expired — left by a process that died, or by this one before a restart.
/// Replicas must keep their clocks in sync (NTP): leases compare their clocks.
pub async fn lease_loop(state: AppState) {
    tokio::spawn(renew_leases(state.clone()));
    let mut ticker = tokio::time::interval(std::time::Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if let Err(e) = resume_runs(&state).await {
            tracing::warn!("cannot resume runs: {e}");
        }
    }
}

async fn renew_leases(state: AppState) {
    let mut ticker = tokio::time::interval(std::time::Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewed_at = tokio::time::Instant::now();
    loop {
        ticker.tick().await;
        match state.store().renew_run_leases(state.instance_id(), lease_until()).await {
            Ok(_) => renewed_at = tokio::time::Instant::now(),
            Err(e) => {
                tracing::warn!("cannot renew run leases: {e}");
                if renewed_at.elapsed() >= LEASE {
                    let stopped = state.abort_all_runs();
                    if stopped > 0 {
                        tracing::error!(
                            stopped,
                            "run leases lapsed: stopped this process's runs (another replica resumes them)"
                        );
                    }
                }
            }
        }
    }
}

/// Resumes every top-level run a previous process left `running` or `awaiting_confirmation`:
/// the run starts again from its input; its tool calls keep their ids, so a pending approval
/// re-attaches to its row (no second card), a decision made meanwhile is honoured, an expired one
/// is reported as such, and a call that was executing when the process died is reported to the
/// model as having an unknown outcome (never run twice). Interrupted delegate runs are failed
/// (their parent's call reports an unknown outcome). Returns how many runs were resumed.
pub async fn resume_runs(state: &AppState) -> Result<usize, ApiError> {
    let runs = state.store().list_claimable_runs(state.instance_id()).await?;
    let mut resumed = 0;
    for run in runs {
        if state.is_tracked(&run.id) || !state.store().claim_run(&run.id, state.instance_id(), lease_until()).await? {
            continue;
        }
        let agent = state.store().get_agent(&run.agent_id).await?;
        let (Some(agent), Some(input), None) = (agent, run.input.clone(), &run.parent_run_id) else {
            let error = if run.parent_run_id.is_some() {
                "interrupted by a server restart; the delegating run reports its outcome as unknown"
            } else {
                "cannot resume after a restart: the agent or the run's input is gone"
            };
            let update = RunUpdate { status: RunStatus::Failed, answer: None, error: Some(error.to_owned()) };
            state.store().update_active_run(&run.id, &update).await?;
            continue;
        };
        let first_seq =
            state.store().list_run_events(&run.id, None).await?.last().map(|e| e.seq as u64 + 1).unwrap_or(0);
        tracing::info!(run_id = %run.id, first_seq, "resuming run after restart");
        let start = StartRun {
            run_id: run.id.clone(),
            agent,
            user_id: run.user_id.clone(),
            conversation_id: run.conversation_id.clone(),
            message: input,
            first_seq,
        };
        drop(start_run(state, start).await);
        resumed += 1;
    }
    Ok(resumed)
}

/// Cancels a run: stops its task if it runs in this process, cancels its pending confirmations
/// (cards updated), emits `run_failed` and records `cancelled` with the reason.
pub async fn cancel_run(state: &AppState, run: &store::Run, reason: &str) -> Result<store::Run, ApiError> {
    let error = format!("cancelled: {reason}");
    // The run and its delegates' runs: recorded `cancelled` first, so nothing the task still
    // reports can overwrite it (end updates are conditional on an active run).
    let active = state.store().list_runs_by_status(&[RunStatus::Running, RunStatus::AwaitingConfirmation]).await?;
    let mut tree: Vec<String> = vec![run.id.clone()];
    let mut next = 0;
    while next < tree.len() {
        let parent = tree[next].clone();
        tree.extend(
            active.iter().filter(|r| r.parent_run_id.as_deref() == Some(parent.as_str())).map(|r| r.id.clone()),
        );
        next += 1;
    }
    for id in &tree {
        let update = RunUpdate { status: RunStatus::Cancelled, answer: None, error: Some(error.clone()) };
        state.store().update_active_run(id, &update).await?;
    }
    // Into the live stream (it ends SSE clients), then stop the task.
    state.runs().emit(&run.id, EventKind::RunFailed { error: error.clone() }).await;
    state.abort_run(&run.id);
    let pending = state.store().list_confirmations(&run.org_id, Some(ConfirmationStatus::Pending)).await?;
    let cancel = DecisionUpdate {
        status: ConfirmationStatus::Cancelled,
        responded_by_open_id: None,
        responded_by_user_id: None,
        reason: Some(error.clone()),
        at: chrono::Utc::now(),
    };
    for record in pending.into_iter().filter(|r| tree.contains(&r.run_id)) {
        close_request(state, &record.id, &cancel).await?;
    }
    state.store().get_run(&run.id).await?.ok_or_else(|| ApiError::not_found("run"))
}

/// Moves a pending request to a final state (cancelled, expired) with one CAS; when it wins, wakes
/// this process's waiter and patches the card. Returns whether it won.
pub async fn close_request(state: &AppState, id: &str, update: &DecisionUpdate) -> Result<bool, ApiError> {
    match state.store().decide_confirmation(id, update).await? {
        DecideOutcome::Decided(record) => {
            state.confirmations().notify_decided(&record.id);
            update_card(state, &record).await;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Patches a decided request's card to its final state, logging failures.
pub async fn update_card(state: &AppState, record: &ConfirmationRecord) {
    let (Some(channel_id), Some(message_id)) = (&record.channel_id, &record.message_id) else { return };
    let Ok(Some(channel)) = state.channel(channel_id).await else { return };
    let Some(card_state) = crate::routes::confirmations::final_state(state, record).await else { return };
    let card = hook_builtins::card_for_record(state.store(), record).await;
    if let Err(e) = channel.update_approval(message_id, &card, &card_state).await {
        tracing::warn!(confirmation_id = %record.id, "cannot update the approval card: {e}");
    }
}

/// The conversation so far: each earlier completed run's message and answer.
async fn conversation_history(state: &AppState, start: &StartRun) -> Result<Vec<llm::Message>, String> {
    let Some(conversation_id) = &start.conversation_id else { return Ok(Vec::new()) };
    let runs = state.store().list_conversation_runs(conversation_id).await.map_err(|e| e.to_string())?;
    let mut history = Vec::new();
    for run in runs.into_iter().take_while(|r| r.id != start.run_id) {
        if let (RunStatus::Completed, Some(input), Some(answer)) = (run.status, run.input, run.answer) {
            history.push(llm::Message::User { content: input });
            history.push(llm::Message::Assistant { content: Some(answer), tool_calls: Vec::new() });
        }
    }
    Ok(history)
}

async fn prepare(state: &AppState, start: &StartRun, services: RunServices) -> Result<AgentRun, String> {
    let config = agent_config(&start.agent)?;
    let factory = Arc::new(ServerHookFactory::for_org(state, &start.agent.org_id).await.map_err(|e| e.to_string())?);
    let info = context_info(&start.agent, config.clone());
    let hooks = factory.build(&info).map_err(|e| format!("the agent's hooks cannot be built: {e}"))?;
    let model = config.model.build().map_err(|e| format!("the agent's model cannot be built: {e}"))?;
    let tools = build_tools(state, &start.agent, &config, factory).await?;
    let scope = RunScope {
        run_id: start.run_id.clone(),
        org_id: start.agent.org_id.clone(),
        user_id: start.user_id.clone(),
        agent_id: Some(start.agent.id.clone()),
        conversation_id: start.conversation_id.clone(),
        surface: Surface::React,
        parent_run_id: None,
        step_id: None,
        node_id: None,
        depth: 0,
    };
    let history = conversation_history(state, start).await?;
    Ok(AgentRun {
        first_seq: start.first_seq,
        scope,
        instructions: config.instructions.clone(),
        history,
        input: start.message.clone(),
        model,
        tools,
        hooks: Arc::new(hooks),
        services,
        limits: RunLimits::default(),
    })
}

/// Validates an agent configuration the way a run would use it: the model, and the hooks through
/// the factory (so a bad hook config is refused when the agent is created, not at its first run).
pub async fn validate_agent(state: &AppState, agent: &store::Agent) -> Result<(), ApiError> {
    let config = agent_config(agent).map_err(ApiError::validation)?;
    config.model.build().map_err(|e| ApiError::validation(format!("model: {e}")))?;
    let factory = ServerHookFactory::for_org(state, &agent.org_id).await?;
    factory.build(&context_info(agent, config)).map_err(|e| ApiError::validation(format!("hooks: {e}")))?;
    Ok(())
}
