//! The ReAct loop: the `Tool` trait and tool kinds, the loop that runs every tool call through the
//! PreToolUse and PostToolUse chains, `CallAgentTool` delegation and the run event stream.
//!
//! Filled in by the llm and agent-react issue.
