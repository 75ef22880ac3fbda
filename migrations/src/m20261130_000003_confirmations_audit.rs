//! Confirmation requests, the connector call log and Feishu callback de-duplication.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

// The trait spells `&SchemaManager` without its lifetime; `'_` here would not match it.
#[allow(elided_lifetimes_in_paths)]
#[sea_orm_migration::async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ConfirmationRequests::Table)
                    .col(string(ConfirmationRequests::Id).primary_key())
                    .col(string(ConfirmationRequests::Status))
                    // JSON: {"tool_name", "tool_args", "args_sha256"}.
                    .col(text(ConfirmationRequests::Payload))
                    .col(string(ConfirmationRequests::RunId))
                    .col(string(ConfirmationRequests::ToolCallId))
                    .col(string_null(ConfirmationRequests::AgentId))
                    .col(string_null(ConfirmationRequests::UserId))
                    .col(string(ConfirmationRequests::OrgId))
                    .col(string_null(ConfirmationRequests::ChannelId))
                    .col(string(ConfirmationRequests::Mode))
                    .col(string(ConfirmationRequests::ApproverScope))
                    .col(string_null(ConfirmationRequests::MessageId))
                    .col(timestamp_with_time_zone(ConfirmationRequests::ExpiresAt))
                    .col(timestamp_with_time_zone_null(ConfirmationRequests::RespondedAt))
                    .col(string_null(ConfirmationRequests::RespondedByOpenId))
                    .col(string_null(ConfirmationRequests::RespondedByUserId))
                    .col(text_null(ConfirmationRequests::Reason))
                    .col(timestamp_with_time_zone(ConfirmationRequests::CreatedAt))
                    .col(timestamp_with_time_zone(ConfirmationRequests::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_confirmation_requests_call")
                    .table(ConfirmationRequests::Table)
                    .col(ConfirmationRequests::RunId)
                    .col(ConfirmationRequests::ToolCallId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_confirmation_requests_org_status")
                    .table(ConfirmationRequests::Table)
                    .col(ConfirmationRequests::OrgId)
                    .col(ConfirmationRequests::Status)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ConnectorCallLogs::Table)
                    .col(string(ConnectorCallLogs::Id).primary_key())
                    .col(string_null(ConnectorCallLogs::OrgId))
                    .col(string_null(ConnectorCallLogs::ConnectorId))
                    .col(string_null(ConnectorCallLogs::ConnectorName))
                    .col(string_null(ConnectorCallLogs::ActionName))
                    .col(string(ConnectorCallLogs::RunId))
                    .col(string(ConnectorCallLogs::ToolCallId))
                    .col(string_null(ConnectorCallLogs::ConversationId))
                    .col(string_null(ConnectorCallLogs::UserId))
                    .col(string_null(ConnectorCallLogs::AgentId))
                    .col(string_null(ConnectorCallLogs::Surface))
                    .col(string_null(ConnectorCallLogs::RequestMethod))
                    .col(text_null(ConnectorCallLogs::RequestUrl))
                    .col(string(ConnectorCallLogs::OriginalArgsSha256))
                    .col(string(ConnectorCallLogs::EffectiveArgsSha256))
                    .col(string(ConnectorCallLogs::Outcome))
                    .col(string_null(ConnectorCallLogs::BlockedBy))
                    .col(integer_null(ConnectorCallLogs::ResponseStatus))
                    .col(big_integer_null(ConnectorCallLogs::ResponseTimeMs))
                    .col(boolean(ConnectorCallLogs::Success))
                    .col(text_null(ConnectorCallLogs::ErrorMessage))
                    .col(timestamp_with_time_zone(ConnectorCallLogs::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_connector_call_logs_call")
                    .table(ConnectorCallLogs::Table)
                    .col(ConnectorCallLogs::RunId)
                    .col(ConnectorCallLogs::ToolCallId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_connector_call_logs_org")
                    .table(ConnectorCallLogs::Table)
                    .col(ConnectorCallLogs::OrgId)
                    .col(ConnectorCallLogs::CreatedAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(CallbackEvents::Table)
                    .col(string(CallbackEvents::ChannelId))
                    .col(string(CallbackEvents::EventKey))
                    .col(timestamp_with_time_zone(CallbackEvents::ReceivedAt))
                    .primary_key(Index::create().col(CallbackEvents::ChannelId).col(CallbackEvents::EventKey))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_callback_events_received_at")
                    .table(CallbackEvents::Table)
                    .col(CallbackEvents::ReceivedAt)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(CallbackEvents::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ConnectorCallLogs::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ConfirmationRequests::Table).to_owned()).await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum ConfirmationRequests {
    Table,
    Id,
    Status,
    Payload,
    RunId,
    ToolCallId,
    AgentId,
    UserId,
    OrgId,
    ChannelId,
    Mode,
    ApproverScope,
    MessageId,
    ExpiresAt,
    RespondedAt,
    RespondedByOpenId,
    RespondedByUserId,
    Reason,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ConnectorCallLogs {
    Table,
    Id,
    OrgId,
    ConnectorId,
    ConnectorName,
    ActionName,
    RunId,
    ToolCallId,
    ConversationId,
    UserId,
    AgentId,
    Surface,
    RequestMethod,
    RequestUrl,
    OriginalArgsSha256,
    EffectiveArgsSha256,
    Outcome,
    BlockedBy,
    ResponseStatus,
    ResponseTimeMs,
    Success,
    ErrorMessage,
    CreatedAt,
}

#[derive(DeriveIden)]
enum CallbackEvents {
    Table,
    ChannelId,
    EventKey,
    ReceivedAt,
}
