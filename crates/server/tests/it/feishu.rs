//! A fake Feishu open platform and callbacks encrypted and signed as Feishu sends them.

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const VERIFICATION_TOKEN: &str = "it_verification_token";
pub const ENCRYPT_KEY: &str = "it_encrypt_key_0001";
const MESSAGES_PATH: &str = "/open-apis/im/v1/messages";

fn fixture(name: &str) -> Value {
    let file = format!("{}/../../tests/fixtures/feishu/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str::<Value>(&std::fs::read_to_string(&file).unwrap()).unwrap()["response"].clone()
}

/// Serves the tenant token, card sends and card patches.
pub async fn platform() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/open-apis/auth/v3/tenant_access_token/internal"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("api_tenant_access_token.json")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("api_send_message.json")))
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path_regex(r"^/open-apis/im/v1/messages/[^/]+$"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("api_patch_message.json")))
        .mount(&server)
        .await;
    server
}

/// How many approval cards Feishu received.
pub async fn cards_sent(server: &MockServer) -> usize {
    let requests = server.received_requests().await.unwrap_or_default();
    requests.iter().filter(|r| r.method.as_str() == "POST" && r.url.path() == MESSAGES_PATH).count()
}

/// The bodies of the card updates (PATCH) Feishu received.
pub async fn patches(server: &MockServer) -> Vec<String> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .filter(|r| r.method.as_str() == "PATCH")
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

/// A signed, encrypted `card.action.trigger` click: (headers, body).
pub fn click(confirmation_id: &str, decision: &str, open_id: &str) -> (Vec<(String, String)>, Vec<u8>) {
    let event = json!({
        "schema": "2.0",
        "header": {
            "event_id": format!("ev_{}", uuid_like()),
            "token": VERIFICATION_TOKEN,
            "create_time": chrono::Utc::now().timestamp_millis().to_string(),
            "event_type": "card.action.trigger",
            "tenant_key": "it_tenant",
            "app_id": "cli_it_app",
        },
        "event": {
            "operator": {"tenant_key": "it_tenant", "open_id": open_id},
            "token": "c-it-update-token",
            "action": {"value": {"confirmation_id": confirmation_id, "decision": decision}, "tag": "button"},
            "host": "im_message",
            "context": {"open_message_id": "om_it_message", "open_chat_id": "oc_it_group"},
        }
    });
    let key: [u8; 32] = Sha256::digest(ENCRYPT_KEY.as_bytes()).into();
    let iv: [u8; 16] = Sha256::digest(uuid_like().as_bytes())[..16].try_into().unwrap();
    let ciphertext = cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into())
        .encrypt_padded_vec_mut::<Pkcs7>(event.to_string().as_bytes());
    let mut raw = iv.to_vec();
    raw.extend_from_slice(&ciphertext);
    let body = json!({"encrypt": BASE64.encode(raw)}).to_string().into_bytes();
    let timestamp = chrono::Utc::now().timestamp().to_string();
    let nonce = uuid_like();
    let mut hasher = Sha256::new();
    hasher.update(timestamp.as_bytes());
    hasher.update(nonce.as_bytes());
    hasher.update(ENCRYPT_KEY.as_bytes());
    hasher.update(&body);
    let headers = vec![
        ("X-Lark-Request-Timestamp".to_owned(), timestamp),
        ("X-Lark-Request-Nonce".to_owned(), nonce),
        ("X-Lark-Signature".to_owned(), hex::encode(hasher.finalize())),
    ];
    (headers, body)
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{nanos:x}{:x}{:x}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}
