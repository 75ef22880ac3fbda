use std::sync::{Arc, LazyLock};

use serde_json::{Value, json};

use crate::ToolBuildError;
use crate::tool::{SideEffect, Tool, ToolCallContext, ToolError, ToolOutput};

/// `current_time`: the current UTC time as RFC 3339 and Unix seconds. No arguments.
#[derive(Debug, Clone, Copy, Default)]
pub struct CurrentTimeTool;

static EMPTY_OBJECT_SCHEMA: LazyLock<Value> =
    LazyLock::new(|| json!({"type": "object", "properties": {}, "additionalProperties": false}));

#[async_trait::async_trait]
impl Tool for CurrentTimeTool {
    fn name(&self) -> &str {
        "current_time"
    }
    fn description(&self) -> &str {
        "Returns the current date and time in UTC."
    }
    fn parameters(&self) -> &Value {
        &EMPTY_OBJECT_SCHEMA
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
        let now = chrono::Utc::now();
        Ok(ToolOutput::new(json!({"utc": now.to_rfc3339(), "unix": now.timestamp()})))
    }
}

/// The built-in tool called `name` (an agent config's `tools` entry): `current_time`.
///
/// # Errors
/// [`ToolBuildError::UnknownBuiltin`] for any other name.
pub fn builtin_tool(name: &str) -> Result<Arc<dyn Tool>, ToolBuildError> {
    match name {
        "current_time" => Ok(Arc::new(CurrentTimeTool)),
        other => Err(ToolBuildError::UnknownBuiltin(other.to_owned())),
    }
}
