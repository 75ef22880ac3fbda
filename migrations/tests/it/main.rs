//! The migrations apply, roll back completely and apply again, on SQLite always and on PostgreSQL
//! when `TOLLGATE_TEST_POSTGRES_URL` is set.

use migrations::{Migrator, MigratorTrait};
use sea_orm_migration::SchemaManager;
use sea_orm_migration::sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection};

/// Every table of the schema (issue 3's contract).
const TABLES: &[&str] = &[
    "orgs",
    "users",
    "api_keys",
    "channels",
    "connectors",
    "connector_actions",
    "agents",
    "conversations",
    "runs",
    "run_events",
    "tool_executions",
    "confirmation_requests",
    "connector_call_logs",
    "callback_events",
];

async fn check_up_down_up(db: &DatabaseConnection) {
    Migrator::up(db, None).await.expect("first up");
    let manager = SchemaManager::new(db);
    for table in TABLES {
        assert!(manager.has_table(*table).await.unwrap(), "{table} after up");
    }
    assert!(Migrator::get_pending_migrations(db).await.unwrap().is_empty());

    Migrator::down(db, None).await.expect("down");
    for table in TABLES {
        assert!(!manager.has_table(*table).await.unwrap(), "{table} after down");
    }
    assert_eq!(Migrator::get_pending_migrations(db).await.unwrap().len(), Migrator::migrations().len());

    Migrator::up(db, None).await.expect("second up");
    for table in TABLES {
        assert!(manager.has_table(*table).await.unwrap(), "{table} after second up");
    }
    // The unique contract survives the round trip.
    assert!(manager.has_index("connectors", "ux_connectors_org_name").await.unwrap());
    assert!(manager.has_index("confirmation_requests", "ux_confirmation_requests_call").await.unwrap());
}

#[tokio::test]
async fn up_down_up_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
    let db = Database::connect(&url).await.unwrap();
    check_up_down_up(&db).await;
}

#[tokio::test]
async fn up_down_up_on_postgres() {
    let Ok(url) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        return;
    };
    let admin = Database::connect(&url).await.unwrap();
    let schema = format!("mig_{}", uuid::Uuid::new_v4().simple());
    admin.execute_unprepared(&format!("CREATE SCHEMA {schema}")).await.unwrap();
    let mut options = ConnectOptions::new(url);
    options.set_schema_search_path(schema.clone());
    let db = Database::connect(options).await.unwrap();
    check_up_down_up(&db).await;
    db.close().await.unwrap();
    admin.execute_unprepared(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
}
