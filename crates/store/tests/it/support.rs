//! Test databases: one SQLite file per test, plus a fresh PostgreSQL schema per test when
//! `TOLLGATE_TEST_POSTGRES_URL` is set.

use store::{Store, StoreConfig};
use tempfile::TempDir;

/// A migrated store on one backend, with what keeps it alive.
pub struct TestDb {
    pub store: Store,
    /// `sqlite` or `postgres`, for assertion messages.
    pub label: &'static str,
    pub url: String,
    _dir: Option<TempDir>,
    /// PostgreSQL: the base URL and the schema to drop when the test ends.
    pg_schema: Option<(String, String)>,
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((base, schema)) = self.pg_schema.take() else { return };
        // Drop runs inside the test's runtime, which cannot block on itself: use a thread with its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                use sea_orm::ConnectionTrait;
                let admin = open(&base, Some(KEY)).await;
                admin.connection().execute_unprepared(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await
            })
        });
        if !std::thread::panicking() {
            cleanup.join().unwrap().unwrap();
        }
    }
}

/// A fixed test key (32 bytes, hex).
pub const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// One migrated store per available backend.
pub async fn backends() -> Vec<TestDb> {
    let mut out = vec![sqlite().await];
    if let Some(db) = postgres().await {
        out.push(db);
    }
    out
}

pub async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let store = open(&url, Some(KEY)).await;
    store.migrate().await.unwrap();
    TestDb { store, label: "sqlite", url, _dir: Some(dir), pg_schema: None }
}

pub async fn postgres() -> Option<TestDb> {
    let base = std::env::var("TOLLGATE_TEST_POSTGRES_URL").ok()?;
    let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
    let admin = open(&base, Some(KEY)).await;
    use sea_orm::ConnectionTrait;
    admin.connection().execute_unprepared(&format!("CREATE SCHEMA {schema}")).await.unwrap();
    admin.close().await.unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let store = open(&url, Some(KEY)).await;
    store.migrate().await.unwrap();
    Some(TestDb { store, label: "postgres", url, _dir: None, pg_schema: Some((base, schema)) })
}

pub async fn open(url: &str, key: Option<&str>) -> Store {
    let mut config = StoreConfig::new(url);
    config.secret_key = key.map(str::to_owned);
    Store::connect_with(config).await.unwrap()
}

/// Every string value of every row of `sql`'s result, for "no plaintext" checks.
pub async fn raw_strings(store: &Store, sql: &str) -> Vec<String> {
    use sea_orm::{ConnectionTrait, Statement};
    let backend = store.connection().get_database_backend();
    let rows = store.connection().query_all_raw(Statement::from_string(backend, sql.to_owned())).await.unwrap();
    let mut out = Vec::new();
    for row in rows {
        for column in row.column_names() {
            if let Ok(Some(text)) = row.try_get::<Option<String>>("", &column) {
                out.push(text);
            }
        }
    }
    out
}
