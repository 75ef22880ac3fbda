//! Connecting: bad URLs and dead servers give one-line errors with the password masked, without
//! panicking; a closed pool errors; data written before a restart is all there after it.

use std::time::Duration;

use store::{Store, StoreConfig, StoreError};

use crate::support::{KEY, backends, open, sqlite};

async fn connect_err(url: &str) -> StoreError {
    let mut config = StoreConfig::new(url);
    config.acquire_timeout = Duration::from_secs(2);
    Store::connect_with(config).await.expect_err(url)
}

fn closed_port() -> u16 {
    // Bind then drop: nothing listens on the port afterwards.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_server_is_a_one_line_error_naming_the_masked_url() {
    let port = closed_port();
    let err = connect_err(&format!("postgres://tollgate:hunter2@127.0.0.1:{port}/db")).await;
    let text = err.to_string();
    assert!(matches!(err, StoreError::Database(_)), "{err:?}");
    assert!(text.contains(&format!("postgres://tollgate:***@127.0.0.1:{port}/db")), "{text}");
    assert!(!text.contains("hunter2") && !text.contains('\n'), "{text}");
}

#[tokio::test]
async fn malformed_urls_are_errors_not_panics() {
    for url in [
        "postgres://tollgate:hunter2@127.0.0.1:notaport/db",
        "mysql://tollgate:hunter2@127.0.0.1/db",
        "hunter2",
        "",
        "sqlite:///nonexistent-dir-7c1/sub/x.db",
    ] {
        let err = connect_err(url).await;
        let text = err.to_string();
        assert!(!text.contains("hunter2") || url == "hunter2", "{url}: {text}");
        assert!(!text.contains('\n'), "{url}: {text}");
        assert!(matches!(err, StoreError::Database(_) | StoreError::Config(_)), "{url}: {err:?}");
    }
    assert!(matches!(connect_err("mysql://u:p@h/db").await, StoreError::Config(_)));
    let err = connect_err("postgres://tollgate:hunter2@127.0.0.1:notaport/db").await;
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    let err = connect_err("sqlite:///nonexistent-dir-7c1/sub/x.db").await;
    assert!(err.to_string().contains("sqlite:///nonexistent-dir-7c1/sub/x.db"), "{err}");
}

#[tokio::test]
async fn a_closed_pool_errors_and_a_restart_loses_nothing() {
    for db in backends().await {
        let org = db.store.create_org("acme").await.unwrap();
        db.store.record_callback_event("ch-1", "evt-1").await.unwrap();
        let closed = db.store.clone();
        closed.close().await.unwrap();
        let err = db.store.create_org("lost").await.unwrap_err();
        assert!(matches!(err, StoreError::Database(_)), "{}: {err:?}", db.label);

        let reopened = open(&db.url, Some(KEY)).await;
        reopened.migrate().await.unwrap();
        assert_eq!(reopened.get_org(&org.id).await.unwrap(), Some(org), "{}", db.label);
        assert!(!reopened.record_callback_event("ch-1", "evt-1").await.unwrap());
    }
}

#[tokio::test]
async fn migrate_is_idempotent() {
    let db = sqlite().await;
    db.store.migrate().await.unwrap();
    db.store.migrate().await.unwrap();
}

/// Transactions and plain queries interleave on a SQLite pool of several connections without
/// deadlocking (no query on the pool inside a transaction).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_do_not_deadlock() {
    for db in backends().await {
        let org = db.store.create_org("acme").await.unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..16 {
            let store = db.store.clone();
            let org_id = org.id.clone();
            tasks.spawn(async move {
                let connector = store::NewConnector {
                    org_id: org_id.clone(),
                    name: format!("c{i}"),
                    kind: store::ConnectorKind::Http,
                    base_url: Some("http://127.0.0.1:9".to_owned()),
                    url: None,
                    auth: None,
                    rate_limit: None,
                    actions: vec![],
                };
                store.create_connector(&connector).await.unwrap();
                store.list_connectors(&org_id).await.unwrap();
                store.record_callback_event("ch", &format!("e{i}")).await.unwrap();
            });
        }
        while let Some(joined) = tasks.join_next().await {
            joined.unwrap();
        }
        assert_eq!(db.store.list_connectors(&org.id).await.unwrap().len(), 16, "{}", db.label);
    }
}

#[tokio::test]
async fn in_memory_sqlite_works_with_an_ephemeral_key() {
    let store = open("sqlite::memory:", None).await;
    store.migrate().await.unwrap();
    let org = store.create_org("acme").await.unwrap();
    let channel = store
        .create_channel(&store::NewChannel {
            org_id: org.id.clone(),
            kind: "feishu".to_owned(),
            name: "ops".to_owned(),
            config: serde_json::json!({"app_secret": "s"}),
            is_active: true,
        })
        .await
        .unwrap();
    assert_eq!(store.get_channel(&channel.id).await.unwrap().unwrap().config, serde_json::json!({"app_secret": "s"}));
    assert_eq!(store.get_org(&org.id).await.unwrap(), Some(org));
}

#[tokio::test]
async fn postgres_without_a_key_refuses_secrets_but_serves_the_rest() {
    let Some(db) = crate::support::postgres().await else { return };
    let keyless = open(&db.url, None).await;
    let org = keyless.create_org("acme").await.unwrap();
    let err = keyless
        .create_channel(&store::NewChannel {
            org_id: org.id,
            kind: "feishu".to_owned(),
            name: "ops".to_owned(),
            config: serde_json::json!({"app_secret": "s"}),
            is_active: true,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Config(ref m) if m.contains("TOLLGATE_SECRET_KEY")), "{err:?}");
}
