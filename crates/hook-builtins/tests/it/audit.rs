use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hook_builtins::ports::{AuditSink, CallOutcome, ConnectorCallRecord, PortError};
use hook_builtins::{AuditLogConfig, AuditLogHook, args_sha256};
use hook_core::{HookContext, HookRegistry, PostToolUseHook, meta};
use serde_json::{Value, json};

/// Idempotent on (run_id, tool_call_id), like the real table's unique key.
#[derive(Default)]
struct MemSink {
    rows: Mutex<HashMap<(String, String), ConnectorCallRecord>>,
    down: AtomicBool,
}

#[async_trait::async_trait]
impl AuditSink for MemSink {
    async fn record_connector_call(&self, record: &ConnectorCallRecord) -> Result<(), PortError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(PortError::new("database is down"));
        }
        let key = (record.run_id.clone(), record.tool_call_id.clone());
        self.rows.lock().unwrap().entry(key).or_insert_with(|| record.clone());
        Ok(())
    }
}

fn post_ctx(outcome: &str, args: Value) -> HookContext {
    let mut ctx = HookContext::post_tool_use("erp__create_payment", args, json!({"ok": true}));
    ctx.user_id = Some("alice".into());
    ctx.agent_id = Some("agent1".into());
    for (k, v) in [
        (meta::ORG_ID, json!("org1")),
        (meta::RUN_ID, json!("run1")),
        (meta::TOOL_CALL_ID, json!("call1")),
        (meta::CONNECTOR_ID, json!("c1")),
        (meta::CONNECTOR_NAME, json!("erp")),
        (meta::ACTION_NAME, json!("create_payment")),
        (meta::SURFACE, json!("react")),
        (meta::OUTCOME, json!(outcome)),
    ] {
        ctx.metadata.insert(k.into(), v);
    }
    ctx
}

fn registry(sink: Arc<MemSink>, config: AuditLogConfig) -> HookRegistry {
    let mut registry = HookRegistry::new();
    registry.register_post(Arc::new(AuditLogHook::new(sink, config)));
    registry
}

#[tokio::test]
async fn executed_call_records_hashes_and_http_details() {
    let sink = Arc::new(MemSink::default());
    let registry = registry(sink.clone(), AuditLogConfig::default());
    let mut ctx = post_ctx("executed", json!({"amount": 100, "currency": "EUR"}));
    ctx.metadata.insert(meta::ORIGINAL_ARGS.into(), json!({"currency": "EUR", "amount": 1000}));
    ctx.metadata.insert(meta::REQUEST_METHOD.into(), json!("POST"));
    ctx.metadata.insert(meta::REQUEST_URL.into(), json!("https://erp.example/payments"));
    ctx.metadata.insert(meta::RESPONSE_STATUS.into(), json!(201));
    ctx.metadata.insert(meta::RESPONSE_TIME_MS.into(), json!(42));

    let verdict = registry.run_post_tool_use(&ctx).await;
    assert_eq!(verdict.modified_result, None, "audit_log never rewrites the observation");
    let rows = sink.rows.lock().unwrap();
    let row = &rows[&("run1".to_string(), "call1".to_string())];
    assert_eq!(row.outcome, CallOutcome::Executed);
    assert!(row.success);
    assert_eq!(row.effective_args_sha256, args_sha256(&json!({"amount": 100, "currency": "EUR"})));
    assert_eq!(row.original_args_sha256, args_sha256(&json!({"amount": 1000, "currency": "EUR"})));
    assert_ne!(row.original_args_sha256, row.effective_args_sha256);
    assert_eq!(row.request_method.as_deref(), Some("POST"));
    assert_eq!(row.request_url.as_deref(), Some("https://erp.example/payments"));
    assert_eq!(row.response_status, Some(201));
    assert_eq!(row.response_time_ms, Some(42));
    assert_eq!(row.connector_name.as_deref(), Some("erp"));
    assert_eq!(row.org_id.as_deref(), Some("org1"));
    assert_eq!(row.user_id.as_deref(), Some("alice"));
    assert_eq!(row.surface.as_deref(), Some("react"));
    assert_eq!(row.blocked_by, None);
}

#[tokio::test]
async fn blocked_and_failed_calls_are_recorded_with_their_reason() {
    let sink = Arc::new(MemSink::default());
    let registry = registry(sink.clone(), AuditLogConfig::default());
    let mut blocked = post_ctx("blocked", json!({}));
    blocked.metadata.insert(meta::BLOCKED_BY.into(), json!("read_only_guard"));
    blocked.metadata.insert(meta::ERROR.into(), json!("the organization is read-only"));
    registry.run_post_tool_use(&blocked).await;

    let mut failed = post_ctx("failed", json!({}));
    failed.metadata.insert(meta::TOOL_CALL_ID.into(), json!("call2"));
    failed.metadata.insert(meta::ERROR.into(), json!("connection refused"));
    registry.run_post_tool_use(&failed).await;

    let mut http_error = post_ctx("executed", json!({}));
    http_error.metadata.insert(meta::TOOL_CALL_ID.into(), json!("call3"));
    http_error.metadata.insert(meta::RESPONSE_STATUS.into(), json!(500));
    registry.run_post_tool_use(&http_error).await;

    let rows = sink.rows.lock().unwrap();
    let b = &rows[&("run1".to_string(), "call1".to_string())];
    assert_eq!(b.outcome, CallOutcome::Blocked);
    assert_eq!(b.blocked_by.as_deref(), Some("read_only_guard"));
    assert_eq!(b.error_message.as_deref(), Some("the organization is read-only"));
    assert!(!b.success);
    let f = &rows[&("run1".to_string(), "call2".to_string())];
    assert_eq!(f.outcome, CallOutcome::Failed);
    assert_eq!(f.error_message.as_deref(), Some("connection refused"));
    assert!(!f.success);
    assert!(!rows[&("run1".to_string(), "call3".to_string())].success);
}

#[tokio::test]
async fn replays_are_idempotent_and_non_connector_tools_are_skipped() {
    let sink = Arc::new(MemSink::default());
    let registry = registry(sink.clone(), AuditLogConfig::default());
    let ctx = post_ctx("executed", json!({"a": 1}));
    registry.run_post_tool_use(&ctx).await;
    registry.run_post_tool_use(&ctx).await;
    assert_eq!(sink.rows.lock().unwrap().len(), 1);

    let plain = HookContext::post_tool_use("calculator", json!({}), json!(2));
    let hook = AuditLogHook::new(sink.clone(), AuditLogConfig::default());
    assert!(!hook.should_trigger(&plain));
    assert_eq!((hook.name(), hook.priority()), ("audit_log", 1000));
}

#[tokio::test]
async fn a_failing_sink_withholds_the_result_by_default_and_not_when_open() {
    let sink = Arc::new(MemSink::default());
    sink.down.store(true, Ordering::SeqCst);
    let closed =
        registry(sink.clone(), AuditLogConfig::default()).run_post_tool_use(&post_ctx("executed", json!({}))).await;
    let withheld = closed.modified_result.expect("observation replaced");
    assert!(withheld.as_str().unwrap().contains("result withheld: hook 'audit_log' failed"), "{withheld}");

    let config: AuditLogConfig = serde_json::from_value(json!({"failure_policy": "open"})).unwrap();
    let open = registry(sink, config).run_post_tool_use(&post_ctx("executed", json!({}))).await;
    assert_eq!(open.modified_result, None);
    assert!(open.side_effects.iter().any(|s| s.contains("audit_log")), "{:?}", open.side_effects);
}

#[tokio::test]
async fn missing_run_id_is_a_failure() {
    let mut ctx = post_ctx("executed", json!({}));
    ctx.metadata.remove(meta::RUN_ID);
    assert!(AuditLogHook::record_for(&ctx).is_err());
}
