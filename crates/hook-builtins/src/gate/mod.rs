//! The confirmation gate (`confirmation_gate`, alias `feishu_gate`): a human approves a tool call
//! before it runs (DESIGN §3).
//!
//! Three pieces:
//! - [`ConfirmationGateHook`], the Pre hook (priority `i32::MAX`, after every other Pre hook, so
//!   the human approves exactly the arguments that will run);
//! - [`ConfirmationHub`], the per-process waiter registry with its one shared poll;
//! - [`decide`], the decision state machine shared by the channel callback and the decision API.

mod decide;
mod hub;

use std::sync::Arc;
use std::time::Duration;

use channel_core::{ApprovalCard, ApprovalChannel, CardState};
use chrono::Utc;
use hook_core::{FailurePolicy, HookContext, HookError, HookResult, PreToolUseHook, meta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use decide::{
    Actor, DecideDeps, DecideError, DecisionOutcome, DecisionRequest, ForbiddenReason, card_for_record, decide,
};
pub use hub::ConfirmationHub;

use crate::hashing::args_sha256;
use crate::ports::{
    ApproverDirectory, ApproverScope, ConfirmationRecord, ConfirmationStatus, ConfirmationStore, DecideOutcome,
    DecisionUpdate, DeliveryMode, NewConfirmation,
};

/// Metadata key (string): the display name of the agent, for the card. Falls back to
/// [`GateConfig::agent_name`], then the agent id.
pub const META_AGENT_NAME: &str = "agent_name";
/// Metadata key (string): the display name of the user who started the run, for the card. Falls
/// back to [`ApproverDirectory::user`]'s name, then the user id.
pub const META_USER_NAME: &str = "user_name";

/// The block text of a rejected call (DESIGN §3 step 5); `: <reason>` follows when given.
pub const REJECTED_TEXT: &str = "Tool call was rejected by an operator";

/// Configuration of `confirmation_gate` (per agent).
///
/// Serde form: `{"timeout_s": 120, "poll_interval_ms": 1500, "approver_scope": "org_admins",
/// "mode": "auto", "require_confirmation_for_all": false, "agent_name": null, "channel_id": null}`,
/// every field optional.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateConfig {
    /// How long a request waits for a decision (default 120 s).
    #[serde(rename = "timeout_s", with = "secs")]
    pub timeout: Duration,
    /// How often the shared poll looks for decisions made by other processes (default 1.5 s).
    /// The hub polls at the smallest interval among its current waiters.
    #[serde(rename = "poll_interval_ms", with = "millis")]
    pub poll_interval: Duration,
    /// Who may decide (default `org_admins`).
    pub approver_scope: ApproverScope,
    /// What happens when the card cannot be delivered (default `auto`).
    pub mode: DeliveryMode,
    /// Gate every tool call, not only tools marked `requires_confirmation`.
    pub require_confirmation_for_all: bool,
    /// The agent's display name on the card.
    pub agent_name: Option<String>,
    /// The channel the card goes to, recorded on the row (`confirmation_requests.channel_id`).
    pub channel_id: Option<String>,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            timeout: Duration::from_secs(120),
            poll_interval: Duration::from_millis(1500),
            approver_scope: ApproverScope::default(),
            mode: DeliveryMode::default(),
            require_confirmation_for_all: false,
            agent_name: None,
            channel_id: None,
        }
    }
}

/// Callbacks through which the agent loop learns that a call waits for a human and how it ended,
/// to emit the `awaiting_confirmation` and `confirmation_resolved` run events. Called
/// synchronously from the gate: implementations must not block (send on a channel).
pub trait ConfirmationEvents: Send + Sync {
    /// The call waits on `record` (pending; also after a re-attach).
    fn on_awaiting(&self, ctx: &HookContext, record: &ConfirmationRecord);
    /// `record` left `pending` (approved, rejected, expired or cancelled) and the gate is about to
    /// answer.
    fn on_resolved(&self, ctx: &HookContext, record: &ConfirmationRecord);
}

/// What the gate talks to.
#[derive(Clone)]
pub struct GateDeps {
    pub store: Arc<dyn ConfirmationStore>,
    pub directory: Arc<dyn ApproverDirectory>,
    /// The process's hub, shared with the decision routes.
    pub hub: Arc<ConfirmationHub>,
    /// Where cards go; `None` counts as a delivery failure (see [`DeliveryMode`]).
    pub channel: Option<Arc<dyn ApprovalChannel>>,
    pub events: Option<Arc<dyn ConfirmationEvents>>,
}

impl std::fmt::Debug for GateDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateDeps")
            .field("hub", &self.hub)
            .field("channel", &self.channel.as_ref().map(|c| c.kind().to_owned()))
            .field("events", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

/// `confirmation_gate` (Pre, priority `i32::MAX`).
///
/// Triggers when metadata `requires_confirmation` is `true` or the config's
/// `require_confirmation_for_all`. For a call (needs metadata `run_id`, `tool_call_id`, `org_id`):
/// 1. re-attaches to the request of (`run_id`, `tool_call_id`) if one exists (a restarted run):
///    a final one answers at once, a pending one is waited on; its card is posted only if the
///    row has no `message_id` yet. A request whose `args_sha256` differs from these arguments
///    blocks;
/// 2. otherwise INSERTs a pending request (`expires_at` = now + timeout), *then* posts the card
///    and stores its message id. Delivery failure: mode `auto` keeps waiting (API approval);
///    `channel_only` CAS-es the row to `cancelled` and blocks;
/// 3. waits through the [`ConfirmationHub`] until a decision or the deadline;
/// 4. approved ⇒ allow if the arguments hash to the row's `args_sha256`; rejected ⇒ block
///    [`REJECTED_TEXT`] (`: <reason>`); deadline ⇒ CAS `pending → expired`, patch the card, block
///    `timed out after <N>s waiting for approval`. If a decision wins the race against that CAS,
///    the decision is honoured (row and verdict agree).
///
/// Fails closed: any store error blocks the call with `confirmation_gate: …; the tool did not
/// run`. The hook's own timeout is the gate timeout plus 60 s, so the registry never cuts a wait
/// short.
pub struct ConfirmationGateHook {
    deps: GateDeps,
    config: GateConfig,
}

impl std::fmt::Debug for ConfirmationGateHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfirmationGateHook").field("deps", &self.deps).field("config", &self.config).finish()
    }
}

impl ConfirmationGateHook {
    pub fn new(deps: GateDeps, config: GateConfig) -> Self {
        ConfirmationGateHook { deps, config }
    }

    fn timeout_text(&self) -> String {
        format!("timed out after {}s waiting for approval", self.config.timeout.as_secs())
    }

    async fn run(&self, ctx: &HookContext) -> HookResult {
        let (Some(run_id), Some(tool_call_id), Some(org_id)) =
            (ctx.meta_str(meta::RUN_ID), ctx.meta_str(meta::TOOL_CALL_ID), ctx.meta_str(meta::ORG_ID))
        else {
            return fail_closed("the call has no run_id, tool_call_id or org_id to attach a confirmation request to");
        };
        let args_hash = args_sha256(&ctx.tool_args);
        let store = &*self.deps.store;

        let existing = match store.find_by_call(run_id, tool_call_id).await {
            Ok(existing) => existing,
            Err(e) => return fail_closed(format!("cannot read confirmation requests: {e}")),
        };
        let mut side_effects = Vec::new();
        let record = match existing {
            Some(record) => {
                side_effects.push(format!("confirmation_gate: re-attached to request {}", record.id));
                record
            }
            None => {
                let new = NewConfirmation {
                    id: uuid::Uuid::new_v4().to_string(),
                    run_id: run_id.to_owned(),
                    tool_call_id: tool_call_id.to_owned(),
                    agent_id: ctx.agent_id.clone(),
                    user_id: ctx.user_id.clone(),
                    org_id: org_id.to_owned(),
                    channel_id: self.config.channel_id.clone(),
                    tool_name: ctx.tool_name.clone(),
                    tool_args: ctx.tool_args.clone(),
                    args_sha256: args_hash.clone(),
                    mode: self.config.mode,
                    approver_scope: self.config.approver_scope,
                    expires_at: Utc::now()
                        + chrono::Duration::from_std(self.config.timeout).unwrap_or(chrono::Duration::MAX),
                };
                match store.insert_pending(&new).await {
                    Ok(record) => {
                        side_effects.push(format!("confirmation_gate: created request {}", record.id));
                        record
                    }
                    Err(e) => return fail_closed(format!("cannot record the confirmation request: {e}")),
                }
            }
        };
        if record.args_sha256 != args_hash {
            return with_effects(
                HookResult::block(format!(
                    "confirmation_gate: the arguments differ from those of confirmation request {}; the tool did not run",
                    record.id
                )),
                side_effects,
            );
        }
        if record.status.is_final() {
            return with_effects(self.verdict(ctx, &record, &args_hash), side_effects);
        }

        // Registering before the card goes out means no same-process decision can be missed.
        let mut waiter = self.deps.hub.register(&record.id, self.config.poll_interval);
        let card = self.card(ctx, &record).await;
        let mut message_id = record.message_id.clone();
        if message_id.is_none() {
            let sent = match &self.deps.channel {
                Some(channel) => channel.send_approval(&card).await.map_err(|e| e.to_string()),
                None => Err("no approval channel is configured".to_owned()),
            };
            match sent {
                Ok(id) => {
                    if let Err(e) = store.set_message_id(&record.id, &id).await {
                        self.cancel(&record, Some(&id), &card, "the card's message id could not be stored").await;
                        return fail_closed(format!("cannot store the approval card's message id: {e}"));
                    }
                    side_effects.push(format!("confirmation_gate: card {id} posted for request {}", record.id));
                    message_id = Some(id);
                }
                Err(why) => match record.mode {
                    DeliveryMode::Auto => side_effects.push(format!(
                        "confirmation_gate: card delivery failed ({why}); request {} awaits API approval",
                        record.id
                    )),
                    DeliveryMode::ChannelOnly => {
                        let reason = format!("the approval card could not be delivered: {why}");
                        self.cancel(&record, None, &card, &reason).await;
                        return with_effects(
                            HookResult::block(format!(
                                "confirmation_gate: {reason}; the confirmation request was cancelled and the tool did not run"
                            )),
                            side_effects,
                        );
                    }
                },
            }
        }
        if let Some(events) = &self.deps.events {
            events.on_awaiting(ctx, &record);
        }

        let remaining = (record.expires_at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        let deadline = tokio::time::Instant::now() + remaining;
        // One read after registering catches decisions that landed before the waiter existed
        // (re-attach, or a decision on another replica).
        let mut check_now = true;
        loop {
            let woken = if check_now {
                check_now = false;
                true
            } else {
                waiter.wait_until(deadline).await.is_some()
            };
            if woken {
                match store.get(&record.id).await {
                    Ok(Some(current)) if current.status.is_final() => {
                        return with_effects(self.resolved(ctx, &current, &args_hash), side_effects);
                    }
                    Ok(Some(_)) => waiter.reset(),
                    Ok(None) => return fail_closed(format!("confirmation request {} disappeared", record.id)),
                    Err(e) => {
                        tracing::warn!(error = %e, confirmation_id = %record.id, "cannot read confirmation request");
                        waiter.reset();
                    }
                }
                continue;
            }
            // Deadline: the final check is a CAS, so a decision that lands meanwhile wins
            // consistently.
            let now = Utc::now();
            let update = DecisionUpdate {
                status: ConfirmationStatus::Expired,
                responded_by_open_id: None,
                responded_by_user_id: None,
                reason: None,
                at: now,
            };
            return match store.decide(&record.id, &update).await {
                Ok(DecideOutcome::Decided(expired)) => {
                    self.patch(message_id.as_deref(), &card, &CardState::Expired { at: now }).await;
                    if let Some(events) = &self.deps.events {
                        events.on_resolved(ctx, &expired);
                    }
                    side_effects.push(format!("confirmation_gate: request {} expired", record.id));
                    with_effects(HookResult::block(self.timeout_text()), side_effects)
                }
                Ok(DecideOutcome::AlreadyDecided(_)) => match store.get(&record.id).await {
                    Ok(Some(current)) if current.status.is_final() => {
                        with_effects(self.resolved(ctx, &current, &args_hash), side_effects)
                    }
                    Ok(_) => fail_closed(format!("confirmation request {} is in an inconsistent state", record.id)),
                    Err(e) => fail_closed(format!("cannot read the confirmation request: {e}")),
                },
                Ok(DecideOutcome::NotFound) => fail_closed(format!("confirmation request {} disappeared", record.id)),
                Err(e) => fail_closed(format!("cannot expire the confirmation request: {e}")),
            };
        }
    }

    /// The verdict for a request that left `pending` while this call waited.
    fn resolved(&self, ctx: &HookContext, record: &ConfirmationRecord, args_hash: &str) -> HookResult {
        if let Some(events) = &self.deps.events {
            events.on_resolved(ctx, record);
        }
        self.verdict(ctx, record, args_hash)
    }

    fn verdict(&self, _ctx: &HookContext, record: &ConfirmationRecord, args_hash: &str) -> HookResult {
        let decided_by = record.responded_by_user_id.as_deref().unwrap_or("unknown");
        match record.status {
            ConfirmationStatus::Approved => {
                if record.args_sha256 != args_hash || args_sha256(&record.tool_args) != args_hash {
                    return HookResult::block(format!(
                        "confirmation_gate: the approved arguments of request {} do not match this call; the tool did not run",
                        record.id
                    ));
                }
                let mut result = HookResult::allow();
                result.side_effects.push(format!("confirmation_gate: request {} approved by {decided_by}", record.id));
                result
            }
            ConfirmationStatus::Rejected => {
                let text = match record.reason.as_deref().filter(|r| !r.trim().is_empty()) {
                    Some(reason) => format!("{REJECTED_TEXT}: {reason}"),
                    None => REJECTED_TEXT.to_owned(),
                };
                let mut result = HookResult::block(text);
                result.side_effects.push(format!("confirmation_gate: request {} rejected by {decided_by}", record.id));
                result
            }
            ConfirmationStatus::Expired => HookResult::block(self.timeout_text()),
            ConfirmationStatus::Cancelled => HookResult::block(format!(
                "confirmation_gate: the confirmation request was cancelled{}; the tool did not run",
                record.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
            )),
            ConfirmationStatus::Pending => fail_closed("the confirmation request is still pending"),
        }
    }

    async fn card(&self, ctx: &HookContext, record: &ConfirmationRecord) -> ApprovalCard {
        let agent_name = ctx
            .meta_str(META_AGENT_NAME)
            .map(str::to_owned)
            .or_else(|| self.config.agent_name.clone())
            .or_else(|| ctx.agent_id.clone())
            .unwrap_or_else(|| "agent".to_owned());
        let requester = match (ctx.meta_str(META_USER_NAME), &ctx.user_id) {
            (Some(name), _) => name.to_owned(),
            (None, Some(user_id)) => match self.deps.directory.user(user_id).await {
                Ok(Some(user)) => user.name,
                _ => user_id.clone(),
            },
            (None, None) => "unknown user".to_owned(),
        };
        ApprovalCard {
            confirmation_id: record.id.clone(),
            agent_name,
            requester,
            tool_name: record.tool_name.clone(),
            tool_args: record.tool_args.clone(),
            expires_at: record.expires_at,
        }
    }

    /// CAS `pending → cancelled` with `reason` and patch the card; best effort (the call is
    /// blocked either way).
    async fn cancel(&self, record: &ConfirmationRecord, message_id: Option<&str>, card: &ApprovalCard, reason: &str) {
        let now = Utc::now();
        let update = DecisionUpdate {
            status: ConfirmationStatus::Cancelled,
            responded_by_open_id: None,
            responded_by_user_id: None,
            reason: Some(reason.to_owned()),
            at: now,
        };
        match self.deps.store.decide(&record.id, &update).await {
            Ok(DecideOutcome::Decided(_)) => {
                self.patch(message_id, card, &CardState::Cancelled { at: now, reason: reason.to_owned() }).await;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, confirmation_id = %record.id, "cannot cancel confirmation request"),
        }
    }

    async fn patch(&self, message_id: Option<&str>, card: &ApprovalCard, state: &CardState) {
        if let (Some(channel), Some(message_id)) = (&self.deps.channel, message_id)
            && let Err(e) = channel.update_approval(message_id, card, state).await
        {
            tracing::warn!(error = %e, confirmation_id = %card.confirmation_id, "approval card update failed");
        }
    }
}

fn fail_closed(why: impl std::fmt::Display) -> HookResult {
    HookResult::block(format!("confirmation_gate: {why}; the tool did not run"))
}

fn with_effects(mut result: HookResult, mut side_effects: Vec<String>) -> HookResult {
    side_effects.append(&mut result.side_effects);
    result.side_effects = side_effects;
    result
}

#[async_trait::async_trait]
impl PreToolUseHook for ConfirmationGateHook {
    fn name(&self) -> &str {
        crate::CONFIRMATION_GATE
    }

    fn priority(&self) -> i32 {
        i32::MAX
    }

    fn should_trigger(&self, ctx: &HookContext) -> bool {
        self.config.require_confirmation_for_all
            || ctx.metadata.get(meta::REQUIRES_CONFIRMATION).and_then(Value::as_bool) == Some(true)
    }

    fn timeout(&self) -> Duration {
        self.config.timeout.saturating_add(Duration::from_secs(60))
    }

    fn failure_policy(&self) -> FailurePolicy {
        FailurePolicy::Closed
    }

    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        Ok(self.run(ctx).await)
    }
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
