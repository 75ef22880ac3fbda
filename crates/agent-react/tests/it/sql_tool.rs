//! `SqlQueryTool` on a temp SQLite file, and on PostgreSQL when `TOLLGATE_TEST_POSTGRES_URL` is set.

use agent_react::{DatabaseConnector, SqlQueryTool, Tool, ToolError};
use serde_json::json;

use crate::http_tool::ctx;

async fn exercise(url: &str, table: &str, placeholder: [&str; 2]) {
    let tool =
        SqlQueryTool::new(DatabaseConnector { id: "db-1".into(), name: "ledger".into(), url: url.into() }).unwrap();
    assert_eq!(tool.name(), "ledger__sql_query");
    assert_eq!(tool.connector().unwrap().action, "sql_query");
    let c = ctx();
    tool.call(json!({"sql": format!("DROP TABLE IF EXISTS {table}")}), &c).await.unwrap();
    tool.call(json!({"sql": format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY, memo TEXT, amount BIGINT)")}), &c)
        .await
        .unwrap();
    let insert = format!("INSERT INTO {table} (id, memo, amount) VALUES (1, {}, {})", placeholder[0], placeholder[1]);
    let out = tool.call(json!({"sql": insert, "params": ["服务器采购", 60000]}), &c).await.unwrap();
    assert_eq!(out.result, json!({"rows_affected": 1}));
    let out = tool
        .call(json!({"sql": format!("SELECT id, memo, amount FROM {table} WHERE amount > {}", placeholder[0]), "params": [100]}), &c)
        .await
        .unwrap();
    assert_eq!(out.result, json!([{"id": 1, "memo": "服务器采购", "amount": 60000}]));
    let err = tool.call(json!({"sql": "SELEC nonsense"}), &c).await.unwrap_err();
    assert!(matches!(err, ToolError::Database(_)), "{err:?}");
    tool.call(json!({"sql": format!("DROP TABLE {table}")}), &c).await.unwrap();
}

#[tokio::test]
async fn sqlite_rows_come_back_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("ledger.db").display());
    exercise(&url, "payments", ["?", "?"]).await;
}

#[tokio::test]
async fn postgres_rows_come_back_as_json() {
    let Ok(url) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else { return };
    let table = format!("agent_react_sql_{}", uuid::Uuid::new_v4().simple());
    exercise(&url, &table, ["$1", "$2"]).await;
}

#[test]
fn only_sqlite_and_postgres_urls() {
    let bad = DatabaseConnector { id: "x".into(), name: "x".into(), url: "mysql://x".into() };
    assert!(SqlQueryTool::new(bad).is_err());
}
