//! Bad input answers 4xx with `{"error":{"code","message"}}` and writes nothing.

use serde_json::{Value, json};

use crate::support::*;

fn agent_body(org_id: &str, connector_id: &str) -> Value {
    json!({
        "org_id": org_id,
        "name": "finance-assistant",
        "instructions": "Pay invoices when asked.",
        "model": scripted_payment(),
        "connectors": [connector_id],
        "confirmation": {"timeout_s": 30, "approver_scope": "initiator"},
    })
}

fn with(mut body: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    body.pointer_mut(parent).unwrap().as_object_mut().unwrap().insert(key.to_owned(), value);
    body
}

#[tokio::test]
async fn bad_input_answers_4xx_with_the_error_shape_and_writes_nothing() {
    for db in databases().await {
        let server = Server::start(db).await;
        let feishu = feishu().await;
        let upstream = upstream().await;
        let org = org(&server, "alpha", Some(&feishu), &upstream).await;
        let agent_id = agent(&server, &org, scripted_payment(), 30, "initiator").await;
        let key = org.admin.key.as_str();
        let label = server.label;
        let before = server.row_counts().await;

        let good = agent_body(&org.id, &org.connector_id);
        assert_eq!(
            server
                .post_raw("/api/v1/agents", key, Some("application/json"), b"{\"org_id\": ".to_vec())
                .await
                .expect_error(400),
            "invalid_json"
        );
        assert_eq!(
            server
                .post_raw("/api/v1/agents", key, Some("text/plain"), good.to_string().into_bytes())
                .await
                .expect_error(415),
            "unsupported_media_type"
        );
        assert_eq!(
            server.post_raw("/api/v1/agents", key, None, good.to_string().into_bytes()).await.expect_error(415),
            "unsupported_media_type"
        );
        let mut huge = good.clone();
        huge["instructions"] = json!("x".repeat(1024 * 1024 + 1));
        assert_eq!(server.post("/api/v1/agents", key, &huge).await.expect_error(413), "payload_too_large", "{label}");

        let refused_agents = [
            ("unknown top-level field", with(good.clone(), "/colour", json!("red")), "invalid_body"),
            (
                "unknown confirmation field",
                with(good.clone(), "/confirmation/approver", json!("me")),
                "validation_failed",
            ),
            (
                "unknown provider",
                with(good.clone(), "/model", json!({"provider": "gpt", "model": "x"})),
                "validation_failed",
            ),
            (
                "openai without a model",
                with(good.clone(), "/model", json!({"provider": "openai", "base_url": "http://127.0.0.1:9"})),
                "validation_failed",
            ),
            (
                "unknown model field",
                with(
                    good.clone(),
                    "/model",
                    json!({"provider": "openai", "base_url": "http://127.0.0.1:9", "model": "m", "temperature": 2}),
                ),
                "validation_failed",
            ),
            (
                "unset api_key_env",
                with(
                    good.clone(),
                    "/model",
                    json!({"provider": "openai", "base_url": "http://127.0.0.1:9", "model": "m",
                    "api_key_env": "TOLLGATE_E2E_SURELY_UNSET_VARIABLE"}),
                ),
                "validation_failed",
            ),
            (
                "unknown hook",
                with(good.clone(), "/hooks", json!({"class_hooks": ["no_such_hook"]})),
                "validation_failed",
            ),
            (
                "bad hook config",
                with(
                    good.clone(),
                    "/hooks",
                    json!({"class_hooks": [{"name": "result_truncate", "config": {"max_chars": "lots"}}]}),
                ),
                "validation_failed",
            ),
            ("unknown hooks field", with(good.clone(), "/hooks", json!({"class_hook": []})), "validation_failed"),
            ("unknown connector", with(good.clone(), "/connectors", json!(["no-such-connector"])), "validation_failed"),
            ("unknown builtin tool", with(good.clone(), "/tools", json!(["rm_rf"])), "validation_failed"),
        ];
        for (what, body, code) in refused_agents {
            let answer = server.post("/api/v1/agents", key, &body).await;
            assert_eq!(answer.expect_error(400), code, "{label}: {what}");
        }

        let connector = payments_connector(&org.id, &upstream.uri());
        let refused_connectors = [
            ("unknown top-level field", with(connector.clone(), "/retries", json!(3)), "invalid_body"),
            ("unknown action field", with(connector.clone(), "/actions/0/timeout", json!(3)), "invalid_body"),
            (
                "unknown rate-limit field",
                with(connector.clone(), "/rate_limit", json!({"per_minute": 5, "burst": 1, "per_hour": 9})),
                "invalid_body",
            ),
            ("bad base_url", with(connector.clone(), "/base_url", json!("not a url")), "validation_failed"),
            ("bad action name", with(connector.clone(), "/actions/0/name", json!("pay__now")), "validation_failed"),
            ("bad auth", with(connector.clone(), "/auth", json!({"type": "kerberos"})), "validation_failed"),
        ];
        for (what, body, code) in refused_connectors {
            let answer = server.post("/api/v1/connectors", key, &body).await;
            assert_eq!(answer.expect_error(400), code, "{label}: {what}");
        }

        let channel = json!({"org_id": org.id, "type": "feishu", "name": "c", "config": {"app_id": "a"}});
        assert_eq!(server.post("/api/v1/channels", key, &channel).await.expect_error(400), "validation_failed");
        let chat = format!("/api/v1/agents/{agent_id}/chat");
        assert_eq!(
            server.post_raw(&chat, key, Some("application/json"), b"{message".to_vec()).await.expect_error(400),
            "invalid_json"
        );
        assert_eq!(
            server.post(&chat, key, &json!({"message": "hi", "stream": true})).await.expect_error(400),
            "invalid_body"
        );
        assert_eq!(server.post(&chat, key, &json!({"message": "  "})).await.expect_error(400), "validation_failed");
        assert_eq!(
            server.post_raw(&chat, key, Some("text/plain"), b"hi".to_vec()).await.expect_error(415),
            "unsupported_media_type"
        );
        let answer = server.post("/api/v1/orgs", key, &json!({"name": "x"})).await;
        assert_eq!(answer.expect_error(403), "forbidden", "an org admin is not the platform admin");
        assert_eq!(
            server.post("/api/v1/orgs", "wrong-token", &json!({"name": "x"})).await.expect_error(401),
            "unauthorized"
        );
        let callback = format!("/api/v1/channels/{}/feishu/callback", org.channel_id.as_deref().unwrap());
        assert_eq!(
            server.post_raw(&callback, "", Some("application/json"), b"not json".to_vec()).await.expect_error(400),
            "bad_callback"
        );

        assert_eq!(server.row_counts().await, before, "{label}: refused requests wrote nothing");
    }
}

#[tokio::test]
async fn health_openapi_and_metrics_answer() {
    for db in databases().await {
        let server = Server::start(db).await;
        let client = http_client();
        let health = client.get(server.url("/healthz")).send().await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
        assert_eq!(health.json::<Value>().await.unwrap(), json!({"status": "ok"}));
        let doc = server.get("/api/v1/openapi.json", ADMIN).await.expect(200);
        for path in
            ["/api/v1/agents/{id}/chat", "/api/v1/confirmations/{id}/decision", "/api/v1/channels/{id}/feishu/callback"]
        {
            assert!(doc["paths"][path].is_object(), "{path} missing from the OpenAPI document");
        }
        let metrics = client.get(server.url("/metrics")).send().await.unwrap();
        assert_eq!(metrics.status().as_u16(), 200);
        assert!(metrics.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
        assert_eq!(server.get("/api/v1/nowhere", ADMIN).await.expect_error(404), "not_found");
    }
}
