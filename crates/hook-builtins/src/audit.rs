use std::sync::Arc;

use chrono::Utc;
use hook_core::{FailurePolicy, HookContext, HookError, HookResult, PostToolUseHook, meta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hashing::args_sha256;
use crate::ports::{AuditSink, CallOutcome, ConnectorCallRecord};

/// A serde form of [`FailurePolicy`]: `"closed"` or `"open"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailurePolicyConfig {
    #[default]
    Closed,
    Open,
}

impl From<FailurePolicyConfig> for FailurePolicy {
    fn from(value: FailurePolicyConfig) -> Self {
        match value {
            FailurePolicyConfig::Closed => FailurePolicy::Closed,
            FailurePolicyConfig::Open => FailurePolicy::Open,
        }
    }
}

/// Configuration of `audit_log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditLogConfig {
    /// What a failing sink means (default `closed`: the observation is withheld and the failure
    /// shows in the run; `open`: the failure is only recorded as a side effect).
    pub failure_policy: FailurePolicyConfig,
}

/// `audit_log` (Post, priority 1000): one `connector_call_logs` row per connector call, whatever
/// its outcome.
///
/// Triggers on connector calls only (metadata `connector_id` or `connector_name` present). The
/// row is built from the context:
/// - `run_id`, `tool_call_id` (required: missing ones are a hook failure), `org_id`,
///   `conversation_id`, `connector_*`, `action_name`, `surface`, agent and user ids;
/// - `outcome` from metadata (`executed` when absent), `blocked_by` and `error` for blocked or
///   failed calls, `request_method`, `request_url`, `response_status`, `response_time_ms` for HTTP
///   calls;
/// - `original_args_sha256` = [`args_sha256`] of metadata `original_args` (or of `tool_args` when
///   absent), `effective_args_sha256` = [`args_sha256`] of `tool_args`;
/// - `success` = executed and no HTTP status ≥ 400.
///
/// The sink is idempotent on (`run_id`, `tool_call_id`). A sink error is a hook failure, handled
/// by the configured failure policy.
pub struct AuditLogHook {
    sink: Arc<dyn AuditSink>,
    config: AuditLogConfig,
}

impl AuditLogHook {
    pub fn new(sink: Arc<dyn AuditSink>, config: AuditLogConfig) -> Self {
        AuditLogHook { sink, config }
    }

    /// The row this hook writes for `ctx`. Errors when `run_id` or `tool_call_id` is missing.
    pub fn record_for(ctx: &HookContext) -> Result<ConnectorCallRecord, HookError> {
        let owned = |key: &str| ctx.meta_str(key).map(str::to_owned);
        let run_id = owned(meta::RUN_ID).ok_or_else(|| HookError::msg("audit_log: no run_id in metadata"))?;
        let tool_call_id =
            owned(meta::TOOL_CALL_ID).ok_or_else(|| HookError::msg("audit_log: no tool_call_id in metadata"))?;
        let outcome = ctx.meta_str(meta::OUTCOME).and_then(CallOutcome::parse).unwrap_or(CallOutcome::Executed);
        let original_args = ctx.metadata.get(meta::ORIGINAL_ARGS).unwrap_or(&ctx.tool_args);
        let response_status = ctx.metadata.get(meta::RESPONSE_STATUS).and_then(Value::as_i64).map(|s| s as i32);
        let response_time_ms = ctx.metadata.get(meta::RESPONSE_TIME_MS).and_then(Value::as_i64);
        let success = outcome == CallOutcome::Executed && response_status.is_none_or(|s| s < 400);
        let blocked_by = if outcome == CallOutcome::Blocked { owned(meta::BLOCKED_BY) } else { None };
        Ok(ConnectorCallRecord {
            org_id: owned(meta::ORG_ID),
            connector_id: owned(meta::CONNECTOR_ID),
            connector_name: owned(meta::CONNECTOR_NAME),
            action_name: owned(meta::ACTION_NAME),
            run_id,
            tool_call_id,
            conversation_id: owned(meta::CONVERSATION_ID),
            user_id: ctx.user_id.clone(),
            agent_id: ctx.agent_id.clone(),
            surface: owned(meta::SURFACE),
            request_method: owned(meta::REQUEST_METHOD),
            request_url: owned(meta::REQUEST_URL),
            original_args_sha256: args_sha256(original_args),
            effective_args_sha256: args_sha256(&ctx.tool_args),
            outcome,
            blocked_by,
            response_status,
            response_time_ms,
            success,
            error_message: if outcome == CallOutcome::Executed { None } else { owned(meta::ERROR) },
            created_at: Utc::now(),
        })
    }
}

impl std::fmt::Debug for AuditLogHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLogHook").field("config", &self.config).finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl PostToolUseHook for AuditLogHook {
    fn name(&self) -> &str {
        crate::AUDIT_LOG
    }

    fn priority(&self) -> i32 {
        1000
    }

    fn failure_policy(&self) -> FailurePolicy {
        self.config.failure_policy.into()
    }

    fn should_trigger(&self, ctx: &HookContext) -> bool {
        ctx.metadata.contains_key(meta::CONNECTOR_ID) || ctx.metadata.contains_key(meta::CONNECTOR_NAME)
    }

    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        let record = Self::record_for(ctx)?;
        self.sink.record_connector_call(&record).await?;
        let mut result = HookResult::allow();
        result.side_effects.push(format!(
            "audit_log: recorded {} call {} ({})",
            ctx.tool_name,
            record.tool_call_id,
            record.outcome.as_str()
        ));
        Ok(result)
    }
}
