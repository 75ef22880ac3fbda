use llm::{ChatModel, ChatRequest, Message, ModelConfig, ToolArguments};
use serde_json::json;

fn model() -> std::sync::Arc<dyn ChatModel> {
    let config: ModelConfig = serde_json::from_value(json!({
        "provider": "scripted",
        "turns": [
            {"tool_calls": [{"name": "erp__get", "arguments": {"id": 1}}, {"name": "bad", "arguments": "{oops"}]},
            {"content": "done"}
        ]
    }))
    .unwrap();
    config.build().unwrap()
}

#[tokio::test]
async fn each_call_consumes_the_next_turn_and_every_run_starts_at_the_first() {
    let model = model();
    let mut request = ChatRequest { messages: vec![Message::system("s"), Message::user("hi")], tools: vec![] };

    let first = model.chat(&request).await.unwrap();
    assert_eq!(first.tool_calls.len(), 2);
    assert_eq!(first.tool_calls[0].id, "call_0_0");
    assert_eq!(first.tool_calls[0].arguments, ToolArguments::Parsed { value: json!({"id": 1}) });
    assert!(matches!(first.tool_calls[1].arguments, ToolArguments::Invalid { .. }));

    request.messages.push(first.to_message());
    request.messages.push(Message::tool("call_0_0", "{}"));
    request.messages.push(Message::tool("call_0_1", "bad"));
    let second = model.chat(&request).await.unwrap();
    assert_eq!(second.content.as_deref(), Some("done"));
    assert!(second.tool_calls.is_empty());

    // Past the last turn: the last content again.
    request.messages.push(second.to_message());
    assert_eq!(model.chat(&request).await.unwrap().content.as_deref(), Some("done"));

    // A new user message starts a new run at the first turn.
    request.messages.push(Message::user("again"));
    assert_eq!(model.chat(&request).await.unwrap().tool_calls.len(), 2);
}

#[test]
fn unknown_fields_and_providers_are_refused() {
    let bad = serde_json::from_value::<ModelConfig>(json!({"provider": "scripted", "turns": [], "x": 1}));
    assert!(bad.is_err());
    let bad = serde_json::from_value::<ModelConfig>(json!({"provider": "nope"}));
    assert!(bad.is_err());
    let ok = serde_json::from_value::<ModelConfig>(
        json!({"provider": "openai", "base_url": "http://x/v1", "model": "m", "api_key_env": "TOLLGATE_TEST_UNSET_KEY_VAR"}),
    )
    .unwrap();
    let err = ok.build().unwrap_err();
    assert!(err.to_string().contains("TOLLGATE_TEST_UNSET_KEY_VAR"), "{err}");
}
