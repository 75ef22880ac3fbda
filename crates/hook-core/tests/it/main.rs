//! Integration tests of the hook-core contract: one test per rule of the registry.

mod tracing_spans;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hook_core::{
    FailurePolicy, HookContext, HookError, HookRegistry, HookResult, PostToolUseHook, PreToolUseHook, SessionStartHook,
    meta,
};
use serde_json::{Value, json};

/// What a test hook does when it runs.
#[derive(Clone)]
enum Act {
    Allow,
    Block(Option<&'static str>),
    /// Sets `key` to `value` in the args (or the result, for Post) it sees.
    Set(&'static str, Value),
    Result(Value),
    Context(&'static str),
    Fail,
    Panic,
    Hang,
}

/// A configurable hook that records, in a shared log, its name and the args/result it saw.
struct TestHook {
    name: &'static str,
    priority: i32,
    act: Act,
    policy: FailurePolicy,
    trigger: bool,
    log: Arc<Mutex<Vec<(String, Value)>>>,
}

impl TestHook {
    fn new(name: &'static str, priority: i32, act: Act, log: &Arc<Mutex<Vec<(String, Value)>>>) -> Self {
        TestHook { name, priority, act, policy: FailurePolicy::Closed, trigger: true, log: log.clone() }
    }
    fn open(mut self) -> Self {
        self.policy = FailurePolicy::Open;
        self
    }
    fn skipped(mut self) -> Self {
        self.trigger = false;
        self
    }

    async fn run(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        let seen = ctx.tool_result.clone().unwrap_or_else(|| ctx.tool_args.clone());
        self.log.lock().unwrap().push((self.name.to_owned(), seen.clone()));
        let mut result = match &self.act {
            Act::Allow => HookResult::allow(),
            Act::Block(None) => HookResult { allow: false, ..HookResult::default() },
            Act::Block(Some(reason)) => HookResult::block(*reason),
            Act::Set(key, value) => {
                let mut next = seen;
                next[*key] = value.clone();
                if ctx.tool_result.is_some() { HookResult::with_result(next) } else { HookResult::with_args(next) }
            }
            Act::Result(v) => HookResult::with_result(v.clone()),
            Act::Context(c) => HookResult::with_context(*c),
            Act::Fail => return Err(HookError::msg("backend unavailable")),
            Act::Panic => panic!("hook exploded"),
            Act::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                HookResult::allow()
            }
        };
        result.side_effects.push(format!("{} ran", self.name));
        Ok(result)
    }
}

macro_rules! impl_hook {
    ($($t:ident),*) => {$(
        #[async_trait::async_trait]
        impl $t for TestHook {
            fn name(&self) -> &str { self.name }
            fn priority(&self) -> i32 { self.priority }
            fn should_trigger(&self, _ctx: &HookContext) -> bool { self.trigger }
            fn timeout(&self) -> Duration { Duration::from_millis(200) }
            fn failure_policy(&self) -> FailurePolicy { self.policy }
            async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> { self.run(ctx).await }
        }
    )*};
}
impl_hook!(PreToolUseHook, PostToolUseHook, SessionStartHook);

type Log = Arc<Mutex<Vec<(String, Value)>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn names(log: &Log) -> Vec<String> {
    log.lock().unwrap().iter().map(|(n, _)| n.clone()).collect()
}

fn pre_ctx() -> HookContext {
    HookContext::pre_tool_use("crm__update", json!({"id": 1}))
}

fn post_ctx() -> HookContext {
    HookContext::post_tool_use("crm__update", json!({"id": 1}), json!({"ok": true}))
}

fn registry_pre(hooks: Vec<TestHook>) -> HookRegistry {
    let mut r = HookRegistry::new();
    for h in hooks {
        r.register_pre(Arc::new(h));
    }
    r
}

#[tokio::test]
async fn priority_ascending_and_ties_keep_registration_order() {
    let log = log();
    let r = registry_pre(vec![
        TestHook::new("late", 90, Act::Allow, &log),
        TestHook::new("tie_first", 10, Act::Allow, &log),
        TestHook::new("early", 1, Act::Allow, &log),
        TestHook::new("tie_second", 10, Act::Allow, &log),
        TestHook::new("default_priority", 50, Act::Allow, &log),
    ]);
    assert_eq!(r.pre_hook_names(), ["early", "tie_first", "tie_second", "default_priority", "late"]);
    let result = r.run_pre_tool_use(&pre_ctx()).await;
    assert!(result.allow);
    assert_eq!(names(&log), ["early", "tie_first", "tie_second", "default_priority", "late"]);
}

#[tokio::test]
async fn pre_rewrites_chain_and_are_never_erased() {
    let log = log();
    let r = registry_pre(vec![
        TestHook::new("a", 1, Act::Set("a", json!(1)), &log),
        TestHook::new("no_rewrite", 2, Act::Allow, &log),
        TestHook::new("b", 3, Act::Set("b", json!(2)), &log),
        TestHook::new("last", 4, Act::Allow, &log),
    ]);
    let result = r.run_pre_tool_use(&pre_ctx()).await;
    assert!(result.allow);
    assert_eq!(result.modified_args, Some(json!({"id": 1, "a": 1, "b": 2})));
    let seen: Vec<Value> = log.lock().unwrap().iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(
        seen,
        [json!({"id": 1}), json!({"id": 1, "a": 1}), json!({"id": 1, "a": 1}), json!({"id": 1, "a": 1, "b": 2})]
    );
}

#[tokio::test]
async fn pre_without_rewrites_reports_none() {
    let log = log();
    let r = registry_pre(vec![TestHook::new("a", 1, Act::Allow, &log)]);
    assert_eq!(r.run_pre_tool_use(&pre_ctx()).await.modified_args, None);
}

#[tokio::test]
async fn first_block_stops_the_chain_with_its_error() {
    let log = log();
    let r = registry_pre(vec![
        TestHook::new("first", 1, Act::Allow, &log),
        TestHook::new("guard", 2, Act::Block(Some("org is read-only")), &log),
        TestHook::new("never", 3, Act::Allow, &log),
    ]);
    let run = r.run_pre_tool_use_detailed(&pre_ctx()).await;
    assert!(!run.result.allow);
    assert_eq!(run.result.error.as_deref(), Some("org is read-only"));
    assert_eq!(run.blocked_by.as_deref(), Some("guard"));
    assert_eq!(names(&log), ["first", "guard"]);
}

#[tokio::test]
async fn a_block_without_error_names_the_hook() {
    let log = log();
    let r = registry_pre(vec![TestHook::new("silent", 1, Act::Block(None), &log)]);
    let result = r.run_pre_tool_use(&pre_ctx()).await;
    assert!(!result.allow);
    assert_eq!(result.error.as_deref(), Some("blocked by hook 'silent'"));
}

#[tokio::test]
async fn should_trigger_false_skips_the_hook_entirely() {
    let log = log();
    let r = registry_pre(vec![
        TestHook::new("skipped_block", 1, Act::Block(Some("no")), &log).skipped(),
        TestHook::new("runs", 2, Act::Allow, &log),
    ]);
    let result = r.run_pre_tool_use(&pre_ctx()).await;
    assert!(result.allow);
    assert_eq!(names(&log), ["runs"]);
    assert_eq!(result.side_effects, ["runs ran"]);
}

#[tokio::test]
async fn closed_failures_block_pre_and_name_the_hook() {
    for (act, why) in [
        (Act::Fail, "backend unavailable"),
        (Act::Panic, "panicked: hook exploded"),
        (Act::Hang, "timed out after 200ms"),
    ] {
        let log = log();
        let r = registry_pre(vec![TestHook::new("broken", 1, act, &log), TestHook::new("after", 2, Act::Allow, &log)]);
        let run = r.run_pre_tool_use_detailed(&pre_ctx()).await;
        assert!(!run.result.allow, "{why}");
        let expected = format!("hook 'broken' failed: {why}");
        assert_eq!(run.result.error.as_deref(), Some(expected.as_str()));
        assert_eq!(run.blocked_by.as_deref(), Some("broken"));
        assert_eq!(run.result.side_effects, [expected]);
        assert_eq!(names(&log), ["broken"], "the chain stops at a closed failure");
    }
}

#[tokio::test]
async fn open_failures_are_skipped_with_a_side_effect() {
    for act in [Act::Fail, Act::Panic, Act::Hang] {
        let log = log();
        let r = registry_pre(vec![
            TestHook::new("flaky", 1, act, &log).open(),
            TestHook::new("after", 2, Act::Set("x", json!(true)), &log),
        ]);
        let result = r.run_pre_tool_use(&pre_ctx()).await;
        assert!(result.allow);
        assert_eq!(result.modified_args, Some(json!({"id": 1, "x": true})));
        assert_eq!(result.side_effects.len(), 2);
        assert!(result.side_effects[0].starts_with("hook 'flaky' failed: "), "{:?}", result.side_effects);
        assert_eq!(result.side_effects[1], "after ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_hook_is_abandoned_at_its_timeout() {
    let log = log();
    let r = registry_pre(vec![TestHook::new("hung", 1, Act::Hang, &log)]);
    // The hook sleeps for an hour; the chain must come back once its 200 ms timeout passes.
    let result = tokio::time::timeout(Duration::from_secs(60), r.run_pre_tool_use(&pre_ctx()))
        .await
        .expect("the chain waited for the hung hook");
    assert!(!result.allow);
}

#[tokio::test]
async fn post_rewrites_chain_and_allow_is_ignored() {
    let log = log();
    let mut r = HookRegistry::new();
    r.register_post(Arc::new(TestHook::new("tag", 1, Act::Set("tag", json!("a")), &log)));
    r.register_post(Arc::new(TestHook::new("blocker", 2, Act::Block(Some("ignored")), &log)));
    r.register_post(Arc::new(TestHook::new("tag2", 3, Act::Set("tag2", json!("b")), &log)));
    let result = r.run_post_tool_use(&post_ctx()).await;
    assert!(result.allow, "allow from a Post hook is ignored");
    assert_eq!(result.error, None);
    assert_eq!(result.modified_result, Some(json!({"ok": true, "tag": "a", "tag2": "b"})));
    assert_eq!(names(&log), ["tag", "blocker", "tag2"]);
    let seen: Vec<Value> = log.lock().unwrap().iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(seen[2], json!({"ok": true, "tag": "a"}));
}

#[tokio::test]
async fn post_closed_failure_withholds_the_result_but_later_hooks_still_run() {
    for act in [Act::Fail, Act::Panic, Act::Hang] {
        let log = log();
        let mut r = HookRegistry::new();
        r.register_post(Arc::new(TestHook::new("redact", 1, act, &log)));
        r.register_post(Arc::new(TestHook::new("rewrite", 2, Act::Result(json!("late rewrite")), &log)));
        r.register_post(Arc::new(TestHook::new("audit", 3, Act::Allow, &log)));
        let run = r.run_post_tool_use_detailed(&post_ctx()).await;
        assert_eq!(run.result.modified_result, Some(json!("result withheld: hook 'redact' failed")));
        assert_eq!(run.blocked_by.as_deref(), Some("redact"));
        assert_eq!(names(&log), ["redact", "rewrite", "audit"]);
        assert!(run.result.side_effects[0].starts_with("hook 'redact' failed: "));
    }
}

#[tokio::test]
async fn post_open_failure_keeps_the_result() {
    let log = log();
    let mut r = HookRegistry::new();
    r.register_post(Arc::new(TestHook::new("flaky", 1, Act::Fail, &log).open()));
    let result = r.run_post_tool_use(&post_ctx()).await;
    assert_eq!(result.modified_result, None);
    assert_eq!(result.side_effects.len(), 1);
}

#[tokio::test]
async fn session_start_concatenates_context_in_order() {
    let log = log();
    let mut r = HookRegistry::new();
    r.register_session_start(Arc::new(TestHook::new("second", 20, Act::Context("Policy B."), &log)));
    r.register_session_start(Arc::new(TestHook::new("first", 10, Act::Context("Policy A."), &log)));
    r.register_session_start(Arc::new(TestHook::new("nothing", 30, Act::Allow, &log)));
    let result = r.run_session_start(&HookContext::session_start()).await;
    assert!(result.allow);
    assert_eq!(result.additional_context.as_deref(), Some("Policy A.\n\nPolicy B."));
    assert_eq!(result.side_effects, ["first ran", "second ran", "nothing ran"]);
}

#[tokio::test]
async fn session_start_closed_failure_refuses_the_run() {
    for act in [Act::Fail, Act::Panic, Act::Hang] {
        let log = log();
        let mut r = HookRegistry::new();
        r.register_session_start(Arc::new(TestHook::new("ctx", 1, Act::Context("x"), &log)));
        r.register_session_start(Arc::new(TestHook::new("broken", 2, act, &log)));
        r.register_session_start(Arc::new(TestHook::new("never", 3, Act::Context("y"), &log)));
        let result = r.run_session_start(&HookContext::session_start()).await;
        assert!(!result.allow);
        assert!(result.error.as_deref().unwrap().starts_with("hook 'broken' failed: "));
        assert_eq!(names(&log), ["ctx", "broken"]);
    }
    let log = log();
    let mut r = HookRegistry::new();
    r.register_session_start(Arc::new(TestHook::new("broken", 2, Act::Fail, &log).open()));
    assert!(r.run_session_start(&HookContext::session_start()).await.allow);
}

#[tokio::test]
async fn side_effects_are_collected_in_order_from_every_hook_that_ran() {
    let log = log();
    let r = registry_pre(vec![
        TestHook::new("one", 1, Act::Allow, &log),
        TestHook::new("two", 2, Act::Fail, &log).open(),
        TestHook::new("three", 3, Act::Set("k", json!(1)), &log),
        TestHook::new("four", 4, Act::Block(Some("stop")), &log),
        TestHook::new("five", 5, Act::Allow, &log),
    ]);
    let result = r.run_pre_tool_use(&pre_ctx()).await;
    assert_eq!(
        result.side_effects,
        [
            "one ran".to_owned(),
            "hook 'two' failed: backend unavailable (failure policy open: hook skipped)".to_owned(),
            "three ran".to_owned(),
            "four ran".to_owned(),
        ]
    );
    assert_eq!(result.modified_args, Some(json!({"id": 1, "k": 1})), "a block keeps the rewrites so far");
}

/// Rewrites `args.n` to `n * 2` after a yield, so concurrent runs interleave.
struct Doubler;

#[async_trait::async_trait]
impl PreToolUseHook for Doubler {
    fn name(&self) -> &str {
        "doubler"
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        tokio::task::yield_now().await;
        let n = ctx.tool_args["n"].as_i64().ok_or_else(|| HookError::msg("no n"))?;
        Ok(HookResult::with_args(json!({"n": n * 2, "run": ctx.meta_str(meta::RUN_ID)})))
    }
}

/// Blocks odd runs, counting its calls.
struct OddBlocker(AtomicUsize);

#[async_trait::async_trait]
impl PreToolUseHook for OddBlocker {
    fn name(&self) -> &str {
        "odd_blocker"
    }
    fn priority(&self) -> i32 {
        60
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        if (ctx.tool_args["n"].as_i64().unwrap() / 2) % 2 == 1 {
            return Ok(HookResult::block(format!("odd {}", ctx.tool_args["n"])));
        }
        Ok(HookResult::allow())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_registry_serves_64_concurrent_runs() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<HookRegistry>();

    let blocker = Arc::new(OddBlocker(AtomicUsize::new(0)));
    let mut r = HookRegistry::new();
    r.register_pre(Arc::new(Doubler));
    r.register_pre(blocker.clone());
    let r = Arc::new(r);

    let tasks: Vec<_> = (0..64i64)
        .map(|n| {
            let r = r.clone();
            tokio::spawn(async move {
                let mut ctx = HookContext::pre_tool_use("t", json!({"n": n}));
                ctx.metadata.insert(meta::RUN_ID.into(), format!("run-{n}").into());
                (n, r.run_pre_tool_use(&ctx).await)
            })
        })
        .collect();
    for task in tasks {
        let (n, result) = task.await.unwrap();
        assert_eq!(result.modified_args, Some(json!({"n": n * 2, "run": format!("run-{n}")})));
        if n % 2 == 1 {
            assert_eq!(result.error, Some(format!("odd {}", n * 2)));
        } else {
            assert!(result.allow, "run {n}");
        }
    }
    assert_eq!(blocker.0.load(Ordering::SeqCst), 64);
}
