//! Orgs, users, API keys, channels, connectors and their actions, agents.

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
                    .table(Orgs::Table)
                    .col(string(Orgs::Id).primary_key())
                    .col(string(Orgs::Name))
                    .col(boolean(Orgs::ReadOnly).default(false))
                    .col(timestamp_with_time_zone(Orgs::CreatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(string(Users::Id).primary_key())
                    .col(string(Users::OrgId))
                    .col(string(Users::Name))
                    .col(string(Users::Role))
                    .col(string_null(Users::FeishuOpenId))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_users_org")
                            .from(Users::Table, Users::OrgId)
                            .to(Orgs::Table, Orgs::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        // Unique within an org; NULLs (users without Feishu) never collide on either backend.
        manager
            .create_index(
                Index::create()
                    .name("ux_users_org_open_id")
                    .table(Users::Table)
                    .col(Users::OrgId)
                    .col(Users::FeishuOpenId)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .col(string(ApiKeys::Id).primary_key())
                    .col(string(ApiKeys::UserId))
                    .col(string(ApiKeys::KeyHash))
                    .col(string(ApiKeys::Prefix))
                    .col(timestamp_with_time_zone(ApiKeys::CreatedAt))
                    .col(timestamp_with_time_zone_null(ApiKeys::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_api_keys_user")
                            .from(ApiKeys::Table, ApiKeys::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_api_keys_key_hash")
                    .table(ApiKeys::Table)
                    .col(ApiKeys::KeyHash)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Channels::Table)
                    .col(string(Channels::Id).primary_key())
                    .col(string(Channels::OrgId))
                    .col(string(Channels::Type))
                    .col(string(Channels::Name))
                    .col(text(Channels::Config))
                    .col(boolean(Channels::IsActive).default(true))
                    .col(timestamp_with_time_zone(Channels::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_channels_org")
                            .from(Channels::Table, Channels::OrgId)
                            .to(Orgs::Table, Orgs::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create().name("ix_channels_org").table(Channels::Table).col(Channels::OrgId).to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Connectors::Table)
                    .col(string(Connectors::Id).primary_key())
                    .col(string(Connectors::OrgId))
                    .col(string(Connectors::Name))
                    .col(string(Connectors::Type))
                    .col(text_null(Connectors::BaseUrl))
                    .col(text_null(Connectors::Url))
                    .col(text_null(Connectors::Auth))
                    .col(text_null(Connectors::RateLimit))
                    .col(timestamp_with_time_zone(Connectors::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_connectors_org")
                            .from(Connectors::Table, Connectors::OrgId)
                            .to(Orgs::Table, Orgs::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_connectors_org_name")
                    .table(Connectors::Table)
                    .col(Connectors::OrgId)
                    .col(Connectors::Name)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ConnectorActions::Table)
                    .col(string(ConnectorActions::Id).primary_key())
                    .col(string(ConnectorActions::ConnectorId))
                    .col(string(ConnectorActions::Name))
                    .col(text(ConnectorActions::Description))
                    .col(string(ConnectorActions::Method))
                    .col(text(ConnectorActions::Path))
                    .col(text(ConnectorActions::ParametersSchema))
                    .col(boolean(ConnectorActions::RequiresConfirmation).default(false))
                    .col(string(ConnectorActions::SideEffect))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_connector_actions_connector")
                            .from(ConnectorActions::Table, ConnectorActions::ConnectorId)
                            .to(Connectors::Table, Connectors::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_connector_actions_connector_name")
                    .table(ConnectorActions::Table)
                    .col(ConnectorActions::ConnectorId)
                    .col(ConnectorActions::Name)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Agents::Table)
                    .col(string(Agents::Id).primary_key())
                    .col(string(Agents::OrgId))
                    .col(string_null(Agents::OwnerUserId))
                    .col(string(Agents::Name))
                    .col(text(Agents::Instructions))
                    .col(boolean(Agents::RequireConfirmationForAll).default(false))
                    .col(text(Agents::ModelConfigJson))
                    .col(timestamp_with_time_zone(Agents::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_agents_org")
                            .from(Agents::Table, Agents::OrgId)
                            .to(Orgs::Table, Orgs::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(Index::create().name("ix_agents_org").table(Agents::Table).col(Agents::OrgId).to_owned())
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Children before parents, so the foreign keys never block a drop.
        manager.drop_table(Table::drop().table(Agents::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ConnectorActions::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Connectors::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Channels::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ApiKeys::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Users::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Orgs::Table).to_owned()).await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Orgs {
    Table,
    Id,
    Name,
    ReadOnly,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    OrgId,
    Name,
    Role,
    FeishuOpenId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    UserId,
    KeyHash,
    Prefix,
    CreatedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum Channels {
    Table,
    Id,
    OrgId,
    Type,
    Name,
    Config,
    IsActive,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Connectors {
    Table,
    Id,
    OrgId,
    Name,
    Type,
    BaseUrl,
    Url,
    Auth,
    RateLimit,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ConnectorActions {
    Table,
    Id,
    ConnectorId,
    Name,
    Description,
    Method,
    Path,
    ParametersSchema,
    RequiresConfirmation,
    SideEffect,
}

#[derive(DeriveIden)]
enum Agents {
    Table,
    Id,
    OrgId,
    OwnerUserId,
    Name,
    Instructions,
    RequireConfirmationForAll,
    ModelConfigJson,
    CreatedAt,
}
