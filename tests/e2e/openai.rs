//! A run with an OpenAI-compatible model: wiremock serves the recorded `/chat/completions`
//! answers (a turn with two tool calls, then the final answer); the gated call runs once
//! approved.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::assert_transcript;
use crate::support::*;

/// The variable the agent's `api_key_env` names. `unsafe_code` is forbidden workspace-wide, so
/// the test cannot `set_var` one of its own: it uses one Cargo sets for every test process.
const KEY_VAR: &str = "CARGO_PKG_NAME";

async fn llm() -> MockServer {
    let server = MockServer::start().await;
    // The first call gets the tool calls, every later one the final answer (first mounted wins
    // while it has uses left).
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("openai", "chat_completion_tool_calls.json")))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("openai", "chat_completion_final.json")))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn an_openai_compatible_model_completes_with_the_approved_call() {
    let api_key = std::env::var(KEY_VAR).expect("Cargo sets CARGO_PKG_NAME for test processes");
    for db in databases().await {
        let server = Server::start(db).await;
        let feishu = feishu().await;
        let upstream = upstream().await;
        let llm = llm().await;
        let org = org(&server, "alpha", Some(&feishu), &upstream).await;
        let model = json!({"provider": "openai", "base_url": format!("{}/v1", llm.uri()), "model": "gpt-4o-mini",
                           "api_key_env": KEY_VAR});
        let agent_id = agent(&server, &org, model, 30, "org_admins").await;

        let mut sse = server.chat(&agent_id, &org.requester.key, "Pay INV-2026-0042 and show the balance").await;
        let awaiting = sse.until("awaiting_confirmation").await;
        assert_eq!(awaiting["tool_call_id"], "call_example_pay_01");
        assert_eq!(
            awaiting["arguments"],
            json!({"invoice_id": "INV-2026-0042", "amount_cny": 60000, "memo": "服务器采购"})
        );
        let id = awaiting["confirmation_id"].as_str().unwrap();
        assert_card_sent(&feishu, id).await;
        assert!(requests_to(&upstream, "/pay").await.is_empty());
        // An org admin approves from the group (scope `org_admins`).
        let click = encrypted_delivery(ENCRYPT_KEY, &card_click("evt-openai-1", id, "approve", &org.admin.open_id));
        let answer = server.feishu_callback(org.channel_id.as_deref().unwrap(), &click).await.expect(200);
        assert_eq!(answer["toast"]["type"], "success", "{answer}");
        let frames = sse.finish().await;

        assert_eq!(requests_to(&upstream, "/pay").await.len(), 1, "{}", server.label);
        assert_eq!(requests_to(&upstream, "/balance").await.len(), 1);
        let run_id = frames[0]["data"]["run_id"].as_str().unwrap();
        let run = server.get(&format!("/api/v1/runs/{run_id}"), &org.requester.key).await.expect(200);
        assert_eq!(run["status"], "completed");
        let final_answer = fixture("openai", "chat_completion_final.json")["choices"][0]["message"]["content"].clone();
        assert_eq!(run["answer"], final_answer);

        // What the model endpoint saw: the key, the model, the tools, then the tool results.
        let calls = requests_to(&llm, "/v1/chat/completions").await;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].headers["authorization"], format!("Bearer {api_key}").as_str());
        let first: Value = serde_json::from_slice(&calls[0].body).unwrap();
        assert_eq!(first["model"], "gpt-4o-mini");
        let mut tools: Vec<&str> =
            first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        tools.sort_unstable();
        assert_eq!(tools, ["payments__get_balance", "payments__purchase_pay"]);
        let second: Value = serde_json::from_slice(&calls[1].body).unwrap();
        let tool_messages: Vec<&Value> =
            second["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
        assert_eq!(tool_messages.len(), 2, "{second}");
        assert_eq!(tool_messages[0]["tool_call_id"], "call_example_pay_01");
        assert!(tool_messages[0]["content"].as_str().unwrap().contains("PAY-0001"), "{second}");
        assert_eq!(tool_messages[1]["tool_call_id"], "call_example_bal_02");
        assert_transcript!("openai_model_approved", &frames);
    }
}
