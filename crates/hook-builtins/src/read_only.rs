use std::sync::Arc;

use hook_core::{HookContext, HookError, HookResult, PreToolUseHook, meta};
use serde::{Deserialize, Serialize};

use crate::ports::OrgPolicy;
use crate::sql::{SqlClass, SqlDialect, classify_sql_for};

/// Configuration of `read_only_guard` (`{name: "read_only_guard", config: {…}}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadOnlyGuardConfig {
    /// Extra tool names (exact) that count as writes although their metadata does not say so.
    pub write_tools: Vec<String>,
}

/// `read_only_guard` (Pre, priority 5): while the org is read-only, writes are blocked.
///
/// A call is a write (DESIGN §3) when its metadata `side_effect` is `"write"` (connector actions
/// and tools declared write), when its tool is listed in [`ReadOnlyGuardConfig::write_tools`], or
/// when it is a SQL tool (`<connector>__sql_query`, args `{sql, params?}`) whose `sql` is not a
/// pure read according to [`classify_sql_for`] with the dialect of metadata `sql_dialect`
/// (absent: [`SqlDialect::Any`]; a missing or non-string `sql` is a write).
///
/// The org's flag is read through [`OrgPolicy`] on every write call, never cached, so a flip
/// applies to the very next call. A write without `org_id` metadata or a policy failure is a hook
/// failure (fail closed: the call is blocked).
pub struct ReadOnlyGuard {
    policy: Arc<dyn OrgPolicy>,
    config: ReadOnlyGuardConfig,
}

/// The suffix of SQL tools' names (`<connector>__sql_query`).
pub const SQL_TOOL_SUFFIX: &str = "__sql_query";

impl ReadOnlyGuard {
    pub fn new(policy: Arc<dyn OrgPolicy>, config: ReadOnlyGuardConfig) -> Self {
        ReadOnlyGuard { policy, config }
    }

    /// `Some(reason)` when the call is a write.
    fn write_reason(&self, ctx: &HookContext) -> Option<String> {
        if ctx.meta_str(meta::SIDE_EFFECT) == Some("write") {
            return Some("the tool is declared as a write".into());
        }
        if self.config.write_tools.iter().any(|t| t == &ctx.tool_name) {
            return Some("the tool is configured as a write".into());
        }
        if ctx.tool_name.ends_with(SQL_TOOL_SUFFIX) {
            return match ctx.tool_args.get("sql").and_then(|v| v.as_str()) {
                None => Some("the SQL tool was called without a `sql` string".into()),
                Some(sql) => match classify_sql_for(sql, dialect_of(ctx)) {
                    SqlClass::Read => None,
                    SqlClass::Write { reason } => Some(format!("the SQL is not a pure read: {reason}")),
                },
            };
        }
        None
    }
}

/// The dialect named by metadata `sql_dialect`; unknown or absent ⇒ [`SqlDialect::Any`].
fn dialect_of(ctx: &HookContext) -> SqlDialect {
    ctx.meta_str(meta::SQL_DIALECT).and_then(SqlDialect::parse).unwrap_or(SqlDialect::Any)
}

impl std::fmt::Debug for ReadOnlyGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnlyGuard").field("config", &self.config).finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl PreToolUseHook for ReadOnlyGuard {
    fn name(&self) -> &str {
        crate::READ_ONLY_GUARD
    }

    fn priority(&self) -> i32 {
        5
    }

    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        let Some(reason) = self.write_reason(ctx) else {
            return Ok(HookResult::allow());
        };
        let org_id = ctx
            .meta_str(meta::ORG_ID)
            .ok_or_else(|| HookError::msg("cannot check the read-only policy of a write: no org_id in metadata"))?;
        if self.policy.is_read_only(org_id).await? {
            let mut result = HookResult::block(format!(
                "the organization is read-only: write operations are blocked and the tool did not run ({reason})"
            ));
            result.side_effects.push(format!("read_only_guard: blocked {} ({reason})", ctx.tool_name));
            return Ok(result);
        }
        Ok(HookResult::allow())
    }
}
