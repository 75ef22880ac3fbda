//! `confirmation_requests`: the rows behind the confirmation gate. The decision is one
//! conditional UPDATE (`… WHERE id = ? AND status = 'pending'`), so the first decision wins on
//! every backend and across processes.

use chrono::{DateTime, Utc};
use hook_builtins::ports::{
    ApproverScope, ConfirmationRecord, ConfirmationStatus, DecideOutcome, DecisionUpdate, DeliveryMode, NewConfirmation,
};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::entities::confirmation_requests as cr;
use crate::error::corrupt;
use crate::{Store, StoreError, now};

/// `confirmation_requests.payload`.
#[derive(Serialize, Deserialize)]
struct Payload {
    tool_name: String,
    tool_args: Value,
    args_sha256: String,
}

impl Store {
    /// The request for (`run_id`, `tool_call_id`), if one exists.
    pub async fn find_confirmation_by_call(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<ConfirmationRecord>, StoreError> {
        cr::Entity::find()
            .filter(cr::Column::RunId.eq(run_id))
            .filter(cr::Column::ToolCallId.eq(tool_call_id))
            .one(&self.db)
            .await?
            .map(record_from)
            .transpose()
    }

    /// Inserts a pending request; when (`run_id`, `tool_call_id`) already has one, returns it
    /// unchanged instead.
    pub async fn insert_pending_confirmation(&self, new: &NewConfirmation) -> Result<ConfirmationRecord, StoreError> {
        let payload = serde_json::to_string(&Payload {
            tool_name: new.tool_name.clone(),
            tool_args: new.tool_args.clone(),
            args_sha256: new.args_sha256.clone(),
        })
        .map_err(|err| StoreError::Database(err.to_string()))?;
        let at = now();
        cr::Entity::insert(cr::ActiveModel {
            id: Set(new.id.clone()),
            status: Set(ConfirmationStatus::Pending.as_str().to_owned()),
            payload: Set(payload),
            run_id: Set(new.run_id.clone()),
            tool_call_id: Set(new.tool_call_id.clone()),
            agent_id: Set(new.agent_id.clone()),
            user_id: Set(new.user_id.clone()),
            org_id: Set(new.org_id.clone()),
            channel_id: Set(new.channel_id.clone()),
            mode: Set(new.mode.as_str().to_owned()),
            approver_scope: Set(new.approver_scope.as_str().to_owned()),
            message_id: Set(None),
            expires_at: Set(new.expires_at),
            responded_at: Set(None),
            responded_by_open_id: Set(None),
            responded_by_user_id: Set(None),
            reason: Set(None),
            created_at: Set(at),
            updated_at: Set(at),
        })
        .on_conflict(OnConflict::columns([cr::Column::RunId, cr::Column::ToolCallId]).do_nothing().to_owned())
        .try_insert()
        .exec_without_returning(&self.db)
        .await?;
        self.find_confirmation_by_call(&new.run_id, &new.tool_call_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("confirmation for {}/{}", new.run_id, new.tool_call_id)))
    }

    /// Stores the channel's message id (the card) on the request.
    ///
    /// Errors: [`StoreError::NotFound`] for an unknown request.
    pub async fn set_confirmation_message_id(&self, id: &str, message_id: &str) -> Result<(), StoreError> {
        let result = cr::Entity::update_many()
            .col_expr(cr::Column::MessageId, Expr::value(message_id))
            .col_expr(cr::Column::UpdatedAt, Expr::value(now()))
            .filter(cr::Column::Id.eq(id))
            .exec(&self.db)
            .await?;
        if result.rows_affected == 0 {
            return Err(StoreError::NotFound(format!("confirmation {id}")));
        }
        Ok(())
    }

    /// The request `id`, in any org.
    pub async fn get_confirmation(&self, id: &str) -> Result<Option<ConfirmationRecord>, StoreError> {
        cr::Entity::find_by_id(id.to_owned()).one(&self.db).await?.map(record_from).transpose()
    }

    /// The request `id` if it belongs to `org_id` (`None` otherwise, so other orgs' ids look
    /// unknown).
    pub async fn get_confirmation_in_org(
        &self,
        org_id: &str,
        id: &str,
    ) -> Result<Option<ConfirmationRecord>, StoreError> {
        cr::Entity::find_by_id(id.to_owned())
            .filter(cr::Column::OrgId.eq(org_id))
            .one(&self.db)
            .await?
            .map(record_from)
            .transpose()
    }

    /// The requests of an org, optionally only those in `status`, newest first.
    pub async fn list_confirmations(
        &self,
        org_id: &str,
        status: Option<ConfirmationStatus>,
    ) -> Result<Vec<ConfirmationRecord>, StoreError> {
        let mut query = cr::Entity::find().filter(cr::Column::OrgId.eq(org_id));
        if let Some(status) = status {
            query = query.filter(cr::Column::Status.eq(status.as_str()));
        }
        query
            .order_by_desc(cr::Column::CreatedAt)
            .order_by_desc(cr::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(record_from)
            .collect()
    }

    /// How many requests are pending, across all orgs (a gauge for metrics).
    pub async fn count_pending_confirmations(&self) -> Result<u64, StoreError> {
        Ok(cr::Entity::find()
            .filter(cr::Column::Status.eq(ConfirmationStatus::Pending.as_str()))
            .count(&self.db)
            .await?)
    }

    /// Pending requests whose `expires_at` is at or before `at` (for a sweeper after restarts).
    pub async fn list_expired_pending_confirmations(
        &self,
        at: DateTime<Utc>,
    ) -> Result<Vec<ConfirmationRecord>, StoreError> {
        cr::Entity::find()
            .filter(cr::Column::Status.eq(ConfirmationStatus::Pending.as_str()))
            .filter(cr::Column::ExpiresAt.lte(at))
            .order_by_asc(cr::Column::ExpiresAt)
            .all(&self.db)
            .await?
            .into_iter()
            .map(record_from)
            .collect()
    }

    /// The current status of each of `ids` that exists, in one query.
    pub async fn confirmation_statuses(&self, ids: &[String]) -> Result<Vec<(String, ConfirmationStatus)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        cr::Entity::find()
            .filter(cr::Column::Id.is_in(ids.iter().cloned()))
            .all(&self.db)
            .await?
            .into_iter()
            .map(|m| {
                let status = ConfirmationStatus::parse(&m.status)
                    .ok_or_else(|| corrupt("confirmation_requests.status", &m.status))?;
                Ok((m.id, status))
            })
            .collect()
    }

    /// Moves a pending request to `update.status` with one conditional UPDATE
    /// (`… WHERE id = ? AND status = 'pending'`): exactly one concurrent caller gets `Decided`.
    ///
    /// Errors: [`StoreError::Config`] when `update.status` is `Pending`.
    pub async fn decide_confirmation(&self, id: &str, update: &DecisionUpdate) -> Result<DecideOutcome, StoreError> {
        if update.status == ConfirmationStatus::Pending {
            return Err(StoreError::Config("a decision cannot move a request to pending".to_owned()));
        }
        let result = cr::Entity::update_many()
            .col_expr(cr::Column::Status, Expr::value(update.status.as_str()))
            .col_expr(cr::Column::RespondedAt, Expr::value(update.at))
            .col_expr(cr::Column::RespondedByOpenId, Expr::value(update.responded_by_open_id.clone()))
            .col_expr(cr::Column::RespondedByUserId, Expr::value(update.responded_by_user_id.clone()))
            .col_expr(cr::Column::Reason, Expr::value(update.reason.clone()))
            .col_expr(cr::Column::UpdatedAt, Expr::value(now()))
            .filter(cr::Column::Id.eq(id))
            .filter(cr::Column::Status.eq(ConfirmationStatus::Pending.as_str()))
            .exec(&self.db)
            .await?;
        if result.rows_affected > 0 {
            self.notify_decided(id).await;
        }
        // A row never returns to pending, so what we read next is final either way.
        let current = self.get_confirmation(id).await?;
        Ok(match (result.rows_affected, current) {
            (_, None) => DecideOutcome::NotFound,
            (0, Some(row)) => DecideOutcome::AlreadyDecided(row.status),
            (_, Some(row)) => DecideOutcome::Decided(row),
        })
    }

    /// PostgreSQL: tells every replica listening ([`Store::decision_listener`]) that request `id`
    /// left `pending`, so a waiter elsewhere wakes at once instead of at its next poll. A failure is
    /// logged: the shared poll still sees the decision.
    async fn notify_decided(&self, id: &str) {
        if self.backend != crate::Backend::Postgres {
            return;
        }
        let statement = sea_orm::Statement::from_sql_and_values(
            sea_orm::DbBackend::Postgres,
            "SELECT pg_notify($1, $2)",
            [DECISIONS_CHANNEL.into(), id.into()],
        );
        if let Err(e) = sea_orm::ConnectionTrait::execute_raw(&self.db, statement).await {
            tracing::warn!(confirmation_id = id, "cannot notify other replicas of the decision: {e}");
        }
    }

    /// PostgreSQL: a listener of decisions made by any replica (`None` on SQLite, where one process
    /// owns the database).
    ///
    /// Errors: [`StoreError::Database`] when the listening connection cannot be opened.
    pub async fn decision_listener(&self) -> Result<Option<DecisionListener>, StoreError> {
        if self.backend != crate::Backend::Postgres {
            return Ok(None);
        }
        let pool = self.db.get_postgres_connection_pool();
        let mut listener = sea_orm::sqlx::postgres::PgListener::connect_with(pool)
            .await
            .map_err(|e| StoreError::Database(crate::error::one_line(&e.to_string())))?;
        listener
            .listen(DECISIONS_CHANNEL)
            .await
            .map_err(|e| StoreError::Database(crate::error::one_line(&e.to_string())))?;
        Ok(Some(DecisionListener { listener }))
    }

    /// Cancels a pending request (e.g. the card could not be delivered in `channel_only` mode,
    /// or the run was cancelled). Same CAS as [`Store::decide_confirmation`].
    pub async fn cancel_confirmation(&self, id: &str, reason: Option<&str>) -> Result<DecideOutcome, StoreError> {
        self.decide_confirmation(
            id,
            &DecisionUpdate {
                status: ConfirmationStatus::Cancelled,
                responded_by_open_id: None,
                responded_by_user_id: None,
                reason: reason.map(str::to_owned),
                at: now(),
            },
        )
        .await
    }
}

/// The PostgreSQL NOTIFY channel of confirmation decisions; the payload is the request's id.
pub const DECISIONS_CHANNEL: &str = "tollgate_confirmation_decided";

/// Decisions made by any replica, as PostgreSQL notifications (see [`Store::decision_listener`]).
pub struct DecisionListener {
    listener: sea_orm::sqlx::postgres::PgListener,
}

impl std::fmt::Debug for DecisionListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionListener").finish_non_exhaustive()
    }
}

impl DecisionListener {
    /// The id of the next request decided anywhere. The listener reconnects by itself after a
    /// lost connection (notifications sent meanwhile are missed; the shared poll covers them).
    ///
    /// Errors: [`StoreError::Database`] when the connection fails.
    pub async fn next(&mut self) -> Result<String, StoreError> {
        let notification =
            self.listener.recv().await.map_err(|e| StoreError::Database(crate::error::one_line(&e.to_string())))?;
        Ok(notification.payload().to_owned())
    }
}

fn record_from(m: cr::Model) -> Result<ConfirmationRecord, StoreError> {
    let payload: Payload =
        serde_json::from_str(&m.payload).map_err(|err| corrupt("confirmation_requests.payload", err))?;
    Ok(ConfirmationRecord {
        status: ConfirmationStatus::parse(&m.status)
            .ok_or_else(|| corrupt("confirmation_requests.status", &m.status))?,
        mode: DeliveryMode::parse(&m.mode).ok_or_else(|| corrupt("confirmation_requests.mode", &m.mode))?,
        approver_scope: ApproverScope::parse(&m.approver_scope)
            .ok_or_else(|| corrupt("confirmation_requests.approver_scope", &m.approver_scope))?,
        tool_name: payload.tool_name,
        tool_args: payload.tool_args,
        args_sha256: payload.args_sha256,
        id: m.id,
        run_id: m.run_id,
        tool_call_id: m.tool_call_id,
        agent_id: m.agent_id,
        user_id: m.user_id,
        org_id: m.org_id,
        channel_id: m.channel_id,
        message_id: m.message_id,
        expires_at: m.expires_at,
        responded_at: m.responded_at,
        responded_by_open_id: m.responded_by_open_id,
        responded_by_user_id: m.responded_by_user_id,
        reason: m.reason,
        created_at: m.created_at,
        updated_at: m.updated_at,
    })
}
