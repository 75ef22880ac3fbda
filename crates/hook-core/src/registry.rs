use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use crate::{
    FailurePolicy, HookContext, HookError, HookPoint, HookResult, PostToolUseHook, PreToolUseHook, SessionStartHook,
};

/// The hooks of one agent, kept in run order, and the combination of their verdicts.
///
/// Hooks run one at a time in ascending [`priority`](PreToolUseHook::priority); equal priorities
/// keep registration order. Each hook runs under its own timeout with panics caught, so a broken
/// hook never takes the process down and never holds the chain longer than its timeout: a hook
/// still pending at its deadline is dropped (abandoned). A hook that blocks its thread
/// synchronously cannot be interrupted; hooks must do blocking work through
/// `tokio::task::spawn_blocking`.
///
/// A registry is `Send + Sync`: build it once per agent and share it (`Arc<HookRegistry>`) across
/// any number of concurrent runs.
#[derive(Default)]
pub struct HookRegistry {
    pre: Vec<Entry<dyn PreToolUseHook>>,
    post: Vec<Entry<dyn PostToolUseHook>>,
    session_start: Vec<Entry<dyn SessionStartHook>>,
}

/// The combined verdict of a chain, with who decided it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRun {
    /// The combined result, as [`HookRegistry::run_pre_tool_use`] and friends return it.
    pub result: HookResult,
    /// The name of the hook that blocked (Pre, SessionStart) or withheld the result (Post), if any.
    pub blocked_by: Option<String>,
}

struct Entry<H: ?Sized> {
    hook: Arc<H>,
    priority: i32,
}

impl std::fmt::Debug for HookRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRegistry")
            .field("pre", &self.pre_hook_names())
            .field("post", &self.post_hook_names())
            .field("session_start", &self.session_start_hook_names())
            .finish()
    }
}

/// Inserts after every entry whose priority is lower or equal, which keeps the sort stable.
fn insert_sorted<H: ?Sized>(entries: &mut Vec<Entry<H>>, hook: Arc<H>, priority: i32) {
    let at = entries.partition_point(|e| e.priority <= priority);
    entries.insert(at, Entry { hook, priority });
}

impl HookRegistry {
    /// An empty registry: every call is allowed unchanged.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a PreToolUse hook at its priority.
    pub fn register_pre(&mut self, hook: Arc<dyn PreToolUseHook>) {
        let priority = hook.priority();
        insert_sorted(&mut self.pre, hook, priority);
    }

    /// Adds a PostToolUse hook at its priority.
    pub fn register_post(&mut self, hook: Arc<dyn PostToolUseHook>) {
        let priority = hook.priority();
        insert_sorted(&mut self.post, hook, priority);
    }

    /// Adds a SessionStart hook at its priority.
    pub fn register_session_start(&mut self, hook: Arc<dyn SessionStartHook>) {
        let priority = hook.priority();
        insert_sorted(&mut self.session_start, hook, priority);
    }

    /// The PreToolUse hooks' names, in run order.
    pub fn pre_hook_names(&self) -> Vec<&str> {
        self.pre.iter().map(|e| e.hook.name()).collect()
    }

    /// The PostToolUse hooks' names, in run order.
    pub fn post_hook_names(&self) -> Vec<&str> {
        self.post.iter().map(|e| e.hook.name()).collect()
    }

    /// The SessionStart hooks' names, in run order.
    pub fn session_start_hook_names(&self) -> Vec<&str> {
        self.session_start.iter().map(|e| e.hook.name()).collect()
    }

    /// Runs the PreToolUse chain. See [`run_pre_tool_use_detailed`](Self::run_pre_tool_use_detailed).
    pub async fn run_pre_tool_use(&self, ctx: &HookContext) -> HookResult {
        self.run_pre_tool_use_detailed(ctx).await.result
    }

    /// Runs the PostToolUse chain. See [`run_post_tool_use_detailed`](Self::run_post_tool_use_detailed).
    pub async fn run_post_tool_use(&self, ctx: &HookContext) -> HookResult {
        self.run_post_tool_use_detailed(ctx).await.result
    }

    /// Runs the SessionStart chain. See [`run_session_start_detailed`](Self::run_session_start_detailed).
    pub async fn run_session_start(&self, ctx: &HookContext) -> HookResult {
        self.run_session_start_detailed(ctx).await.result
    }

    /// Runs the PreToolUse chain on `ctx`.
    ///
    /// Each hook sees in `ctx.tool_args` the arguments left by the hooks before it. The first hook
    /// that blocks stops the chain: `allow = false` and `error` is that hook's error, or
    /// `blocked by hook '<name>'`. A failed hook under [`FailurePolicy::Closed`] blocks with
    /// `hook '<name>' failed: <why>`; under [`FailurePolicy::Open`] it is skipped. `modified_args`
    /// holds the final arguments when any hook rewrote them; `side_effects` are those of every hook
    /// that ran, in order, plus one per failure.
    pub async fn run_pre_tool_use_detailed(&self, ctx: &HookContext) -> HookRun {
        // The context is copied only once a hook rewrites the arguments.
        let mut rewritten: Option<HookContext> = None;
        let mut side_effects = Vec::new();
        for entry in &self.pre {
            let hook = &*entry.hook;
            let current = rewritten.as_ref().unwrap_or(ctx);
            let outcome = match guarded_trigger(|| hook.should_trigger(current)) {
                Ok(false) => continue,
                Ok(true) => guarded(hook.name(), HookPoint::PreToolUse, hook.timeout(), hook.execute(current)).await,
                Err(why) => Err(why),
            };
            match outcome {
                Ok(result) => {
                    side_effects.extend(result.side_effects);
                    if let Some(args) = result.modified_args {
                        match &mut rewritten {
                            Some(current) => current.tool_args = args,
                            None => rewritten = Some(with_args(ctx, args)),
                        }
                    }
                    if !result.allow {
                        let error = result.error.unwrap_or_else(|| format!("blocked by hook '{}'", hook.name()));
                        return pre_blocked(hook.name(), error, rewritten, side_effects);
                    }
                }
                Err(why) => {
                    side_effects.push(failure_side_effect(hook.name(), hook.failure_policy(), &why));
                    if hook.failure_policy() == FailurePolicy::Closed {
                        let error = format!("hook '{}' failed: {why}", hook.name());
                        return pre_blocked(hook.name(), error, rewritten, side_effects);
                    }
                }
            }
        }
        HookRun {
            result: HookResult { modified_args: rewritten.map(|c| c.tool_args), side_effects, ..HookResult::default() },
            blocked_by: None,
        }
    }

    /// Runs the PostToolUse chain on `ctx`.
    ///
    /// Each hook sees in `ctx.tool_result` the result left by the hooks before it; `allow` from a
    /// Post hook is ignored, so every hook that triggers runs. A failed hook under
    /// [`FailurePolicy::Closed`] withholds the result: `modified_result` becomes the string
    /// `result withheld: hook '<name>' failed` and later rewrites no longer replace it (later hooks
    /// still run, so an audit hook still records the call). `modified_result` is `None` when no
    /// hook changed the result.
    pub async fn run_post_tool_use_detailed(&self, ctx: &HookContext) -> HookRun {
        let mut rewritten: Option<HookContext> = None;
        let mut side_effects = Vec::new();
        let mut withheld_by: Option<String> = None;
        for entry in &self.post {
            let hook = &*entry.hook;
            let current = rewritten.as_ref().unwrap_or(ctx);
            let outcome = match guarded_trigger(|| hook.should_trigger(current)) {
                Ok(false) => continue,
                Ok(true) => guarded(hook.name(), HookPoint::PostToolUse, hook.timeout(), hook.execute(current)).await,
                Err(why) => Err(why),
            };
            match outcome {
                Ok(result) => {
                    side_effects.extend(result.side_effects);
                    if let (Some(new), None) = (result.modified_result, &withheld_by) {
                        rewritten.get_or_insert_with(|| ctx.clone()).tool_result = Some(new);
                    }
                }
                Err(why) => {
                    side_effects.push(failure_side_effect(hook.name(), hook.failure_policy(), &why));
                    if hook.failure_policy() == FailurePolicy::Closed && withheld_by.is_none() {
                        let withheld = Value::String(format!("result withheld: hook '{}' failed", hook.name()));
                        rewritten.get_or_insert_with(|| ctx.clone()).tool_result = Some(withheld);
                        withheld_by = Some(hook.name().to_owned());
                    }
                }
            }
        }
        HookRun {
            result: HookResult {
                modified_result: rewritten.and_then(|c| c.tool_result),
                side_effects,
                ..HookResult::default()
            },
            blocked_by: withheld_by,
        }
    }

    /// Runs the SessionStart chain on `ctx`.
    ///
    /// `additional_context` is the `additional_context` of every hook that ran, in order, joined by
    /// a blank line (`None` when no hook added any). A hook that returns `allow = false`, or fails
    /// under [`FailurePolicy::Closed`], stops the chain and the run must not start: `allow = false`
    /// with the hook's error (`hook '<name>' failed: <why>` for a failure).
    pub async fn run_session_start_detailed(&self, ctx: &HookContext) -> HookRun {
        let mut contexts: Vec<String> = Vec::new();
        let mut side_effects = Vec::new();
        for entry in &self.session_start {
            let hook = &*entry.hook;
            let outcome = match guarded_trigger(|| hook.should_trigger(ctx)) {
                Ok(false) => continue,
                Ok(true) => guarded(hook.name(), HookPoint::SessionStart, hook.timeout(), hook.execute(ctx)).await,
                Err(why) => Err(why),
            };
            let blocked = match outcome {
                Ok(result) => {
                    side_effects.extend(result.side_effects);
                    contexts.extend(result.additional_context);
                    (!result.allow)
                        .then(|| result.error.unwrap_or_else(|| format!("blocked by hook '{}'", hook.name())))
                }
                Err(why) => {
                    side_effects.push(failure_side_effect(hook.name(), hook.failure_policy(), &why));
                    (hook.failure_policy() == FailurePolicy::Closed)
                        .then(|| format!("hook '{}' failed: {why}", hook.name()))
                }
            };
            if let Some(error) = blocked {
                return HookRun {
                    result: HookResult { allow: false, error: Some(error), side_effects, ..HookResult::default() },
                    blocked_by: Some(hook.name().to_owned()),
                };
            }
        }
        let additional_context = (!contexts.is_empty()).then(|| contexts.join("\n\n"));
        HookRun { result: HookResult { additional_context, side_effects, ..HookResult::default() }, blocked_by: None }
    }
}

/// A copy of `ctx` with other arguments, without cloning the old ones.
fn with_args(ctx: &HookContext, tool_args: Value) -> HookContext {
    HookContext {
        hook_point: ctx.hook_point,
        tool_name: ctx.tool_name.clone(),
        tool_args,
        tool_result: ctx.tool_result.clone(),
        agent_id: ctx.agent_id.clone(),
        user_id: ctx.user_id.clone(),
        metadata: ctx.metadata.clone(),
    }
}

fn pre_blocked(name: &str, error: String, rewritten: Option<HookContext>, side_effects: Vec<String>) -> HookRun {
    HookRun {
        result: HookResult {
            allow: false,
            error: Some(error),
            modified_args: rewritten.map(|c| c.tool_args),
            side_effects,
            ..HookResult::default()
        },
        blocked_by: Some(name.to_owned()),
    }
}

fn failure_side_effect(name: &str, policy: FailurePolicy, why: &str) -> String {
    match policy {
        FailurePolicy::Closed => format!("hook '{name}' failed: {why}"),
        FailurePolicy::Open => format!("hook '{name}' failed: {why} (failure policy open: hook skipped)"),
    }
}

/// Calls `should_trigger`, turning a panic into a failure.
fn guarded_trigger(trigger: impl FnOnce() -> bool) -> Result<bool, String> {
    std::panic::catch_unwind(AssertUnwindSafe(trigger))
        .map_err(|panic| format!("should_trigger panicked: {}", panic_message(&*panic)))
}

/// A guarded run's layers: the timeout, the caught panic, the hook's own result.
type Guarded = Result<Result<Result<HookResult, HookError>, Box<dyn Any + Send>>, tokio::time::error::Elapsed>;

/// The future a hook's `execute` returns (`async_trait` boxes it).
type HookFuture<'a> = Pin<Box<dyn Future<Output = Result<HookResult, HookError>> + Send + 'a>>;

/// Runs one hook under its timeout with panics caught, inside a `hook` tracing span that records
/// the hook's name, point, verdict (`allow`, `rewrite`, `block` or `failed`) and duration (µs).
///
/// The fast path polls the hook once, in place: a hook that is ready at once (most are) costs no
/// timer and no span wrapper; one that is still pending continues under a boxed timeout.
async fn guarded(
    name: &str,
    point: HookPoint,
    timeout: Duration,
    mut execute: HookFuture<'_>,
) -> Result<HookResult, String> {
    let span = tracing::info_span!(
        "hook",
        hook.name = name,
        hook.point = point.as_str(),
        hook.verdict = tracing::field::Empty,
        hook.duration_us = tracing::field::Empty,
    );
    if !span.is_disabled() {
        return Box::pin(traced(span, name, point, timeout, execute)).await;
    }
    let first = std::future::poll_fn(|cx| {
        Poll::Ready(std::panic::catch_unwind(AssertUnwindSafe(|| execute.as_mut().poll(cx))))
    })
    .await;
    match first {
        Ok(Poll::Ready(done)) => settle(Ok(Ok(done)), timeout),
        Ok(Poll::Pending) => settle(Box::pin(finish(timeout, execute)).await, timeout),
        Err(panic) => settle(Ok(Err(panic)), timeout),
    }
}

/// The rest of a hook that did not finish on its first poll, under its timeout.
async fn finish(timeout: Duration, execute: HookFuture<'_>) -> Guarded {
    tokio::time::timeout(timeout, AssertUnwindSafe(execute).catch_unwind()).await
}

/// [`guarded`] with a subscriber listening: the whole run inside the span, then the verdict and
/// duration recorded on it.
async fn traced(
    span: tracing::Span,
    name: &str,
    point: HookPoint,
    timeout: Duration,
    execute: HookFuture<'_>,
) -> Result<HookResult, String> {
    let started = Instant::now();
    let outcome = settle(finish(timeout, execute).instrument(span.clone()).await, timeout);
    let verdict = match &outcome {
        Ok(r) if !r.allow && point != HookPoint::PostToolUse => "block",
        Ok(r) if r.modified_args.is_some() || r.modified_result.is_some() => "rewrite",
        Ok(_) => "allow",
        Err(_) => "failed",
    };
    span.record("hook.verdict", verdict);
    span.record("hook.duration_us", started.elapsed().as_micros() as u64);
    if let Err(why) = &outcome {
        span.in_scope(|| tracing::warn!(hook.name = name, "hook failed: {why}"));
    }
    outcome
}

/// Turns the layers of a guarded run (timeout, panic, hook error) into the hook's result or the
/// failure's description.
fn settle(outcome: Guarded, timeout: Duration) -> Result<HookResult, String> {
    match outcome {
        Ok(Ok(Ok(result))) => Ok(result),
        Ok(Ok(Err(error))) => Err(error.to_string()),
        Ok(Err(panic)) => Err(format!("panicked: {}", panic_message(&*panic))),
        Err(_elapsed) => Err(format!("timed out after {}", format_duration(timeout))),
    }
}

fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_sorted_is_stable() {
        let mut v: Vec<Entry<str>> = Vec::new();
        for (name, p) in [("a", 5), ("b", 1), ("c", 5), ("d", 1), ("e", 9)] {
            insert_sorted(&mut v, Arc::from(name), p);
        }
        let names: Vec<&str> = v.iter().map(|e| &*e.hook).collect();
        assert_eq!(names, ["b", "d", "a", "c", "e"]);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_millis(50)), "50ms");
    }
}
