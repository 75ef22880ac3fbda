//! The harness: a temp database per test (SQLite always, a fresh PostgreSQL schema too when
//! `TOLLGATE_TEST_POSTGRES_URL` is set), the real server on a loopback socket, HTTP and SSE
//! helpers, a fake Feishu open platform, a fake connector upstream, and Feishu-style encrypted,
//! signed card callbacks.

use std::time::Duration;

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;
use tokio::sync::oneshot;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// The platform admin's bearer token in every test server.
pub const ADMIN: &str = "e2e-platform-admin-token";
/// The Feishu app's secrets in every test channel.
pub const VERIFICATION_TOKEN: &str = "e2e_verification_token";
pub const ENCRYPT_KEY: &str = "e2e_encrypt_key_0001";
/// The message id the fake Feishu answers every sent card with.
pub const MESSAGE_ID: &str = "om_example00000000000000000000007";
const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";
const MESSAGES_PATH: &str = "/open-apis/im/v1/messages";
/// How long any single wait of a test may take before it fails.
const WAIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Databases

/// A database URL for one test, and what keeps it alive (a temp dir, a PostgreSQL schema).
pub struct Db {
    pub url: String,
    /// `sqlite` or `postgres`, for assertion messages.
    pub label: &'static str,
    _dir: Option<TempDir>,
    /// PostgreSQL: the base URL and the schema to drop when the test ends.
    pg_schema: Option<(String, String)>,
}

impl Drop for Db {
    fn drop(&mut self) {
        let Some((base, schema)) = self.pg_schema.take() else { return };
        // Drop runs inside the test's runtime, which cannot block on itself: use a thread.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                use sea_orm::ConnectionTrait;
                let admin = store::Store::connect(&base).await.unwrap();
                admin.connection().execute_unprepared(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await
            })
        });
        if !std::thread::panicking() {
            cleanup.join().unwrap().unwrap();
        }
    }
}

/// One empty database per available backend: SQLite always, PostgreSQL when
/// `TOLLGATE_TEST_POSTGRES_URL` is set (a fresh schema, selected through `search_path`).
pub async fn databases() -> Vec<Db> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("tollgate.db").display());
    let mut out = vec![Db { url, label: "sqlite", _dir: Some(dir), pg_schema: None }];
    if let Ok(base) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") {
        use sea_orm::ConnectionTrait;
        let schema = format!("e2e_{}", uuid::Uuid::new_v4().simple());
        let admin = store::Store::connect(&base).await.unwrap();
        admin.connection().execute_unprepared(&format!("CREATE SCHEMA {schema}")).await.unwrap();
        admin.close().await.unwrap();
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
        out.push(Db { url, label: "postgres", _dir: None, pg_schema: Some((base, schema)) });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The server

/// The real server on a loopback socket, stopped when dropped.
pub struct Server {
    pub base: String,
    pub label: &'static str,
    pub state: server::AppState,
    client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    _db: Db,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// An HTTP answer: status and JSON body (`Null` when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    /// Asserts the status and returns the body.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status, status, "unexpected answer: {}", self.body);
        self.body
    }

    /// Asserts the status and the error shape `{"error":{"code","message"}}`; returns the code.
    #[track_caller]
    pub fn expect_error(self, status: u16) -> String {
        assert_eq!(self.status, status, "unexpected answer: {}", self.body);
        let error = self.body["error"].as_object().unwrap_or_else(|| panic!("no error object: {}", self.body));
        assert_eq!(error.len(), 2, "{}", self.body);
        let message = error["message"].as_str().unwrap();
        assert!(!message.is_empty());
        error["code"].as_str().unwrap().to_owned()
    }
}

pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

impl Server {
    /// Migrates `db`, prepares the server without the demo and serves it on `127.0.0.1:0`.
    pub async fn start(db: Db) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let vars = [
            ("TOLLGATE_BIND", addr.to_string()),
            ("TOLLGATE_DATABASE_URL", db.url.clone()),
            ("TOLLGATE_ADMIN_TOKEN", ADMIN.to_owned()),
            ("TOLLGATE_PUBLIC_URL", base.clone()),
            ("TOLLGATE_DEMO", "0".to_owned()),
            // PostgreSQL stores channel and connector secrets only with a key.
            ("TOLLGATE_SECRET_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f".to_owned()),
        ];
        let config =
            server::Config::from_lookup(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())).unwrap();
        let started = server::prepare(config).await.unwrap();
        assert!(started.banner.is_none(), "TOLLGATE_DEMO=0 seeds nothing");
        let state = started.state.clone();
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(server::serve(listener, started.state, async move {
            let _ = rx.await;
        }));
        Server { base, label: db.label, state, client: http_client(), shutdown: Some(tx), _db: db }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn answer(response: reqwest::Response) -> Answer {
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) }
    }

    pub async fn get(&self, path: &str, token: &str) -> Answer {
        Self::answer(self.client.get(self.url(path)).bearer_auth(token).send().await.unwrap()).await
    }

    pub async fn post(&self, path: &str, token: &str, body: &Value) -> Answer {
        let request = self.client.post(self.url(path)).bearer_auth(token).json(body);
        Self::answer(request.send().await.unwrap()).await
    }

    /// A POST with a raw body and an explicit content type (`None`: no header).
    pub async fn post_raw(&self, path: &str, token: &str, content_type: Option<&str>, body: Vec<u8>) -> Answer {
        let mut request = self.client.post(self.url(path)).bearer_auth(token).body(body);
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        Self::answer(request.send().await.unwrap()).await
    }

    /// Posts a Feishu callback as Feishu sends it: no bearer, the signature headers.
    pub async fn feishu_callback(&self, channel_id: &str, delivery: &Delivery) -> Answer {
        let mut request = self
            .client
            .post(self.url(&format!("/api/v1/channels/{channel_id}/feishu/callback")))
            .header("content-type", "application/json; charset=utf-8")
            .body(delivery.body.clone());
        for (name, value) in &delivery.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        Self::answer(request.send().await.unwrap()).await
    }

    /// Starts a chat and returns its open SSE stream.
    pub async fn chat(&self, agent_id: &str, token: &str, message: &str) -> SseStream {
        let response = self
            .client
            .post(self.url(&format!("/api/v1/agents/{agent_id}/chat")))
            .bearer_auth(token)
            .json(&json!({"message": message}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "chat refused: {}", response.text().await.unwrap());
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/event-stream"), "{content_type}");
        SseStream { response, buffer: String::new(), frames: Vec::new(), done: false }
    }

    /// Polls (every 50 ms) the caller's pending confirmations until one appears.
    pub async fn first_pending(&self, token: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let rows = self.get("/api/v1/confirmations?status=pending", token).await.expect(200);
            if let Some(first) = rows.as_array().unwrap().first() {
                return first.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "no pending confirmation appeared");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Row counts of every table, to show that refused requests write nothing.
    pub async fn row_counts(&self) -> Vec<(&'static str, i64)> {
        use sea_orm::{ConnectionTrait, Statement};
        let connection = self.state.store().connection();
        let backend = connection.get_database_backend();
        let mut out = Vec::new();
        for table in [
            "orgs",
            "users",
            "api_keys",
            "channels",
            "connectors",
            "connector_actions",
            "agents",
            "conversations",
            "runs",
            "run_events",
            "tool_executions",
            "confirmation_requests",
            "connector_call_logs",
            "callback_events",
        ] {
            let sql = format!("SELECT COUNT(*) AS n FROM {table}");
            let row = connection.query_one_raw(Statement::from_string(backend, sql)).await.unwrap().unwrap();
            out.push((table, row.try_get::<i64>("", "n").unwrap()));
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// SSE

/// A chat's event stream, parsed into `{event, data}` frames as they arrive.
pub struct SseStream {
    response: reqwest::Response,
    buffer: String,
    /// Every frame read so far.
    pub frames: Vec<Value>,
    done: bool,
}

impl SseStream {
    /// The next frame (keep-alive comments skipped); `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let raw: String = self.buffer.drain(..end + 2).collect();
                let mut event = None;
                let mut data = String::new();
                for line in raw.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                let Some(event) = event else { continue };
                let data: Value = serde_json::from_str(&data).unwrap_or_else(|e| panic!("bad SSE data {data}: {e}"));
                let frame = json!({"event": event, "data": data});
                self.frames.push(frame.clone());
                return Some(frame);
            }
            if self.done {
                return None;
            }
            let chunk = tokio::time::timeout(WAIT, self.response.chunk()).await.expect("SSE stream stalled").unwrap();
            match chunk {
                Some(bytes) => self.buffer.push_str(&String::from_utf8_lossy(&bytes).replace("\r\n", "\n")),
                None => self.done = true,
            }
        }
    }

    /// Reads until an `event` frame and returns its data.
    pub async fn until(&mut self, event: &str) -> Value {
        while let Some(frame) = self.next().await {
            if frame["event"] == event {
                return frame["data"].clone();
            }
        }
        panic!("the stream ended without `{event}`: {:#?}", self.frames);
    }

    /// Reads to the end of the stream and returns the whole transcript.
    pub async fn finish(mut self) -> Vec<Value> {
        while self.next().await.is_some() {}
        let last = self.frames.last().expect("an empty stream");
        assert!(matches!(last["event"].as_str(), Some("run_completed" | "run_failed")), "{:#?}", self.frames);
        self.frames
    }
}

/// Asserts a transcript as an insta snapshot with ids and timestamps redacted: id fields become
/// `[name]` when they hold a string (a `null` stays visible), UUIDs inside texts become `[uuid]`.
#[macro_export]
macro_rules! assert_transcript {
    ($name:expr, $frames:expr) => {
        insta::assert_json_snapshot!($name, $frames, {
            "[].data.run_id" => $crate::support::id_redaction("[run_id]"),
            "[].data.agent_id" => $crate::support::id_redaction("[agent_id]"),
            "[].data.confirmation_id" => $crate::support::id_redaction("[confirmation_id]"),
            "[].data.expires_at" => $crate::support::id_redaction("[expires_at]"),
            "[].data.decided_by" => $crate::support::id_redaction("[user_id]"),
            "[].data.side_effects[]" => insta::dynamic_redaction(|value, _| match value.as_str() {
                Some(text) => insta::internals::Content::from($crate::support::redact_uuids(text)),
                None => value,
            }),
        })
    };
}

/// Replaces a string value by `placeholder`; other values (`null`) stay.
pub fn id_redaction(placeholder: &'static str) -> insta::internals::Redaction {
    insta::dynamic_redaction(move |value, _| match value.as_str() {
        Some(_) => insta::internals::Content::from(placeholder),
        None => value,
    })
}

/// `text` with every UUID (8-4-4-4-12 hex digits) replaced by `[uuid]`.
pub fn redact_uuids(text: &str) -> String {
    let bytes = text.as_bytes();
    let is_uuid = |at: usize| {
        bytes.len() >= at + 36
            && bytes[at..at + 36].iter().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => *b == b'-',
                _ => b.is_ascii_hexdigit(),
            })
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if is_uuid(i) {
            out.push_str("[uuid]");
            i += 36;
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Fakes

/// The connector's fake upstream: `POST /pay` and `GET /balance`.
pub async fn upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/pay"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"payment_id": "PAY-0001", "status": "submitted"})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/balance"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"account": "ops", "balance_cny": 1_240_000})))
        .mount(&server)
        .await;
    server
}

/// Requests `server` received at `p` (any method).
pub async fn requests_to(server: &MockServer, p: &str) -> Vec<Request> {
    server.received_requests().await.unwrap().into_iter().filter(|r| r.url.path() == p).collect()
}

pub fn fixture(dir: &str, name: &str) -> Value {
    let file = format!("{}/fixtures/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"))).unwrap()
}

/// The fake Feishu open platform: the token, sending a card, patching it.
pub async fn feishu() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(fixture("feishu", "api_tenant_access_token.json")["response"].clone()),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(MESSAGES_PATH))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(fixture("feishu", "api_send_message.json")["response"].clone()),
        )
        .mount(&server)
        .await;
    Mock::given(method("PATCH"))
        .and(path_regex(r"^/open-apis/im/v1/messages/[^/]+$"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(fixture("feishu", "api_patch_message.json")["response"].clone()),
        )
        .mount(&server)
        .await;
    server
}

/// Waits (polling every 50 ms) until `server` has received a request matching `pred`.
pub async fn wait_for_request(server: &MockServer, what: &str, pred: impl Fn(&Request) -> bool) -> Request {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(r) = server.received_requests().await.unwrap().into_iter().find(|r| pred(r)) {
            return r;
        }
        assert!(tokio::time::Instant::now() < deadline, "the fake never received {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that Feishu received the token request and an interactive card for `confirmation_id`.
pub async fn assert_card_sent(feishu: &MockServer, confirmation_id: &str) {
    wait_for_request(feishu, "the token request", |r| r.url.path() == TOKEN_PATH).await;
    let sent = wait_for_request(feishu, "the approval card", |r| {
        r.method.as_str() == "POST"
            && r.url.path() == MESSAGES_PATH
            && String::from_utf8_lossy(&r.body).contains(confirmation_id)
    })
    .await;
    assert_eq!(sent.url.query(), Some("receive_id_type=chat_id"));
    assert_eq!(sent.headers["authorization"], "Bearer t-example-tenant-token-0001");
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["msg_type"], "interactive");
    assert_eq!(body["receive_id"], "oc_e2e_group");
    let card: Value = serde_json::from_str(body["content"].as_str().unwrap()).unwrap();
    assert!(card.is_object());
}

/// Waits until Feishu has received a patch of the card.
pub async fn assert_card_patched(feishu: &MockServer) -> Value {
    let patch = wait_for_request(feishu, "the card update", |r| r.method.as_str() == "PATCH").await;
    assert_eq!(patch.url.path(), format!("{MESSAGES_PATH}/{MESSAGE_ID}"));
    serde_json::from_slice(&patch.body).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Feishu callbacks

/// One HTTP delivery of a callback: headers and the exact body bytes.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A `card.action.trigger` event (schema 2.0) as Feishu sends it, before encryption.
pub fn card_click(event_id: &str, confirmation_id: &str, decision: &str, operator_open_id: &str) -> Value {
    let now_ms = chrono::Utc::now().timestamp_millis().to_string();
    json!({
        "schema": "2.0",
        "header": {
            "event_id": event_id,
            "token": VERIFICATION_TOKEN,
            "create_time": now_ms,
            "event_type": "card.action.trigger",
            "tenant_key": "e2e_tenant",
            "app_id": "cli_e2e_app",
        },
        "event": {
            "operator": {"tenant_key": "e2e_tenant", "open_id": operator_open_id, "union_id": "on_e2e"},
            "token": "c-e2e-update-token",
            "action": {
                "value": {"confirmation_id": confirmation_id, "decision": decision},
                "tag": "button",
                "name": format!("btn_{decision}"),
            },
            "host": "im_message",
            "context": {"open_message_id": MESSAGE_ID, "open_chat_id": "oc_e2e_group"},
        }
    })
}

/// Encrypts and signs like Feishu: body `{"encrypt": base64(IV ‖ AES-256-CBC(SHA-256(key), IV,
/// PKCS#7(event)))}` with a random IV; `X-Lark-Signature` = hex SHA-256(timestamp + nonce + key +
/// body), `X-Lark-Request-Timestamp` = now, a fresh `X-Lark-Request-Nonce`.
pub fn encrypted_delivery(encrypt_key: &str, event: &Value) -> Delivery {
    let key: [u8; 32] = Sha256::digest(encrypt_key.as_bytes()).into();
    let iv: [u8; 16] = *uuid::Uuid::new_v4().as_bytes();
    let ciphertext = cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into())
        .encrypt_padded_vec_mut::<Pkcs7>(event.to_string().as_bytes());
    let mut raw = iv.to_vec();
    raw.extend_from_slice(&ciphertext);
    let body = json!({"encrypt": BASE64.encode(raw)}).to_string().into_bytes();
    let timestamp = chrono::Utc::now().timestamp().to_string();
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let mut hasher = Sha256::new();
    hasher.update(timestamp.as_bytes());
    hasher.update(nonce.as_bytes());
    hasher.update(encrypt_key.as_bytes());
    hasher.update(&body);
    let signature = hex::encode(hasher.finalize());
    Delivery {
        headers: vec![
            ("X-Lark-Request-Timestamp".to_owned(), timestamp),
            ("X-Lark-Request-Nonce".to_owned(), nonce),
            ("X-Lark-Signature".to_owned(), signature),
        ],
        body,
    }
}

// ---------------------------------------------------------------------------------------------
// An organization

/// A user with an API key.
#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub key: String,
    pub open_id: String,
}

/// An org with an admin, a member who starts runs, a second member (outside an `initiator`
/// scope), a Feishu channel (when given a fake Feishu) and the `payments` connector.
#[derive(Debug, Clone)]
pub struct Org {
    pub id: String,
    pub admin: User,
    pub requester: User,
    pub bystander: User,
    pub channel_id: Option<String>,
    pub connector_id: String,
}

async fn user(server: &Server, org_id: &str, name: &str, role: &str, open_id: &str) -> User {
    let body = json!({"name": name, "role": role, "feishu_open_id": open_id});
    let created = server.post(&format!("/api/v1/orgs/{org_id}/users"), ADMIN, &body).await.expect(201);
    let id = created["id"].as_str().unwrap().to_owned();
    let key = server.post(&format!("/api/v1/users/{id}/api-keys"), ADMIN, &json!({})).await.expect(201);
    User { id, key: key["api_key"].as_str().unwrap().to_owned(), open_id: open_id.to_owned() }
}

/// The `payments` connector's body: `purchase_pay` (POST /pay, needs confirmation) and
/// `get_balance` (GET /balance).
pub fn payments_connector(org_id: &str, base_url: &str) -> Value {
    json!({
        "org_id": org_id,
        "name": "payments",
        "base_url": base_url,
        "actions": [
            {"name": "purchase_pay", "description": "Pay an invoice.", "method": "POST", "path": "/pay",
             "parameters_schema": {"type": "object", "properties": {
                "invoice_id": {"type": "string"}, "amount_cny": {"type": "number"}, "memo": {"type": "string"}}},
             "requires_confirmation": true},
            {"name": "get_balance", "description": "An account's balance.", "method": "GET", "path": "/balance",
             "parameters_schema": {"type": "object", "properties": {"account": {"type": "string"}}}},
        ]
    })
}

pub async fn org(server: &Server, name: &str, feishu: Option<&MockServer>, upstream: &MockServer) -> Org {
    let created = server.post("/api/v1/orgs", ADMIN, &json!({"name": name})).await.expect(201);
    let id = created["id"].as_str().unwrap().to_owned();
    let admin = user(server, &id, "Han Meimei", "admin", &format!("ou_{name}_admin")).await;
    let requester = user(server, &id, "Li Lei", "member", &format!("ou_{name}_requester")).await;
    let bystander = user(server, &id, "Wang Wu", "member", &format!("ou_{name}_bystander")).await;
    let channel_id = match feishu {
        Some(feishu) => {
            let body = json!({"org_id": id, "type": "feishu", "name": "approvals", "config": {
                "app_id": "cli_example000000001", "app_secret": "example_app_secret",
                "verification_token": VERIFICATION_TOKEN, "encrypt_key": ENCRYPT_KEY,
                "chat_id": "oc_e2e_group", "base_url": feishu.uri()}});
            let channel = server.post("/api/v1/channels", &admin.key, &body).await.expect(201);
            let channel_id = channel["id"].as_str().unwrap().to_owned();
            assert_eq!(channel["callback_url"], server.url(&format!("/api/v1/channels/{channel_id}/feishu/callback")));
            assert!(!channel.to_string().contains("example_app_secret"), "secrets are never returned: {channel}");
            Some(channel_id)
        }
        None => None,
    };
    let connector =
        server.post("/api/v1/connectors", &admin.key, &payments_connector(&id, &upstream.uri())).await.expect(201);
    let mut tools: Vec<&str> = connector["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    tools.sort_unstable();
    assert_eq!(tools, ["payments__get_balance", "payments__purchase_pay"]);
    Org { id, admin, requester, bystander, channel_id, connector_id: connector["id"].as_str().unwrap().to_owned() }
}

/// A scripted model that pays one invoice, then answers.
pub fn scripted_payment() -> Value {
    json!({"provider": "scripted", "turns": [
        {"tool_calls": [{"name": "payments__purchase_pay",
                         "arguments": {"invoice_id": "INV-2026-0042", "amount_cny": 60000, "memo": "servers"}}]},
        {"content": "Done."}
    ]})
}

/// Creates an agent of `org` with the payments connector, approvals by `scope` within
/// `timeout_s` seconds.
pub async fn agent(server: &Server, org: &Org, model: Value, timeout_s: u64, scope: &str) -> String {
    let body = json!({
        "org_id": org.id,
        "name": "finance-assistant",
        "instructions": "Pay invoices when asked.",
        "model": model,
        "connectors": [org.connector_id],
        "confirmation": {"timeout_s": timeout_s, "approver_scope": scope},
    });
    let agent = server.post("/api/v1/agents", &org.admin.key, &body).await.expect(201);
    agent["id"].as_str().unwrap().to_owned()
}
