//! Chat (a run streamed as SSE), runs and their events.

use std::convert::Infallible;
use std::time::Duration;

use agent_react::{AgentEvent, EventKind};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;
use crate::wiring::{StartRun, start_run};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    pub message: String,
    pub conversation_id: Option<String>,
}

/// Starts a run of the agent and streams its events as `text/event-stream` (`event:` the event
/// name, `data:` JSON with `run_id` and `seq`). The run goes on if the client disconnects.
#[utoipa::path(post, path = "/api/v1/agents/{id}/chat", request_body = ChatRequest,
    responses((status = 200, content_type = "text/event-stream", description = "run_started, tool_call, awaiting_confirmation, confirmation_resolved, tool_result, answer, run_completed, run_failed")),
    tag = "runs")]
pub async fn chat(
    State(state): State<AppState>,
    caller: Caller,
    Path(agent_id): Path<String>,
    ApiJson(body): ApiJson<ChatRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let agent = state.store().get_agent(&agent_id).await?.ok_or_else(|| ApiError::not_found("agent"))?;
    caller.org_member(&agent.org_id, "agent")?;
    if body.message.trim().is_empty() {
        return Err(ApiError::validation("`message` must not be empty"));
    }
    let conversation_id = match body.conversation_id {
        Some(id) => {
            let conversation = state
                .store()
                .get_conversation(&id)
                .await?
                .filter(|c| c.org_id == agent.org_id && c.agent_id == agent.id)
                .ok_or_else(|| ApiError::not_found("conversation"))?;
            conversation.id
        }
        None => {
            state
                .store()
                .create_conversation(&store::NewConversation {
                    org_id: agent.org_id.clone(),
                    agent_id: agent.id.clone(),
                    user_id: caller.user_id().map(str::to_owned),
                    title: Some(body.message.chars().take(80).collect()),
                })
                .await?
                .id
        }
    };
    let run = state
        .store()
        .create_run(&store::NewRun {
            id: None,
            agent_id: agent.id.clone(),
            org_id: agent.org_id.clone(),
            user_id: caller.user_id().map(str::to_owned),
            conversation_id: Some(conversation_id.clone()),
            parent_run_id: None,
            surface: "react".to_owned(),
            status: store::RunStatus::Running,
            input: Some(body.message.clone()),
            owner: Some(state.instance_id().to_owned()),
            lease_until: Some(crate::wiring::lease_until()),
        })
        .await?;
    let receiver = start_run(
        &state,
        StartRun {
            run_id: run.id.clone(),
            agent,
            user_id: caller.user_id().map(str::to_owned),
            conversation_id: Some(conversation_id),
            message: body.message,
            first_seq: 0,
        },
    )
    .await;
    Ok(sse(live_events(run.id, receiver, None)))
}

fn sse<S>(stream: S) -> impl IntoResponse
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

fn sse_event(event: &AgentEvent, top_run_id: &str) -> Event {
    let mut sse = Event::default().event(event.name()).data(event.data().to_string());
    if event.run_id == top_run_id {
        sse = sse.id(event.seq.to_string());
    }
    sse
}

fn is_terminal(event: &AgentEvent, top_run_id: &str) -> bool {
    event.run_id == top_run_id && matches!(event.kind, EventKind::RunCompleted { .. } | EventKind::RunFailed { .. })
}

/// The live events of `run_id` until its terminal event, skipping top-run events at or before
/// `after_seq` (already replayed).
fn live_events(
    run_id: String,
    receiver: broadcast::Receiver<AgentEvent>,
    after_seq: Option<u64>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold((receiver, false), move |(mut receiver, done)| {
        let run_id = run_id.clone();
        async move {
            if done {
                return None;
            }
            loop {
                match receiver.recv().await {
                    Ok(event) => {
                        if event.run_id == run_id && after_seq.is_some_and(|after| event.seq <= after) {
                            continue;
                        }
                        let terminal = is_terminal(&event, &run_id);
                        return Some((Ok(sse_event(&event, &run_id)), (receiver, terminal)));
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(
                            run_id,
                            skipped = n,
                            "SSE client too slow: events skipped (replay with GET /runs/{{id}}/events)"
                        );
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }
    })
}

/// A stored event as an SSE frame, `id` = its `seq`.
fn stored_sse(event: store::RunEvent) -> Event {
    Event::default().event(event.event).id(event.seq.to_string()).data(event.data.to_string())
}

/// The stored events of a run that runs elsewhere, polled every 500 ms until its terminal event.
fn stored_events(state: AppState, run_id: String, after: Option<i64>) -> impl Stream<Item = Result<Event, Infallible>> {
    use futures::StreamExt as _;
    futures::stream::unfold((after, false), move |(mut after, done)| {
        let state = state.clone();
        let run_id = run_id.clone();
        async move {
            if done {
                return None;
            }
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let events = match state.store().list_run_events(&run_id, after).await {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::warn!(run_id, "cannot follow the run's events: {e}");
                        return None;
                    }
                };
                if events.is_empty() {
                    continue;
                }
                after = events.last().map(|e| e.seq);
                let terminal = events.iter().any(|e| e.event == "run_completed" || e.event == "run_failed");
                let batch: Vec<Result<Event, Infallible>> = events.into_iter().map(|e| Ok(stored_sse(e))).collect();
                return Some((futures::stream::iter(batch), (after, terminal)));
            }
        }
    })
    .flat_map(|batch| batch)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunView {
    pub id: String,
    pub agent_id: String,
    pub org_id: String,
    pub user_id: Option<String>,
    pub conversation_id: Option<String>,
    pub parent_run_id: Option<String>,
    pub surface: String,
    /// `running`, `awaiting_confirmation`, `completed`, `failed` or `cancelled`.
    pub status: String,
    pub answer: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<store::Run> for RunView {
    fn from(r: store::Run) -> Self {
        RunView {
            id: r.id,
            agent_id: r.agent_id,
            org_id: r.org_id,
            user_id: r.user_id,
            conversation_id: r.conversation_id,
            parent_run_id: r.parent_run_id,
            surface: r.surface,
            status: r.status.as_str().to_owned(),
            answer: r.answer,
            error: r.error,
            created_at: r.created_at.to_rfc3339(),
            updated_at: r.updated_at.to_rfc3339(),
        }
    }
}

async fn run_in_org(state: &AppState, caller: &Caller, id: &str) -> Result<store::Run, ApiError> {
    let run = state.store().get_run(id).await?.ok_or_else(|| ApiError::not_found("run"))?;
    caller.org_member(&run.org_id, "run")?;
    Ok(run)
}

/// A run.
#[utoipa::path(get, path = "/api/v1/runs/{id}", responses((status = 200, body = RunView)), tag = "runs")]
pub async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(run_in_org(&state, &caller, &id).await?.into()))
}

/// The run's events from the beginning (or after `Last-Event-ID`), then live while it runs in this
/// process.
#[utoipa::path(get, path = "/api/v1/runs/{id}/events",
    responses((status = 200, content_type = "text/event-stream", description = "the run's events")), tag = "runs")]
pub async fn run_events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let run = run_in_org(&state, &caller, &id).await?;
    let after: Option<i64> = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| ApiError::bad_request("`Last-Event-ID` must be an event seq"))?,
        ),
    };
    // Subscribe before reading the stored events, so that nothing falls between the two.
    let live = state.subscribe_run(&run.id);
    let stored = state.store().list_run_events(&run.id, after).await?;
    let last_seq = stored.last().map(|e| e.seq).or(after);
    let finished = stored.iter().any(|e| e.event == "run_completed" || e.event == "run_failed");
    let replay: Vec<Result<Event, Infallible>> = stored.into_iter().map(|e| Ok(stored_sse(e))).collect();
    use futures::StreamExt as _;
    let live = match (live, finished) {
        (_, true) => futures::stream::empty().boxed(),
        (Some(receiver), false) => live_events(run.id.clone(), receiver, last_seq.map(|s| s.max(0) as u64)).boxed(),
        // The run goes on in another process (or is about to be resumed): follow its stored events.
        (None, false) => stored_events(state.clone(), run.id.clone(), last_seq).boxed(),
    };
    Ok(sse(futures::stream::iter(replay).chain(live)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    /// Why the run is cancelled (recorded on the run and its confirmation requests).
    pub reason: Option<String>,
}

/// Cancels a run: stops it, cancels its pending confirmation requests (their cards are updated)
/// and records why. 409 `run_finished` for a run that already ended.
#[utoipa::path(post, path = "/api/v1/runs/{id}/cancel", request_body = CancelBody,
    responses((status = 200, body = RunView), (status = 409)), tag = "runs")]
pub async fn cancel_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    crate::extract::ApiBytes(body): crate::extract::ApiBytes,
) -> Result<Json<RunView>, ApiError> {
    // The body is optional: empty, or `{"reason": …}`.
    let body: CancelBody = if body.iter().all(u8::is_ascii_whitespace) {
        CancelBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest { code: "invalid_body", message: e.to_string() })?
    };
    let run = run_in_org(&state, &caller, &id).await?;
    if !matches!(run.status, store::RunStatus::Running | store::RunStatus::AwaitingConfirmation) {
        return Err(ApiError::Conflict {
            code: "run_finished",
            message: format!("the run already ended ({})", run.status.as_str()),
        });
    }
    let who = caller.user_id().unwrap_or("the platform admin").to_owned();
    let reason = body.reason.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| format!("cancelled by {who}"));
    Ok(Json(crate::wiring::cancel_run(&state, &run, &reason).await?.into()))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolExecutionView {
    pub run_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    #[schema(value_type = Object)]
    pub original_args: Value,
    #[schema(value_type = Option<Object>)]
    pub effective_args: Option<Value>,
    /// `executing`, `completed` or `failed`.
    pub status: String,
    /// The observation as the model got it (truncated results stay whole here when the tool's own
    /// output was stored before truncation).
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

/// One tool execution of a run.
#[utoipa::path(get, path = "/api/v1/runs/{id}/tool-executions/{tool_call_id}", responses((status = 200, body = ToolExecutionView)), tag = "runs")]
pub async fn get_tool_execution(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, tool_call_id)): Path<(String, String)>,
) -> Result<Json<ToolExecutionView>, ApiError> {
    let run = run_in_org(&state, &caller, &id).await?;
    let exec = state
        .store()
        .get_tool_execution(&run.id, &tool_call_id)
        .await?
        .ok_or_else(|| ApiError::not_found("tool execution"))?;
    Ok(Json(ToolExecutionView {
        run_id: exec.run_id,
        tool_call_id: exec.tool_call_id,
        tool_name: exec.tool_name,
        original_args: exec.original_args,
        effective_args: exec.effective_args,
        status: exec.status.as_str().to_owned(),
        result: exec.result,
        started_at: exec.started_at.to_rfc3339(),
        finished_at: exec.finished_at.map(|t| t.to_rfc3339()),
    }))
}
