use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::LlmError;

/// A chat model: one request (the transcript and the tools on offer), one assistant message back.
///
/// Implementations must be `Send + Sync`; one model instance may serve concurrent runs, so it keeps
/// no per-run state (the [`ScriptedModel`](crate::ScriptedModel) reads its position from the
/// transcript).
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync + std::fmt::Debug {
    /// A short label for logs and traces, e.g. `openai:gpt-4.1-mini` or `scripted`.
    fn name(&self) -> &str;

    /// Asks the model for its next assistant message.
    ///
    /// # Errors
    /// [`LlmError`], classified so that callers can tell a retryable failure from a permanent one.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// One model call: the transcript so far and the tools the model may call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// A tool as offered to the model: its name, a description and its parameters as a JSON schema
/// (an `object` schema for every tool Tollgate exposes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One message of a transcript, in the roles of the OpenAI chat format.
///
/// Serialized with a `role` tag: `{"role":"user","content":"…"}`,
/// `{"role":"tool","tool_call_id":"…","content":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// The model's turn: text, tool calls, or both. `content` is `None` when the model only called
    /// tools.
    Assistant {
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The observation of one tool call, answering the assistant's call `tool_call_id`.
    Tool {
        tool_call_id: String,
        content: String,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System { content: content.into() }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User { content: content.into() }
    }

    /// A tool observation answering `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool { tool_call_id: tool_call_id.into(), content: content.into() }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (`call_…`); observations answer it. Unique within a run.
    pub id: String,
    pub name: String,
    pub arguments: ToolArguments,
}

/// A tool call's arguments. Providers send them as a JSON *string*; a string that does not parse
/// is kept, with the parse error, so that the agent can tell the model instead of crashing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolArguments {
    /// The arguments parsed as JSON.
    Parsed { value: Value },
    /// The raw string the model sent and why it is not valid JSON.
    Invalid { raw: String, error: String },
}

impl ToolArguments {
    /// Parses the provider's `arguments` string. An empty string means `{}` (some providers send
    /// nothing for a tool without parameters).
    pub fn parse(raw: &str) -> Self {
        if raw.trim().is_empty() {
            return ToolArguments::Parsed { value: Value::Object(Default::default()) };
        }
        match serde_json::from_str(raw) {
            Ok(value) => ToolArguments::Parsed { value },
            Err(e) => ToolArguments::Invalid { raw: raw.to_owned(), error: e.to_string() },
        }
    }

    /// The parsed value, if the arguments were valid JSON.
    pub fn value(&self) -> Option<&Value> {
        match self {
            ToolArguments::Parsed { value } => Some(value),
            ToolArguments::Invalid { .. } => None,
        }
    }

    /// The arguments as the provider's wire format wants them back: a JSON string (the raw text,
    /// unchanged, for invalid arguments).
    pub fn to_wire_string(&self) -> String {
        match self {
            ToolArguments::Parsed { value } => value.to_string(),
            ToolArguments::Invalid { raw, .. } => raw.clone(),
        }
    }
}

impl From<Value> for ToolArguments {
    fn from(value: Value) -> Self {
        ToolArguments::Parsed { value }
    }
}

/// The model's answer to one [`ChatRequest`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The assistant's text; `None` when it only called tools.
    pub content: Option<String>,
    /// The tool calls, in the order the model made them (several may come in one message).
    pub tool_calls: Vec<ToolCall>,
    /// The provider's `finish_reason` (`stop`, `tool_calls`, `length`, …), when it sent one.
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

impl ChatResponse {
    /// The assistant message to append to the transcript.
    pub fn to_message(&self) -> Message {
        Message::Assistant { content: self.content.clone(), tool_calls: self.tool_calls.clone() }
    }
}

/// Token counts as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}
