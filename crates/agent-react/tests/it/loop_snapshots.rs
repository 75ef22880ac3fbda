//! Full event transcripts of scripted runs, one per hook behaviour.

use std::sync::Arc;
use std::time::Duration;

use agent_react::{RunStatus, SideEffect};
use hook_core::{HookError, HookRegistry, HookResult, meta};
use llm::Message;
use serde_json::{Value, json};

use crate::support::{FakeTool, FnPost, FnPre, FnSession, Recorder, agent_run, check, scripted};

fn pay_then_answer() -> Arc<dyn llm::ChatModel> {
    scripted(json!([
        {"tool_calls": [{"name": "payments__purchase_pay", "arguments": {"invoice_id": "INV-1", "amount_cny": 60000}}]},
        {"content": "done"}
    ]))
}

fn pay_tool() -> Arc<dyn agent_react::Tool> {
    FakeTool::new("payments__purchase_pay", SideEffect::Write)
        .schema(json!({
            "type": "object",
            "required": ["invoice_id", "amount_cny"],
            "properties": {"invoice_id": {"type": "string"}, "amount_cny": {"type": "number", "minimum": 0}}
        }))
        .arc()
}

fn block_writes() -> FnPre {
    FnPre::new("block_writes", |ctx| {
        Ok(if ctx.meta_str(meta::SIDE_EFFECT) == Some("write") {
            HookResult::block("the organization is read-only: write operations are blocked")
        } else {
            HookResult::allow()
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn blocked_call() {
    let recorder = Arc::new(Recorder::default());
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(block_writes()));
    hooks.register_post(recorder.clone());
    let (run, sink) = agent_run(pay_then_answer(), vec![pay_tool()], hooks);
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Completed);
    insta::assert_json_snapshot!(events);

    // Post fired for the blocked call, with the DESIGN §2 metadata.
    let seen = recorder.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    insta::assert_json_snapshot!("blocked_call_post_context", seen[0]);
    // The model saw the block reason as the observation of that very call.
    assert!(
        outcome
            .messages
            .contains(&Message::tool("call_0_0", "the organization is read-only: write operations are blocked"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn argument_rewrite() {
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(FnPre::new("cap_amount", |ctx| {
        let mut args = ctx.tool_args.clone();
        args["amount_cny"] = json!(50000);
        Ok(HookResult { side_effects: vec!["amount capped at 50000".into()], ..HookResult::with_args(args) })
    })));
    let recorder = Arc::new(Recorder::default());
    hooks.register_post(recorder.clone());
    let (run, sink) = agent_run(pay_then_answer(), vec![pay_tool()], hooks);
    let (_, events) = check(run, &sink).await;
    insta::assert_json_snapshot!(events);
    let seen = recorder.seen.lock().unwrap();
    assert_eq!(seen[0].tool_args, json!({"invoice_id": "INV-1", "amount_cny": 50000}));
    assert_eq!(seen[0].metadata[meta::ORIGINAL_ARGS], json!({"invoice_id": "INV-1", "amount_cny": 60000}));
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_rewrite_is_blocked() {
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(FnPre::new("breaks_args", |ctx| {
        let mut args = ctx.tool_args.clone();
        args["amount_cny"] = json!("lots");
        Ok(HookResult::with_args(args))
    })));
    let (run, sink) = agent_run(pay_then_answer(), vec![pay_tool()], hooks);
    let (_, events) = check(run, &sink).await;
    let result = events.iter().find(|e| e["event"] == "tool_result").unwrap();
    assert_eq!(result["blocked"], true);
    assert_eq!(result["blocked_by"], "argument_validation");
    assert_eq!(
        result["output"],
        "invalid arguments after a hook's rewrite: /amount_cny: expected number, got string; the tool did not run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn result_rewrite() {
    let mut hooks = HookRegistry::new();
    hooks.register_post(Arc::new(FnPost::new("mask_card", 50, |ctx| {
        let mut result = ctx.tool_result.clone().unwrap_or(Value::Null);
        result["card"] = json!("**** 4242");
        Ok(HookResult::with_result(result))
    })));
    let tool = FakeTool::new("payments__get_card", SideEffect::Read)
        .returning(json!({"card": "4242 4242 4242 4242", "holder": "ops"}))
        .arc();
    let model = scripted(json!([{"tool_calls": [{"name": "payments__get_card"}]}, {"content": "masked"}]));
    let (run, sink) = agent_run(model, vec![tool], hooks);
    let (outcome, events) = check(run, &sink).await;
    insta::assert_json_snapshot!(events);
    // The model never saw the card number.
    assert!(!format!("{:?}", outcome.messages).contains("4242 4242"));
}

/// A small stand-in for `result_truncate` (the real one lives in hook-builtins).
fn truncate_to(max: usize) -> FnPost {
    FnPost::new("truncate", 100, move |ctx| {
        let text = match ctx.tool_result.as_ref() {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => return Ok(HookResult::allow()),
        };
        let n = text.chars().count();
        if n <= max {
            return Ok(HookResult::allow());
        }
        let prefix: String = text.chars().take(max).collect();
        Ok(HookResult {
            side_effects: vec![format!("result truncated from {n} chars")],
            ..HookResult::with_result(Value::String(format!("{prefix}[truncated: showing {max} of {n} chars]")))
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn truncation() {
    let mut hooks = HookRegistry::new();
    hooks.register_post(Arc::new(truncate_to(24)));
    let tool = FakeTool::new("docs__read", SideEffect::Read).returning(json!("服务器采购合同 ".repeat(10))).arc();
    let model = scripted(json!([{"tool_calls": [{"name": "docs__read", "arguments": {}}]}, {"content": "read it"}]));
    let (run, sink) = agent_run(model, vec![tool], hooks);
    let (_, events) = check(run, &sink).await;
    insta::assert_json_snapshot!(events);
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_calls_with_mixed_verdicts() {
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(block_writes()));
    let recorder = Arc::new(Recorder::default());
    hooks.register_post(recorder.clone());
    let model = scripted(json!([
        {"tool_calls": [
            {"name": "payments__purchase_pay", "arguments": {"invoice_id": "INV-1", "amount_cny": 1}},
            {"name": "payments__get_balance", "arguments": {"account": "ops"}},
            {"name": "payments__get_balance", "arguments": {"fail": true}},
            {"name": "payments__purchase_pay", "arguments": {"invoice_id": 7}},
            {"name": "payments__nope", "arguments": {}},
            {"name": "payments__get_balance", "arguments": "{\"account\": "}
        ]},
        {"content": "mixed"}
    ]));
    let tools = vec![pay_tool(), FakeTool::new("payments__get_balance", SideEffect::Read).arc()];
    let (run, sink) = agent_run(model, tools, hooks);
    let (outcome, events) = check(run, &sink).await;
    insta::assert_json_snapshot!(events);

    // Exactly one observation per call, keyed by its id, right after the assistant message.
    let ids: Vec<&str> = outcome
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_0_0", "call_0_1", "call_0_2", "call_0_3", "call_0_4", "call_0_5"]);
    // Post fired for every call with its outcome.
    let mut outcomes: Vec<(String, String)> = recorder
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|c| (c.meta_str(meta::TOOL_CALL_ID).unwrap().to_owned(), c.meta_str(meta::OUTCOME).unwrap().to_owned()))
        .collect();
    outcomes.sort();
    let expected = [
        ("call_0_0", "blocked"),
        ("call_0_1", "executed"),
        ("call_0_2", "failed"),
        ("call_0_3", "blocked"),
        ("call_0_4", "blocked"),
        ("call_0_5", "blocked"),
    ];
    assert_eq!(outcomes, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
}

#[tokio::test(flavor = "multi_thread")]
async fn panicking_hook() {
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(FnPre::new("buggy", |_| panic!("hook bug on purpose"))));
    let (run, sink) = agent_run(pay_then_answer(), vec![pay_tool()], hooks);
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Completed);
    insta::assert_json_snapshot!(events);
}

#[tokio::test(flavor = "multi_thread")]
async fn hook_that_times_out() {
    let mut hooks = HookRegistry::new();
    let mut slow = FnPre::new("slow_policy", |_| Ok(HookResult::allow()));
    slow.timeout = Duration::from_millis(20);
    slow.delay = Some(Duration::from_secs(30));
    hooks.register_pre(Arc::new(slow));
    let (run, sink) = agent_run(pay_then_answer(), vec![pay_tool()], hooks);
    let (_, events) = check(run, &sink).await;
    insta::assert_json_snapshot!(events);
}

#[tokio::test(flavor = "multi_thread")]
async fn panicking_tool_and_failing_post_hook() {
    let mut hooks = HookRegistry::new();
    hooks.register_post(Arc::new(FnPost::new("post_err", 10, |ctx| {
        if ctx.tool_args.get("panic").is_some() { Err(HookError::msg("cannot audit")) } else { Ok(HookResult::allow()) }
    })));
    let model = scripted(json!([
        {"tool_calls": [{"name": "payments__get_balance", "arguments": {"panic": true}}]},
        {"content": "ok"}
    ]));
    let (run, sink) = agent_run(model, vec![FakeTool::new("payments__get_balance", SideEffect::Read).arc()], hooks);
    let (_, events) = check(run, &sink).await;
    let result = events.iter().find(|e| e["event"] == "tool_result").unwrap();
    assert_eq!(result["output"], "result withheld: hook 'post_err' failed");
    assert_eq!(result["error"], "the tool panicked");
    assert_eq!(result["blocked"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn session_start_context_and_refusal() {
    let mut hooks = HookRegistry::new();
    hooks.register_session_start(Arc::new(FnSession {
        name: "policy_context",
        f: Box::new(|ctx| {
            assert_eq!(ctx.meta_str(meta::RUN_ID), Some(crate::support::RUN_ID));
            Ok(HookResult::with_context("Payments above 50000 CNY need approval."))
        }),
    }));
    let (run, sink) = agent_run(scripted(json!([{"content": "hi"}])), vec![], hooks);
    let (outcome, _) = check(run, &sink).await;
    assert_eq!(
        outcome.messages[0],
        Message::system("You are a test agent.\n\nPayments above 50000 CNY need approval.")
    );

    let mut hooks = HookRegistry::new();
    hooks.register_session_start(Arc::new(FnSession {
        name: "closed",
        f: Box::new(|_| Ok(HookResult::block("agent disabled by policy"))),
    }));
    let model = scripted(json!([{"content": "never"}]));
    let (run, sink) = agent_run(model, vec![], hooks);
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    // The model was never called: the transcript is empty.
    assert!(outcome.messages.is_empty());
    insta::assert_json_snapshot!(events);
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_end_runs() {
    // A model that calls a tool forever hits the iteration limit.
    let model = scripted(json!([
        {"tool_calls": [{"name": "t__a"}]}, {"tool_calls": [{"name": "t__a"}]}, {"tool_calls": [{"name": "t__a"}]}
    ]));
    let (mut run, sink) = agent_run(model, vec![FakeTool::new("t__a", SideEffect::Read).arc()], HookRegistry::new());
    run.limits.max_iterations = 2;
    run.limits.max_tool_calls = 1;
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.error.as_deref(), Some("the run reached its limit of 2 model calls without an answer"));
    let blocked: Vec<&Value> =
        events.iter().filter(|e| e["event"] == "tool_result").map(|e| &e["blocked_by"]).collect();
    assert_eq!(blocked, [&Value::Null, &json!("run_limits")]);
}

#[derive(Default)]
struct Journal {
    entries: std::sync::Mutex<Vec<String>>,
    /// What `tool_started` answers per tool call id (default: run it).
    answers: std::sync::Mutex<std::collections::HashMap<String, agent_react::ToolStart>>,
    /// What `recorded` answers per tool call id (default: never seen).
    known: std::sync::Mutex<std::collections::HashMap<String, agent_react::ToolStart>>,
}

#[async_trait::async_trait]
impl agent_react::RunJournal for Journal {
    async fn tool_started(
        &self,
        run_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        arguments: &Value,
    ) -> agent_react::ToolStart {
        self.entries.lock().unwrap().push(format!("started {run_id}/{tool_call_id} {tool_name} {arguments}"));
        self.answers.lock().unwrap().remove(tool_call_id).unwrap_or(agent_react::ToolStart::Run)
    }
    async fn tool_finished(&self, run_id: &str, tool_call_id: &str, outcome: &str, result: &Value) {
        self.entries.lock().unwrap().push(format!("finished {run_id}/{tool_call_id} {outcome} {result}"));
    }
    async fn recorded(&self, _run_id: &str, tool_call_id: &str) -> Option<agent_react::ToolStart> {
        self.known.lock().unwrap().get(tool_call_id).cloned()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn journal_records_calls_that_reach_the_tool() {
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(block_writes()));
    let model = scripted(json!([
        {"tool_calls": [
            {"name": "payments__purchase_pay", "arguments": {"invoice_id": "INV-1", "amount_cny": 1}},
            {"name": "payments__get_balance", "arguments": {"fail": true}}
        ]},
        {"content": "ok"}
    ]));
    let journal = Arc::new(Journal::default());
    let tools = vec![pay_tool(), FakeTool::new("payments__get_balance", SideEffect::Read).arc()];
    let (mut run, sink) = agent_run(model, tools, hooks);
    run.services.journal = Some(journal.clone());
    check(run, &sink).await;
    assert_eq!(
        *journal.entries.lock().unwrap(),
        [
            r#"started run-1/call_0_1 payments__get_balance {"fail":true}"#,
            r#"finished run-1/call_0_1 failed {"error":"the upstream said no"}"#,
        ]
    );
}

/// A resumed run: a call that completed before the restart is not made again (its recorded result
/// is the observation); a call whose outcome is unknown is reported as such, not retried.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_run_never_runs_a_recorded_call_twice() {
    let model = scripted(json!([
        {"tool_calls": [
            {"name": "payments__get_balance", "arguments": {}},
            {"name": "payments__get_balance", "arguments": {"again": true}}
        ]},
        {"content": "ok"}
    ]));
    let journal = Arc::new(Journal::default());
    journal.answers.lock().unwrap().extend([
        ("call_0_0".to_owned(), agent_react::ToolStart::Done { result: json!({"balance": 7}), failed: false }),
        ("call_0_1".to_owned(), agent_react::ToolStart::Unknown),
    ]);
    let mut tool = FakeTool::new("payments__get_balance", SideEffect::Read);
    tool.result = Some(json!({"balance": 999}));
    let (mut run, sink) = agent_run(model, vec![tool.arc()], HookRegistry::new());
    run.services.journal = Some(journal.clone());
    run.first_seq = 10;
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Completed);
    let results: Vec<&Value> = events.iter().filter(|e| e["event"] == "tool_result").map(|e| &e["output"]).collect();
    assert_eq!(results[0], &json!({"balance": 7}), "the recorded result, not a second call");
    assert_eq!(results[1], &json!({"error": agent_react::UNKNOWN_OUTCOME}));
    // Only the unknown call is finished (as failed); the replayed one is left as recorded.
    let entries = journal.entries.lock().unwrap().clone();
    assert_eq!(entries.iter().filter(|e| e.starts_with("finished")).count(), 1, "{entries:?}");
    assert!(entries.iter().any(|e| e.starts_with("finished run-1/call_0_1 failed")), "{entries:?}");
    let seqs: Vec<u64> = sink.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs.first(), Some(&10), "a resumed run continues its stored seq");
}

/// A recorded call of a resumed run skips the Pre hooks: a blocking hook neither blocks nor sees it.
#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_call_skips_the_pre_hooks_on_resume() {
    let mut hooks = HookRegistry::new();
    hooks.register_pre(Arc::new(FnPre::new("blocks_everything", |_| Ok(HookResult::block("no")))));
    let model =
        scripted(json!([{"tool_calls": [{"name": "payments__get_balance", "arguments": {}}]}, {"content": "ok"}]));
    let journal = Arc::new(Journal::default());
    journal
        .known
        .lock()
        .unwrap()
        .insert("call_0_0".to_owned(), agent_react::ToolStart::Done { result: json!({"balance": 7}), failed: false });
    let (mut run, sink) = agent_run(model, vec![FakeTool::new("payments__get_balance", SideEffect::Read).arc()], hooks);
    run.services.journal = Some(journal.clone());
    let (_, events) = check(run, &sink).await;
    let result = events.iter().find(|e| e["event"] == "tool_result").unwrap();
    assert_eq!(result["blocked"], false, "{result}");
    assert_eq!(result["output"], json!({"balance": 7}));
    assert!(journal.entries.lock().unwrap().is_empty(), "neither started nor finished again");
}

#[tokio::test(flavor = "multi_thread")]
async fn wall_time_limit_fails_the_run_with_a_valid_transcript() {
    let mut hooks = HookRegistry::new();
    let mut slow = FnPre::new("waits_for_a_human", |_| Ok(HookResult::allow()));
    slow.delay = Some(Duration::from_secs(30));
    hooks.register_pre(Arc::new(slow));
    let (mut run, sink) = agent_run(pay_then_answer(), vec![pay_tool()], hooks);
    run.limits.max_wall_time = Duration::from_millis(50);
    let (outcome, _) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.error.as_deref(), Some("the run exceeded its wall time limit of 0.05s"));
    assert!(matches!(outcome.messages.last(), Some(Message::Tool { tool_call_id, .. }) if tool_call_id == "call_0_0"));
}
