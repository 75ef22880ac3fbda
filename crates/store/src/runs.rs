//! Runs, run events and tool executions.

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, TryInsertResult};

use crate::connectors::parse_json;
use crate::entities::{run_events, runs, tool_executions};
use crate::error::corrupt;
use crate::model::{
    NewRun, NewToolExecution, Run, RunEvent, RunStatus, RunUpdate, ToolExecution, ToolExecutionFinish,
    ToolExecutionStatus,
};
use crate::{Store, StoreError, new_id, now};

impl Store {
    /// Creates a run.
    ///
    /// Errors: [`StoreError::Conflict`] when `new.id` is taken.
    pub async fn create_run(&self, new: &NewRun) -> Result<Run, StoreError> {
        let at = now();
        let run = Run {
            id: new.id.clone().unwrap_or_else(new_id),
            agent_id: new.agent_id.clone(),
            org_id: new.org_id.clone(),
            user_id: new.user_id.clone(),
            conversation_id: new.conversation_id.clone(),
            parent_run_id: new.parent_run_id.clone(),
            surface: new.surface.clone(),
            status: new.status,
            input: new.input.clone(),
            answer: None,
            error: None,
            created_at: at,
            updated_at: at,
        };
        runs::Entity::insert(runs::ActiveModel {
            id: Set(run.id.clone()),
            agent_id: Set(run.agent_id.clone()),
            org_id: Set(run.org_id.clone()),
            user_id: Set(run.user_id.clone()),
            conversation_id: Set(run.conversation_id.clone()),
            parent_run_id: Set(run.parent_run_id.clone()),
            surface: Set(run.surface.clone()),
            status: Set(run.status.as_str().to_owned()),
            input: Set(run.input.clone()),
            owner: Set(new.owner.clone()),
            lease_until: Set(new.lease_until),
            answer: Set(None),
            error: Set(None),
            created_at: Set(at),
            updated_at: Set(at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(run)
    }

    /// The run `id`, if it exists.
    pub async fn get_run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        runs::Entity::find_by_id(id.to_owned()).one(&self.db).await?.map(run_from).transpose()
    }

    /// Sets the run's status (and answer / error when given) and `updated_at`.
    ///
    /// Errors: [`StoreError::NotFound`] for an unknown run.
    pub async fn update_run(&self, id: &str, update: &RunUpdate) -> Result<Run, StoreError> {
        let result = run_update(update).filter(runs::Column::Id.eq(id)).exec(&self.db).await?;
        if result.rows_affected == 0 {
            return Err(StoreError::NotFound(format!("run {id}")));
        }
        self.get_run(id).await?.ok_or_else(|| StoreError::NotFound(format!("run {id}")))
    }

    /// Like [`Store::update_run`], but only while the run is `running` or
    /// `awaiting_confirmation`: a run that ended (completed, failed, cancelled) keeps its final
    /// status. Returns whether the run was updated.
    pub async fn update_active_run(&self, id: &str, update: &RunUpdate) -> Result<bool, StoreError> {
        let active = [RunStatus::Running.as_str(), RunStatus::AwaitingConfirmation.as_str()];
        let result = run_update(update)
            .filter(runs::Column::Id.eq(id))
            .filter(runs::Column::Status.is_in(active))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected > 0)
    }

    /// Takes over an active run whose lease expired (or that never had one), for `owner` (a
    /// process id) until `lease_until`. A run `owner` already holds is not taken again (a process
    /// never resumes its own runs). One conditional UPDATE, so two processes never both take it.
    pub async fn claim_run(
        &self,
        id: &str,
        owner: &str,
        lease_until: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, StoreError> {
        let result = runs::Entity::update_many()
            .col_expr(runs::Column::Owner, Expr::value(owner))
            .col_expr(runs::Column::LeaseUntil, Expr::value(lease_until))
            .filter(runs::Column::Id.eq(id))
            .filter(claimable_by(owner))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected > 0)
    }

    /// The active runs `owner` could take over now ([`Store::claim_run`]'s condition), oldest
    /// first: in steady state none, so a process's takeover scan costs one query.
    pub async fn list_claimable_runs(&self, owner: &str) -> Result<Vec<Run>, StoreError> {
        runs::Entity::find()
            .filter(claimable_by(owner))
            .order_by_asc(runs::Column::CreatedAt)
            .order_by_asc(runs::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(run_from)
            .collect()
    }

    /// Renews the leases of every active run owned by `owner` (the heartbeat of a live process).
    pub async fn renew_run_leases(
        &self,
        owner: &str,
        lease_until: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, StoreError> {
        let active = [RunStatus::Running.as_str(), RunStatus::AwaitingConfirmation.as_str()];
        let result = runs::Entity::update_many()
            .col_expr(runs::Column::LeaseUntil, Expr::value(lease_until))
            .filter(runs::Column::Owner.eq(owner))
            .filter(runs::Column::Status.is_in(active))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected)
    }

    /// The runs in any of `statuses`, oldest first (e.g. `running` and `awaiting_confirmation`
    /// to resume after a restart).
    pub async fn list_runs_by_status(&self, statuses: &[RunStatus]) -> Result<Vec<Run>, StoreError> {
        if statuses.is_empty() {
            return Ok(Vec::new());
        }
        runs::Entity::find()
            .filter(runs::Column::Status.is_in(statuses.iter().map(|s| s.as_str())))
            .order_by_asc(runs::Column::CreatedAt)
            .order_by_asc(runs::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(run_from)
            .collect()
    }

    /// The top-level runs of a conversation, oldest first.
    pub async fn list_conversation_runs(&self, conversation_id: &str) -> Result<Vec<Run>, StoreError> {
        runs::Entity::find()
            .filter(runs::Column::ConversationId.eq(conversation_id))
            .filter(runs::Column::ParentRunId.is_null())
            .order_by_asc(runs::Column::CreatedAt)
            .order_by_asc(runs::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(run_from)
            .collect()
    }

    /// The highest `seq` of the run's events (`None` without events).
    pub async fn last_run_event_seq(&self, run_id: &str) -> Result<Option<i64>, StoreError> {
        Ok(run_events::Entity::find()
            .filter(run_events::Column::RunId.eq(run_id))
            .order_by_desc(run_events::Column::Seq)
            .one(&self.db)
            .await?
            .map(|e| e.seq))
    }

    /// Appends one event at `seq` (chosen by the run's single writer).
    ///
    /// Errors: [`StoreError::Conflict`] when the run already has an event at `seq`.
    pub async fn append_run_event(
        &self,
        run_id: &str,
        seq: i64,
        event: &str,
        data: &serde_json::Value,
    ) -> Result<RunEvent, StoreError> {
        let row =
            RunEvent { run_id: run_id.to_owned(), seq, event: event.to_owned(), data: data.clone(), created_at: now() };
        run_events::Entity::insert(run_events::ActiveModel {
            run_id: Set(row.run_id.clone()),
            seq: Set(seq),
            event: Set(row.event.clone()),
            data: Set(row.data.to_string()),
            created_at: Set(row.created_at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(row)
    }

    /// The run's events with `seq > after_seq` (all of them for `None`), in `seq` order.
    pub async fn list_run_events(&self, run_id: &str, after_seq: Option<i64>) -> Result<Vec<RunEvent>, StoreError> {
        let mut query = run_events::Entity::find().filter(run_events::Column::RunId.eq(run_id));
        if let Some(after) = after_seq {
            query = query.filter(run_events::Column::Seq.gt(after));
        }
        query
            .order_by_asc(run_events::Column::Seq)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|m| {
                Ok(RunEvent {
                    data: parse_json("run_events.data", &m.data)?,
                    run_id: m.run_id,
                    seq: m.seq,
                    event: m.event,
                    created_at: m.created_at,
                })
            })
            .collect()
    }

    /// Records a tool call as `executing`, idempotently on (`run_id`, `tool_call_id`): returns the
    /// row and whether this call inserted it (`false`: it already existed, e.g. a resumed run —
    /// do not execute the tool twice).
    pub async fn start_tool_execution(&self, new: &NewToolExecution) -> Result<(ToolExecution, bool), StoreError> {
        let inserted = tool_executions::Entity::insert(tool_executions::ActiveModel {
            run_id: Set(new.run_id.clone()),
            tool_call_id: Set(new.tool_call_id.clone()),
            tool_name: Set(new.tool_name.clone()),
            original_args: Set(new.original_args.to_string()),
            effective_args: Set(new.effective_args.as_ref().map(|v| v.to_string())),
            status: Set(ToolExecutionStatus::Executing.as_str().to_owned()),
            result: Set(None),
            started_at: Set(now()),
            finished_at: Set(None),
        })
        .on_conflict(
            OnConflict::columns([tool_executions::Column::RunId, tool_executions::Column::ToolCallId])
                .do_nothing()
                .to_owned(),
        )
        .try_insert()
        .exec_without_returning(&self.db)
        .await?;
        let inserted = matches!(inserted, TryInsertResult::Inserted(n) if n > 0);
        let row = self
            .get_tool_execution(&new.run_id, &new.tool_call_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("tool execution {}/{}", new.run_id, new.tool_call_id)))?;
        Ok((row, inserted))
    }

    /// Finishes a tool call: status, result, `finished_at` (and effective args when given).
    ///
    /// Errors: [`StoreError::NotFound`] when the call was never started.
    pub async fn finish_tool_execution(
        &self,
        run_id: &str,
        tool_call_id: &str,
        finish: &ToolExecutionFinish,
    ) -> Result<ToolExecution, StoreError> {
        let mut query = tool_executions::Entity::update_many()
            .col_expr(tool_executions::Column::Status, Expr::value(finish.status.as_str()))
            .col_expr(tool_executions::Column::Result, Expr::value(finish.result.as_ref().map(|v| v.to_string())))
            .col_expr(tool_executions::Column::FinishedAt, Expr::value(now()));
        if let Some(args) = &finish.effective_args {
            query = query.col_expr(tool_executions::Column::EffectiveArgs, Expr::value(args.to_string()));
        }
        let result = query
            .filter(tool_executions::Column::RunId.eq(run_id))
            .filter(tool_executions::Column::ToolCallId.eq(tool_call_id))
            .exec(&self.db)
            .await?;
        if result.rows_affected == 0 {
            return Err(StoreError::NotFound(format!("tool execution {run_id}/{tool_call_id}")));
        }
        self.get_tool_execution(run_id, tool_call_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("tool execution {run_id}/{tool_call_id}")))
    }

    /// The tool call (`run_id`, `tool_call_id`), if it was started.
    pub async fn get_tool_execution(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<ToolExecution>, StoreError> {
        let Some(m) =
            tool_executions::Entity::find_by_id((run_id.to_owned(), tool_call_id.to_owned())).one(&self.db).await?
        else {
            return Ok(None);
        };
        Ok(Some(ToolExecution {
            original_args: parse_json("tool_executions.original_args", &m.original_args)?,
            effective_args: m
                .effective_args
                .as_deref()
                .map(|t| parse_json("tool_executions.effective_args", t))
                .transpose()?,
            status: ToolExecutionStatus::parse(&m.status)
                .ok_or_else(|| corrupt("tool_executions.status", &m.status))?,
            result: m.result.as_deref().map(|t| parse_json("tool_executions.result", t)).transpose()?,
            run_id: m.run_id,
            tool_call_id: m.tool_call_id,
            tool_name: m.tool_name,
            started_at: m.started_at,
            finished_at: m.finished_at,
        }))
    }
}

/// An active run whose lease expired (or that never had one) and that `owner` does not hold.
fn claimable_by(owner: &str) -> sea_orm::Condition {
    let active = [RunStatus::Running.as_str(), RunStatus::AwaitingConfirmation.as_str()];
    sea_orm::Condition::all()
        .add(runs::Column::Status.is_in(active))
        .add(sea_orm::Condition::any().add(runs::Column::LeaseUntil.is_null()).add(runs::Column::LeaseUntil.lt(now())))
        .add(sea_orm::Condition::any().add(runs::Column::Owner.is_null()).add(runs::Column::Owner.ne(owner)))
}

/// The UPDATE of a [`RunUpdate`] (status, `updated_at`, and answer / error when given), without
/// its filter.
fn run_update(update: &RunUpdate) -> sea_orm::UpdateMany<runs::Entity> {
    let mut query = runs::Entity::update_many()
        .col_expr(runs::Column::Status, Expr::value(update.status.as_str()))
        .col_expr(runs::Column::UpdatedAt, Expr::value(now()));
    if let Some(answer) = &update.answer {
        query = query.col_expr(runs::Column::Answer, Expr::value(answer.clone()));
    }
    if let Some(error) = &update.error {
        query = query.col_expr(runs::Column::Error, Expr::value(error.clone()));
    }
    query
}

fn run_from(m: runs::Model) -> Result<Run, StoreError> {
    Ok(Run {
        status: RunStatus::parse(&m.status).ok_or_else(|| corrupt("runs.status", &m.status))?,
        id: m.id,
        agent_id: m.agent_id,
        org_id: m.org_id,
        user_id: m.user_id,
        conversation_id: m.conversation_id,
        parent_run_id: m.parent_run_id,
        surface: m.surface,
        input: m.input,
        answer: m.answer,
        error: m.error,
        created_at: m.created_at,
        updated_at: m.updated_at,
    })
}
