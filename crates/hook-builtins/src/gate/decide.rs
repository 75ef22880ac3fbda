use channel_core::{ApprovalCard, ApprovalChannel, CardState, Decision};
use chrono::Utc;

use crate::ports::{
    ApprovalNotifier, Approver, ApproverDirectory, ApproverScope, ConfirmationRecord, ConfirmationStatus,
    ConfirmationStore, DecideOutcome, DecisionUpdate, PortError,
};

/// What [`decide`] needs. Borrowed, so a route can build it from its state per request.
#[derive(Clone, Copy)]
pub struct DecideDeps<'a> {
    pub store: &'a dyn ConfirmationStore,
    pub directory: &'a dyn ApproverDirectory,
    /// Usually the process's [`ConfirmationHub`](crate::ConfirmationHub).
    pub notifier: &'a dyn ApprovalNotifier,
    /// The channel whose card is patched to the final state (when the row has a `message_id`).
    pub channel: Option<&'a dyn ApprovalChannel>,
}

impl std::fmt::Debug for DecideDeps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecideDeps").field("channel", &self.channel.map(|c| c.kind())).finish_non_exhaustive()
    }
}

/// Who is deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// An operator who clicked a channel card, identified by the channel's user id (Feishu
    /// `open_id`), mapped to a user of the request's org through
    /// [`ApproverDirectory::user_by_open_id`].
    ChannelOperator { open_id: String },
    /// An authenticated API user (`POST /confirmations/{id}/decision`).
    User { user_id: String },
}

/// One decision to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRequest {
    pub confirmation_id: String,
    pub decision: Decision,
    pub actor: Actor,
    /// The operator's reason (shown to the model on reject).
    pub reason: Option<String>,
}

/// Why a decision was refused. Nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForbiddenReason {
    /// The channel operator maps to no user of the request's org.
    UnknownOperator,
    /// The API user does not exist.
    UnknownUser,
    /// The API user belongs to another org (the server may answer 404 to hide the request).
    OtherOrg,
    /// The user is in the org but outside the request's approver scope.
    OutOfScope(ApproverScope),
}

/// The answer of [`decide`].
#[derive(Debug, Clone, PartialEq)]
// A decision is rare and its outcome short-lived: boxing the record would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum DecisionOutcome {
    /// This decision won the CAS: the row as it is now.
    Decided(ConfirmationRecord),
    /// The row had already left `pending` (first decision wins; a click after the deadline finds
    /// `Expired`).
    AlreadyDecided(ConfirmationStatus),
    NotFound,
    Forbidden(ForbiddenReason),
}

/// A failure of [`decide`]: the store could not be read or written. Nothing is known to have
/// changed.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("confirmation store: {0}")]
    Store(#[from] PortError),
}

/// Applies an operator's decision — the one state machine shared by the channel callback route
/// and the decision API (DESIGN §3 steps 6–7).
///
/// 1. Loads the row (`NotFound`); a row that left `pending` answers `AlreadyDecided(status)`.
/// 2. Maps the actor to a user of the row's org and checks the row's approver scope
///    (`initiator`: the run's user; `agent_owner`: [`ApproverDirectory::agent_owner`];
///    `org_admins`: role `admin`; `org_members`: anyone in the org). Failures answer `Forbidden`
///    and change nothing.
/// 3. A row past `expires_at` is CAS-ed to `expired` (its card patched) and answers
///    `AlreadyDecided(Expired)`: a late click changes nothing.
/// 4. Otherwise one CAS `pending → approved|rejected` recording `responded_at`,
///    `responded_by_open_id`, `responded_by_user_id` and the reason. The winner notifies
///    `deps.notifier` (waking the gate on this process) and patches the card to its final state;
///    a card patch failure is logged, not returned (the decision stands).
pub async fn decide(deps: DecideDeps<'_>, request: &DecisionRequest) -> Result<DecisionOutcome, DecideError> {
    let Some(record) = deps.store.get(&request.confirmation_id).await? else {
        return Ok(DecisionOutcome::NotFound);
    };
    if record.status.is_final() {
        return Ok(DecisionOutcome::AlreadyDecided(record.status));
    }
    let (approver, open_id) = match &request.actor {
        Actor::ChannelOperator { open_id } => match deps.directory.user_by_open_id(&record.org_id, open_id).await? {
            Some(approver) if approver.org_id == record.org_id => (approver, Some(open_id.clone())),
            _ => return Ok(DecisionOutcome::Forbidden(ForbiddenReason::UnknownOperator)),
        },
        Actor::User { user_id } => match deps.directory.user(user_id).await? {
            None => return Ok(DecisionOutcome::Forbidden(ForbiddenReason::UnknownUser)),
            Some(approver) if approver.org_id != record.org_id => {
                return Ok(DecisionOutcome::Forbidden(ForbiddenReason::OtherOrg));
            }
            Some(approver) => (approver, None),
        },
    };
    if !in_scope(deps.directory, &record, &approver).await? {
        return Ok(DecisionOutcome::Forbidden(ForbiddenReason::OutOfScope(record.approver_scope)));
    }

    let now = Utc::now();
    if now >= record.expires_at {
        let update = DecisionUpdate {
            status: ConfirmationStatus::Expired,
            responded_by_open_id: None,
            responded_by_user_id: None,
            reason: None,
            at: now,
        };
        return Ok(match deps.store.decide(&record.id, &update).await? {
            DecideOutcome::Decided(expired) => {
                deps.notifier.notify_decided(&expired.id);
                patch_card(deps, &expired, &CardState::Expired { at: now }).await;
                DecisionOutcome::AlreadyDecided(ConfirmationStatus::Expired)
            }
            DecideOutcome::AlreadyDecided(status) => DecisionOutcome::AlreadyDecided(status),
            DecideOutcome::NotFound => DecisionOutcome::NotFound,
        });
    }

    let status = match request.decision {
        Decision::Approve => ConfirmationStatus::Approved,
        Decision::Reject => ConfirmationStatus::Rejected,
    };
    let update = DecisionUpdate {
        status,
        responded_by_open_id: open_id,
        responded_by_user_id: Some(approver.user_id.clone()),
        reason: request.reason.clone(),
        at: now,
    };
    Ok(match deps.store.decide(&record.id, &update).await? {
        DecideOutcome::Decided(decided) => {
            deps.notifier.notify_decided(&decided.id);
            let state = match request.decision {
                Decision::Approve => CardState::Approved { decided_by: approver.name.clone(), decided_at: now },
                Decision::Reject => CardState::Rejected {
                    decided_by: approver.name.clone(),
                    decided_at: now,
                    reason: request.reason.clone(),
                },
            };
            patch_card(deps, &decided, &state).await;
            DecisionOutcome::Decided(decided)
        }
        DecideOutcome::AlreadyDecided(status) => DecisionOutcome::AlreadyDecided(status),
        DecideOutcome::NotFound => DecisionOutcome::NotFound,
    })
}

async fn in_scope(
    directory: &dyn ApproverDirectory,
    record: &ConfirmationRecord,
    approver: &Approver,
) -> Result<bool, PortError> {
    Ok(match record.approver_scope {
        ApproverScope::Initiator => record.user_id.as_deref() == Some(approver.user_id.as_str()),
        ApproverScope::AgentOwner => match &record.agent_id {
            Some(agent_id) => directory.agent_owner(agent_id).await?.as_deref() == Some(approver.user_id.as_str()),
            None => false,
        },
        ApproverScope::OrgAdmins => approver.role == "admin",
        ApproverScope::OrgMembers => true,
    })
}

/// Patches the row's card, when it has one, logging failures.
async fn patch_card(deps: DecideDeps<'_>, record: &ConfirmationRecord, state: &CardState) {
    let (Some(channel), Some(message_id)) = (deps.channel, record.message_id.as_deref()) else {
        return;
    };
    let card = card_for_record(deps.directory, record).await;
    if let Err(e) = channel.update_approval(message_id, &card, state).await {
        tracing::warn!(error = %e, confirmation_id = %record.id, "approval card update failed");
    }
}

/// Rebuilds the card of a stored request (names through the directory, falling back to ids).
pub async fn card_for_record(directory: &dyn ApproverDirectory, record: &ConfirmationRecord) -> ApprovalCard {
    let agent_name = match &record.agent_id {
        Some(agent_id) => directory.agent_name(agent_id).await.ok().flatten().unwrap_or_else(|| agent_id.clone()),
        None => "agent".to_owned(),
    };
    let requester = match &record.user_id {
        Some(user_id) => {
            directory.user(user_id).await.ok().flatten().map(|u| u.name).unwrap_or_else(|| user_id.clone())
        }
        None => "unknown user".to_owned(),
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
