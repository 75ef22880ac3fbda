//! Process-level tests of the `server` binary: restarts (kill -9) with an approval pending, and two
//! replicas on one PostgreSQL database.

mod feishu;
mod process;

use std::time::Duration;

use process::{Server, free_port};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ADMIN: &str = "test-admin-token";

/// An org with an approver, a connector to `upstream` with one gated action, and an agent that
/// calls it once.
struct Setup {
    org_id: String,
    key: String,
    agent_id: String,
    channel_id: Option<String>,
}

async fn setup(server: &Server, upstream: &MockServer) -> Setup {
    setup_with(server, upstream, None, 120).await
}

/// Like [`setup`], with a Feishu channel on `feishu` (the org's default channel) and the gate's
/// timeout in seconds.
async fn setup_with(server: &Server, upstream: &MockServer, feishu: Option<&MockServer>, timeout_s: u64) -> Setup {
    let org = server.post(ADMIN, "/api/v1/orgs", json!({"name": format!("org-{}", server.port)})).await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let user = server
        .post(
            ADMIN,
            &format!("/api/v1/orgs/{org_id}/users"),
            json!({"name": "Ada", "role": "admin", "feishu_open_id": "ou_ada"}),
        )
        .await;
    let key = server.post(ADMIN, &format!("/api/v1/users/{}/api-keys", user["id"].as_str().unwrap()), json!({})).await;
    let key = key["api_key"].as_str().unwrap().to_owned();
    let channel_id = match feishu {
        Some(feishu) => {
            let channel = server
                .post(
                    &key,
                    "/api/v1/channels",
                    json!({"org_id": org_id, "type": "feishu", "name": "approvers", "config": {
                        "app_id": "cli_it", "app_secret": "it_secret", "verification_token": feishu::VERIFICATION_TOKEN,
                        "encrypt_key": feishu::ENCRYPT_KEY, "chat_id": "oc_it_group", "base_url": feishu.uri()}}),
                )
                .await;
            Some(channel["id"].as_str().unwrap().to_owned())
        }
        None => None,
    };
    let connector = server
        .post(
            &key,
            "/api/v1/connectors",
            json!({"org_id": org_id, "name": "erp", "base_url": upstream.uri(), "actions": [{
                "name": "create_payment", "method": "POST", "path": "/payments", "requires_confirmation": true,
                "parameters_schema": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
            }]}),
        )
        .await;
    let agent = server
        .post(
            &key,
            "/api/v1/agents",
            json!({
                "org_id": org_id, "name": "payer", "instructions": "Pay.",
                "model": {"provider": "scripted", "turns": [
                    {"tool_calls": [{"name": "erp__create_payment", "arguments": {"amount": 68000}}]},
                    {"content": "done"}
                ]},
                "connectors": [connector["id"]],
                "confirmation": {"timeout_s": timeout_s, "approver_scope": "org_admins"}
            }),
        )
        .await;
    Setup { org_id, key, agent_id: agent["id"].as_str().unwrap().to_owned(), channel_id }
}

async fn upstream() -> MockServer {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/payments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"payment_id": "pay_1"})))
        .mount(&upstream)
        .await;
    upstream
}

/// Starts a chat and returns the run id (read from the first SSE event); the stream is then
/// dropped: a client disconnect never cancels the run.
async fn start_chat(server: &Server, s: &Setup) -> String {
    let mut response = agent_react::http_client()
        .unwrap()
        .post(server.url(&format!("/api/v1/agents/{}/chat", s.agent_id)))
        .bearer_auth(&s.key)
        .json(&json!({"message": "pay"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = response.chunk().await.unwrap().expect("stream ended before run_started");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    serde_json::from_str::<Value>(data).unwrap()["run_id"].as_str().unwrap().to_owned()
}

async fn wait_pending(server: &Server, key: &str) -> Value {
    for _ in 0..200 {
        let pending = server.get(key, "/api/v1/confirmations?status=pending").await;
        if let Some(first) = pending.as_array().and_then(|a| a.first()) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no pending confirmation appeared");
}

async fn wait_run(server: &Server, key: &str, run_id: &str, status: &str) -> Value {
    let mut run = Value::Null;
    for _ in 0..300 {
        run = server.get(key, &format!("/api/v1/runs/{run_id}")).await;
        if run["status"] == status {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run_id} never reached {status}: {run}");
}

async fn payments(upstream: &MockServer) -> usize {
    upstream.received_requests().await.unwrap_or_default().iter().filter(|r| r.url.path() == "/payments").count()
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}?mode=rwc", dir.path().join("tollgate.db").display())
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_with_an_approval_pending_then_approve_through_feishu_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream().await;
    let platform = feishu::platform().await;
    let port = free_port();
    let mut server = Server::start(&sqlite_url(&dir), port, ADMIN).await;
    let s = setup_with(&server, &upstream, Some(&platform), 120).await;
    let run_id = start_chat(&server, &s).await;
    let pending = wait_pending(&server, &s.key).await;
    let id = pending["id"].as_str().unwrap().to_owned();
    wait_until(|| async { feishu::cards_sent(&platform).await == 1 }).await;
    server.kill();

    let server = Server::start(&sqlite_url(&dir), port, ADMIN).await;
    // The resumed run re-attached to the same request: still exactly one, still pending, one card.
    let all = server.get(&s.key, "/api/v1/confirmations").await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all[0]["id"], pending["id"]);
    wait_run(&server, &s.key, &run_id, "awaiting_confirmation").await;
    assert_eq!(payments(&upstream).await, 0, "nothing ran before the approval");

    let (headers, body) = feishu::click(&id, "approve", "ou_ada");
    let (status, answer) = server.callback(s.channel_id.as_deref().unwrap(), &headers, body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    let run = wait_run(&server, &s.key, &run_id, "completed").await;
    assert_eq!(run["answer"], "done");
    assert_eq!(payments(&upstream).await, 1, "the approved call ran exactly once");
    assert_eq!(feishu::cards_sent(&platform).await, 1, "the restart posted no second card");
    let decided = server.get(&s.key, &format!("/api/v1/confirmations/{id}")).await;
    assert_eq!(decided["status"], "approved");
    assert_eq!(decided["responded_by_open_id"], "ou_ada");

    // One event stream across the restart: seqs 0..n without gaps or repeats.
    let events = server.get_text(&s.key, &format!("/api/v1/runs/{run_id}/events")).await;
    let seqs: Vec<u64> = events.lines().filter_map(|l| l.strip_prefix("id: ")).map(|s| s.parse().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "{events}");
    assert!(events.contains("event: run_completed"), "{events}");
    // Last-Event-ID resumes after the given seq.
    let after = server.get_text_after(&s.key, &format!("/api/v1/runs/{run_id}/events"), 2).await;
    let after_seqs: Vec<u64> =
        after.lines().filter_map(|l| l.strip_prefix("id: ")).map(|s| s.parse().unwrap()).collect();
    assert_eq!(after_seqs, (3..seqs.len() as u64).collect::<Vec<_>>(), "{after}");
    let audit = server.get(&s.key, &format!("/api/v1/audit/connector-calls?run_id={run_id}")).await;
    assert_eq!(audit.as_array().unwrap().len(), 1, "{audit}");
    assert_eq!(audit[0]["outcome"], "executed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_expired_while_the_server_was_down_is_expired_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream().await;
    let port = free_port();
    let mut server = Server::start(&sqlite_url(&dir), port, ADMIN).await;
    let s = setup_with(&server, &upstream, None, 1).await;
    let run_id = start_chat(&server, &s).await;
    let pending = wait_pending(&server, &s.key).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let server = Server::start(&sqlite_url(&dir), port, ADMIN).await;
    wait_run(&server, &s.key, &run_id, "completed").await;
    let request = server.get(&s.key, &format!("/api/v1/confirmations/{}", pending["id"].as_str().unwrap())).await;
    assert_eq!(request["status"], "expired");
    assert_eq!(payments(&upstream).await, 0);
    let events = server.get_text(&s.key, &format!("/api/v1/runs/{run_id}/events")).await;
    assert!(events.contains("timed out after 1s waiting for approval"), "{events}");
}

async fn wait_until<F, Fut>(condition: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if condition().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("condition never held");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_made_while_the_server_is_down_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream().await;
    let port = free_port();
    let mut server = Server::start(&sqlite_url(&dir), port, ADMIN).await;
    let s = setup(&server, &upstream).await;
    let run_id = start_chat(&server, &s).await;
    let pending = wait_pending(&server, &s.key).await;
    server.kill();

    // Another replica (here: the store directly) rejects while this one is down.
    let store = store::Store::connect(&sqlite_url(&dir)).await.unwrap();
    let approver = store.list_users(&s.org_id).await.unwrap().remove(0);
    let update = hook_builtins::ports::DecisionUpdate {
        status: hook_builtins::ports::ConfirmationStatus::Rejected,
        responded_by_open_id: None,
        responded_by_user_id: Some(approver.id),
        reason: Some("not this month".into()),
        at: chrono::Utc::now(),
    };
    let outcome = store.decide_confirmation(pending["id"].as_str().unwrap(), &update).await.unwrap();
    assert!(matches!(outcome, hook_builtins::ports::DecideOutcome::Decided(_)));
    store.close().await.unwrap();

    let server = Server::start(&sqlite_url(&dir), port, ADMIN).await;
    wait_run(&server, &s.key, &run_id, "completed").await;
    assert_eq!(payments(&upstream).await, 0, "a rejected call never runs");
    let events = server.get_text(&s.key, &format!("/api/v1/runs/{run_id}/events")).await;
    assert!(events.contains("Tool call was rejected by an operator: not this month"), "{events}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_stops_the_run_and_cancels_its_pending_request() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream().await;
    let platform = feishu::platform().await;
    let server = Server::start(&sqlite_url(&dir), free_port(), ADMIN).await;
    let s = setup_with(&server, &upstream, Some(&platform), 120).await;
    let run_id = start_chat(&server, &s).await;
    let pending = wait_pending(&server, &s.key).await;
    wait_until(|| async { feishu::cards_sent(&platform).await == 1 }).await;
    let run = server.post(&s.key, &format!("/api/v1/runs/{run_id}/cancel"), json!({"reason": "wrong payee"})).await;
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["error"], "cancelled: wrong payee");
    let request = server.get(&s.key, &format!("/api/v1/confirmations/{}", pending["id"].as_str().unwrap())).await;
    assert_eq!(request["status"], "cancelled");
    // A late approval changes nothing, and nothing ever ran.
    let late = server
        .post_raw(
            &s.key,
            &format!("/api/v1/confirmations/{}/decision", pending["id"].as_str().unwrap()),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(late.0, 409);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(payments(&upstream).await, 0);
    let again = server.post_raw(&s.key, &format!("/api/v1/runs/{run_id}/cancel"), json!({})).await;
    assert_eq!(again.0, 409, "{}", again.1);
    // The card was updated to its final state for everyone.
    let patches = feishu::patches(&platform).await;
    assert_eq!(patches.len(), 1, "{patches:?}");
    assert!(patches[0].contains("Cancelled") || patches[0].contains("cancelled"), "{}", patches[0]);
}

/// A long result reaches the model truncated; the whole result stays in `tool_executions`.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_result_is_truncated_for_the_model_and_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = MockServer::start().await;
    let long = "x".repeat(20_000);
    Mock::given(method("GET"))
        .and(path("/report"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"text": long})))
        .mount(&upstream)
        .await;
    let server = Server::start(&sqlite_url(&dir), free_port(), ADMIN).await;
    let org = server.post(ADMIN, "/api/v1/orgs", json!({"name": "reports"})).await;
    let org_id = org["id"].as_str().unwrap();
    let user =
        server.post(ADMIN, &format!("/api/v1/orgs/{org_id}/users"), json!({"name": "Ada", "role": "admin"})).await;
    let key = server.post(ADMIN, &format!("/api/v1/users/{}/api-keys", user["id"].as_str().unwrap()), json!({})).await;
    let key = key["api_key"].as_str().unwrap().to_owned();
    let connector = server
        .post(
            &key,
            "/api/v1/connectors",
            json!({"org_id": org_id, "name": "bi", "base_url": upstream.uri(),
            "actions": [{"name": "report", "method": "GET", "path": "/report"}]}),
        )
        .await;
    let agent = server
        .post(&key, "/api/v1/agents", json!({"org_id": org_id, "name": "reader", "instructions": "Read.",
            "model": {"provider": "scripted", "turns": [{"tool_calls": [{"name": "bi__report", "arguments": {}}]}, {"content": "read"}]},
            "connectors": [connector["id"]]}))
        .await;
    let s = Setup {
        org_id: org_id.to_owned(),
        key: key.clone(),
        agent_id: agent["id"].as_str().unwrap().to_owned(),
        channel_id: None,
    };
    let run_id = start_chat(&server, &s).await;
    wait_run(&server, &key, &run_id, "completed").await;
    let events = server.get_text(&key, &format!("/api/v1/runs/{run_id}/events")).await;
    let result: Value = events
        .split("\n\n")
        .find(|frame| frame.contains("event: tool_result"))
        .and_then(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .unwrap();
    let output = result["output"].as_str().unwrap();
    assert!(output.ends_with("[truncated: showing 8000 of 20011 chars]"), "{}", &output[output.len() - 60..]);
    let execution = server
        .get(&key, &format!("/api/v1/runs/{run_id}/tool-executions/{}", result["tool_call_id"].as_str().unwrap()))
        .await;
    assert_eq!(execution["result"]["text"].as_str().unwrap().len(), 20_000, "the whole result is kept");
    assert_eq!(execution["status"], "completed");
}

/// Two replicas on one PostgreSQL database: the run waits on A, the decision reaches B, and A's
/// shared poll releases the waiter.
#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_postgres_a_decision_on_one_releases_the_other() {
    let Ok(base) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else { return };
    let url = process::fresh_postgres_schema(&base).await;
    let upstream = upstream().await;
    let platform = feishu::platform().await;
    let a = Server::start(&url, free_port(), ADMIN).await;
    let s = setup_with(&a, &upstream, Some(&platform), 120).await;
    let run_id = start_chat(&a, &s).await;
    wait_pending(&a, &s.key).await;
    // B starts while A's run waits: A holds the run's lease, so B does not take the run over.
    let b = Server::start(&url, free_port(), ADMIN).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let pending = wait_pending(&b, &s.key).await;
    assert_eq!(b.get(&s.key, "/api/v1/confirmations").await.as_array().unwrap().len(), 1);
    assert_eq!(feishu::cards_sent(&platform).await, 1, "one card: B did not run the run again");
    let id = pending["id"].as_str().unwrap().to_owned();
    // The click reaches B, which is not waiting.
    // B follows the run's events although the run goes on in A.
    let follow = {
        let url = b.url(&format!("/api/v1/runs/{run_id}/events"));
        let key = s.key.clone();
        tokio::spawn(async move {
            let client = agent_react::http_client().unwrap();
            client.get(url).bearer_auth(key).send().await.unwrap().text().await.unwrap()
        })
    };
    let (headers, body) = feishu::click(&id, "approve", "ou_ada");
    let (status, answer) = b.callback(s.channel_id.as_deref().unwrap(), &headers, body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    let again =
        a.post_raw(&s.key, &format!("/api/v1/confirmations/{id}/decision"), json!({"decision": "reject"})).await;
    assert_eq!(again.0, 409, "no request is decided twice");
    wait_run(&a, &s.key, &run_id, "completed").await;
    assert_eq!(payments(&upstream).await, 1);
    let followed = tokio::time::timeout(Duration::from_secs(10), follow).await.expect("B's stream ended").unwrap();
    assert!(followed.contains("event: confirmation_resolved"), "{followed}");
    assert!(followed.contains("event: run_completed"), "{followed}");
}

/// `server migrate` on an unreachable or malformed database URL: one line naming the URL with the
/// password masked, a non-zero exit, no panic.
#[test]
fn migrate_with_a_bad_database_url_fails_in_one_line_without_the_password() {
    for url in ["postgres://tollgate:hunter2@127.0.0.1:1/nowhere", "mysql://tollgate:hunter2@localhost/db"] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
            .arg("migrate")
            .env("TOLLGATE_DATABASE_URL", url)
            .env("RUST_LOG", "off")
            .output()
            .unwrap();
        assert!(!output.status.success(), "{url}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{url}: {stderr}");
        assert!(lines[0].starts_with("error: "), "{stderr}");
        assert!(lines[0].contains("tollgate:***@"), "{stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// The org turns read-only while a human decides: the approved write does not run.
#[tokio::test(flavor = "multi_thread")]
async fn an_org_turned_read_only_during_the_wait_blocks_the_approved_write() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream().await;
    let server = Server::start(&sqlite_url(&dir), free_port(), ADMIN).await;
    let s = setup(&server, &upstream).await;
    let run_id = start_chat(&server, &s).await;
    let pending = wait_pending(&server, &s.key).await;
    let response = agent_react::http_client()
        .unwrap()
        .patch(server.url(&format!("/api/v1/orgs/{}", s.org_id)))
        .bearer_auth(&s.key)
        .json(&json!({"read_only": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    server
        .post(
            &s.key,
            &format!("/api/v1/confirmations/{}/decision", pending["id"].as_str().unwrap()),
            json!({"decision": "approve"}),
        )
        .await;
    wait_run(&server, &s.key, &run_id, "completed").await;
    assert_eq!(payments(&upstream).await, 0, "the write never ran");
    let events = server.get_text(&s.key, &format!("/api/v1/runs/{run_id}/events")).await;
    assert!(events.contains("\"blocked_by\":\"read_only_guard\""), "{events}");
    let audit = server.get(&s.key, &format!("/api/v1/audit/connector-calls?run_id={run_id}")).await;
    assert_eq!(audit[0]["outcome"], "blocked");
}

/// A chat that names a conversation gives the model the conversation's earlier messages.
#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_carries_its_earlier_messages_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = MockServer::start().await;
    let fixture = format!("{}/../../tests/fixtures/openai/chat_completion_final.json", env!("CARGO_MANIFEST_DIR"));
    let final_answer: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer.clone()))
        .mount(&model)
        .await;
    let server = Server::start(&sqlite_url(&dir), free_port(), ADMIN).await;
    let org = server.post(ADMIN, "/api/v1/orgs", json!({"name": "chat"})).await;
    let org_id = org["id"].as_str().unwrap();
    let user =
        server.post(ADMIN, &format!("/api/v1/orgs/{org_id}/users"), json!({"name": "Ada", "role": "admin"})).await;
    let key = server.post(ADMIN, &format!("/api/v1/users/{}/api-keys", user["id"].as_str().unwrap()), json!({})).await;
    let key = key["api_key"].as_str().unwrap().to_owned();
    // `CARGO_PKG_NAME` is set in every test process (and inherited by the server): a stand-in key.
    let agent = server
        .post(&key, "/api/v1/agents", json!({"org_id": org_id, "name": "talker", "instructions": "Talk.",
            "model": {"provider": "openai", "base_url": format!("{}/v1", model.uri()), "model": "gpt-4.1-mini", "api_key_env": "CARGO_PKG_NAME"}}))
        .await;
    let s = Setup {
        org_id: org_id.to_owned(),
        key: key.clone(),
        agent_id: agent["id"].as_str().unwrap().to_owned(),
        channel_id: None,
    };
    let first = start_chat(&server, &s).await;
    let first = wait_run(&server, &key, &first, "completed").await;
    let conversation_id = first["conversation_id"].as_str().unwrap().to_owned();

    let response = agent_react::http_client()
        .unwrap()
        .post(server.url(&format!("/api/v1/agents/{}/chat", s.agent_id)))
        .bearer_auth(&key)
        .json(&json!({"message": "and now?", "conversation_id": conversation_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("event: run_completed"));
    let requests = model.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let messages: Vec<(String, String)> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or_default().to_owned()))
        .collect();
    let answer = final_answer["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    assert_eq!(
        messages[1..],
        [
            ("user".to_owned(), "pay".to_owned()),
            ("assistant".to_owned(), answer),
            ("user".to_owned(), "and now?".to_owned())
        ],
        "{second}"
    );
}

/// No request stays pending past its deadline: the sweeper expires one whose waiter is gone.
#[tokio::test(flavor = "multi_thread")]
async fn the_sweeper_expires_a_request_whose_waiter_is_gone() {
    use hook_builtins::ports::{ApproverScope, ConfirmationStore as _, DeliveryMode, NewConfirmation};
    let dir = tempfile::tempdir().unwrap();
    let store = store::Store::connect(&sqlite_url(&dir)).await.unwrap();
    store.migrate().await.unwrap();
    let org = store.create_org("orphans").await.unwrap();
    let orphan = NewConfirmation {
        id: "0b0b0b0b-0000-4000-8000-000000000001".into(),
        run_id: "a-run-no-process-waits-for".into(),
        tool_call_id: "call_0_0".into(),
        agent_id: None,
        user_id: None,
        org_id: org.id.clone(),
        channel_id: None,
        tool_name: "erp__create_payment".into(),
        tool_args: json!({"amount": 1}),
        args_sha256: hook_builtins::args_sha256(&json!({"amount": 1})),
        mode: DeliveryMode::Auto,
        approver_scope: ApproverScope::OrgAdmins,
        expires_at: chrono::Utc::now() - chrono::Duration::seconds(30),
    };
    store.insert_pending(&orphan).await.unwrap();
    store.close().await.unwrap();

    let _server = Server::start(&sqlite_url(&dir), free_port(), ADMIN).await;
    let store = store::Store::connect(&sqlite_url(&dir)).await.unwrap();
    for _ in 0..300 {
        let row = store.get_confirmation(&orphan.id).await.unwrap().unwrap();
        if row.status == hook_builtins::ports::ConfirmationStatus::Expired {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the orphaned request is still pending");
}

/// A delegate's run has its own row, leased by its parent's process: the lease loop leaves it
/// alone while it waits for approval, and the approval completes both runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_delegate_waiting_for_approval_keeps_running_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream().await;
    let server = Server::start(&sqlite_url(&dir), free_port(), ADMIN).await;
    let s = setup(&server, &upstream).await;
    let boss = server
        .post(
            &s.key,
            "/api/v1/agents",
            json!({"org_id": s.org_id, "name": "boss", "instructions": "Delegate.",
                "model": {"provider": "scripted", "turns": [
                    {"tool_calls": [{"name": "call_agent__payer", "arguments": {"task": "pay the invoice"}}]},
                    {"content": "delegated"}
                ]},
                "delegates": [s.agent_id]}),
        )
        .await;
    let boss = Setup { agent_id: boss["id"].as_str().unwrap().to_owned(), ..s };
    let run_id = start_chat(&server, &boss).await;
    let pending = wait_pending(&server, &boss.key).await;
    let delegate_run = pending["run_id"].as_str().unwrap().to_owned();
    assert_ne!(delegate_run, run_id);
    // Several lease-loop ticks: the delegate is still alive and waiting.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let delegate = server.get(&boss.key, &format!("/api/v1/runs/{delegate_run}")).await;
    assert_eq!(delegate["status"], "awaiting_confirmation", "{delegate}");
    assert_eq!(delegate["parent_run_id"], run_id.as_str());
    assert_eq!(delegate["surface"], "delegate");
    server
        .post(
            &boss.key,
            &format!("/api/v1/confirmations/{}/decision", pending["id"].as_str().unwrap()),
            json!({"decision": "approve"}),
        )
        .await;
    wait_run(&server, &boss.key, &run_id, "completed").await;
    wait_run(&server, &boss.key, &delegate_run, "completed").await;
    assert_eq!(payments(&upstream).await, 1);
}

/// Two replicas on PostgreSQL with a poll far longer than the test: the decision made on B reaches
/// A's waiter through LISTEN/NOTIFY.
#[tokio::test(flavor = "multi_thread")]
async fn on_postgres_a_decision_on_one_replica_wakes_the_other_at_once() {
    let Ok(base) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else { return };
    let url = process::fresh_postgres_schema(&base).await;
    let upstream = upstream().await;
    let a = Server::start(&url, free_port(), ADMIN).await;
    let b = Server::start(&url, free_port(), ADMIN).await;
    let s = setup(&a, &upstream).await;
    let slow_poll = a
        .post(
            &s.key,
            "/api/v1/agents",
            json!({"org_id": s.org_id, "name": "slow-poll", "instructions": "Pay.",
                "model": {"provider": "scripted", "turns": [
                    {"tool_calls": [{"name": "erp__create_payment", "arguments": {"amount": 5}}]}, {"content": "done"}]},
                "connectors": [a.get(&s.key, &format!("/api/v1/agents/{}", s.agent_id)).await["config"]["connectors"][0]],
                "hooks": {"class_hooks": [{"name": "confirmation_gate", "config": {"poll_interval_ms": 600000}}]}}),
        )
        .await;
    let s = Setup { agent_id: slow_poll["id"].as_str().unwrap().to_owned(), ..s };
    let run_id = start_chat(&a, &s).await;
    let pending = wait_pending(&b, &s.key).await;
    b.post(
        &s.key,
        &format!("/api/v1/confirmations/{}/decision", pending["id"].as_str().unwrap()),
        json!({"decision": "approve"}),
    )
    .await;
    // Well within the 10-minute poll: only the notification can have woken A.
    wait_run(&a, &s.key, &run_id, "completed").await;
    assert_eq!(payments(&upstream).await, 1);
}
