use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, Message, ToolArguments, ToolCall};

/// The offline model of DESIGN §4: a fixed list of turns, for the demo and tests.
///
/// Within one run, each call consumes the next turn; every run starts at the first turn; past the
/// last turn the model answers with the last `content` of the script, or an empty answer. The
/// position is read from the transcript — the number of assistant messages after the last user
/// message — so one instance serves any number of concurrent runs and a restarted run resumes
/// where it stopped.
///
/// Tool call ids are `call_<turn>_<index>` (0-based), unique within a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedModel {
    turns: Vec<ScriptedTurn>,
}

/// One scripted model turn: text, tool calls, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
}

/// One scripted tool call. `arguments` is a JSON value; a JSON *string* is taken as the provider's
/// raw arguments text (so a script can exercise invalid JSON: `"arguments": "{not json"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call id; `call_<turn>_<index>` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl ScriptedModel {
    /// A model that plays `turns` in order.
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        ScriptedModel { turns }
    }

    /// The scripted turns.
    pub fn turns(&self) -> &[ScriptedTurn] {
        &self.turns
    }

    fn position(messages: &[Message]) -> usize {
        let start = messages.iter().rposition(|m| matches!(m, Message::User { .. })).map_or(0, |i| i + 1);
        messages[start..].iter().filter(|m| matches!(m, Message::Assistant { .. })).count()
    }
}

#[async_trait::async_trait]
impl ChatModel for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let turn_index = Self::position(&request.messages);
        let Some(turn) = self.turns.get(turn_index) else {
            let content = self.turns.iter().rev().find_map(|t| t.content.clone()).unwrap_or_default();
            return Ok(ChatResponse {
                content: Some(content),
                finish_reason: Some("stop".into()),
                ..Default::default()
            });
        };
        let tool_calls: Vec<ToolCall> = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: call.id.clone().unwrap_or_else(|| format!("call_{turn_index}_{i}")),
                name: call.name.clone(),
                arguments: match &call.arguments {
                    Value::String(raw) => ToolArguments::parse(raw),
                    other => ToolArguments::Parsed { value: other.clone() },
                },
            })
            .collect();
        let finish_reason = if tool_calls.is_empty() { "stop" } else { "tool_calls" };
        Ok(ChatResponse {
            content: turn.content.clone(),
            tool_calls,
            finish_reason: Some(finish_reason.into()),
            usage: None,
        })
    }
}
