//! Conversations, runs, run events, tool executions, callback de-duplication, the audit log.

use std::time::Duration;

use chrono::Utc;
use hook_builtins::ports::{AuditSink, CallOutcome, ConnectorCallRecord};
use serde_json::json;
use store::{
    NewConversation, NewRun, NewToolExecution, RunStatus, RunUpdate, StoreError, ToolExecutionFinish,
    ToolExecutionStatus,
};

use crate::support::backends;

fn new_run(org_id: &str, status: RunStatus) -> NewRun {
    NewRun {
        id: None,
        agent_id: "agent-1".to_owned(),
        org_id: org_id.to_owned(),
        user_id: Some("user-1".to_owned()),
        conversation_id: None,
        parent_run_id: None,
        surface: "react".to_owned(),
        status,
        input: Some("pay Acme".to_owned()),
        owner: None,
        lease_until: None,
    }
}

#[tokio::test]
async fn runs_and_their_events() {
    for db in backends().await {
        let s = &db.store;
        let conversation = s
            .create_conversation(&NewConversation {
                org_id: "org-1".to_owned(),
                agent_id: "agent-1".to_owned(),
                user_id: None,
                title: Some("refunds".to_owned()),
            })
            .await
            .unwrap();
        assert_eq!(s.get_conversation(&conversation.id).await.unwrap(), Some(conversation.clone()));

        let mut fresh = new_run("org-1", RunStatus::Running);
        fresh.conversation_id = Some(conversation.id.clone());
        let run = s.create_run(&fresh).await.unwrap();
        let waiting = s.create_run(&new_run("org-1", RunStatus::AwaitingConfirmation)).await.unwrap();
        let done = s.create_run(&new_run("org-1", RunStatus::Running)).await.unwrap();
        assert_eq!(s.get_run(&run.id).await.unwrap(), Some(run.clone()), "{}", db.label);

        let finished = s
            .update_run(
                &done.id,
                &RunUpdate { status: RunStatus::Completed, answer: Some("42".to_owned()), error: None },
            )
            .await
            .unwrap();
        assert_eq!((finished.status, finished.answer.as_deref()), (RunStatus::Completed, Some("42")));
        let resumable = s.list_runs_by_status(&[RunStatus::Running, RunStatus::AwaitingConfirmation]).await.unwrap();
        let mut ids: Vec<_> = resumable.into_iter().map(|r| r.id).collect();
        ids.sort();
        let mut expected = vec![run.id.clone(), waiting.id.clone()];
        expected.sort();
        assert_eq!(ids, expected, "{}", db.label);
        let missing = RunUpdate { status: RunStatus::Failed, answer: None, error: Some("x".to_owned()) };
        assert!(matches!(s.update_run("nope", &missing).await, Err(StoreError::NotFound(_))));

        for seq in 1..=3 {
            s.append_run_event(&run.id, seq, "tool_call", &json!({"seq": seq})).await.unwrap();
        }
        let dup = s.append_run_event(&run.id, 2, "answer", &json!({})).await;
        assert!(matches!(dup, Err(StoreError::Conflict(_))), "{}: {dup:?}", db.label);
        let after = s.list_run_events(&run.id, Some(1)).await.unwrap();
        assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(after[0].data, json!({"seq": 2}));
        assert_eq!(s.list_run_events(&run.id, None).await.unwrap().len(), 3);
    }
}

#[tokio::test]
async fn tool_executions_start_once() {
    for db in backends().await {
        let s = &db.store;
        let new = NewToolExecution {
            run_id: "run-1".to_owned(),
            tool_call_id: "call-1".to_owned(),
            tool_name: "shop__refund".to_owned(),
            original_args: json!({"amount": 10}),
            effective_args: None,
        };
        let (row, inserted) = s.start_tool_execution(&new).await.unwrap();
        assert!(inserted, "{}", db.label);
        assert_eq!(row.status, ToolExecutionStatus::Executing);
        let (again, inserted) = s.start_tool_execution(&new).await.unwrap();
        assert!(!inserted, "{}: a resumed run must not execute twice", db.label);
        assert_eq!(again, row);

        let finish = ToolExecutionFinish {
            status: ToolExecutionStatus::Completed,
            effective_args: Some(json!({"amount": 5})),
            result: Some(json!({"ok": true})),
        };
        let done = s.finish_tool_execution("run-1", "call-1", &finish).await.unwrap();
        assert_eq!(done.status, ToolExecutionStatus::Completed);
        assert_eq!(done.effective_args, Some(json!({"amount": 5})));
        assert_eq!(done.result, Some(json!({"ok": true})));
        assert!(done.finished_at.is_some());
        assert_eq!(s.get_tool_execution("run-1", "call-1").await.unwrap(), Some(done));
        let missing = s.finish_tool_execution("run-1", "nope", &finish).await;
        assert!(matches!(missing, Err(StoreError::NotFound(_))));
    }
}

#[tokio::test]
async fn callback_events_are_deduplicated_and_purged() {
    for db in backends().await {
        let s = &db.store;
        assert!(s.record_callback_event("ch-1", "evt-1").await.unwrap(), "{}", db.label);
        assert!(!s.record_callback_event("ch-1", "evt-1").await.unwrap(), "{}: redelivery", db.label);
        assert!(s.record_callback_event("ch-2", "evt-1").await.unwrap());
        assert_eq!(s.purge_callback_events(Duration::from_secs(3600)).await.unwrap(), 0);
        // Everything received before now is older than zero seconds.
        let mut purged = 0;
        while purged < 2 {
            purged += s.purge_callback_events(Duration::ZERO).await.unwrap();
        }
        assert_eq!(purged, 2);
        assert!(s.record_callback_event("ch-1", "evt-1").await.unwrap(), "forgotten after purge");
    }
}

fn call(org_id: &str, run_id: &str, tool_call_id: &str, outcome: CallOutcome) -> ConnectorCallRecord {
    ConnectorCallRecord {
        org_id: Some(org_id.to_owned()),
        connector_id: Some("conn-1".to_owned()),
        connector_name: Some("shop".to_owned()),
        action_name: Some("refund".to_owned()),
        run_id: run_id.to_owned(),
        tool_call_id: tool_call_id.to_owned(),
        conversation_id: None,
        user_id: Some("user-1".to_owned()),
        agent_id: Some("agent-1".to_owned()),
        surface: Some("react".to_owned()),
        request_method: Some("POST".to_owned()),
        request_url: Some("http://127.0.0.1:9/refunds".to_owned()),
        original_args_sha256: "a".repeat(64),
        effective_args_sha256: "b".repeat(64),
        outcome,
        blocked_by: (outcome == CallOutcome::Blocked).then(|| "read_only_guard".to_owned()),
        response_status: Some(200),
        response_time_ms: Some(12),
        success: outcome == CallOutcome::Executed,
        error_message: None,
        created_at: chrono::SubsecRound::trunc_subsecs(Utc::now(), 6),
    }
}

#[tokio::test]
async fn the_audit_log_is_idempotent_per_call() {
    for db in backends().await {
        let s = &db.store;
        let first = call("org-1", "run-1", "call-1", CallOutcome::Blocked);
        AuditSink::record_connector_call(s, &first).await.unwrap();
        let mut second = first.clone();
        second.outcome = CallOutcome::Executed;
        AuditSink::record_connector_call(s, &second).await.unwrap();
        s.record_connector_call(&call("org-1", "run-2", "call-1", CallOutcome::Executed)).await.unwrap();
        s.record_connector_call(&call("org-2", "run-3", "call-1", CallOutcome::Failed)).await.unwrap();

        let run1 = s.list_connector_calls("org-1", Some("run-1")).await.unwrap();
        assert_eq!(run1.len(), 1, "{}", db.label);
        assert_eq!(run1[0].record, first, "{}: the first record wins", db.label);
        assert_eq!(s.list_connector_calls("org-1", None).await.unwrap().len(), 2);
        assert_eq!(s.list_connector_calls("org-2", Some("run-1")).await.unwrap().len(), 0);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ended_run_keeps_its_final_status() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org(&format!("org-{}", db.label)).await.unwrap();
        let run = s.create_run(&new_run(&org.id, RunStatus::Running)).await.unwrap();
        let cancel = RunUpdate { status: RunStatus::Cancelled, answer: None, error: Some("cancelled: stop".into()) };
        assert!(s.update_active_run(&run.id, &cancel).await.unwrap(), "{}", db.label);
        let late = RunUpdate { status: RunStatus::Completed, answer: Some("done".into()), error: None };
        assert!(!s.update_active_run(&run.id, &late).await.unwrap(), "{}", db.label);
        let stored = s.get_run(&run.id).await.unwrap().unwrap();
        assert_eq!(stored.status, RunStatus::Cancelled, "{}", db.label);
        assert_eq!(stored.answer, None, "{}", db.label);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_process_at_a_time_holds_a_run_lease() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org(&format!("org-{}", db.label)).await.unwrap();
        let later = chrono::Utc::now() + chrono::Duration::seconds(30);
        // Leased at insert: nobody takes over a run that is starting.
        let mut new = new_run(&org.id, RunStatus::Running);
        new.owner = Some("a".into());
        new.lease_until = Some(later);
        let run = s.create_run(&new).await.unwrap();
        assert!(s.list_claimable_runs("b").await.unwrap().is_empty(), "{}", db.label);
        assert!(!s.claim_run(&run.id, "b", later).await.unwrap(), "a live lease is not taken: {}", db.label);
        assert!(!s.claim_run(&run.id, "a", later).await.unwrap(), "a process never takes its own run: {}", db.label);
        assert_eq!(s.renew_run_leases("a", later).await.unwrap(), 1, "{}", db.label);
        // Expired: another process takes it over, once.
        let past = chrono::Utc::now() - chrono::Duration::seconds(1);
        assert_eq!(s.renew_run_leases("a", past).await.unwrap(), 1, "{}", db.label);
        let claimable: Vec<String> = s.list_claimable_runs("b").await.unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(claimable, std::slice::from_ref(&run.id), "{}", db.label);
        assert!(s.list_claimable_runs("a").await.unwrap().is_empty(), "never its own: {}", db.label);
        assert!(s.claim_run(&run.id, "b", later).await.unwrap(), "{}", db.label);
        assert!(!s.claim_run(&run.id, "c", later).await.unwrap(), "{}", db.label);
        assert_eq!(s.renew_run_leases("a", later).await.unwrap(), 0, "a lost the run: {}", db.label);
        // A run without a lease (its process never took one) is taken over.
        let orphan = s.create_run(&new_run(&org.id, RunStatus::AwaitingConfirmation)).await.unwrap();
        assert!(s.claim_run(&orphan.id, "b", later).await.unwrap(), "{}", db.label);
        // An ended run is never claimed.
        s.update_run(&run.id, &RunUpdate { status: RunStatus::Completed, answer: None, error: None }).await.unwrap();
        s.renew_run_leases("b", past).await.unwrap();
        assert!(!s.claim_run(&run.id, "c", later).await.unwrap(), "{}", db.label);
        assert_eq!(s.last_run_event_seq(&run.id).await.unwrap(), None, "{}", db.label);
    }
}
