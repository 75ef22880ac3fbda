//! A complete run against the OpenAI fixtures served by wiremock (streaming and not), with HTTP
//! connector tools calling a loopback upstream.

use std::sync::Arc;

use agent_react::{ConnectorAuth, HttpActionTool, RunStatus, Tool, http_client};
use hook_core::{HookRegistry, meta};
use llm::{OpenAiConfig, OpenAiModel};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::http_tool::{action, connector};
use crate::support::{Recorder, agent_run, check};

fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/openai/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const FINAL_STREAM: &str = concat!(
    "data: {\"id\":\"c4\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"The payment of ¥60,000 \"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c4\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"was submitted.\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

async fn complete_run(stream: bool) -> (Vec<Value>, Vec<serde_json::Value>, Vec<hook_core::HookContext>) {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/purchase/pay"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"payment_id": "PAY-1", "status": "submitted"})))
        .expect(1)
        .mount(&upstream)
        .await;
    Mock::given(method("GET"))
        .and(path("/accounts/ops/balance"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"balance_cny": 1240000})))
        .expect(1)
        .mount(&upstream)
        .await;

    let provider = MockServer::start().await;
    let (first, final_answer, content_type) = if stream {
        (fixture("stream_tool_calls.sse"), FINAL_STREAM.to_owned(), "text/event-stream")
    } else {
        (fixture("chat_completion_tool_calls.json"), fixture("chat_completion_final.json"), "application/json")
    };
    // The second call carries the observations (`"role":"tool"`); the first does not.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("\"role\":\"tool\""))
        .respond_with(ResponseTemplate::new(200).set_body_raw(final_answer, content_type))
        .with_priority(1)
        .expect(1)
        .mount(&provider)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(first, content_type))
        .with_priority(2)
        .expect(1)
        .mount(&provider)
        .await;

    let mut config = OpenAiConfig::new(format!("{}/v1", provider.uri()), "gpt-4.1-mini");
    config.stream = stream;
    let model = Arc::new(OpenAiModel::new(config).unwrap());
    let client = http_client().unwrap();
    let c = connector(&upstream.uri(), ConnectorAuth::None);
    let mut pay = action("purchase_pay", "POST", "/purchase/pay");
    pay.parameters_schema = json!({
        "type": "object",
        "required": ["invoice_id", "amount_cny"],
        "properties": {"invoice_id": {"type": "string"}, "amount_cny": {"type": "number"}, "memo": {"type": "string"}}
    });
    pay.requires_confirmation = true;
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(HttpActionTool::new(c.clone(), pay, client.clone()).unwrap()),
        Arc::new(HttpActionTool::new(c, action("get_balance", "GET", "/accounts/{account}/balance"), client).unwrap()),
    ];
    let recorder = Arc::new(Recorder::default());
    let mut hooks = HookRegistry::new();
    hooks.register_post(recorder.clone());
    let (run, sink) = agent_run(model, tools, hooks);
    let (outcome, events) = check(run, &sink).await;
    assert_eq!(outcome.status, RunStatus::Completed, "{:?}", outcome.error);

    let requests: Vec<Value> =
        provider.received_requests().await.unwrap().iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect();
    let seen = recorder.seen.lock().unwrap().clone();
    (events, requests, seen)
}

fn check_transcript(requests: &[Value]) {
    assert_eq!(requests.len(), 2);
    let second = &requests[1]["messages"];
    // system, user, assistant with both calls, then one tool message per call id, in order.
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["tool_calls"][0]["id"], "call_example_pay_01");
    assert_eq!(second[3]["tool_call_id"], "call_example_pay_01");
    assert_eq!(second[4]["tool_call_id"], "call_example_bal_02");
    assert_eq!(second[3]["content"], r#"{"payment_id":"PAY-1","status":"submitted"}"#);
    assert_eq!(requests[0]["tools"][0]["function"]["name"], "payments__purchase_pay");
}

fn check_audit_metadata(seen: &[hook_core::HookContext]) {
    assert_eq!(seen.len(), 2);
    let pay = seen.iter().find(|c| c.tool_name == "payments__purchase_pay").unwrap();
    assert_eq!(pay.metadata[meta::REQUEST_METHOD], "POST");
    assert_eq!(pay.metadata[meta::RESPONSE_STATUS], 200);
    assert!(pay.metadata[meta::RESPONSE_TIME_MS].is_u64());
    assert_eq!(pay.metadata[meta::REQUIRES_CONFIRMATION], true);
    assert_eq!(pay.metadata[meta::SIDE_EFFECT], "write");
    assert_eq!(pay.metadata[meta::CONNECTOR_NAME], "payments");
    assert_eq!(pay.metadata[meta::ACTION_NAME], "purchase_pay");
    let balance = seen.iter().find(|c| c.tool_name == "payments__get_balance").unwrap();
    assert!(balance.metadata[meta::REQUEST_URL].as_str().unwrap().ends_with("/accounts/ops/balance"));
    assert_eq!(balance.metadata[meta::SIDE_EFFECT], "read");
}

#[tokio::test(flavor = "multi_thread")]
async fn complete_run_non_streaming() {
    let (events, requests, seen) = complete_run(false).await;
    check_transcript(&requests);
    check_audit_metadata(&seen);
    insta::assert_json_snapshot!(events);
}

#[tokio::test(flavor = "multi_thread")]
async fn complete_run_streaming() {
    let (events, requests, seen) = complete_run(true).await;
    assert_eq!(requests[0]["stream"], true);
    check_transcript(&requests);
    check_audit_metadata(&seen);
    insta::assert_json_snapshot!(events);
}
