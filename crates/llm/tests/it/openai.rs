use std::time::Duration;

use llm::{ChatModel, ChatRequest, LlmError, Message, OpenAiConfig, OpenAiModel, ToolArguments, ToolSpec};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/openai/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("You pay invoices."), Message::user("Pay INV-2026-0042")],
        tools: vec![ToolSpec {
            name: "payments__purchase_pay".into(),
            description: "Pay an invoice".into(),
            parameters: json!({"type": "object", "properties": {"invoice_id": {"type": "string"}}}),
        }],
    }
}

fn model(server: &MockServer, stream: bool) -> OpenAiModel {
    let mut config = OpenAiConfig::new(format!("{}/v1/", server.uri()), "gpt-4.1-mini");
    config.api_key = Some("sk-test".into());
    config.stream = stream;
    config.backoff = Duration::from_millis(1);
    OpenAiModel::new(config).unwrap()
}

#[tokio::test]
async fn non_streaming_tool_calls_are_parsed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_partial_json(json!({
            "model": "gpt-4.1-mini",
            "tools": [{"type": "function", "function": {"name": "payments__purchase_pay"}}]
        })))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(fixture("chat_completion_tool_calls.json"), "application/json"),
        )
        .expect(1)
        .mount(&server)
        .await;

    let response = model(&server, false).chat(&request()).await.unwrap();
    assert_eq!(response.content, None);
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].id, "call_example_pay_01");
    assert_eq!(
        response.tool_calls[0].arguments,
        ToolArguments::Parsed {
            value: json!({"invoice_id": "INV-2026-0042", "amount_cny": 60000, "memo": "服务器采购"})
        }
    );
    assert_eq!(response.tool_calls[1].name, "payments__get_balance");
    assert_eq!(response.usage.unwrap().total_tokens, 473);
}

#[tokio::test]
async fn streaming_fragments_are_joined() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(fixture("stream_tool_calls.sse"), "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;

    let response = model(&server, true).chat(&request()).await.unwrap();
    let calls: Vec<(String, String, Value)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.value().cloned().unwrap()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "call_example_pay_01".into(),
                "payments__purchase_pay".into(),
                json!({"invoice_id": "INV-2026-0042", "amount_cny": 60000})
            ),
            ("call_example_bal_02".into(), "payments__get_balance".into(), json!({"account": "ops"})),
        ]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
}

fn rate_limited() -> ResponseTemplate {
    let fixture: Value = serde_json::from_str(&fixture("error_rate_limited.json")).unwrap();
    ResponseTemplate::new(429)
        .insert_header("retry-after", fixture["headers"]["retry-after"].as_str().unwrap())
        .set_body_json(fixture["body"].clone())
}

#[tokio::test]
async fn rate_limit_is_classified_with_its_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(rate_limited()).expect(1).mount(&server).await;
    // A retry-after longer than we are willing to wait ends the retries at once.
    let mut config = OpenAiConfig::new(format!("{}/v1", server.uri()), "m");
    config.max_retry_wait = Duration::from_secs(1);
    let model = OpenAiModel::new(config).unwrap();

    let err = model.chat(&request()).await.unwrap_err();
    match err {
        LlmError::RateLimited { retry_after, message } => {
            assert_eq!(retry_after, Some(Duration::from_secs(2)));
            assert!(message.contains("Rate limit reached"), "{message}");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(fixture("chat_completion_final.json"), "application/json"),
        )
        .with_priority(2)
        .expect(1)
        .mount(&server)
        .await;

    let response = model(&server, false).chat(&request()).await.unwrap();
    assert!(response.content.unwrap().contains("INV-2026-0042"));
}

#[tokio::test]
async fn retries_are_bounded_and_bad_requests_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).expect(3).mount(&server).await;
    let err = model(&server, false).chat(&request()).await.unwrap_err();
    assert!(matches!(err, LlmError::Transient(_)), "{err:?}");

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}})))
        .expect(1)
        .mount(&server)
        .await;
    let err = model(&server, false).chat(&request()).await.unwrap_err();
    assert!(matches!(err, LlmError::ContextLength(_)), "{err:?}");
}

#[tokio::test]
async fn transcript_is_sent_in_the_wire_format() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{oops"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "bad arguments"}
        ]})))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(fixture("chat_completion_final.json"), "application/json"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let request = ChatRequest {
        messages: vec![
            Message::system("s"),
            Message::user("u"),
            Message::Assistant {
                content: None,
                tool_calls: vec![llm::ToolCall {
                    id: "c1".into(),
                    name: "t".into(),
                    arguments: ToolArguments::parse("{oops"),
                }],
            },
            Message::tool("c1", "bad arguments"),
        ],
        tools: vec![],
    };
    model(&server, false).chat(&request).await.unwrap();
}
