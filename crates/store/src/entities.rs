//! sea-orm entities: one module per table, private to the crate. Repositories convert them to the
//! plain domain structs of [`crate::model`]; no `Model` leaves this crate.
//!
//! Column conventions (see the `migrations` crate): ids are UUID strings, timestamps are
//! `DateTime<Utc>`, JSON documents and ciphertexts are text.

pub mod orgs {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "orgs")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub name: String,
        pub read_only: bool,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod users {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: String,
        pub name: String,
        pub role: String,
        pub feishu_open_id: Option<String>,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod api_keys {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "api_keys")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub key_hash: String,
        pub prefix: String,
        pub created_at: ChronoDateTimeUtc,
        pub revoked_at: Option<ChronoDateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod channels {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "channels")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: String,
        #[sea_orm(column_name = "type")]
        pub kind: String,
        pub name: String,
        /// Ciphertext of the config JSON.
        pub config: String,
        pub is_active: bool,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod connectors {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "connectors")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: String,
        pub name: String,
        #[sea_orm(column_name = "type")]
        pub kind: String,
        pub base_url: Option<String>,
        /// Ciphertext of the database URL (it may carry a password).
        pub url: Option<String>,
        /// Ciphertext of the auth JSON.
        pub auth: Option<String>,
        /// JSON `{"per_minute", "burst"}`.
        pub rate_limit: Option<String>,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod connector_actions {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "connector_actions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub connector_id: String,
        pub name: String,
        pub description: String,
        pub method: String,
        pub path: String,
        /// JSON Schema text.
        pub parameters_schema: String,
        pub requires_confirmation: bool,
        pub side_effect: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod agents {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "agents")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: String,
        pub owner_user_id: Option<String>,
        pub name: String,
        pub instructions: String,
        pub require_confirmation_for_all: bool,
        pub model_config_json: String,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod conversations {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "conversations")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: String,
        pub agent_id: String,
        pub user_id: Option<String>,
        pub title: Option<String>,
        pub created_at: ChronoDateTimeUtc,
        pub updated_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod runs {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "runs")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub agent_id: String,
        pub org_id: String,
        pub user_id: Option<String>,
        pub conversation_id: Option<String>,
        pub parent_run_id: Option<String>,
        pub surface: String,
        pub status: String,
        pub input: Option<String>,
        pub owner: Option<String>,
        pub lease_until: Option<ChronoDateTimeUtc>,
        pub answer: Option<String>,
        pub error: Option<String>,
        pub created_at: ChronoDateTimeUtc,
        pub updated_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod run_events {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "run_events")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub run_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub seq: i64,
        pub event: String,
        pub data: String,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod tool_executions {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "tool_executions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub run_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub tool_call_id: String,
        pub tool_name: String,
        pub original_args: String,
        pub effective_args: Option<String>,
        pub status: String,
        pub result: Option<String>,
        pub started_at: ChronoDateTimeUtc,
        pub finished_at: Option<ChronoDateTimeUtc>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod confirmation_requests {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "confirmation_requests")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub status: String,
        /// JSON `{"tool_name", "tool_args", "args_sha256"}`.
        pub payload: String,
        pub run_id: String,
        pub tool_call_id: String,
        pub agent_id: Option<String>,
        pub user_id: Option<String>,
        pub org_id: String,
        pub channel_id: Option<String>,
        pub mode: String,
        pub approver_scope: String,
        pub message_id: Option<String>,
        pub expires_at: ChronoDateTimeUtc,
        pub responded_at: Option<ChronoDateTimeUtc>,
        pub responded_by_open_id: Option<String>,
        pub responded_by_user_id: Option<String>,
        pub reason: Option<String>,
        pub created_at: ChronoDateTimeUtc,
        pub updated_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod connector_call_logs {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "connector_call_logs")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub org_id: Option<String>,
        pub connector_id: Option<String>,
        pub connector_name: Option<String>,
        pub action_name: Option<String>,
        pub run_id: String,
        pub tool_call_id: String,
        pub conversation_id: Option<String>,
        pub user_id: Option<String>,
        pub agent_id: Option<String>,
        pub surface: Option<String>,
        pub request_method: Option<String>,
        pub request_url: Option<String>,
        pub original_args_sha256: String,
        pub effective_args_sha256: String,
        pub outcome: String,
        pub blocked_by: Option<String>,
        pub response_status: Option<i32>,
        pub response_time_ms: Option<i64>,
        pub success: bool,
        pub error_message: Option<String>,
        pub created_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod callback_events {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
    #[sea_orm(table_name = "callback_events")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub channel_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub event_key: String,
        pub received_at: ChronoDateTimeUtc,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
