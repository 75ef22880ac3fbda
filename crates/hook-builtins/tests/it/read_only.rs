use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hook_builtins::ports::{OrgPolicy, PortError};
use hook_builtins::{ReadOnlyGuard, ReadOnlyGuardConfig};
use hook_core::{HookContext, HookRegistry, PreToolUseHook, meta};
use serde_json::json;

#[derive(Default)]
struct Policy {
    read_only: AtomicBool,
    down: AtomicBool,
    reads: std::sync::atomic::AtomicU64,
}

#[async_trait::async_trait]
impl OrgPolicy for Policy {
    async fn is_read_only(&self, org_id: &str) -> Result<bool, PortError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(PortError::new("database is down"));
        }
        assert_eq!(org_id, "org1");
        Ok(self.read_only.load(Ordering::SeqCst))
    }
}

fn registry(policy: Arc<Policy>, config: ReadOnlyGuardConfig) -> HookRegistry {
    let mut registry = HookRegistry::new();
    registry.register_pre(Arc::new(ReadOnlyGuard::new(policy, config)));
    registry
}

fn ctx(tool: &str, args: serde_json::Value, side_effect: Option<&str>) -> HookContext {
    let mut ctx = HookContext::pre_tool_use(tool, args);
    ctx.metadata.insert(meta::ORG_ID.into(), "org1".into());
    if let Some(side_effect) = side_effect {
        ctx.metadata.insert(meta::SIDE_EFFECT.into(), side_effect.into());
    }
    ctx
}

#[tokio::test]
async fn name_and_priority_are_the_designed_ones() {
    let guard = ReadOnlyGuard::new(Arc::new(Policy::default()), ReadOnlyGuardConfig::default());
    assert_eq!(guard.name(), "read_only_guard");
    assert_eq!(guard.priority(), 5);
}

#[tokio::test]
async fn writes_are_blocked_only_while_read_only_and_a_flip_applies_to_the_next_call() {
    let policy = Arc::new(Policy::default());
    let registry = registry(policy.clone(), ReadOnlyGuardConfig::default());
    let write = ctx("erp__create_payment", json!({"amount": 1}), Some("write"));
    let read = ctx("erp__list_payments", json!({}), Some("read"));

    assert!(registry.run_pre_tool_use(&write).await.allow);
    policy.read_only.store(true, Ordering::SeqCst);
    let verdict = registry.run_pre_tool_use(&write).await;
    assert!(!verdict.allow);
    let error = verdict.error.unwrap();
    assert!(error.contains("read-only") && error.contains("did not run"), "{error}");
    assert!(registry.run_pre_tool_use(&read).await.allow);
    policy.read_only.store(false, Ordering::SeqCst);
    assert!(registry.run_pre_tool_use(&write).await.allow);
}

#[tokio::test]
async fn sql_tools_are_classified_by_their_statement() {
    let policy = Arc::new(Policy::default());
    policy.read_only.store(true, Ordering::SeqCst);
    let registry = registry(policy, ReadOnlyGuardConfig::default());
    let sql = |s: &str| ctx("warehouse__sql_query", json!({"sql": s}), None);

    assert!(registry.run_pre_tool_use(&sql("SELECT * FROM orders")).await.allow);
    for s in ["DELETE FROM orders", "SELECT 1; DROP TABLE orders", "WITH d AS (DELETE FROM t RETURNING 1) SELECT 1"] {
        let verdict = registry.run_pre_tool_use(&sql(s)).await;
        assert!(!verdict.allow, "{s}");
        assert!(verdict.error.unwrap().contains("not a pure read"));
    }
    // No sql string at all is a write.
    assert!(!registry.run_pre_tool_use(&ctx("warehouse__sql_query", json!({}), None)).await.allow);

    // The dialect in metadata decides dialect-specific syntax.
    let mut sqlite = sql("SELECT * FROM orders WHERE id = ?");
    assert!(!registry.run_pre_tool_use(&sqlite).await.allow);
    sqlite.metadata.insert(meta::SQL_DIALECT.into(), "sqlite".into());
    assert!(registry.run_pre_tool_use(&sqlite).await.allow);
}

#[tokio::test]
async fn configured_write_tools_are_writes() {
    let policy = Arc::new(Policy::default());
    policy.read_only.store(true, Ordering::SeqCst);
    let config: ReadOnlyGuardConfig = serde_json::from_value(json!({"write_tools": ["send_email"]})).unwrap();
    let registry = registry(policy, config);
    assert!(!registry.run_pre_tool_use(&ctx("send_email", json!({}), None)).await.allow);
    assert!(registry.run_pre_tool_use(&ctx("web_search", json!({}), None)).await.allow);
    assert!(serde_json::from_value::<ReadOnlyGuardConfig>(json!({"bogus": 1})).is_err());
}

#[tokio::test]
async fn policy_failure_or_missing_org_blocks_writes() {
    let policy = Arc::new(Policy::default());
    policy.down.store(true, Ordering::SeqCst);
    let registry = registry(policy.clone(), ReadOnlyGuardConfig::default());
    let verdict = registry.run_pre_tool_use(&ctx("erp__pay", json!({}), Some("write"))).await;
    assert!(!verdict.allow);
    assert!(verdict.error.unwrap().contains("database is down"));

    policy.down.store(false, Ordering::SeqCst);
    let mut no_org = ctx("erp__pay", json!({}), Some("write"));
    no_org.metadata.remove(meta::ORG_ID);
    assert!(!registry.run_pre_tool_use(&no_org).await.allow);
}

#[tokio::test]
async fn policy_is_read_on_every_write_call() {
    let policy = Arc::new(Policy::default());
    let registry = registry(policy.clone(), ReadOnlyGuardConfig::default());
    let write = ctx("erp__pay", json!({}), Some("write"));
    for _ in 0..3 {
        registry.run_pre_tool_use(&write).await;
    }
    assert_eq!(policy.reads.load(Ordering::SeqCst), 3);
}
