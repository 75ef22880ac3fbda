//! The Tollgate hook contract and the registry that runs it.
//!
//! A *hook* is code that runs outside the LLM loop at a fixed point of an agent run, which the
//! model can neither see nor skip:
//!
//! - [`PreToolUseHook`]: after the model picks a tool, before the tool runs. It may block the call
//!   (the block reason becomes the tool's observation) or rewrite its arguments; rewrites chain to
//!   later hooks in priority order.
//! - [`PostToolUseHook`]: after the tool returns (or was blocked, or failed), before the model sees
//!   the result. It may rewrite the observation.
//! - [`SessionStartHook`]: before the first model call. It may inject context or refuse the run.
//!
//! A [`HookRegistry`] holds the hooks of one agent and combines their verdicts. Failure is closed by
//! default: a hook that returns `Err`, panics or runs past its [`timeout`](PreToolUseHook::timeout)
//! blocks the call (see [`FailurePolicy`]).
//!
//! This crate does no IO: no database, no HTTP. It needs a Tokio runtime with the time driver
//! enabled, because every hook runs under its own timeout.
//!
//! # Example: a read-only guard
//!
//! The seed's `ReadOnlyGuard`, written against this API: while the org is read-only, every tool
//! whose `side_effect` metadata is `"write"` is blocked.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! use hook_core::{HookContext, HookError, HookRegistry, HookResult, PreToolUseHook, meta};
//!
//! struct ReadOnlyGuard {
//!     read_only: Arc<AtomicBool>,
//! }
//!
//! #[async_trait::async_trait]
//! impl PreToolUseHook for ReadOnlyGuard {
//!     fn name(&self) -> &str {
//!         "read_only_guard"
//!     }
//!     fn priority(&self) -> i32 {
//!         5
//!     }
//!     fn should_trigger(&self, ctx: &HookContext) -> bool {
//!         ctx.metadata.get(meta::SIDE_EFFECT).and_then(|v| v.as_str()) == Some("write")
//!     }
//!     async fn execute(&self, _ctx: &HookContext) -> Result<HookResult, HookError> {
//!         if self.read_only.load(Ordering::SeqCst) {
//!             return Ok(HookResult::block(
//!                 "the organization is read-only: write operations are blocked and the tool did not run",
//!             ));
//!         }
//!         Ok(HookResult::allow())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let read_only = Arc::new(AtomicBool::new(true));
//! let mut registry = HookRegistry::new();
//! registry.register_pre(Arc::new(ReadOnlyGuard { read_only: read_only.clone() }));
//!
//! let mut ctx = HookContext::pre_tool_use("erp__create_payment", serde_json::json!({"amount": 100}));
//! ctx.metadata.insert(meta::SIDE_EFFECT.into(), "write".into());
//!
//! let verdict = registry.run_pre_tool_use(&ctx).await;
//! assert!(!verdict.allow);
//! assert!(verdict.error.unwrap().contains("read-only"));
//!
//! // The flag applies to the very next call.
//! read_only.store(false, Ordering::SeqCst);
//! assert!(registry.run_pre_tool_use(&ctx).await.allow);
//! # }
//! ```

mod context;
mod hook;
pub mod meta;
mod registry;

pub use context::{HookContext, HookPoint, HookResult};
pub use hook::{FailurePolicy, HookError, PostToolUseHook, PreToolUseHook, SessionStartHook};
pub use registry::{HookRegistry, HookRun};
