//! Model access: the [`ChatModel`] trait, our own message / tool-spec / tool-call types, an
//! OpenAI-compatible `/chat/completions` client ([`OpenAiModel`]) and the offline
//! [`ScriptedModel`].
//!
//! No third-party LLM type crosses this crate's boundary, and the crate knows nothing of hooks:
//! the agent loop in `agent-react` drives a `dyn ChatModel` with [`ChatRequest`]s and reads
//! [`ChatResponse`]s.
//!
//! A model is usually built from its persisted [`ModelConfig`] (DESIGN §4):
//!
//! ```
//! let config: llm::ModelConfig = serde_json::from_value(serde_json::json!({
//!     "provider": "scripted",
//!     "turns": [{"content": "hello"}]
//! })).unwrap();
//! let model = config.build().unwrap();
//! assert_eq!(model.name(), "scripted");
//! ```

mod config;
mod error;
mod openai;
mod scripted;
mod types;

pub use config::ModelConfig;
pub use error::LlmError;
pub use openai::{OpenAiConfig, OpenAiModel};
pub use scripted::{ScriptedModel, ScriptedToolCall, ScriptedTurn};
pub use types::{ChatModel, ChatRequest, ChatResponse, Message, ToolArguments, ToolCall, ToolSpec, Usage};
