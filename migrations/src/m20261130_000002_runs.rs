//! Conversations, runs, run events and tool executions.
//!
//! No foreign keys here: runs are written on the hot path by the agent crates, and a run's audit
//! trail must survive the deletion of the agent or user that started it.

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
                    .table(Conversations::Table)
                    .col(string(Conversations::Id).primary_key())
                    .col(string(Conversations::OrgId))
                    .col(string(Conversations::AgentId))
                    .col(string_null(Conversations::UserId))
                    .col(text_null(Conversations::Title))
                    .col(timestamp_with_time_zone(Conversations::CreatedAt))
                    .col(timestamp_with_time_zone(Conversations::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Runs::Table)
                    .col(string(Runs::Id).primary_key())
                    .col(string(Runs::AgentId))
                    .col(string(Runs::OrgId))
                    .col(string_null(Runs::UserId))
                    .col(string_null(Runs::ConversationId))
                    .col(string_null(Runs::ParentRunId))
                    .col(string(Runs::Surface))
                    .col(string(Runs::Status))
                    .col(text_null(Runs::Input))
                    .col(string_null(Runs::Owner))
                    .col(timestamp_with_time_zone_null(Runs::LeaseUntil))
                    .col(text_null(Runs::Answer))
                    .col(text_null(Runs::Error))
                    .col(timestamp_with_time_zone(Runs::CreatedAt))
                    .col(timestamp_with_time_zone(Runs::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(Index::create().name("ix_runs_status").table(Runs::Table).col(Runs::Status).to_owned())
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(RunEvents::Table)
                    .col(string(RunEvents::RunId))
                    .col(big_integer(RunEvents::Seq))
                    .col(string(RunEvents::Event))
                    .col(text(RunEvents::Data))
                    .col(timestamp_with_time_zone(RunEvents::CreatedAt))
                    .primary_key(Index::create().col(RunEvents::RunId).col(RunEvents::Seq))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ToolExecutions::Table)
                    .col(string(ToolExecutions::RunId))
                    .col(string(ToolExecutions::ToolCallId))
                    .col(string(ToolExecutions::ToolName))
                    .col(text(ToolExecutions::OriginalArgs))
                    .col(text_null(ToolExecutions::EffectiveArgs))
                    .col(string(ToolExecutions::Status))
                    .col(text_null(ToolExecutions::Result))
                    .col(timestamp_with_time_zone(ToolExecutions::StartedAt))
                    .col(timestamp_with_time_zone_null(ToolExecutions::FinishedAt))
                    .primary_key(Index::create().col(ToolExecutions::RunId).col(ToolExecutions::ToolCallId))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ToolExecutions::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(RunEvents::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Runs::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Conversations::Table).to_owned()).await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Conversations {
    Table,
    Id,
    OrgId,
    AgentId,
    UserId,
    Title,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Runs {
    Table,
    Id,
    AgentId,
    OrgId,
    UserId,
    ConversationId,
    ParentRunId,
    Surface,
    Status,
    Input,
    Owner,
    LeaseUntil,
    Answer,
    Error,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum RunEvents {
    Table,
    RunId,
    Seq,
    Event,
    Data,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ToolExecutions {
    Table,
    RunId,
    ToolCallId,
    ToolName,
    OriginalArgs,
    EffectiveArgs,
    Status,
    Result,
    StartedAt,
    FinishedAt,
}
