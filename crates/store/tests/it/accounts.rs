//! Orgs, users, API keys, agents, connectors: round trips and unique constraints.

use hook_builtins::ports::{ApproverDirectory, OrgPolicy};
use serde_json::json;
use store::{
    ConnectorKind, NewAgent, NewConnector, NewConnectorAction, NewUser, RateLimit, Role, SideEffect, StoreError,
};

use crate::support::{backends, raw_strings};

fn user(org_id: &str, name: &str, role: Role, open_id: Option<&str>) -> NewUser {
    NewUser { org_id: org_id.to_owned(), name: name.to_owned(), role, feishu_open_id: open_id.map(str::to_owned) }
}

fn http_connector(org_id: &str, name: &str) -> NewConnector {
    NewConnector {
        org_id: org_id.to_owned(),
        name: name.to_owned(),
        kind: ConnectorKind::Http,
        base_url: Some("http://127.0.0.1:9/api".to_owned()),
        url: None,
        auth: Some(json!({"type": "bearer", "token": "tok-123"})),
        rate_limit: Some(RateLimit { per_minute: 60, burst: 5 }),
        actions: vec![
            NewConnectorAction {
                name: "refund".to_owned(),
                description: "Refund an order".to_owned(),
                method: "POST".to_owned(),
                path: "/refunds".to_owned(),
                parameters_schema: json!({"type": "object", "properties": {"amount": {"type": "number"}}}),
                requires_confirmation: true,
                side_effect: SideEffect::Write,
            },
            NewConnectorAction {
                name: "get_order".to_owned(),
                description: "Read an order".to_owned(),
                method: "GET".to_owned(),
                path: "/orders/{id}".to_owned(),
                parameters_schema: json!({"type": "object"}),
                requires_confirmation: false,
                side_effect: SideEffect::Read,
            },
        ],
    }
}

#[tokio::test]
async fn orgs_and_users() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org("acme").await.unwrap();
        let other = s.create_org("globex").await.unwrap();
        assert_eq!(s.get_org(&org.id).await.unwrap(), Some(org.clone()), "{}", db.label);
        assert_eq!(s.find_org_by_name("globex").await.unwrap(), Some(other.clone()));
        assert_eq!(s.find_org_by_name("initech").await.unwrap(), None);
        assert_eq!(s.count_orgs().await.unwrap(), 2);
        assert!(!s.is_read_only(&org.id).await.unwrap());

        let flipped = s.set_org_read_only(&org.id, true).await.unwrap();
        assert!(flipped.read_only);
        assert!(s.is_read_only(&org.id).await.unwrap(), "the very next read sees the flip");
        assert!(s.is_read_only("no-such-org").await.is_err());
        assert!(matches!(s.set_org_read_only("no-such-org", true).await, Err(StoreError::NotFound(_))));

        let alice = s.create_user(&user(&org.id, "alice", Role::Admin, Some("ou_alice"))).await.unwrap();
        // feishu_open_id is unique within an org ...
        let dup = s.create_user(&user(&org.id, "mallory", Role::Member, Some("ou_alice"))).await;
        assert!(matches!(dup, Err(StoreError::Conflict(_))), "{}: {dup:?}", db.label);
        // ... but not across orgs, and users without one never collide.
        s.create_user(&user(&other.id, "alice2", Role::Member, Some("ou_alice"))).await.unwrap();
        s.create_user(&user(&org.id, "bob", Role::Member, None)).await.unwrap();
        s.create_user(&user(&org.id, "carol", Role::Member, None)).await.unwrap();

        assert_eq!(s.get_user(&alice.id).await.unwrap(), Some(alice.clone()));
        assert_eq!(s.user_by_open_id(&org.id, "ou_alice").await.unwrap(), Some(alice.clone()));
        assert_eq!(s.list_users(&org.id).await.unwrap().len(), 3);
        let approver = ApproverDirectory::user_by_open_id(s, &org.id, "ou_alice").await.unwrap().unwrap();
        assert_eq!((approver.user_id.as_str(), approver.role.as_str()), (alice.id.as_str(), "admin"));
        assert_eq!(ApproverDirectory::user_by_open_id(s, &org.id, "ou_nobody").await.unwrap(), None);
    }
}

#[tokio::test]
async fn api_keys_are_hashed_and_revocable() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org("acme").await.unwrap();
        let alice = s.create_user(&user(&org.id, "alice", Role::Admin, None)).await.unwrap();
        let key = s.create_api_key(&alice.id).await.unwrap();
        assert!(key.api_key.starts_with("tg_") && key.api_key.len() == 67);
        assert!(key.api_key.starts_with(&key.prefix));

        assert_eq!(s.authenticate_api_key(&key.api_key).await.unwrap(), Some(alice.clone()));
        assert_eq!(s.authenticate_api_key("tg_wrong").await.unwrap(), None);
        let stored = raw_strings(s, "SELECT * FROM api_keys").await;
        assert!(stored.iter().all(|v| !v.contains(&key.api_key)), "{}: plaintext key stored", db.label);

        s.revoke_api_key(&key.id).await.unwrap();
        assert_eq!(s.authenticate_api_key(&key.api_key).await.unwrap(), None);
        assert!(matches!(s.revoke_api_key("nope").await, Err(StoreError::NotFound(_))));
        assert!(matches!(s.create_api_key("nope").await, Err(StoreError::NotFound(_))));
    }
}

#[tokio::test]
async fn connectors_are_unique_per_org_and_carry_actions() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org("acme").await.unwrap();
        let other = s.create_org("globex").await.unwrap();
        let created = s.create_connector(&http_connector(&org.id, "shop")).await.unwrap();
        assert_eq!(created.actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["get_order", "refund"]);

        let dup = s.create_connector(&http_connector(&org.id, "shop")).await;
        assert!(matches!(dup, Err(StoreError::Conflict(_))), "{}: {dup:?}", db.label);
        // The failed transaction left no orphan actions behind.
        let orphans = raw_strings(s, "SELECT connector_id FROM connector_actions").await;
        assert!(orphans.iter().all(|id| *id == created.id), "{}", db.label);
        s.create_connector(&http_connector(&other.id, "shop")).await.unwrap();

        let got = s.get_connector(&created.id).await.unwrap().unwrap();
        assert_eq!(got, created, "{}", db.label);
        assert_eq!(got.auth, Some(json!({"type": "bearer", "token": "tok-123"})));
        assert_eq!(s.get_connector_by_name(&org.id, "shop").await.unwrap(), Some(created.clone()));
        assert_eq!(s.list_connectors(&org.id).await.unwrap(), vec![created]);
        assert_eq!(s.get_connector("nope").await.unwrap(), None);
    }
}

#[tokio::test]
async fn agents_round_trip_and_name_their_owner() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org("acme").await.unwrap();
        let owner = s.create_user(&user(&org.id, "olga", Role::Member, None)).await.unwrap();
        let config = json!({"model": {"provider": "scripted", "turns": []}, "tools": [], "hooks": {"class_hooks": []}});
        let agent = s
            .create_agent(&NewAgent {
                org_id: org.id.clone(),
                owner_user_id: Some(owner.id.clone()),
                name: "support".to_owned(),
                instructions: "Be nice.".to_owned(),
                require_confirmation_for_all: true,
                model_config: config.clone(),
            })
            .await
            .unwrap();
        let got = s.get_agent(&agent.id).await.unwrap().unwrap();
        assert_eq!(got, agent, "{}", db.label);
        assert_eq!(got.model_config, config);
        assert_eq!(s.list_agents(&org.id).await.unwrap(), vec![agent.clone()]);
        assert_eq!(s.agent_owner(&agent.id).await.unwrap(), Some(owner.id));
        assert_eq!(s.agent_owner("nope").await.unwrap(), None);
    }
}
