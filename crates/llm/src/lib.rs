//! Model access: the `ChatModel` trait, our own message / tool-spec / tool-call types, an
//! OpenAI-compatible `/chat/completions` client and the offline `ScriptedModel`.
//!
//! Filled in by the llm and agent-react issue.
