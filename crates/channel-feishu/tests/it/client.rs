//! The outbound client against wiremock on loopback: token cache, retries, message shapes.

use std::sync::Arc;
use std::time::Duration;

use channel_core::{ApprovalCard, ApprovalChannel, CardState, ChannelError};
use channel_feishu::{
    FeishuChannel, FeishuClient, FeishuConfig, RetryPolicy, approval_card, default_http_client, final_card,
    idempotency_key,
};
use chrono::{TimeZone, Utc};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::support::fixture;

const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";
const MESSAGES_PATH: &str = "/open-apis/im/v1/messages";

fn config(server: &MockServer) -> FeishuConfig {
    FeishuConfig {
        app_id: "cli_example000000001".into(),
        app_secret: "example_app_secret".into(),
        verification_token: "example_verification_token_0001".into(),
        encrypt_key: None,
        chat_id: "oc_example00000000000000000000007".into(),
        base_url: Some(server.uri()),
    }
}

fn channel(server: &MockServer) -> FeishuChannel {
    FeishuChannel::new(config(server), default_http_client().unwrap()).unwrap()
}

fn card() -> ApprovalCard {
    ApprovalCard {
        confirmation_id: "0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f".into(),
        agent_name: "finance-assistant".into(),
        requester: "Li Lei".into(),
        tool_name: "erp__create_payment".into(),
        tool_args: json!({"amount": 62000}),
        expires_at: Utc.timestamp_opt(1_767_225_900, 0).unwrap(),
    }
}

fn token_answer(token: &str, expire: u64) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "code": 0, "msg": "ok", "tenant_access_token": token, "expire": expire,
    }))
}

fn sent_answer() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(fixture("api_send_message.json")["response"].clone())
}

async fn mount_token(server: &MockServer, token: &str, expect: u64) {
    let fx = fixture("api_tenant_access_token.json");
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .and(body_partial_json(fx["request"]["body"].clone()))
        .respond_with(token_answer(token, 7200))
        .expect(expect)
        .mount(server)
        .await;
}

fn body_of(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

async fn requests_to(server: &MockServer, p: &str) -> Vec<Request> {
    server.received_requests().await.unwrap().into_iter().filter(|r| r.url.path() == p).collect()
}

#[tokio::test]
async fn send_approval_posts_the_card_to_the_chat_and_returns_the_message_id() {
    let server = MockServer::start().await;
    mount_token(&server, "t-example-tenant-token-0001", 1).await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .and(query_param("receive_id_type", "chat_id"))
        .and(header("authorization", "Bearer t-example-tenant-token-0001"))
        .respond_with(sent_answer())
        .expect(1)
        .mount(&server)
        .await;

    let id = channel(&server).send_approval(&card()).await.unwrap();
    assert_eq!(id, "om_example00000000000000000000007");

    let sent = body_of(&requests_to(&server, MESSAGES_PATH).await[0]);
    assert_eq!(sent["receive_id"], "oc_example00000000000000000000007");
    assert_eq!(sent["msg_type"], "interactive");
    assert_eq!(sent["uuid"], idempotency_key("0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f"));
    assert_eq!(sent["uuid"], "tg-0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f");
    // `content` is the card as a JSON string.
    let content: Value = serde_json::from_str(sent["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, approval_card(&card()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sends_share_one_token_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        // Slow enough that every send is waiting for the token when it arrives.
        .respond_with(token_answer("t-shared", 7200).set_delay(Duration::from_millis(300)))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .and(header("authorization", "Bearer t-shared"))
        .respond_with(sent_answer())
        .expect(9)
        .mount(&server)
        .await;

    let channel = Arc::new(channel(&server));
    let sends = (0..8).map(|i| {
        let channel = Arc::clone(&channel);
        tokio::spawn(async move {
            let mut c = card();
            c.confirmation_id = format!("c-{i}");
            channel.send_approval(&c).await
        })
    });
    for result in futures_join(sends).await {
        assert_eq!(result.unwrap().unwrap(), "om_example00000000000000000000007");
    }
    // A later send still uses the cached token.
    channel.send_text("hello").await.unwrap();
    assert_eq!(requests_to(&server, TOKEN_PATH).await.len(), 1);
}

async fn futures_join<T>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<Result<T, tokio::task::JoinError>> {
    let mut out = Vec::new();
    for handle in handles.collect::<Vec<_>>() {
        out.push(handle.await);
    }
    out
}

#[tokio::test]
async fn token_invalid_code_evicts_and_retries_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .respond_with(token_answer("t-old", 7200))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .respond_with(token_answer("t-new", 7200))
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .and(header("authorization", "Bearer t-old"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"code": 99991663, "msg": "Invalid access token for authorization."})),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .and(header("authorization", "Bearer t-new"))
        .respond_with(sent_answer())
        .expect(2)
        .mount(&server)
        .await;

    let channel = channel(&server);
    assert_eq!(channel.send_approval(&card()).await.unwrap(), "om_example00000000000000000000007");
    // The fresh token is cached for the next call.
    channel.send_approval(&card()).await.unwrap();
    assert_eq!(requests_to(&server, TOKEN_PATH).await.len(), 2);
}

#[tokio::test]
async fn token_invalid_twice_surfaces_the_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .respond_with(token_answer("t", 7200))
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"code": 99991671, "msg": "token expired"})))
        .expect(2)
        .mount(&server)
        .await;
    let err = channel(&server).send_text("hi").await.unwrap_err();
    assert!(matches!(err, ChannelError::Api { code: 99991671, ref msg, .. } if msg == "token expired"), "{err:?}");
}

#[tokio::test]
async fn http_429_waits_for_the_reset_header_then_retries() {
    let server = MockServer::start().await;
    mount_token(&server, "t", 1).await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(ResponseTemplate::new(429).insert_header("x-ogw-ratelimit-reset", "1"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(sent_answer())
        .with_priority(2)
        .mount(&server)
        .await;

    let started = std::time::Instant::now();
    let id = channel(&server).send_approval(&card()).await.unwrap();
    assert_eq!(id, "om_example00000000000000000000007");
    assert_eq!(requests_to(&server, MESSAGES_PATH).await.len(), 2);
    // The header said one second: the retry did not come earlier.
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn rate_limit_code_retries_are_bounded() {
    let server = MockServer::start().await;
    mount_token(&server, "t", 1).await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(
            ResponseTemplate::new(400)
                .insert_header("x-ogw-ratelimit-reset", "0")
                .set_body_json(json!({"code": 99991400, "msg": "request trigger frequency limit"})),
        )
        .expect(3)
        .mount(&server)
        .await;
    let policy = RetryPolicy { max_rate_limit_retries: 2, ..RetryPolicy::default() };
    let client = FeishuClient::with_retry_policy(config(&server), default_http_client().unwrap(), policy).unwrap();
    let err = FeishuChannel::from_client(client).send_text("hi").await.unwrap_err();
    assert!(matches!(err, ChannelError::RateLimited { channel: "feishu" }), "{err:?}");
}

#[tokio::test]
async fn update_approval_patches_the_message_with_the_final_card() {
    let server = MockServer::start().await;
    mount_token(&server, "t", 1).await;
    let fx = fixture("api_patch_message.json");
    Mock::given(method("PATCH"))
        .and(path(fx["request"]["path"].as_str().unwrap()))
        .and(header("authorization", "Bearer t"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fx["response"].clone()))
        .expect(1)
        .mount(&server)
        .await;
    let state = CardState::Approved {
        decided_by: "Han Meimei".into(),
        decided_at: Utc.timestamp_opt(1_767_225_660, 0).unwrap(),
    };
    channel(&server).update_approval("om_example00000000000000000000007", &card(), &state).await.unwrap();
    let patch = server.received_requests().await.unwrap().into_iter().find(|r| r.method.as_str() == "PATCH").unwrap();
    let content: Value = serde_json::from_str(body_of(&patch)["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, final_card(&card(), &state));
}

#[tokio::test]
async fn send_text_and_api_errors_carry_code_and_msg() {
    let server = MockServer::start().await;
    mount_token(&server, "t", 1).await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .and(body_partial_json(json!({"msg_type": "text", "content": "{\"text\":\"hello\"}"})))
        .respond_with(sent_answer())
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .and(body_partial_json(json!({"msg_type": "interactive"})))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"code": 230002, "msg": "Bot/User can NOT be out of the chat."})),
        )
        .mount(&server)
        .await;
    let channel = channel(&server);
    assert_eq!(channel.kind(), "feishu");
    assert_eq!(channel.send_text("hello").await.unwrap(), "om_example00000000000000000000007");
    let err = channel.send_approval(&card()).await.unwrap_err();
    assert_eq!(err.to_string(), "feishu API error 230002: Bot/User can NOT be out of the chat.");
}

#[tokio::test]
async fn token_errors_and_unreadable_answers_surface() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"code": 10003, "msg": "invalid param"})))
        .mount(&server)
        .await;
    let err = channel(&server).send_text("x").await.unwrap_err();
    assert!(matches!(err, ChannelError::Api { code: 10003, .. }), "{err:?}");

    let server = MockServer::start().await;
    mount_token(&server, "t", 1).await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(ResponseTemplate::new(502).set_body_string("bad gateway"))
        .mount(&server)
        .await;
    let err = channel(&server).send_text("x").await.unwrap_err();
    assert!(matches!(err, ChannelError::Transport { .. }), "{err:?}");
}

#[tokio::test]
async fn short_lived_tokens_are_refreshed_early() {
    let server = MockServer::start().await;
    // 120 s of life is inside the 3-minute refresh margin: never reused.
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .respond_with(token_answer("t", 120))
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("POST")).and(path(MESSAGES_PATH)).respond_with(sent_answer()).expect(2).mount(&server).await;
    let channel = channel(&server);
    channel.send_text("a").await.unwrap();
    channel.send_text("b").await.unwrap();
}

#[test]
fn config_is_validated_and_secrets_redacted() {
    let good: FeishuConfig = serde_json::from_value(json!({
        "app_id": "cli_1", "app_secret": "s3cret", "verification_token": "vt", "encrypt_key": "ek",
        "chat_id": "oc_1",
    }))
    .unwrap();
    assert_eq!(good.base_url(), "https://open.feishu.cn");
    let debug = format!("{good:?} {:?}", good.callback_secrets());
    assert!(!debug.contains("s3cret") && !debug.contains("\"vt\"") && !debug.contains("\"ek\""), "{debug}");

    let typo = serde_json::from_value::<FeishuConfig>(json!({
        "app_id": "cli_1", "app_secret": "s", "verification_token": "vt", "encryptKey": "ek", "chat_id": "oc_1",
    }));
    assert!(typo.is_err());

    let http = default_http_client().unwrap();
    let mut empty_chat = good.clone();
    empty_chat.chat_id = " ".into();
    assert!(matches!(FeishuChannel::new(empty_chat, http.clone()), Err(ChannelError::Config(_))));
    let mut bad_url = good.clone();
    bad_url.base_url = Some("ftp://open.feishu.cn".into());
    assert!(matches!(FeishuChannel::new(bad_url, http.clone()), Err(ChannelError::Config(_))));
    let mut lark = good;
    lark.base_url = Some("https://open.larksuite.com/".into());
    let client = FeishuClient::new(lark, http).unwrap();
    assert_eq!(
        client.url(&["im", "v1", "messages", "om/x"]).as_str(),
        "https://open.larksuite.com/open-apis/im/v1/messages/om%2Fx"
    );
}

#[test]
fn idempotency_keys_fit_feishu_limit() {
    assert_eq!(idempotency_key("abc"), "tg-abc");
    let long = idempotency_key(&"x".repeat(100));
    assert_eq!(long.len(), 43);
    assert_ne!(long, idempotency_key(&"x".repeat(101)));
}
