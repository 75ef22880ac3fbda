use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a run's stream (DESIGN §4), serialized as
/// `{"event":"tool_call","run_id":"…","seq":3,"tool_call_id":"…",…}`.
///
/// `seq` counts from 0 per run, without gaps. For SSE the server writes [`AgentEvent::name`] as the
/// `event:` field and [`AgentEvent::data`] (everything but `event`) as `data:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    pub run_id: String,
    pub seq: u64,
    /// The DAG step, for a run on the `dag` surface (DESIGN §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// The workflow node, for a run on the `workflow` surface (DESIGN §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// The event's name and payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The run began. `parent_run_id` is set for a delegate's run (its events share the parent's
    /// sink).
    RunStarted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<String>,
    },
    /// The model asked for a tool call; `arguments` as it sent them (a string when not JSON).
    ToolCall { tool_call_id: String, tool_name: String, arguments: Value },
    /// A confirmation gate is waiting for a human (emitted by the gate through a [`RunHub`]).
    AwaitingConfirmation {
        confirmation_id: String,
        tool_call_id: String,
        tool_name: String,
        arguments: Value,
        expires_at: DateTime<Utc>,
    },
    /// A confirmation left `pending`: `status` is `approved`, `rejected` or `expired`;
    /// `decided_by` the deciding user's id, when a human decided.
    ConfirmationResolved { confirmation_id: String, status: String, decided_by: Option<String> },
    /// A tool call's observation, after the PostToolUse chain. `blocked_by` names the hook (or
    /// `argument_validation`, `unknown_tool`, `run_limits`) that stopped the call; `error` is the
    /// block reason or the tool's failure.
    ToolResult {
        tool_call_id: String,
        output: Value,
        blocked: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blocked_by: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        side_effects: Vec<String>,
    },
    /// The final answer.
    Answer { content: String },
    /// The run ended with an answer; `status` is `completed`.
    RunCompleted { status: String },
    /// The run ended without an answer.
    RunFailed { error: String },
}

impl AgentEvent {
    /// The event's name: `run_started`, `tool_call`, `awaiting_confirmation`,
    /// `confirmation_resolved`, `tool_result`, `answer`, `run_completed`, `run_failed`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::ToolCall { .. } => "tool_call",
            EventKind::AwaitingConfirmation { .. } => "awaiting_confirmation",
            EventKind::ConfirmationResolved { .. } => "confirmation_resolved",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::Answer { .. } => "answer",
            EventKind::RunCompleted { .. } => "run_completed",
            EventKind::RunFailed { .. } => "run_failed",
        }
    }

    /// The SSE `data:` payload: the event as JSON without its `event` key.
    pub fn data(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("event");
        }
        value
    }
}

/// Where a run's events go (the server forwards them to SSE and persists them).
///
/// `emit` is awaited in the run's order; an implementation must not block for long (buffer or
/// drop instead) because the run waits for it.
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    async fn emit(&self, event: AgentEvent);
}

/// A sink that discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

#[async_trait::async_trait]
impl EventSink for NullSink {
    async fn emit(&self, _event: AgentEvent) {}
}

/// A sink that keeps every event in memory, for tests and batch callers.
#[derive(Debug, Default)]
pub struct VecSink {
    events: Mutex<Vec<AgentEvent>>,
}

impl VecSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// The events so far, in emission order.
    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait::async_trait]
impl EventSink for VecSink {
    async fn emit(&self, event: AgentEvent) {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

/// A sink feeding a Tokio channel (e.g. an SSE response). Events are dropped once the receiver
/// is gone: the run goes on without a listener.
#[derive(Debug, Clone)]
pub struct ChannelSink(pub tokio::sync::mpsc::UnboundedSender<AgentEvent>);

#[async_trait::async_trait]
impl EventSink for ChannelSink {
    async fn emit(&self, event: AgentEvent) {
        let _ = self.0.send(event);
    }
}

/// A tool call's lifecycle, for persisting `tool_executions` (keyed by `run_id` + `tool_call_id`).
///
/// Called only for calls that reach the tool (not for blocked ones, which the event stream and the
/// audit log record). Implementations log their own failures: the run does not stop for them.
#[async_trait::async_trait]
pub trait RunJournal: Send + Sync {
    /// The tool is about to run (status `executing`) with the effective `arguments`. The answer
    /// says whether it may: a call this run already made (a resumed run) is never made twice.
    async fn tool_started(&self, run_id: &str, tool_call_id: &str, tool_name: &str, arguments: &Value) -> ToolStart;
    /// What the journal already knows of this call, before any hook runs: `None` (the default)
    /// for a call it never saw; `Done` or `Unknown` for a call of a resumed run that was started
    /// before a restart.
    async fn recorded(&self, _run_id: &str, _tool_call_id: &str) -> Option<ToolStart> {
        None
    }

    /// The tool ended: `outcome` is `executed` or `failed`; `result` is the tool's own result,
    /// before the PostToolUse chain (so a truncated observation stays whole here).
    async fn tool_finished(&self, run_id: &str, tool_call_id: &str, outcome: &str, result: &Value);
}

/// What a [`RunJournal`] says about a tool call that is about to run.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolStart {
    /// First time: run the tool.
    Run,
    /// The call already ran to completion before (a resumed run): reuse its recorded result
    /// instead of running it again.
    Done { result: Value, failed: bool },
    /// The call was started before and its outcome is unknown (the process died while it ran):
    /// do not run it again; tell the model.
    Unknown,
}

/// The emitter of one run: its id, its `seq` counter and its sink. Cheap to clone.
///
/// Events are numbered when emitted and delivered to the sink in `seq` order, whether they come
/// from the loop ([`emit`](Self::emit), awaited) or from synchronous code such as a hook's
/// callback ([`emit_now`](Self::emit_now), delivered by a spawned task).
#[derive(Clone)]
pub struct RunEmitter {
    run_id: Arc<str>,
    step_id: Option<Arc<str>>,
    node_id: Option<Arc<str>>,
    inner: Arc<EmitterInner>,
}

struct EmitterInner {
    sink: Arc<dyn EventSink>,
    /// The next `seq` and the events numbered but not yet delivered, in `seq` order.
    pending: Mutex<(u64, VecDeque<AgentEvent>)>,
    /// Held while delivering, so that deliveries never interleave.
    delivery: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for RunEmitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEmitter").field("run_id", &self.run_id).finish_non_exhaustive()
    }
}

impl RunEmitter {
    pub fn new(run_id: &str, sink: Arc<dyn EventSink>) -> Self {
        Self::with_first_seq(run_id, sink, 0)
    }

    /// An emitter whose first event gets `first_seq`: a resumed run continues its stored stream.
    pub fn with_first_seq(run_id: &str, sink: Arc<dyn EventSink>, first_seq: u64) -> Self {
        RunEmitter {
            run_id: run_id.into(),
            step_id: None,
            node_id: None,
            inner: Arc::new(EmitterInner {
                sink,
                pending: Mutex::new((first_seq, VecDeque::new())),
                delivery: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// Stamps every event with the DAG step or workflow node it belongs to.
    pub fn with_location(mut self, step_id: Option<&str>, node_id: Option<&str>) -> Self {
        self.step_id = step_id.map(Into::into);
        self.node_id = node_id.map(Into::into);
        self
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    fn number(&self, kind: EventKind) {
        let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
        let seq = pending.0;
        pending.0 += 1;
        pending.1.push_back(AgentEvent {
            run_id: self.run_id.to_string(),
            seq,
            step_id: self.step_id.as_deref().map(str::to_owned),
            node_id: self.node_id.as_deref().map(str::to_owned),
            kind,
        });
    }

    async fn deliver(inner: &EmitterInner) {
        let _delivering = inner.delivery.lock().await;
        loop {
            let next = inner.pending.lock().unwrap_or_else(|e| e.into_inner()).1.pop_front();
            match next {
                Some(event) => inner.sink.emit(event).await,
                None => break,
            }
        }
    }

    /// Emits `kind` with the run's id and the next `seq`; returns once it (and every earlier
    /// event) reached the sink.
    pub async fn emit(&self, kind: EventKind) {
        self.number(kind);
        Self::deliver(&self.inner).await;
    }

    /// Numbers `kind` now and delivers it from a spawned task, for synchronous callers (the
    /// confirmation gate's callbacks). Without a Tokio runtime the event waits for the run's next
    /// event.
    pub fn emit_now(&self, kind: EventKind) {
        self.number(kind);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            runtime.spawn(async move { Self::deliver(&inner).await });
        }
    }
}

/// The live runs of a process, by run id, so that code outside the loop — the confirmation gate,
/// through the server's `ApprovalNotifier` wiring — can add `awaiting_confirmation` and
/// `confirmation_resolved` events to a run's own stream with the run's own `seq`.
///
/// `hook-core` stays free of event plumbing: the server holds one `Arc<RunHub>`, passes it to
/// every run in [`RunServices::hub`], and gives the same hub to whatever emits on behalf of hooks.
#[derive(Debug, Default)]
pub struct RunHub {
    runs: Mutex<HashMap<String, RunEmitter>>,
}

impl RunHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// Emits `kind` into the stream of run `run_id`. Returns `false` when the run is not live in
    /// this process (finished, or running elsewhere).
    pub async fn emit(&self, run_id: &str, kind: EventKind) -> bool {
        let emitter = self.runs.lock().unwrap_or_else(|e| e.into_inner()).get(run_id).cloned();
        match emitter {
            Some(emitter) => {
                emitter.emit(kind).await;
                true
            }
            None => false,
        }
    }

    /// [`emit`](Self::emit) for synchronous callers (e.g. an implementation of the gate's
    /// `ConfirmationEvents`): the event is numbered at once and delivered by a spawned task, still
    /// in `seq` order. Returns `false` when the run is not live in this process.
    pub fn emit_now(&self, run_id: &str, kind: EventKind) -> bool {
        let emitter = self.runs.lock().unwrap_or_else(|e| e.into_inner()).get(run_id).cloned();
        match emitter {
            Some(emitter) => {
                emitter.emit_now(kind);
                true
            }
            None => false,
        }
    }

    pub(crate) fn register(&self, emitter: RunEmitter) {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).insert(emitter.run_id.to_string(), emitter);
    }

    pub(crate) fn unregister(&self, run_id: &str) {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).remove(run_id);
    }
}

/// Where a run reports: its event sink, an optional journal and an optional hub. Cheap to clone;
/// a delegate's run reports to its parent's services.
#[derive(Clone)]
pub struct RunServices {
    pub events: Arc<dyn EventSink>,
    pub journal: Option<Arc<dyn RunJournal>>,
    pub hub: Option<Arc<RunHub>>,
}

impl RunServices {
    /// Events to `events`, no journal, no hub.
    pub fn new(events: Arc<dyn EventSink>) -> Self {
        RunServices { events, journal: None, hub: None }
    }
}

impl std::fmt::Debug for RunServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunServices")
            .field("journal", &self.journal.is_some())
            .field("hub", &self.hub)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sync_and_async_emits_are_delivered_in_seq_order_with_the_location() {
        let sink = Arc::new(VecSink::new());
        let emitter = RunEmitter::new("r", sink.clone()).with_location(Some("step-1"), None);
        emitter.emit(EventKind::RunStarted { agent_id: None, parent_run_id: None }).await;
        emitter.emit_now(EventKind::Answer { content: "a".into() });
        emitter.emit(EventKind::RunCompleted { status: "completed".into() }).await;
        let events = sink.events();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert_eq!(events[1].name(), "answer");
        let data = events[2].data();
        assert_eq!(data, serde_json::json!({"run_id": "r", "seq": 2, "step_id": "step-1", "status": "completed"}));
    }
}
