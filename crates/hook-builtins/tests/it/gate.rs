use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use channel_core::{CardState, Decision};
use hook_builtins::ports::{ApproverScope, ConfirmationStatus, DeliveryMode};
use hook_builtins::{Actor, DecisionOutcome, DecisionRequest, ForbiddenReason, GateConfig, args_sha256, decide};
use hook_core::{HookContext, HookError, HookRegistry, HookResult, PreToolUseHook};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::{Event, Rig, gated_ctx};

fn spawn(rig: &Rig, ctx: HookContext) -> JoinHandle<HookResult> {
    let gate = rig.gate.clone();
    tokio::spawn(async move { gate.execute(&ctx).await.expect("the gate answers Ok") })
}

fn operator(id: &str, open_id: &str, decision: Decision, reason: Option<&str>) -> DecisionRequest {
    DecisionRequest {
        confirmation_id: id.into(),
        decision,
        actor: Actor::ChannelOperator { open_id: open_id.into() },
        reason: reason.map(Into::into),
    }
}

fn api_user(id: &str, user_id: &str, decision: Decision) -> DecisionRequest {
    DecisionRequest {
        confirmation_id: id.into(),
        decision,
        actor: Actor::User { user_id: user_id.into() },
        reason: None,
    }
}

fn config() -> GateConfig {
    GateConfig { agent_name: Some("Payments bot".into()), ..GateConfig::default() }
}

#[tokio::test]
async fn identity_and_config() {
    let rig = Rig::new(config());
    assert_eq!(rig.gate.name(), "confirmation_gate");
    assert_eq!(rig.gate.priority(), i32::MAX);
    assert!(rig.gate.timeout() > Duration::from_secs(120));
    assert!(!rig.gate.should_trigger(&HookContext::pre_tool_use("t", json!({}))));
    assert!(rig.gate.should_trigger(&gated_ctx("c", json!({}))));
    let all = Rig::new(GateConfig { require_confirmation_for_all: true, ..config() });
    assert!(all.gate.should_trigger(&HookContext::pre_tool_use("t", json!({}))));

    let parsed: GateConfig = serde_json::from_value(json!({
        "timeout_s": 5, "poll_interval_ms": 250, "approver_scope": "initiator", "mode": "channel_only"
    }))
    .unwrap();
    assert_eq!(parsed.timeout, Duration::from_secs(5));
    assert_eq!(parsed.poll_interval, Duration::from_millis(250));
    assert_eq!(parsed.approver_scope, ApproverScope::Initiator);
    assert_eq!(parsed.mode, DeliveryMode::ChannelOnly);
    let defaults: GateConfig = serde_json::from_value(json!({})).unwrap();
    assert_eq!((defaults.timeout, defaults.poll_interval), (Duration::from_secs(120), Duration::from_millis(1500)));
    assert!(serde_json::from_value::<GateConfig>(json!({"timeout": 5})).is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_allows_records_the_operator_and_patches_the_card() {
    let mut rig = Rig::new(config());
    let call = spawn(&rig, gated_ctx("call1", json!({"amount": 100})));
    let id = rig.awaiting().await;

    // The row exists before the card, and the card carries the row's id and names.
    let row = rig.store.row(&id);
    assert_eq!(row.status, ConfirmationStatus::Pending);
    assert_eq!(row.args_sha256, args_sha256(&json!({"amount": 100})));
    assert_eq!(row.message_id.as_deref(), Some(format!("msg-{id}").as_str()));
    let card = rig.channel.sent.lock().unwrap()[0].clone();
    assert_eq!(card.confirmation_id, id);
    assert_eq!(card.agent_name, "Payments bot");
    assert_eq!(card.requester, "alice name");
    assert_eq!(card.tool_args, json!({"amount": 100}));

    let outcome = decide(rig.deps(), &operator(&id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert!(matches!(outcome, DecisionOutcome::Decided(ref r) if r.status == ConfirmationStatus::Approved));
    let verdict = call.await.unwrap();
    assert!(verdict.allow, "{verdict:?}");

    let row = rig.store.row(&id);
    assert_eq!(row.status, ConfirmationStatus::Approved);
    assert_eq!(row.responded_by_open_id.as_deref(), Some("ou_alice"));
    assert_eq!(row.responded_by_user_id.as_deref(), Some("alice"));
    assert!(row.responded_at.is_some());
    let updates = rig.channel.updates();
    assert_eq!(updates.len(), 1);
    assert!(
        matches!(&updates[0], (m, CardState::Approved { decided_by, .. }) if *m == format!("msg-{id}") && decided_by == "alice name")
    );
    assert_eq!(rig.events.recv().await, Some(Event::Resolved { id: id.clone(), status: ConfirmationStatus::Approved }));

    // First decision wins.
    let again = decide(rig.deps(), &operator(&id, "ou_alice", Decision::Reject, None)).await.unwrap();
    assert_eq!(again, DecisionOutcome::AlreadyDecided(ConfirmationStatus::Approved));
    assert_eq!(rig.store.row(&id).status, ConfirmationStatus::Approved);
}

#[tokio::test(flavor = "multi_thread")]
async fn rejection_blocks_with_the_reason() {
    let mut rig = Rig::new(config());
    let call = spawn(&rig, gated_ctx("call1", json!({"amount": 100})));
    let id = rig.awaiting().await;
    decide(rig.deps(), &operator(&id, "ou_alice", Decision::Reject, Some("too much"))).await.unwrap();
    let verdict = call.await.unwrap();
    assert!(!verdict.allow);
    assert_eq!(verdict.error.as_deref(), Some("Tool call was rejected by an operator: too much"));
    assert!(matches!(&rig.channel.updates()[0].1, CardState::Rejected { reason: Some(r), .. } if r == "too much"));

    let call = spawn(&rig, gated_ctx("call2", json!({"amount": 1})));
    let id = rig.awaiting().await;
    decide(rig.deps(), &api_user(&id, "alice", Decision::Reject)).await.unwrap();
    assert_eq!(call.await.unwrap().error.as_deref(), Some("Tool call was rejected by an operator"));
}

#[tokio::test(flavor = "multi_thread")]
async fn several_gated_calls_in_one_turn_are_decided_independently() {
    let mut rig = Rig::new(config());
    let calls: Vec<_> =
        (1..=3).map(|i| spawn(&rig, gated_ctx(&format!("call{i}"), json!({"amount": i * 100})))).collect();
    let mut by_call = std::collections::HashMap::new();
    for _ in 0..3 {
        let id = rig.awaiting().await;
        by_call.insert(rig.store.row(&id).tool_call_id, id);
    }
    assert_eq!(rig.store.len(), 3);
    assert_eq!(rig.channel.sent_count(), 3);

    decide(rig.deps(), &operator(&by_call["call2"], "ou_alice", Decision::Reject, None)).await.unwrap();
    let verdicts: Vec<HookResult> = {
        decide(rig.deps(), &api_user(&by_call["call3"], "alice", Decision::Approve)).await.unwrap();
        decide(rig.deps(), &operator(&by_call["call1"], "ou_alice", Decision::Approve, None)).await.unwrap();
        let mut out = Vec::new();
        for call in calls {
            out.push(call.await.unwrap());
        }
        out
    };
    assert!(verdicts[0].allow);
    assert!(!verdicts[1].allow);
    assert!(verdicts[2].allow);
    assert_eq!(rig.store.row(&by_call["call1"]).status, ConfirmationStatus::Approved);
    assert_eq!(rig.store.row(&by_call["call2"]).status, ConfirmationStatus::Rejected);
    assert_eq!(rig.store.row(&by_call["call3"]).status, ConfirmationStatus::Approved);
    assert_eq!(rig.hub.waiter_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn deadline_expires_the_row_and_a_late_click_changes_nothing() {
    let mut rig = Rig::new(GateConfig { timeout: Duration::from_secs(5), ..config() });
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({"amount": 100}))).await.unwrap();
    assert!(!verdict.allow);
    assert_eq!(verdict.error.as_deref(), Some("timed out after 5s waiting for approval"));
    let row = rig.store.only_row();
    assert_eq!(row.status, ConfirmationStatus::Expired);
    assert!(matches!(rig.channel.updates()[0].1, CardState::Expired { .. }));
    let _awaiting = rig.awaiting().await;
    assert_eq!(
        rig.events.recv().await,
        Some(Event::Resolved { id: row.id.clone(), status: ConfirmationStatus::Expired })
    );

    let late = decide(rig.deps(), &operator(&row.id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert_eq!(late, DecisionOutcome::AlreadyDecided(ConfirmationStatus::Expired));
    let after = rig.store.row(&row.id);
    assert_eq!(after.status, ConfirmationStatus::Expired);
    assert_eq!(after.responded_by_user_id, None);
    assert_eq!(rig.channel.updates().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_click_past_expires_at_expires_the_row_instead_of_deciding() {
    let rig = Rig::new(config());
    let mut row = pending_row(&rig, "call1", json!({"a": 1})).await;
    row.expires_at = chrono::Utc::now() - chrono::Duration::seconds(1);
    row.message_id = Some("msg-x".into());
    rig.store.put(row.clone());
    let late = decide(rig.deps(), &operator(&row.id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert_eq!(late, DecisionOutcome::AlreadyDecided(ConfirmationStatus::Expired));
    assert_eq!(rig.store.row(&row.id).status, ConfirmationStatus::Expired);
    assert!(matches!(&rig.channel.updates()[..], [(m, CardState::Expired { .. })] if m == "msg-x"));
}

#[tokio::test(start_paused = true)]
async fn a_decision_landing_during_the_final_check_is_honoured() {
    let rig = Rig::new(GateConfig { timeout: Duration::from_secs(5), ..config() });
    rig.store.approve_before_expire.store(true, Ordering::SeqCst);
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({"amount": 100}))).await.unwrap();
    assert!(verdict.allow, "{verdict:?}");
    assert_eq!(rig.store.only_row().status, ConfirmationStatus::Approved);
}

#[tokio::test(start_paused = true)]
async fn decisions_made_by_another_process_arrive_through_the_shared_poll() {
    let mut rig = Rig::new(config());
    let call = spawn(&rig, gated_ctx("call1", json!({"amount": 100})));
    let id = rig.awaiting().await;
    // Another replica decides: its CAS reaches the store but not this process's hub.
    let other_hub = hook_builtins::ConfirmationHub::new(rig.store.clone());
    let deps = hook_builtins::DecideDeps { notifier: &*other_hub, ..rig.deps() };
    decide(deps, &operator(&id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert!(call.await.unwrap().allow);
    assert!(rig.hub.poll_queries() >= 1);
}

#[tokio::test(start_paused = true)]
async fn one_poll_query_per_interval_for_all_waiters() {
    let mut rig = Rig::new(config());
    let n = 1000;
    let calls: Vec<_> = (0..n).map(|i| spawn(&rig, gated_ctx(&format!("call{i}"), json!({"i": i})))).collect();
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(rig.awaiting().await);
    }
    assert_eq!(rig.hub.waiter_count(), n);
    let before = rig.store.statuses_calls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(15_000)).await;
    let polls = rig.store.statuses_calls.load(Ordering::SeqCst) - before;
    // 15 s / 1.5 s = 10 intervals: at most one query each (plus one for a boundary tick).
    assert!((1..=11).contains(&polls), "{polls} status queries in 10 poll intervals");
    for id in &ids {
        decide(rig.deps(), &api_user(id, "alice", Decision::Approve)).await.unwrap();
    }
    for call in calls {
        assert!(call.await.unwrap().allow);
    }
    assert_eq!(rig.hub.waiter_count(), 0);
    // No waiter, no query.
    let idle = rig.store.statuses_calls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(rig.store.statuses_calls.load(Ordering::SeqCst), idle);
}

/// Starts a gated call, waits until it is pending, and abandons it (a crashed process).
async fn pending_row(rig: &Rig, tool_call_id: &str, args: Value) -> hook_builtins::ports::ConfirmationRecord {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let deps = hook_builtins::GateDeps {
        store: rig.store.clone(),
        directory: rig.directory.clone(),
        hub: hook_builtins::ConfirmationHub::new(rig.store.clone()),
        channel: Some(rig.channel.clone()),
        events: Some(Arc::new(crate::support::EventLog { tx })),
    };
    let gate = Arc::new(hook_builtins::ConfirmationGateHook::new(deps, config()));
    let ctx = gated_ctx(tool_call_id, args);
    let task = tokio::spawn(async move { gate.execute(&ctx).await });
    let Some(Event::Awaiting { id, .. }) = rx.recv().await else { panic!("no awaiting event") };
    task.abort();
    let _ = task.await;
    rig.store.row(&id)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_run_re_attaches_without_a_second_card() {
    let rig = Rig::new(config());
    let row = pending_row(&rig, "call1", json!({"amount": 100})).await;
    assert_eq!(rig.channel.sent_count(), 1);

    let mut restarted = rig.restarted(config());
    let call = spawn(&restarted, gated_ctx("call1", json!({"amount": 100})));
    let id = restarted.awaiting().await;
    assert_eq!(id, row.id, "same request");
    assert_eq!(restarted.store.len(), 1);
    assert_eq!(restarted.channel.sent_count(), 1, "no second card");
    decide(restarted.deps(), &operator(&id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert!(call.await.unwrap().allow);

    // Re-attaching to a decided request answers at once.
    let again = restarted.gate.execute(&gated_ctx("call1", json!({"amount": 100}))).await.unwrap();
    assert!(again.allow);
    assert_eq!(restarted.channel.sent_count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_that_differ_from_the_request_are_blocked() {
    let rig = Rig::new(config());
    let row = pending_row(&rig, "call1", json!({"amount": 100})).await;
    // Pending request, other arguments: blocked without waiting.
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({"amount": 999}))).await.unwrap();
    assert!(!verdict.allow);
    assert!(verdict.error.unwrap().contains("arguments differ"));

    // An approved row whose stored arguments were tampered with does not allow.
    let mut tampered = rig.store.row(&row.id);
    tampered.status = ConfirmationStatus::Approved;
    tampered.tool_args = json!({"amount": 999});
    rig.store.put(tampered);
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({"amount": 100}))).await.unwrap();
    assert!(!verdict.allow);
    assert!(verdict.error.unwrap().contains("do not match"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_human_approves_the_arguments_left_by_earlier_hooks() {
    struct Cap;
    #[async_trait::async_trait]
    impl PreToolUseHook for Cap {
        fn name(&self) -> &str {
            "cap"
        }
        async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
            let mut args = ctx.tool_args.clone();
            args["amount"] = json!(50);
            Ok(HookResult::with_args(args))
        }
    }
    let mut rig = Rig::new(config());
    let mut registry = HookRegistry::new();
    registry.register_pre(rig.gate.clone());
    registry.register_pre(Arc::new(Cap));
    let registry = Arc::new(registry);
    let ctx = gated_ctx("call1", json!({"amount": 100}));
    let call = tokio::spawn(async move { registry.run_pre_tool_use(&ctx).await });
    let id = rig.awaiting().await;
    assert_eq!(rig.channel.sent.lock().unwrap()[0].tool_args, json!({"amount": 50}));
    assert_eq!(rig.store.row(&id).args_sha256, args_sha256(&json!({"amount": 50})));
    decide(rig.deps(), &operator(&id, "ou_alice", Decision::Approve, None)).await.unwrap();
    let verdict = call.await.unwrap();
    assert!(verdict.allow);
    assert_eq!(verdict.modified_args, Some(json!({"amount": 50})));
}

#[tokio::test(flavor = "multi_thread")]
async fn card_failure_in_auto_mode_falls_back_to_api_approval() {
    let mut rig = Rig::new(config());
    rig.channel.fail_send.store(true, Ordering::SeqCst);
    let call = spawn(&rig, gated_ctx("call1", json!({"amount": 100})));
    let id = rig.awaiting().await;
    let row = rig.store.row(&id);
    assert_eq!((row.status, row.message_id), (ConfirmationStatus::Pending, None));
    decide(rig.deps(), &api_user(&id, "alice", Decision::Approve)).await.unwrap();
    let verdict = call.await.unwrap();
    assert!(verdict.allow);
    assert!(verdict.side_effects.iter().any(|s| s.contains("card delivery failed")), "{:?}", verdict.side_effects);
}

#[tokio::test(flavor = "multi_thread")]
async fn card_failure_in_channel_only_mode_blocks_and_cancels() {
    let rig = Rig::new(GateConfig { mode: DeliveryMode::ChannelOnly, ..config() });
    rig.channel.fail_send.store(true, Ordering::SeqCst);
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({"amount": 100}))).await.unwrap();
    assert!(!verdict.allow);
    let error = verdict.error.unwrap();
    assert!(error.contains("could not be delivered") && error.contains("connection refused"), "{error}");
    let row = rig.store.only_row();
    assert_eq!(row.status, ConfirmationStatus::Cancelled);
    assert!(row.reason.unwrap().contains("could not be delivered"));

    let no_channel = Rig::without_channel(GateConfig { mode: DeliveryMode::ChannelOnly, ..config() });
    let verdict = no_channel.gate.execute(&gated_ctx("call1", json!({}))).await.unwrap();
    assert!(!verdict.allow);
    assert_eq!(no_channel.store.only_row().status, ConfirmationStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread")]
async fn out_of_scope_or_unmapped_operators_change_nothing() {
    let mut rig = Rig::new(config()); // org_admins
    let call = spawn(&rig, gated_ctx("call1", json!({"amount": 100})));
    let id = rig.awaiting().await;
    let refused = [
        (operator(&id, "ou_bob", Decision::Approve, None), ForbiddenReason::OutOfScope(ApproverScope::OrgAdmins)),
        (operator(&id, "ou_eve", Decision::Approve, None), ForbiddenReason::UnknownOperator),
        (operator(&id, "ou_nobody", Decision::Approve, None), ForbiddenReason::UnknownOperator),
        (api_user(&id, "eve", Decision::Approve), ForbiddenReason::OtherOrg),
        (api_user(&id, "nobody", Decision::Approve), ForbiddenReason::UnknownUser),
        (api_user(&id, "bob", Decision::Reject), ForbiddenReason::OutOfScope(ApproverScope::OrgAdmins)),
    ];
    for (request, why) in refused {
        assert_eq!(decide(rig.deps(), &request).await.unwrap(), DecisionOutcome::Forbidden(why));
        let row = rig.store.row(&id);
        assert_eq!((row.status, row.responded_by_user_id), (ConfirmationStatus::Pending, None));
    }
    assert!(rig.channel.updates().is_empty());
    assert!(!call.is_finished());
    decide(rig.deps(), &operator(&id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert!(call.await.unwrap().allow);
    assert_eq!(
        decide(rig.deps(), &api_user("missing", "alice", Decision::Approve)).await.unwrap(),
        DecisionOutcome::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_approver_scope_is_enforced() {
    // (scope, allowed user, refused user); the run is alice's, agent1 is bob's.
    let cases = [
        (ApproverScope::Initiator, "alice", "bob"),
        (ApproverScope::AgentOwner, "bob", "alice"),
        (ApproverScope::OrgAdmins, "alice", "bob"),
    ];
    for (scope, allowed, refused) in cases {
        let mut rig = Rig::new(GateConfig { approver_scope: scope, ..config() });
        let call = spawn(&rig, gated_ctx("call1", json!({})));
        let id = rig.awaiting().await;
        assert_eq!(
            decide(rig.deps(), &operator(&id, &format!("ou_{refused}"), Decision::Approve, None)).await.unwrap(),
            DecisionOutcome::Forbidden(ForbiddenReason::OutOfScope(scope)),
            "{scope:?}"
        );
        let outcome =
            decide(rig.deps(), &operator(&id, &format!("ou_{allowed}"), Decision::Approve, None)).await.unwrap();
        assert!(matches!(outcome, DecisionOutcome::Decided(_)), "{scope:?}");
        assert!(call.await.unwrap().allow);
    }
    let mut rig = Rig::new(GateConfig { approver_scope: ApproverScope::OrgMembers, ..config() });
    let call = spawn(&rig, gated_ctx("call1", json!({})));
    let id = rig.awaiting().await;
    assert!(matches!(
        decide(rig.deps(), &api_user(&id, "bob", Decision::Approve)).await.unwrap(),
        DecisionOutcome::Decided(_)
    ));
    assert!(call.await.unwrap().allow);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gate_fails_closed_when_the_store_is_unavailable() {
    let rig = Rig::new(config());
    rig.store.down.store(true, Ordering::SeqCst);
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({}))).await.unwrap();
    assert!(!verdict.allow);
    assert!(verdict.error.unwrap().contains("database is down"));
    assert_eq!(rig.channel.sent_count(), 0);

    // The card went out but its message id could not be stored: blocked, request cancelled.
    let rig = Rig::new(config());
    rig.store.fail_set_message_id.store(true, Ordering::SeqCst);
    let verdict = rig.gate.execute(&gated_ctx("call1", json!({}))).await.unwrap();
    assert!(!verdict.allow);
    assert_eq!(rig.store.only_row().status, ConfirmationStatus::Cancelled);

    // Without a run to attach the request to, nothing runs.
    let mut ctx = gated_ctx("call1", json!({}));
    ctx.metadata.remove(hook_core::meta::RUN_ID);
    assert!(!Rig::new(config()).gate.execute(&ctx).await.unwrap().allow);
}

#[tokio::test(start_paused = true)]
async fn a_store_outage_at_the_deadline_blocks() {
    let mut rig = Rig::new(GateConfig { timeout: Duration::from_secs(5), ..config() });
    let call = spawn(&rig, gated_ctx("call1", json!({})));
    rig.awaiting().await;
    rig.store.down.store(true, Ordering::SeqCst);
    let verdict = call.await.unwrap();
    assert!(!verdict.allow);
    assert!(verdict.error.unwrap().contains("database is down"));
}

#[tokio::test(start_paused = true)]
async fn a_decision_on_the_same_process_wakes_the_gate_without_waiting_for_the_poll() {
    let mut rig = Rig::new(config());
    let call = spawn(&rig, gated_ctx("call1", json!({"amount": 100})));
    let id = rig.awaiting().await;
    let before = rig.hub.poll_queries();
    let start = tokio::time::Instant::now();
    decide(rig.deps(), &operator(&id, "ou_alice", Decision::Approve, None)).await.unwrap();
    assert!(call.await.unwrap().allow);
    // Virtual time: it only moves when every task sleeps, so a poll-driven wake-up would show.
    assert!(start.elapsed() < Duration::from_millis(1500), "woken after {:?}", start.elapsed());
    assert_eq!(rig.hub.poll_queries(), before);
}
