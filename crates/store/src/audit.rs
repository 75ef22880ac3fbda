//! `connector_call_logs` (the audit log) and `callback_events` (Feishu delivery de-duplication).

use std::time::Duration;

use hook_builtins::ports::{CallOutcome, ConnectorCallRecord};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, TryInsertResult};

use crate::entities::{callback_events, connector_call_logs as ccl};
use crate::error::corrupt;
use crate::model::ConnectorCallLog;
use crate::{Store, StoreError, new_id, now};

impl Store {
    /// Records one connector call; a second record for the same (`run_id`, `tool_call_id`) changes
    /// nothing and is not an error. Returns whether this call wrote the row.
    pub async fn record_connector_call(&self, record: &ConnectorCallRecord) -> Result<bool, StoreError> {
        let result = ccl::Entity::insert(ccl::ActiveModel {
            id: Set(new_id()),
            org_id: Set(record.org_id.clone()),
            connector_id: Set(record.connector_id.clone()),
            connector_name: Set(record.connector_name.clone()),
            action_name: Set(record.action_name.clone()),
            run_id: Set(record.run_id.clone()),
            tool_call_id: Set(record.tool_call_id.clone()),
            conversation_id: Set(record.conversation_id.clone()),
            user_id: Set(record.user_id.clone()),
            agent_id: Set(record.agent_id.clone()),
            surface: Set(record.surface.clone()),
            request_method: Set(record.request_method.clone()),
            request_url: Set(record.request_url.clone()),
            original_args_sha256: Set(record.original_args_sha256.clone()),
            effective_args_sha256: Set(record.effective_args_sha256.clone()),
            outcome: Set(record.outcome.as_str().to_owned()),
            blocked_by: Set(record.blocked_by.clone()),
            response_status: Set(record.response_status),
            response_time_ms: Set(record.response_time_ms),
            success: Set(record.success),
            error_message: Set(record.error_message.clone()),
            created_at: Set(record.created_at),
        })
        .on_conflict(OnConflict::columns([ccl::Column::RunId, ccl::Column::ToolCallId]).do_nothing().to_owned())
        .try_insert()
        .exec_without_returning(&self.db)
        .await?;
        Ok(matches!(result, TryInsertResult::Inserted(n) if n > 0))
    }

    /// The connector calls of an org (of one run when `run_id` is given), oldest first.
    pub async fn list_connector_calls(
        &self,
        org_id: &str,
        run_id: Option<&str>,
    ) -> Result<Vec<ConnectorCallLog>, StoreError> {
        let mut query = ccl::Entity::find().filter(ccl::Column::OrgId.eq(org_id));
        if let Some(run_id) = run_id {
            query = query.filter(ccl::Column::RunId.eq(run_id));
        }
        query
            .order_by_asc(ccl::Column::CreatedAt)
            .order_by_asc(ccl::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|m| {
                Ok(ConnectorCallLog {
                    id: m.id,
                    record: ConnectorCallRecord {
                        outcome: CallOutcome::parse(&m.outcome)
                            .ok_or_else(|| corrupt("connector_call_logs.outcome", &m.outcome))?,
                        org_id: m.org_id,
                        connector_id: m.connector_id,
                        connector_name: m.connector_name,
                        action_name: m.action_name,
                        run_id: m.run_id,
                        tool_call_id: m.tool_call_id,
                        conversation_id: m.conversation_id,
                        user_id: m.user_id,
                        agent_id: m.agent_id,
                        surface: m.surface,
                        request_method: m.request_method,
                        request_url: m.request_url,
                        original_args_sha256: m.original_args_sha256,
                        effective_args_sha256: m.effective_args_sha256,
                        blocked_by: m.blocked_by,
                        response_status: m.response_status,
                        response_time_ms: m.response_time_ms,
                        success: m.success,
                        error_message: m.error_message,
                        created_at: m.created_at,
                    },
                })
            })
            .collect()
    }

    /// Remembers a channel delivery; `true` the first time (`channel_id`, `event_key`) is seen,
    /// `false` for a redelivery (which the caller then ignores).
    pub async fn record_callback_event(&self, channel_id: &str, event_key: &str) -> Result<bool, StoreError> {
        let result = callback_events::Entity::insert(callback_events::ActiveModel {
            channel_id: Set(channel_id.to_owned()),
            event_key: Set(event_key.to_owned()),
            received_at: Set(now()),
        })
        .on_conflict(
            OnConflict::columns([callback_events::Column::ChannelId, callback_events::Column::EventKey])
                .do_nothing()
                .to_owned(),
        )
        .try_insert()
        .exec_without_returning(&self.db)
        .await?;
        Ok(matches!(result, TryInsertResult::Inserted(n) if n > 0))
    }

    /// Forgets one delivery key, so that Feishu's redelivery is processed again (used when
    /// processing the first delivery failed).
    pub async fn forget_callback_event(&self, channel_id: &str, event_key: &str) -> Result<(), StoreError> {
        callback_events::Entity::delete_many()
            .filter(callback_events::Column::ChannelId.eq(channel_id))
            .filter(callback_events::Column::EventKey.eq(event_key))
            .exec(&self.db)
            .await?;
        Ok(())
    }

    /// Deletes the callback events received more than `older_than` ago; returns how many.
    /// (Feishu redelivers for hours, not days: a day is a safe horizon.)
    pub async fn purge_callback_events(&self, older_than: Duration) -> Result<u64, StoreError> {
        let age = chrono::Duration::from_std(older_than)
            .map_err(|_| StoreError::Config(format!("purge age {older_than:?} is out of range")))?;
        let result = callback_events::Entity::delete_many()
            .filter(callback_events::Column::ReceivedAt.lt(now() - age))
            .exec(&self.db)
            .await?;
        Ok(result.rows_affected)
    }
}
