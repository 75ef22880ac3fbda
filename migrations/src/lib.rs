//! Tollgate's database schema, as sea-orm-migration migrations written with the schema DSL.
//!
//! The same migrations run on SQLite (the embedded default) and PostgreSQL, and produce the same
//! logical schema on both:
//!
//! - ids are UUIDs stored as text (`string`), so rows move between backends unchanged;
//! - timestamps are `timestamp with time zone` (text in RFC 3339 on SQLite), always UTC;
//! - JSON documents (`payload`, `config`, `model_config_json`, …) are `text` holding JSON;
//! - secrets (`channels.config`, `connectors.auth`, `connectors.url`) are `text` holding the
//!   ciphertext written by the `store` crate, never plaintext.
//!
//! Table and column names are a fixed contract (issue 3): the API and acceptance tests read them.
//! Invariants: schema DSL only (never entity types), and every `down` is implemented.
//!
//! Apply with [`Migrator`] (`MigratorTrait::up(db, None)`), or through `store::Store::migrate`.

pub use sea_orm_migration::MigratorTrait;
use sea_orm_migration::prelude::*;

mod m20261130_000001_accounts;
mod m20261130_000002_runs;
mod m20261130_000003_confirmations_audit;

/// Every migration of the schema, in order.
#[derive(Debug)]
pub struct Migrator;

#[sea_orm_migration::async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261130_000001_accounts::Migration),
            Box::new(m20261130_000002_runs::Migration),
            Box::new(m20261130_000003_confirmations_audit::Migration),
        ]
    }
}
