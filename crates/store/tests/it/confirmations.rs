//! The ConfirmationStore port and the decision CAS.

use std::sync::Arc;

use chrono::{Duration, Utc};
use hook_builtins::ports::{
    ApproverScope, ConfirmationStatus, ConfirmationStore, DecideOutcome, DecisionUpdate, DeliveryMode, NewConfirmation,
};
use serde_json::json;

use crate::support::backends;

fn pending(org_id: &str, run_id: &str, tool_call_id: &str, expires_in: Duration) -> NewConfirmation {
    NewConfirmation {
        id: uuid::Uuid::new_v4().to_string(),
        run_id: run_id.to_owned(),
        tool_call_id: tool_call_id.to_owned(),
        agent_id: Some("agent-1".to_owned()),
        user_id: Some("user-1".to_owned()),
        org_id: org_id.to_owned(),
        channel_id: None,
        tool_name: "shop__refund".to_owned(),
        tool_args: json!({"amount": 60000}),
        args_sha256: "c".repeat(64),
        mode: DeliveryMode::Auto,
        approver_scope: ApproverScope::OrgAdmins,
        expires_at: Utc::now() + expires_in,
    }
}

fn decision(status: ConfirmationStatus, who: &str) -> DecisionUpdate {
    DecisionUpdate {
        status,
        responded_by_open_id: Some(format!("ou_{who}")),
        responded_by_user_id: Some(who.to_owned()),
        reason: Some(format!("by {who}")),
        at: Utc::now(),
    }
}

#[tokio::test]
async fn the_port_round_trips() {
    for db in backends().await {
        let s = &db.store;
        let new = pending("org-1", "run-1", "call-1", Duration::minutes(5));
        let row = s.insert_pending(&new).await.unwrap();
        assert_eq!((row.id.as_str(), row.status), (new.id.as_str(), ConfirmationStatus::Pending));
        assert_eq!((row.tool_name.as_str(), &row.tool_args), ("shop__refund", &json!({"amount": 60000})));

        // A second insert for the same call (a concurrent gate) returns the first row.
        let again = s.insert_pending(&pending("org-1", "run-1", "call-1", Duration::minutes(5))).await.unwrap();
        assert_eq!(again, row, "{}", db.label);
        assert_eq!(s.find_by_call("run-1", "call-1").await.unwrap(), Some(row.clone()));
        assert_eq!(s.find_by_call("run-1", "call-2").await.unwrap(), None);

        s.set_message_id(&row.id, "om_123").await.unwrap();
        let got = ConfirmationStore::get(s, &row.id).await.unwrap().unwrap();
        assert_eq!(got.message_id.as_deref(), Some("om_123"));
        assert!(s.set_message_id("nope", "om_1").await.is_err());

        let other = s.insert_pending(&pending("org-2", "run-2", "call-1", Duration::minutes(5))).await.unwrap();
        let statuses = s.statuses(&[row.id.clone(), other.id.clone(), "nope".to_owned()]).await.unwrap();
        assert_eq!(statuses.len(), 2);
        assert!(s.statuses(&[]).await.unwrap().is_empty());

        // Scoped reads: another org's id looks unknown.
        assert!(s.get_confirmation_in_org("org-1", &row.id).await.unwrap().is_some());
        assert_eq!(s.get_confirmation_in_org("org-2", &row.id).await.unwrap(), None);
        assert_eq!(s.list_confirmations("org-1", Some(ConfirmationStatus::Pending)).await.unwrap().len(), 1);
        assert_eq!(s.list_confirmations("org-1", Some(ConfirmationStatus::Approved)).await.unwrap().len(), 0);
        assert_eq!(s.count_pending_confirmations().await.unwrap(), 2, "{}", db.label);

        let outcome = s.decide(&row.id, &decision(ConfirmationStatus::Approved, "alice")).await.unwrap();
        let DecideOutcome::Decided(decided) = outcome else { panic!("{}: {outcome:?}", db.label) };
        assert_eq!(decided.status, ConfirmationStatus::Approved);
        assert_eq!(decided.responded_by_open_id.as_deref(), Some("ou_alice"));
        assert_eq!(decided.responded_by_user_id.as_deref(), Some("alice"));
        assert!(decided.responded_at.is_some());
        assert_eq!(
            s.decide(&row.id, &decision(ConfirmationStatus::Rejected, "bob")).await.unwrap(),
            DecideOutcome::AlreadyDecided(ConfirmationStatus::Approved)
        );
        assert_eq!(
            s.decide("nope", &decision(ConfirmationStatus::Rejected, "bob")).await.unwrap(),
            DecideOutcome::NotFound
        );
        assert!(s.decide(&other.id, &decision(ConfirmationStatus::Pending, "bob")).await.is_err());

        let cancelled = s.cancel_confirmation(&other.id, Some("card not delivered")).await.unwrap();
        assert!(matches!(cancelled, DecideOutcome::Decided(ref r) if r.status == ConfirmationStatus::Cancelled));
    }
}

#[tokio::test]
async fn expired_pending_requests_are_listed() {
    for db in backends().await {
        let s = &db.store;
        let late = s.insert_pending(&pending("org-1", "run-1", "call-1", Duration::minutes(-1))).await.unwrap();
        s.insert_pending(&pending("org-1", "run-1", "call-2", Duration::minutes(10))).await.unwrap();
        let decided = s.insert_pending(&pending("org-1", "run-1", "call-3", Duration::minutes(-2))).await.unwrap();
        s.decide(&decided.id, &decision(ConfirmationStatus::Rejected, "bob")).await.unwrap();

        let expired = s.list_expired_pending_confirmations(Utc::now()).await.unwrap();
        assert_eq!(expired.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [late.id.as_str()], "{}", db.label);
    }
}

/// 32 deciders race on one pending request: exactly one wins, everyone else is told who did.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_32_concurrent_deciders_wins() {
    for db in backends().await {
        let store = Arc::new(db.store.clone());
        let row = store.insert_pending(&pending("org-1", "run-1", "call-1", Duration::minutes(5))).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(32));
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..32 {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            let id = row.id.clone();
            tasks.spawn(async move {
                let status = if i % 2 == 0 { ConfirmationStatus::Approved } else { ConfirmationStatus::Rejected };
                barrier.wait().await;
                store.decide(&id, &decision(status, &format!("user{i}"))).await
            });
        }
        let mut winners = Vec::new();
        let mut losers = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined.unwrap().unwrap() {
                DecideOutcome::Decided(record) => winners.push(record),
                DecideOutcome::AlreadyDecided(status) => losers.push(status),
                DecideOutcome::NotFound => panic!("{}: row vanished", db.label),
            }
        }
        assert_eq!(winners.len(), 1, "{}: winners {winners:?}", db.label);
        assert_eq!(losers.len(), 31, "{}", db.label);
        let final_status = winners[0].status;
        assert!(losers.iter().all(|s| *s == final_status), "{}: losers see the winner's status", db.label);
        let stored = ConfirmationStore::get(store.as_ref(), &row.id).await.unwrap().unwrap();
        assert_eq!(stored, winners[0], "{}", db.label);
    }
}

/// PostgreSQL: a decision made through one store reaches the listener of another at once.
#[tokio::test(flavor = "multi_thread")]
async fn decisions_are_announced_to_listeners_on_postgres() {
    for db in backends().await {
        let Some(mut listener) = db.store.decision_listener().await.unwrap() else {
            assert_eq!(db.label, "sqlite", "only SQLite has no listener");
            continue;
        };
        let other = crate::support::open(&db.url, Some(crate::support::KEY)).await;
        let org = other.create_org("announced").await.unwrap();
        let request = pending(&org.id, "run-1", "call-1", Duration::seconds(60));
        other.insert_pending(&request).await.unwrap();
        let update = DecisionUpdate {
            status: ConfirmationStatus::Approved,
            responded_by_open_id: None,
            responded_by_user_id: Some("user-1".into()),
            reason: None,
            at: Utc::now(),
        };
        assert!(matches!(other.decide(&request.id, &update).await.unwrap(), DecideOutcome::Decided(_)));
        // The channel is database-wide: other tests' decisions may come first.
        let announced = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                if listener.next().await.unwrap() == request.id {
                    return;
                }
            }
        })
        .await;
        assert!(announced.is_ok(), "the decision was not announced");
    }
}
