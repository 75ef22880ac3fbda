//! `HttpActionTool` against a real loopback server.

use std::sync::Arc;

use agent_react::{
    ConnectorAuth, HttpAction, HttpActionTool, HttpConnector, NullSink, RateLimit, RunLimits, RunServices, SideEffect,
    Tool, ToolCallContext, ToolError, http_client,
};
use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub fn connector(base_url: &str, auth: ConnectorAuth) -> Arc<HttpConnector> {
    Arc::new(HttpConnector {
        id: "conn-payments".into(),
        name: "payments".into(),
        base_url: base_url.into(),
        auth,
        rate_limit: Some(RateLimit { per_minute: 60, burst: 5 }),
        allow_private_metadata: false,
        timeout_s: 5,
    })
}

pub fn action(name: &str, method: &str, path: &str) -> HttpAction {
    HttpAction {
        name: name.into(),
        description: format!("{method} {path}"),
        method: method.into(),
        path: path.into(),
        parameters_schema: json!({"type": "object"}),
        requires_confirmation: false,
        side_effect: None,
    }
}

pub fn ctx() -> ToolCallContext {
    ToolCallContext {
        scope: Arc::new(crate::support::scope()),
        tool_call_id: "call-1".into(),
        services: RunServices::new(Arc::new(NullSink)),
        limits: RunLimits::default(),
    }
}

#[tokio::test]
async fn get_sends_query_and_bearer_and_records_the_exchange() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/accounts/ops/balance"))
        .and(query_param("currency", "CNY"))
        .and(header("authorization", "Bearer tok"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"balance": 1240000})))
        .expect(1)
        .mount(&server)
        .await;
    let tool = HttpActionTool::new(
        connector(&format!("{}/api", server.uri()), ConnectorAuth::Bearer { token: "tok".into() }),
        action("get_balance", "GET", "/accounts/{account}/balance"),
        http_client().unwrap(),
    )
    .unwrap();
    assert_eq!(tool.side_effect(), SideEffect::Read);
    assert_eq!(tool.extra_metadata()["rate_limit_per_minute"], 60);
    let out = tool.call(json!({"account": "ops", "currency": "CNY"}), &ctx()).await.unwrap();
    assert_eq!(out.result, json!({"balance": 1240000}));
    let http = out.http.unwrap();
    assert_eq!(http.method, "GET");
    assert_eq!(http.url, format!("{}/api/accounts/ops/balance?currency=CNY", server.uri()));
    assert_eq!(http.status, Some(200));
}

#[tokio::test]
async fn post_sends_a_json_body_with_api_key_or_basic_auth() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/pay"))
        .and(header("x-api-key", "k1"))
        .and(body_json(json!({"invoice_id": "INV-1", "memo": "服务器采购"})))
        .respond_with(ResponseTemplate::new(201).set_body_string("created"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path("/pay"))
        .and(header("authorization", "Basic dTpw"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
        .expect(1)
        .mount(&server)
        .await;
    let auth = ConnectorAuth::ApiKey { header: "x-api-key".into(), value: "k1".into() };
    let tool =
        HttpActionTool::new(connector(&server.uri(), auth), action("pay", "POST", "pay"), http_client().unwrap())
            .unwrap();
    assert_eq!(tool.side_effect(), SideEffect::Write);
    let out = tool.call(json!({"invoice_id": "INV-1", "memo": "服务器采购"}), &ctx()).await.unwrap();
    assert_eq!(out.result, Value::String("created".into()));

    let auth = ConnectorAuth::Basic { username: "u".into(), password: "p".into() };
    let tool =
        HttpActionTool::new(connector(&server.uri(), auth), action("pay", "PUT", "/pay"), http_client().unwrap())
            .unwrap();
    tool.call(json!({}), &ctx()).await.unwrap();
}

#[tokio::test]
async fn error_status_is_a_failure_with_the_exchange() {
    let server = MockServer::start().await;
    Mock::given(method("DELETE"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"error": "no such invoice"})))
        .mount(&server)
        .await;
    let tool = HttpActionTool::new(
        connector(&server.uri(), ConnectorAuth::None),
        action("cancel", "DELETE", "/invoices/{id}"),
        http_client().unwrap(),
    )
    .unwrap();
    let err = tool.call(json!({"id": 42}), &ctx()).await.unwrap_err();
    assert_eq!(err.to_string(), r#"HTTP 404: {"error":"no such invoice"}"#);
    let exchange = err.http_exchange().unwrap();
    assert_eq!(exchange.status, Some(404));
    assert!(exchange.url.ends_with("/invoices/42"));
}

#[tokio::test]
async fn metadata_and_link_local_addresses_are_refused() {
    for base in
        ["http://169.254.169.254/latest", "http://[fe80::1]:8080", "http://metadata.google.internal/computeMetadata"]
    {
        let tool =
            HttpActionTool::new(connector(base, ConnectorAuth::None), action("x", "GET", "/"), http_client().unwrap())
                .unwrap();
        let err = tool.call(json!({}), &ctx()).await.unwrap_err();
        assert!(matches!(err, ToolError::Refused(_)), "{base}: {err:?}");
    }
}

#[test]
fn invalid_names_and_methods_are_refused() {
    let c = connector("http://127.0.0.1:1", ConnectorAuth::None);
    assert!(HttpActionTool::new(c.clone(), action("bad name", "GET", "/"), http_client().unwrap()).is_err());
    assert!(HttpActionTool::new(c.clone(), action("x", "GE T", "/"), http_client().unwrap()).is_err());
    assert!(
        HttpActionTool::new(connector("ftp://x", ConnectorAuth::None), action("x", "GET", "/"), http_client().unwrap())
            .is_err()
    );
}

#[test]
fn connector_tools_are_one_per_action_with_unique_names() {
    let c = HttpConnector::clone(&connector("http://127.0.0.1:1", ConnectorAuth::None));
    let tools = agent_react::http_connector_tools(
        c.clone(),
        vec![action("a", "GET", "/a"), action("b", "POST", "/b")],
        &http_client().unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["payments__a", "payments__b"]);
    let err = agent_react::http_connector_tools(
        c,
        vec![action("a", "GET", "/a"), action("a", "POST", "/b")],
        &http_client().unwrap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("two actions are named 'a'"), "{err}");
}

#[tokio::test]
async fn oversized_responses_fail_the_call() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(agent_react::MAX_RESPONSE_BYTES + 1)))
        .mount(&server)
        .await;
    let tool = HttpActionTool::new(
        connector(&server.uri(), ConnectorAuth::None),
        action("big", "GET", "/"),
        http_client().unwrap(),
    )
    .unwrap();
    let err = tool.call(json!({}), &ctx()).await.unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
    assert_eq!(err.http_exchange().unwrap().status, Some(200));
}
