//! Org isolation: a user of org B cannot read (404), decide (404) or list (empty) anything of
//! org A — runs, confirmations, agents, connectors, audit — not even through B's Feishu channel.

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn org_b_cannot_read_decide_or_list_anything_of_org_a() {
    for db in databases().await {
        let server = Server::start(db).await;
        let feishu = feishu().await;
        let upstream = upstream().await;
        let a = org(&server, "alpha", Some(&feishu), &upstream).await;
        let b = org(&server, "beta", Some(&feishu), &upstream).await;
        let agent_a = agent(&server, &a, scripted_payment(), 30, "org_members").await;
        let label = server.label;

        let mut sse = server.chat(&agent_a, &a.requester.key, "Pay INV-2026-0042").await;
        let awaiting = sse.until("awaiting_confirmation").await;
        let confirmation_id = awaiting["confirmation_id"].as_str().unwrap().to_owned();
        let run_id = awaiting["run_id"].as_str().unwrap().to_owned();

        // While it waits: B sees no pending request and cannot decide it, by API or by card.
        for key in [&b.admin.key, &b.requester.key] {
            assert_eq!(server.get("/api/v1/confirmations?status=pending", key).await.expect(200), json!([]), "{label}");
            assert_eq!(server.get("/api/v1/confirmations", key).await.expect(200), json!([]));
            let decision = format!("/api/v1/confirmations/{confirmation_id}/decision");
            let answer = server.post(&decision, key, &json!({"decision": "approve"})).await;
            assert_eq!(answer.expect_error(404), "not_found");
        }
        let click = card_click("evt-cross-org", &confirmation_id, "approve", &b.admin.open_id);
        let answer =
            server.feishu_callback(b.channel_id.as_deref().unwrap(), &encrypted_delivery(ENCRYPT_KEY, &click)).await;
        assert_eq!(answer.expect(200)["toast"]["type"], "error");
        // A's own channel does not accept B's people either.
        let click = card_click("evt-cross-user", &confirmation_id, "approve", &b.admin.open_id);
        let answer =
            server.feishu_callback(a.channel_id.as_deref().unwrap(), &encrypted_delivery(ENCRYPT_KEY, &click)).await;
        assert_eq!(answer.expect(200)["toast"]["type"], "error");
        let pending = server.get("/api/v1/confirmations?status=pending", &a.requester.key).await.expect(200);
        assert_eq!(pending.as_array().unwrap().len(), 1, "A still sees its request pending");
        assert!(requests_to(&upstream, "/pay").await.is_empty());

        // A decides; the run completes and writes audit rows.
        let decision = format!("/api/v1/confirmations/{confirmation_id}/decision");
        server.post(&decision, &a.bystander.key, &json!({"decision": "approve"})).await.expect(200);
        sse.finish().await;
        let audit_a =
            server.get(&format!("/api/v1/audit/connector-calls?run_id={run_id}"), &a.admin.key).await.expect(200);
        assert_eq!(audit_a.as_array().unwrap().len(), 1, "{audit_a}");

        // B reads nothing of A.
        for key in [&b.admin.key, &b.requester.key] {
            for path in [
                format!("/api/v1/runs/{run_id}"),
                format!("/api/v1/runs/{run_id}/events"),
                format!("/api/v1/runs/{run_id}/tool-executions/call_0_0"),
                format!("/api/v1/confirmations/{confirmation_id}"),
                format!("/api/v1/agents/{agent_a}"),
                format!("/api/v1/connectors/{}", a.connector_id),
                format!("/api/v1/orgs/{}", a.id),
            ] {
                let answer = server.get(&path, key).await;
                assert_eq!(answer.expect_error(404), "not_found", "{label} GET {path}");
            }
            for path in [
                "/api/v1/confirmations".to_owned(),
                "/api/v1/audit/connector-calls".to_owned(),
                format!("/api/v1/audit/connector-calls?run_id={run_id}"),
            ] {
                assert_eq!(server.get(&path, key).await.expect(200), json!([]), "{label} GET {path}");
            }
            let chat = server.post(&format!("/api/v1/agents/{agent_a}/chat"), key, &json!({"message": "pay"})).await;
            assert_eq!(chat.expect_error(404), "not_found");
        }
        // B's admin cannot manage A either.
        let answer = server
            .post(&format!("/api/v1/orgs/{}/users", a.id), &b.admin.key, &json!({"name": "x", "role": "admin"}))
            .await;
        assert_eq!(answer.expect_error(404), "not_found");
        let answer = server.post(&format!("/api/v1/users/{}/api-keys", a.requester.id), &b.admin.key, &json!({})).await;
        assert_eq!(answer.expect_error(404), "not_found");
        let answer = server.post("/api/v1/connectors", &b.admin.key, &payments_connector(&a.id, &upstream.uri())).await;
        assert_eq!(answer.expect_error(404), "not_found");
        let answer = server
            .post(
                "/api/v1/agents",
                &b.admin.key,
                &json!({"org_id": b.id, "name": "thief", "instructions": "",
                "model": scripted_payment(), "connectors": [a.connector_id]}),
            )
            .await;
        assert_eq!(answer.expect_error(400), "validation_failed");
        // Still one call, from A's approved run.
        assert_eq!(requests_to(&upstream, "/pay").await.len(), 1);
    }
}
