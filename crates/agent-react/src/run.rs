use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use hook_core::{HookContext, HookRegistry, meta};
use llm::{ChatModel, ChatRequest, Message, ToolArguments, ToolCall, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::events::{EventKind, RunEmitter, RunHub, RunServices, ToolStart};
use crate::schema;
use crate::tool::{HttpExchange, Tool, ToolCallContext};

/// Where a run happens (`surface` metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    React,
    Dag,
    Delegate,
    Workflow,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::React => "react",
            Surface::Dag => "dag",
            Surface::Delegate => "delegate",
            Surface::Workflow => "workflow",
        }
    }
}

/// Who runs, where, and under which ids; becomes the hooks' metadata (DESIGN §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunScope {
    pub run_id: String,
    pub org_id: String,
    /// The initiating user (inherited by delegates).
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub conversation_id: Option<String>,
    pub surface: Surface,
    /// The delegating run, on the `delegate` surface.
    pub parent_run_id: Option<String>,
    /// The DAG step, on the `dag` surface.
    pub step_id: Option<String>,
    /// The workflow node, on the `workflow` surface.
    pub node_id: Option<String>,
    /// How many delegations deep this run is (0 for a top-level run).
    pub depth: u32,
}

impl RunScope {
    /// A top-level `react` run with a fresh run id.
    pub fn new(org_id: impl Into<String>) -> Self {
        RunScope {
            run_id: uuid::Uuid::new_v4().to_string(),
            org_id: org_id.into(),
            user_id: None,
            agent_id: None,
            conversation_id: None,
            surface: Surface::React,
            parent_run_id: None,
            step_id: None,
            node_id: None,
            depth: 0,
        }
    }

    /// The metadata every hook context of this run carries.
    fn metadata(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(meta::ORG_ID.into(), self.org_id.clone().into());
        m.insert(meta::RUN_ID.into(), self.run_id.clone().into());
        m.insert(meta::SURFACE.into(), self.surface.as_str().into());
        let optional = [
            (meta::CONVERSATION_ID, &self.conversation_id),
            (meta::PARENT_RUN_ID, &self.parent_run_id),
            (meta::STEP_ID, &self.step_id),
            (meta::NODE_ID, &self.node_id),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                m.insert(key.into(), value.clone().into());
            }
        }
        m
    }
}

/// Bounds on one run. Exceeding `max_iterations` or `max_wall_time` fails the run; calls beyond
/// `max_tool_calls` are blocked (`blocked_by = run_limits`) and the model is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// Model calls per run. Default 12.
    pub max_iterations: u32,
    /// Tool calls per run. Default 50.
    pub max_tool_calls: u32,
    /// The whole run, confirmations included. Default 15 min.
    pub max_wall_time: Duration,
    /// Nesting of [`crate::CallAgentTool`] delegations. Default 3.
    pub max_delegation_depth: u32,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            max_iterations: 12,
            max_tool_calls: 50,
            max_wall_time: Duration::from_secs(15 * 60),
            max_delegation_depth: 3,
        }
    }
}

/// Everything one run needs. The registry is the agent's, built once by a
/// [`HookFactory`](crate::HookFactory) and shared by its runs.
#[derive(Clone)]
pub struct AgentRun {
    pub scope: RunScope,
    /// The system prompt (the agent's `instructions`); SessionStart context is appended to it.
    pub instructions: String,
    /// Earlier messages of the conversation (without a system message).
    pub history: Vec<Message>,
    /// The user's message that starts this run.
    pub input: String,
    pub model: Arc<dyn ChatModel>,
    pub tools: Vec<Arc<dyn Tool>>,
    pub hooks: Arc<HookRegistry>,
    pub services: RunServices,
    pub limits: RunLimits,
    /// The `seq` of the run's first event: 0 for a new run; one past the last stored event when a
    /// run is resumed after a restart.
    pub first_seq: u64,
}

impl std::fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun")
            .field("scope", &self.scope)
            .field("model", &self.model.name())
            .field("tools", &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>())
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    Failed,
}

/// The end of a run: its status, the answer or the error, and the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub run_id: String,
    pub status: RunStatus,
    pub answer: Option<String>,
    pub error: Option<String>,
    /// The transcript as sent to the model (system message first), valid for the provider.
    pub messages: Vec<Message>,
    /// Tool calls the model made, blocked ones included.
    pub tool_calls: u32,
}

/// The `blocked_by` of a call whose arguments are not valid JSON or fail the schema.
pub const BLOCKED_BY_VALIDATION: &str = "argument_validation";
/// The `blocked_by` of a call to a tool the agent does not have.
pub const BLOCKED_BY_UNKNOWN_TOOL: &str = "unknown_tool";
/// The `blocked_by` of a call beyond [`RunLimits::max_tool_calls`].
pub const BLOCKED_BY_RUN_LIMITS: &str = "run_limits";

/// Runs the ReAct loop to its end; every event goes to `run.services.events`.
///
/// 1. `run_started`; the SessionStart chain (its `additional_context` is appended to the system
///    prompt; a block means `run_failed` and the model is never called).
/// 2. The model is called with the transcript and the tools. An answer without tool calls ends the
///    run (`answer`, `run_completed`).
/// 3. Each tool call of the turn gets a `tool_call` event, then all calls run concurrently: schema
///    check → PreToolUse chain → schema check of rewritten args → the tool → PostToolUse chain
///    (which fires for every call, blocked or failed ones too, with `outcome`). Each call gets
///    exactly one `tool` message keyed by its `tool_call_id` and one `tool_result` event (in call
///    order), then the loop goes back to 2.
pub async fn run_agent(run: AgentRun) -> RunOutcome {
    let emitter = RunEmitter::with_first_seq(&run.scope.run_id, run.services.events.clone(), run.first_seq)
        .with_location(run.scope.step_id.as_deref(), run.scope.node_id.as_deref());
    // The guard unregisters even when the run is dropped midway (a delegate abandoned at its
    // parent's wall-time limit).
    let _registered = run.services.hub.as_ref().map(|hub| {
        hub.register(emitter.clone());
        HubRegistration { hub, run_id: &run.scope.run_id }
    });
    drive(&run, &emitter).await
}

struct HubRegistration<'a> {
    hub: &'a RunHub,
    run_id: &'a str,
}

impl Drop for HubRegistration<'_> {
    fn drop(&mut self) {
        self.hub.unregister(self.run_id);
    }
}

async fn drive(run: &AgentRun, emitter: &RunEmitter) -> RunOutcome {
    let started = Instant::now();
    let scope = Arc::new(run.scope.clone());
    emitter
        .emit(EventKind::RunStarted { agent_id: scope.agent_id.clone(), parent_run_id: scope.parent_run_id.clone() })
        .await;
    let mut outcome = RunOutcome {
        run_id: scope.run_id.clone(),
        status: RunStatus::Failed,
        answer: None,
        error: None,
        messages: Vec::new(),
        tool_calls: 0,
    };

    let mut ctx = HookContext::session_start();
    ctx.agent_id = scope.agent_id.clone();
    ctx.user_id = scope.user_id.clone();
    ctx.metadata = scope.metadata();
    let session = run.hooks.run_session_start_detailed(&ctx).await;
    if !session.result.allow {
        let why = session.result.error.unwrap_or_else(|| "the run was refused by a SessionStart hook".into());
        return fail(emitter, outcome, format!("session start refused: {why}")).await;
    }
    let mut system = run.instructions.clone();
    if let Some(extra) = session.result.additional_context.filter(|c| !c.is_empty()) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&extra);
    }

    let tools: HashMap<&str, &Arc<dyn Tool>> = run.tools.iter().map(|t| (t.name(), t)).collect();
    let specs: Vec<ToolSpec> = run
        .tools
        .iter()
        .map(|t| ToolSpec {
            name: t.name().into(),
            description: t.description().into(),
            parameters: t.parameters().clone(),
        })
        .collect();
    let mut messages = Vec::with_capacity(run.history.len() + 2);
    messages.push(Message::system(system));
    messages.extend(run.history.iter().filter(|m| !matches!(m, Message::System { .. })).cloned());
    messages.push(Message::user(run.input.clone()));

    let deadline = started + run.limits.max_wall_time;
    let wall_time_error =
        || format!("the run exceeded its wall time limit of {}s", run.limits.max_wall_time.as_secs_f64());
    for _ in 0..run.limits.max_iterations {
        let request = ChatRequest { messages, tools: specs.clone() };
        let remaining = deadline.saturating_duration_since(Instant::now());
        let response = match tokio::time::timeout(remaining, run.model.chat(&request)).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                outcome.messages = request.messages;
                return fail(emitter, outcome, format!("model call failed: {e}")).await;
            }
            Err(_) => {
                outcome.messages = request.messages;
                return fail(emitter, outcome, wall_time_error()).await;
            }
        };
        messages = request.messages;
        messages.push(response.to_message());
        if response.tool_calls.is_empty() {
            let answer = response.content.unwrap_or_default();
            emitter.emit(EventKind::Answer { content: answer.clone() }).await;
            emitter.emit(EventKind::RunCompleted { status: "completed".into() }).await;
            outcome.status = RunStatus::Completed;
            outcome.answer = Some(answer);
            outcome.messages = messages;
            return outcome;
        }

        for call in &response.tool_calls {
            let arguments = match &call.arguments {
                ToolArguments::Parsed { value } => value.clone(),
                ToolArguments::Invalid { raw, .. } => Value::String(raw.clone()),
            };
            emitter
                .emit(EventKind::ToolCall { tool_call_id: call.id.clone(), tool_name: call.name.clone(), arguments })
                .await;
        }
        let calls = response.tool_calls.iter().map(|call| {
            let over_limit = outcome.tool_calls >= run.limits.max_tool_calls;
            outcome.tool_calls += 1;
            let tool = tools.get(call.name.as_str()).copied();
            process_call(run, &scope, tool, call, over_limit)
        });
        let batch = futures::future::join_all(calls.collect::<Vec<_>>());
        let remaining = deadline.saturating_duration_since(Instant::now());
        let Ok(reports) = tokio::time::timeout(remaining, batch).await else {
            // The calls still running are abandoned. Each still gets its observation, so that the
            // transcript stays valid for the provider if the conversation goes on.
            for call in &response.tool_calls {
                messages.push(Message::tool(call.id.clone(), wall_time_error()));
            }
            outcome.messages = messages;
            return fail(emitter, outcome, wall_time_error()).await;
        };
        for report in reports {
            messages.push(Message::tool(report.tool_call_id.clone(), observation_text(&report.output)));
            emitter
                .emit(EventKind::ToolResult {
                    tool_call_id: report.tool_call_id,
                    output: report.output,
                    blocked: report.blocked_by.is_some(),
                    blocked_by: report.blocked_by,
                    error: report.error,
                    side_effects: report.side_effects,
                })
                .await;
        }
        if Instant::now() >= deadline {
            outcome.messages = messages;
            return fail(emitter, outcome, wall_time_error()).await;
        }
    }
    outcome.messages = messages;
    let error = format!("the run reached its limit of {} model calls without an answer", run.limits.max_iterations);
    fail(emitter, outcome, error).await
}

async fn fail(emitter: &RunEmitter, mut outcome: RunOutcome, error: String) -> RunOutcome {
    emitter.emit(EventKind::RunFailed { error: error.clone() }).await;
    outcome.status = RunStatus::Failed;
    outcome.error = Some(error);
    outcome
}

/// The observation the model reads: a string result as is, anything else as JSON text.
fn observation_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What happened to one call.
struct CallReport {
    tool_call_id: String,
    output: Value,
    blocked_by: Option<String>,
    error: Option<String>,
    side_effects: Vec<String>,
}

/// The outcome of the stage before the Post chain.
enum Stage {
    Blocked {
        by: String,
        reason: String,
    },
    Executed {
        result: Value,
        http: Option<HttpExchange>,
    },
    Failed {
        error: String,
        http: Option<HttpExchange>,
    },
    /// The call completed before a restart: its recorded result, not run again.
    Replayed {
        result: Value,
    },
    /// The call failed before a restart: its recorded failure, not run again.
    ReplayedFailure {
        error: String,
    },
}

/// The observation of a call that was running when the process stopped (DESIGN: at most once).
pub const UNKNOWN_OUTCOME: &str = "the outcome of this tool call is unknown: the server stopped while it was running, \
and it was not run again";

/// The failure text of a recorded failed result (`{"error": "…"}` or any other JSON).
fn failure_text(result: &Value) -> String {
    result.get("error").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| result.to_string())
}

async fn process_call(
    run: &AgentRun,
    scope: &Arc<RunScope>,
    tool: Option<&Arc<dyn Tool>>,
    call: &ToolCall,
    over_limit: bool,
) -> CallReport {
    let mut metadata = scope.metadata();
    metadata.insert(meta::TOOL_CALL_ID.into(), call.id.clone().into());
    if let Some(tool) = tool {
        metadata.insert(meta::REQUIRES_CONFIRMATION.into(), tool.requires_confirmation().into());
        metadata.insert(meta::SIDE_EFFECT.into(), tool.side_effect().as_str().into());
        if let Some(connector) = tool.connector() {
            metadata.insert(meta::CONNECTOR_ID.into(), connector.id.clone().into());
            metadata.insert(meta::CONNECTOR_NAME.into(), connector.name.clone().into());
            metadata.insert(meta::ACTION_NAME.into(), connector.action.clone().into());
        }
        metadata.extend(tool.extra_metadata());
    }
    let original_args = match &call.arguments {
        ToolArguments::Parsed { value } => value.clone(),
        ToolArguments::Invalid { raw, .. } => Value::String(raw.clone()),
    };
    let mut side_effects = Vec::new();
    let mut args = original_args.clone();

    let stage = 'stage: {
        if over_limit {
            let reason = format!(
                "tool call limit reached: a run may make at most {} tool calls; the tool did not run",
                run.limits.max_tool_calls
            );
            break 'stage Stage::Blocked { by: BLOCKED_BY_RUN_LIMITS.into(), reason };
        }
        let Some(tool) = tool else {
            let reason = format!("unknown tool '{}': the tool did not run", call.name);
            break 'stage Stage::Blocked { by: BLOCKED_BY_UNKNOWN_TOOL.into(), reason };
        };
        if let ToolArguments::Invalid { error, .. } = &call.arguments {
            let reason = format!("invalid arguments: not valid JSON ({error}); the tool did not run");
            break 'stage Stage::Blocked { by: BLOCKED_BY_VALIDATION.into(), reason };
        }
        if let Err(why) = schema::validate(tool.parameters(), &args) {
            let reason = format!("invalid arguments: {why}; the tool did not run");
            break 'stage Stage::Blocked { by: BLOCKED_BY_VALIDATION.into(), reason };
        }

        // A resumed run: a call the journal already knows is neither re-checked by the Pre hooks
        // (it already passed them, and must not spend quota or be reported blocked) nor run again.
        if let Some(journal) = &run.services.journal {
            match journal.recorded(&scope.run_id, &call.id).await {
                None | Some(ToolStart::Run) => {}
                Some(ToolStart::Done { result, failed: false }) => break 'stage Stage::Replayed { result },
                Some(ToolStart::Done { result, failed: true }) => {
                    break 'stage Stage::ReplayedFailure { error: failure_text(&result) };
                }
                Some(ToolStart::Unknown) => break 'stage Stage::Failed { error: UNKNOWN_OUTCOME.into(), http: None },
            }
        }

        let mut ctx = HookContext::pre_tool_use(call.name.clone(), args.clone());
        ctx.agent_id = scope.agent_id.clone();
        ctx.user_id = scope.user_id.clone();
        ctx.metadata = metadata.clone();
        let pre = run.hooks.run_pre_tool_use_detailed(&ctx).await;
        side_effects.extend(pre.result.side_effects);
        if !pre.result.allow {
            let by = pre.blocked_by.unwrap_or_else(|| "unknown".into());
            let reason = pre.result.error.unwrap_or_else(|| format!("blocked by hook '{by}'"));
            break 'stage Stage::Blocked { by, reason };
        }
        if let Some(rewritten) = pre.result.modified_args {
            if let Err(why) = schema::validate(tool.parameters(), &rewritten) {
                let reason = format!("invalid arguments after a hook's rewrite: {why}; the tool did not run");
                args = rewritten;
                break 'stage Stage::Blocked { by: BLOCKED_BY_VALIDATION.into(), reason };
            }
            args = rewritten;
        }

        if let Some(journal) = &run.services.journal {
            match journal.tool_started(&scope.run_id, &call.id, &call.name, &args).await {
                ToolStart::Run => {}
                ToolStart::Done { result, failed: false } => break 'stage Stage::Replayed { result },
                ToolStart::Done { result, failed: true } => {
                    break 'stage Stage::ReplayedFailure { error: failure_text(&result) };
                }
                ToolStart::Unknown => break 'stage Stage::Failed { error: UNKNOWN_OUTCOME.into(), http: None },
            }
        }
        let tool_ctx = ToolCallContext {
            scope: scope.clone(),
            tool_call_id: call.id.clone(),
            services: run.services.clone(),
            limits: run.limits,
        };
        let running = AssertUnwindSafe(tool.call(args.clone(), &tool_ctx)).catch_unwind();
        match tokio::time::timeout(tool.timeout(), running).await {
            Ok(Ok(Ok(output))) => Stage::Executed { result: output.result, http: output.http },
            Ok(Ok(Err(e))) => Stage::Failed { http: e.http_exchange().cloned(), error: e.to_string() },
            Ok(Err(_panic)) => Stage::Failed { error: "the tool panicked".into(), http: None },
            Err(_) => Stage::Failed {
                error: format!("the tool timed out after {}s", tool.timeout().as_secs_f64()),
                http: None,
            },
        }
    };

    let mut replayed = false;
    let (outcome, result, blocked_by, error, http) = match stage {
        Stage::Blocked { by, reason } => ("blocked", Value::String(reason.clone()), Some(by), Some(reason), None),
        Stage::Executed { result, http } => ("executed", result, None, None, http),
        Stage::Failed { error, http } => ("failed", json!({ "error": error }), None, Some(error), http),
        Stage::Replayed { result } => {
            replayed = true;
            ("executed", result, None, None, None)
        }
        Stage::ReplayedFailure { error } => {
            replayed = true;
            ("failed", json!({ "error": error }), None, Some(error), None)
        }
    };
    metadata.insert(meta::OUTCOME.into(), outcome.into());
    metadata.insert(meta::ORIGINAL_ARGS.into(), original_args);
    if let Some(by) = &blocked_by {
        metadata.insert(meta::BLOCKED_BY.into(), by.clone().into());
    }
    if let Some(error) = &error {
        metadata.insert(meta::ERROR.into(), error.clone().into());
    }
    if let Some(http) = &http {
        metadata.insert(meta::REQUEST_METHOD.into(), http.method.clone().into());
        metadata.insert(meta::REQUEST_URL.into(), http.url.clone().into());
        if let Some(status) = http.status {
            metadata.insert(meta::RESPONSE_STATUS.into(), status.into());
        }
        metadata.insert(meta::RESPONSE_TIME_MS.into(), http.latency_ms.into());
    }
    let mut ctx = HookContext::post_tool_use(call.name.clone(), args, result.clone());
    ctx.agent_id = scope.agent_id.clone();
    ctx.user_id = scope.user_id.clone();
    ctx.metadata = metadata;
    let post = run.hooks.run_post_tool_use_detailed(&ctx).await;
    side_effects.extend(post.result.side_effects);
    if outcome != "blocked"
        && !replayed
        && let Some(journal) = &run.services.journal
    {
        journal.tool_finished(&scope.run_id, &call.id, outcome, &result).await;
    }
    let output = post.result.modified_result.unwrap_or(result);
    CallReport { tool_call_id: call.id.clone(), output, blocked_by, error, side_effects }
}
