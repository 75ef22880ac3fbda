//! Confirmation requests, the two approval paths on one state machine (the decision API and the
//! Feishu card callback), and the audit log.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use channel_core::{ApprovalChannel, CardState, Decision};
use channel_feishu::{Callback, ToastKind};
use hook_builtins::ports::{ConfirmationRecord, ConfirmationStatus};
use hook_builtins::{Actor, DecideDeps, DecisionOutcome, DecisionRequest, ForbiddenReason};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{ApiBytes, ApiJson, ApiQuery};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct ConfirmationView {
    pub id: String,
    /// `pending`, `approved`, `rejected`, `expired` or `cancelled`.
    pub status: String,
    pub tool_name: String,
    #[schema(value_type = Object)]
    pub tool_args: Value,
    pub args_sha256: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
    pub org_id: String,
    pub channel_id: Option<String>,
    pub mode: String,
    pub approver_scope: String,
    pub message_id: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub responded_at: Option<String>,
    pub responded_by_open_id: Option<String>,
    pub responded_by_user_id: Option<String>,
    pub reason: Option<String>,
}

impl From<ConfirmationRecord> for ConfirmationView {
    fn from(r: ConfirmationRecord) -> Self {
        ConfirmationView {
            id: r.id,
            status: r.status.as_str().to_owned(),
            tool_name: r.tool_name,
            tool_args: r.tool_args,
            args_sha256: r.args_sha256,
            run_id: r.run_id,
            tool_call_id: r.tool_call_id,
            agent_id: r.agent_id,
            user_id: r.user_id,
            org_id: r.org_id,
            channel_id: r.channel_id,
            mode: r.mode.as_str().to_owned(),
            approver_scope: r.approver_scope.as_str().to_owned(),
            message_id: r.message_id,
            created_at: r.created_at.to_rfc3339(),
            expires_at: r.expires_at.to_rfc3339(),
            responded_at: r.responded_at.map(|t| t.to_rfc3339()),
            responded_by_open_id: r.responded_by_open_id,
            responded_by_user_id: r.responded_by_user_id,
            reason: r.reason,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only requests in this status.
    pub status: Option<String>,
    /// For the platform admin: which org (users always see their own).
    pub org_id: Option<String>,
}

fn caller_org(caller: &Caller, org_id: Option<String>) -> Result<String, ApiError> {
    match caller {
        Caller::User(user) => Ok(user.org_id.clone()),
        Caller::Admin => org_id.ok_or_else(|| ApiError::bad_request("the platform admin must pass `org_id`")),
    }
}

/// The caller's org's confirmation requests, newest first.
#[utoipa::path(get, path = "/api/v1/confirmations", params(ListQuery), responses((status = 200, body = [ConfirmationView])), tag = "confirmations")]
pub async fn list_confirmations(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<Vec<ConfirmationView>>, ApiError> {
    let org_id = caller_org(&caller, query.org_id)?;
    let status = match query.status.as_deref() {
        None => None,
        Some(s) => Some(ConfirmationStatus::parse(s).ok_or_else(|| {
            ApiError::validation(format!(
                "`status` must be pending, approved, rejected, expired or cancelled, not `{s}`"
            ))
        })?),
    };
    let rows = state.store().list_confirmations(&org_id, status).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

async fn confirmation_in_org(state: &AppState, caller: &Caller, id: &str) -> Result<ConfirmationRecord, ApiError> {
    let record = state.store().get_confirmation(id).await?.ok_or_else(|| ApiError::not_found("confirmation"))?;
    caller.org_member(&record.org_id, "confirmation")?;
    Ok(record)
}

/// One confirmation request.
#[utoipa::path(get, path = "/api/v1/confirmations/{id}", responses((status = 200, body = ConfirmationView)), tag = "confirmations")]
pub async fn get_confirmation(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConfirmationView>, ApiError> {
    Ok(Json(confirmation_in_org(&state, &caller, &id).await?.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// `approve` or `reject`.
    pub decision: String,
    pub reason: Option<String>,
}

/// Decides a pending request: 200 with the decided request; 403 outside the approver scope; 404
/// for another org's request; 409 `already_decided` when it already left `pending`.
#[utoipa::path(post, path = "/api/v1/confirmations/{id}/decision", request_body = DecisionBody,
    responses((status = 200, body = ConfirmationView), (status = 403), (status = 404), (status = 409)), tag = "confirmations")]
pub async fn decide_confirmation(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<DecisionBody>,
) -> Result<Json<ConfirmationView>, ApiError> {
    let decision = match body.decision.as_str() {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject,
        other => return Err(ApiError::validation(format!("`decision` must be approve or reject, not `{other}`"))),
    };
    let record = confirmation_in_org(&state, &caller, &id).await?;
    let Caller::User(user) = &caller else {
        return Err(ApiError::Forbidden(
            "decisions are made by users of the organization, not the platform admin".into(),
        ));
    };
    let channel = match &record.channel_id {
        Some(channel_id) => state.channel(channel_id).await.ok().flatten(),
        None => None,
    };
    let request = DecisionRequest {
        confirmation_id: record.id.clone(),
        decision,
        actor: Actor::User { user_id: user.id.clone() },
        reason: body.reason.filter(|r| !r.trim().is_empty()),
    };
    match apply(&state, channel.as_deref(), &request).await? {
        DecisionOutcome::Decided(record) => Ok(Json(record.into())),
        DecisionOutcome::AlreadyDecided(status) => Err(ApiError::Conflict {
            code: "already_decided",
            message: format!("the request is already {}", status.as_str()),
        }),
        DecisionOutcome::NotFound => Err(ApiError::not_found("confirmation")),
        DecisionOutcome::Forbidden(ForbiddenReason::OtherOrg) => Err(ApiError::not_found("confirmation")),
        DecisionOutcome::Forbidden(reason) => Err(ApiError::Forbidden(forbidden_text(reason))),
    }
}

fn forbidden_text(reason: ForbiddenReason) -> String {
    match reason {
        ForbiddenReason::UnknownOperator => "you are not a user of this organization".to_owned(),
        ForbiddenReason::UnknownUser => "unknown user".to_owned(),
        ForbiddenReason::OtherOrg => "the request belongs to another organization".to_owned(),
        ForbiddenReason::OutOfScope(scope) => {
            format!("you are outside this request's approver scope ({})", scope.as_str())
        }
    }
}

async fn apply(
    state: &AppState,
    channel: Option<&dyn ApprovalChannel>,
    request: &DecisionRequest,
) -> Result<DecisionOutcome, ApiError> {
    let store = state.store();
    let deps = DecideDeps { store, directory: store, notifier: state.confirmations().as_ref(), channel };
    hook_builtins::decide(deps, request).await.map_err(|e| {
        tracing::error!(confirmation_id = %request.confirmation_id, "decision failed: {e}");
        ApiError::Unavailable("the decision could not be recorded; nothing was changed".to_owned())
    })
}

/// The Feishu callback: verified, decrypted and parsed by `channel-feishu`; card actions decide
/// requests of this channel's org through the same state machine as the decision API. Answers
/// within Feishu's 3 s with a toast and the final card; the group's card is patched afterwards.
#[utoipa::path(post, path = "/api/v1/channels/{id}/feishu/callback", request_body(content = Object, description = "Feishu's request as sent"),
    responses((status = 200), (status = 400), (status = 401)), tag = "channels")]
pub async fn feishu_callback(
    State(state): State<AppState>,
    Path(channel_id): Path<String>,
    headers: HeaderMap,
    ApiBytes(body): ApiBytes,
) -> Result<Response, ApiError> {
    let row = state.store().get_channel(&channel_id).await?.filter(|c| c.kind == "feishu");
    let row = row.ok_or_else(|| ApiError::not_found("channel"))?;
    let config: channel_feishu::FeishuConfig = serde_json::from_value(row.config.clone())
        .map_err(|e| ApiError::internal(format!("channel {channel_id} config: {e}")))?;
    let decoded = channel_feishu::decode_callback(&headers, &body, &config.callback_secrets(), chrono::Utc::now());
    let action = match decoded {
        Err(error) => {
            let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            tracing::warn!(channel_id, "refused Feishu callback: {error}");
            let code = if status == StatusCode::UNAUTHORIZED { "bad_signature" } else { "bad_callback" };
            return Ok((status, Json(json!({"error": {"code": code, "message": error.to_string()}}))).into_response());
        }
        Ok(Callback::UrlVerification { challenge }) => {
            return Ok(Json(channel_feishu::challenge_response(&challenge)).into_response());
        }
        Ok(Callback::Other { .. }) => return Ok(Json(json!({})).into_response()),
        Ok(Callback::CardAction(action)) => action,
    };
    // Schema 2.0 callbacks take a toast and an optional card; legacy ones take `{}` or a bare card.
    let legacy = action.legacy;
    let toast = |kind: ToastKind, text: &str, card: Option<Value>| {
        if legacy {
            return Json(card.unwrap_or_else(|| json!({}))).into_response();
        }
        Json(channel_feishu::card_action_response(kind, text, card)).into_response()
    };
    if !state.store().record_callback_event(&channel_id, &action.dedup_key()).await? {
        return Ok(toast(ToastKind::Info, "This click was already handled.", None));
    }
    let (Some(confirmation_id), Some(decision), Some(operator)) =
        (action.confirmation_id.clone(), action.decision, action.operator_id().map(str::to_owned))
    else {
        return Ok(toast(ToastKind::Error, "This card action is not an approval decision.", None));
    };
    // A callback decides only requests of its own channel's org.
    let record = state.store().get_confirmation(&confirmation_id).await?.filter(|r| r.org_id == row.org_id);
    if record.is_none() {
        return Ok(toast(ToastKind::Error, "Unknown approval request.", None));
    }
    let request = DecisionRequest {
        confirmation_id,
        decision,
        actor: Actor::ChannelOperator { open_id: operator },
        reason: None,
    };
    // The card is patched after answering (Feishu: answer the callback first), so no channel here.
    let outcome = match apply(&state, None, &request).await {
        Ok(outcome) => outcome,
        Err(error) => {
            // Feishu redelivers on a non-200: let the redelivery be processed, not deduplicated.
            if let Err(e) = state.store().forget_callback_event(&channel_id, &action.dedup_key()).await {
                tracing::warn!(channel_id, "cannot forget the callback key after a failure: {e}");
            }
            return Err(error);
        }
    };
    Ok(match outcome {
        DecisionOutcome::Decided(record) => {
            let card_state = final_state(&state, &record).await;
            let channel = state.channel(&channel_id).await.ok().flatten();
            let (text, kind) = match record.status {
                ConfirmationStatus::Approved => ("Approved. The tool call will run.", ToastKind::Success),
                _ => ("Rejected. The tool call will not run.", ToastKind::Success),
            };
            let card = hook_builtins::card_for_record(state.store(), &record).await;
            let final_card = card_state.as_ref().map(|s| channel_feishu::final_card(&card, s));
            if let (Some(channel), Some(message_id), Some(card_state)) =
                (channel, record.message_id.clone(), card_state)
            {
                spawn_patch(channel, message_id, card, card_state);
            }
            toast(kind, text, final_card)
        }
        DecisionOutcome::AlreadyDecided(status) => {
            toast(ToastKind::Info, &format!("This request is already {}.", status.as_str()), None)
        }
        DecisionOutcome::NotFound => toast(ToastKind::Error, "Unknown approval request.", None),
        DecisionOutcome::Forbidden(reason) => toast(ToastKind::Error, &forbidden_text(reason), None),
    })
}

/// The card state a decided row shows, naming the deciding user (by name when known).
pub async fn final_state(state: &AppState, record: &ConfirmationRecord) -> Option<CardState> {
    let at = record.responded_at.unwrap_or(record.updated_at);
    let name = match &record.responded_by_user_id {
        Some(id) => state.store().get_user(id).await.ok().flatten().map(|u| u.name),
        None => None,
    };
    let by = name
        .or_else(|| record.responded_by_user_id.clone())
        .or_else(|| record.responded_by_open_id.clone())
        .unwrap_or_else(|| "an operator".to_owned());
    match record.status {
        ConfirmationStatus::Approved => Some(CardState::Approved { decided_by: by, decided_at: at }),
        ConfirmationStatus::Rejected => {
            Some(CardState::Rejected { decided_by: by, decided_at: at, reason: record.reason.clone() })
        }
        ConfirmationStatus::Expired => Some(CardState::Expired { at }),
        ConfirmationStatus::Cancelled => {
            Some(CardState::Cancelled { at, reason: record.reason.clone().unwrap_or_else(|| "cancelled".to_owned()) })
        }
        ConfirmationStatus::Pending => None,
    }
}

fn spawn_patch(
    channel: Arc<dyn ApprovalChannel>,
    message_id: String,
    card: channel_core::ApprovalCard,
    state: CardState,
) {
    tokio::spawn(async move {
        // Give Feishu a moment to apply the callback's own answer first.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        if let Err(e) = channel.update_approval(&message_id, &card, &state).await {
            tracing::warn!(message_id, "cannot update the approval card: {e}");
        }
    });
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    pub run_id: Option<String>,
    /// For the platform admin: which org.
    pub org_id: Option<String>,
}

/// The audit log of connector calls (one row per call, blocked ones too), oldest first.
#[utoipa::path(get, path = "/api/v1/audit/connector-calls", params(AuditQuery), responses((status = 200, body = [Object])), tag = "audit")]
pub async fn connector_calls(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let org_id = caller_org(&caller, query.org_id)?;
    let rows = state.store().list_connector_calls(&org_id, query.run_id.as_deref()).await?;
    let rows = rows.into_iter().map(|row| serde_json::to_value(row).unwrap_or(Value::Null)).collect();
    Ok(Json(rows))
}
