use hook_core::{HookContext, HookError, HookResult, PostToolUseHook};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Configuration of `result_truncate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultTruncateConfig {
    /// The longest observation kept whole, in Unicode scalar values (Rust `char`s). Default 8000.
    pub max_chars: usize,
}

impl Default for ResultTruncateConfig {
    fn default() -> Self {
        ResultTruncateConfig { max_chars: 8000 }
    }
}

/// `result_truncate` (Post, priority 100): an observation longer than `max_chars` becomes a
/// string made of its first `max_chars` characters, a newline, and
/// `[truncated: showing <max_chars> of <N> chars]`, where N is the full length in characters
/// (see [`truncate_text`]). A JSON (non-string) result is serialized with `serde_json` first; a
/// string result is measured as is. Shorter results are left untouched. The untruncated result is
/// kept by the agent loop (`tool_executions`), not by this hook.
#[derive(Debug, Clone)]
pub struct ResultTruncateHook {
    config: ResultTruncateConfig,
}

impl ResultTruncateHook {
    pub fn new(config: ResultTruncateConfig) -> Self {
        ResultTruncateHook { config }
    }
}

/// `Some(truncated)` when `text` has more than `max_chars` characters: the first `max_chars`
/// characters (cut on a char boundary), then `"\n[truncated: showing <max_chars> of <N> chars]"`.
pub fn truncate_text(text: &str, max_chars: usize) -> Option<String> {
    let (cut, _) = text.char_indices().nth(max_chars)?;
    let total = max_chars + text[cut..].chars().count();
    Some(format!("{}\n[truncated: showing {max_chars} of {total} chars]", &text[..cut]))
}

#[async_trait::async_trait]
impl PostToolUseHook for ResultTruncateHook {
    fn name(&self) -> &str {
        crate::RESULT_TRUNCATE
    }

    fn priority(&self) -> i32 {
        100
    }

    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        let Some(result) = &ctx.tool_result else {
            return Ok(HookResult::allow());
        };
        let serialized;
        let text = match result {
            Value::String(s) => s.as_str(),
            other => {
                serialized = serde_json::to_string(other)?;
                serialized.as_str()
            }
        };
        match truncate_text(text, self.config.max_chars) {
            None => Ok(HookResult::allow()),
            Some(truncated) => {
                let total = text.chars().count();
                let mut out = HookResult::with_result(Value::String(truncated));
                out.side_effects.push(format!(
                    "result_truncate: kept {} of {total} chars of {}",
                    self.config.max_chars, ctx.tool_name
                ));
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        assert_eq!(truncate_text("héllo", 5), None);
        assert_eq!(truncate_text("héllo", 2).unwrap(), "hé\n[truncated: showing 2 of 5 chars]");
        assert_eq!(truncate_text("🦀🦀🦀", 1).unwrap(), "🦀\n[truncated: showing 1 of 3 chars]");
        assert_eq!(truncate_text("abc", 0).unwrap(), "\n[truncated: showing 0 of 3 chars]");
    }
}
