use std::fmt;
use std::time::Duration;

use crate::{HookContext, HookResult};

/// What the registry does when a hook fails (returns `Err`, panics, or runs past its timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Fail closed (the default): Pre blocks the call, Post withholds the result, SessionStart
    /// refuses the run.
    #[default]
    Closed,
    /// Fail open: the failed hook is skipped as if it had allowed and changed nothing.
    Open,
}

/// A hook's own failure.
///
/// Build it with [`HookError::msg`] or convert any `std::error::Error` with `?`. Like
/// `anyhow::Error`, it does not implement `std::error::Error` itself, which is what lets the
/// blanket `From` exist.
pub struct HookError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl HookError {
    /// An error with this message and no source.
    pub fn msg(message: impl fmt::Display) -> Self {
        HookError { message: message.to_string(), source: None }
    }

    /// The underlying error, when this one was converted from another.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl<E> From<E> for HookError
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        HookError { message: error.to_string(), source: Some(Box::new(error)) }
    }
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookError").field("message", &self.message).field("source", &self.source).finish()
    }
}

/// The default timeout of a hook: 30 s.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

macro_rules! hook_trait {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[async_trait::async_trait]
        pub trait $name: Send + Sync {
            /// A stable name, used in block messages (`blocked by hook '<name>'`), side effects,
            /// traces and agent configuration.
            fn name(&self) -> &str;

            /// Lower runs earlier; equal priorities keep registration order. Default 50. Read once,
            /// at registration.
            fn priority(&self) -> i32 {
                50
            }

            /// `false` skips the hook entirely for this call. Must be cheap and must not block.
            fn should_trigger(&self, _ctx: &HookContext) -> bool {
                true
            }

            /// How long [`execute`](Self::execute) may run before it counts as failed and is
            /// abandoned. Default 30 s.
            fn timeout(&self) -> Duration {
                DEFAULT_TIMEOUT
            }

            /// What a failure of this hook means. Default [`FailurePolicy::Closed`].
            fn failure_policy(&self) -> FailurePolicy {
                FailurePolicy::Closed
            }

            /// Run the hook. `Err` and panics are failures handled by [`failure_policy`](Self::failure_policy).
            async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError>;
        }
    };
}

hook_trait!(
    /// A hook that runs after the model picked a tool and before the tool runs. It may block the
    /// call (`allow = false`) or rewrite its arguments (`modified_args`).
    PreToolUseHook
);
hook_trait!(
    /// A hook that runs after every tool call, whatever its outcome (see
    /// [`meta::OUTCOME`](crate::meta::OUTCOME)). It may rewrite the observation
    /// (`modified_result`); its `allow` is ignored.
    PostToolUseHook
);
hook_trait!(
    /// A hook that runs before the first model call. It may inject context
    /// (`additional_context`) or refuse the run (`allow = false`).
    SessionStartHook
);
