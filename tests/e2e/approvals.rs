//! The confirmation gate end to end: a gated payment waits, a card goes to the fake Feishu, and
//! the connector's upstream sees exactly one call after an approval and none after a rejection,
//! an expiry, a forged signature, a replayed event or a click from outside the approver scope.

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::assert_transcript;
use crate::support::*;

/// A server with one org (Feishu channel, payments connector) and a scripted paying agent.
struct Case {
    server: Server,
    feishu: MockServer,
    upstream: MockServer,
    org: Org,
    agent_id: String,
}

impl Case {
    async fn new(db: Db, timeout_s: u64) -> Case {
        let server = Server::start(db).await;
        let feishu = feishu().await;
        let upstream = upstream().await;
        let org = org(&server, "alpha", Some(&feishu), &upstream).await;
        let agent_id = agent(&server, &org, scripted_payment(), timeout_s, "initiator").await;
        Case { server, feishu, upstream, org, agent_id }
    }

    fn channel_id(&self) -> &str {
        self.org.channel_id.as_deref().unwrap()
    }

    /// Starts the payment run; returns the stream and the confirmation id once the run waits.
    async fn start(&self) -> (SseStream, String) {
        let mut sse = self.server.chat(&self.agent_id, &self.org.requester.key, "Pay INV-2026-0042").await;
        let awaiting = sse.until("awaiting_confirmation").await;
        assert_eq!(awaiting["tool_name"], "payments__purchase_pay", "{}", self.server.label);
        let id = awaiting["confirmation_id"].as_str().unwrap().to_owned();
        let run_path = format!("/api/v1/runs/{}", awaiting["run_id"].as_str().unwrap());
        let run = self.server.get(&run_path, &self.org.requester.key).await.expect(200);
        assert_eq!(run["status"], "awaiting_confirmation");
        // The row is visible to the org at once, and nothing reached the upstream yet.
        let pending = self.server.first_pending(&self.org.requester.key).await;
        assert_eq!(pending["id"], id);
        assert_eq!(pending["status"], "pending");
        assert_eq!(
            pending["tool_args"],
            json!({"invoice_id": "INV-2026-0042", "amount_cny": 60000, "memo": "servers"})
        );
        assert_card_sent(&self.feishu, &id).await;
        assert_eq!(self.pay_calls().await, 0);
        (sse, id)
    }

    async fn pay_calls(&self) -> usize {
        requests_to(&self.upstream, "/pay").await.len()
    }

    async fn click(&self, event_id: &str, confirmation_id: &str, decision: &str, open_id: &str) -> (Delivery, Value) {
        let delivery = encrypted_delivery(ENCRYPT_KEY, &card_click(event_id, confirmation_id, decision, open_id));
        let answer = self.server.feishu_callback(self.channel_id(), &delivery).await.expect(200);
        (delivery, answer)
    }

    async fn confirmation(&self, id: &str) -> Value {
        self.server.get(&format!("/api/v1/confirmations/{id}"), &self.org.requester.key).await.expect(200)
    }

    async fn run(&self, frames: &[Value]) -> Value {
        let run_id = frames[0]["data"]["run_id"].as_str().unwrap();
        self.server.get(&format!("/api/v1/runs/{run_id}"), &self.org.requester.key).await.expect(200)
    }

    /// The final tool result of the transcript.
    fn tool_result(frames: &[Value]) -> Value {
        frames.iter().find(|f| f["event"] == "tool_result").expect("a tool_result")["data"].clone()
    }
}

fn event_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[tokio::test]
async fn an_approving_click_runs_the_call_exactly_once() {
    for db in databases().await {
        let case = Case::new(db, 30).await;
        let (sse, id) = case.start().await;
        let (_, answer) = case.click(&event_id(), &id, "approve", &case.org.requester.open_id).await;
        assert_eq!(answer["toast"]["type"], "success", "{answer}");
        assert!(answer["card"].is_object(), "the final card comes with the answer: {answer}");
        let frames = sse.finish().await;

        let pay = requests_to(&case.upstream, "/pay").await;
        assert_eq!(pay.len(), 1, "{}", case.server.label);
        let body: Value = serde_json::from_slice(&pay[0].body).unwrap();
        assert_eq!(body, json!({"invoice_id": "INV-2026-0042", "amount_cny": 60000, "memo": "servers"}));
        let record = case.confirmation(&id).await;
        assert_eq!(record["status"], "approved");
        assert_eq!(record["responded_by_open_id"], case.org.requester.open_id);
        assert_eq!(record["responded_by_user_id"], case.org.requester.id);
        let run = case.run(&frames).await;
        assert_eq!((run["status"].as_str(), run["answer"].as_str()), (Some("completed"), Some("Done.")));
        let patched = assert_card_patched(&case.feishu).await;
        assert!(patched["content"].as_str().unwrap().contains("pprove"), "{patched}");
        let audit = case
            .server
            .get(
                &format!("/api/v1/audit/connector-calls?run_id={}", run["id"].as_str().unwrap()),
                &case.org.requester.key,
            )
            .await
            .expect(200);
        assert_eq!(audit.as_array().unwrap().len(), 1, "{audit}");
        assert_transcript!("approved_by_feishu_click", &frames);
    }
}

#[tokio::test]
async fn a_rejecting_click_blocks_the_call() {
    for db in databases().await {
        let case = Case::new(db, 30).await;
        let (sse, id) = case.start().await;
        let (_, answer) = case.click(&event_id(), &id, "reject", &case.org.requester.open_id).await;
        assert_eq!(answer["toast"]["type"], "success", "{answer}");
        let frames = sse.finish().await;
        assert_eq!(case.pay_calls().await, 0, "{}", case.server.label);
        assert_eq!(Case::tool_result(&frames)["blocked"], true);
        assert_eq!(case.confirmation(&id).await["status"], "rejected");
        assert_card_patched(&case.feishu).await;
        assert_transcript!("rejected_by_feishu_click", &frames);
    }
}

#[tokio::test]
async fn a_replayed_event_changes_nothing() {
    for db in databases().await {
        let case = Case::new(db, 30).await;
        let (sse, id) = case.start().await;
        let event = event_id();
        let (first, answer) = case.click(&event, &id, "reject", &case.org.requester.open_id).await;
        assert_eq!(answer["toast"]["type"], "success", "{answer}");
        // Feishu delivers the same event again (same bytes), then a forgery reuses its id.
        let again = case.server.feishu_callback(case.channel_id(), &first).await.expect(200);
        assert!(again["toast"]["content"].as_str().unwrap().contains("already handled"), "{again}");
        let (_, reused) = case.click(&event, &id, "approve", &case.org.requester.open_id).await;
        assert!(reused["toast"]["content"].as_str().unwrap().contains("already handled"), "{reused}");
        let frames = sse.finish().await;
        assert_eq!(case.pay_calls().await, 0, "{}", case.server.label);
        assert_eq!(case.confirmation(&id).await["status"], "rejected");
        assert_transcript!("replayed_feishu_event", &frames);
    }
}

#[tokio::test]
async fn nobody_deciding_expires_the_request() {
    for db in databases().await {
        let case = Case::new(db, 1).await;
        let (sse, id) = case.start().await;
        let frames = sse.finish().await;
        assert_eq!(case.pay_calls().await, 0, "{}", case.server.label);
        let record = case.confirmation(&id).await;
        assert_eq!(record["status"], "expired");
        assert!(record["responded_by_user_id"].is_null());
        assert_card_patched(&case.feishu).await;
        // A click after the deadline is answered without effect.
        let (_, late) = case.click(&event_id(), &id, "approve", &case.org.requester.open_id).await;
        assert_eq!(late["toast"]["type"], "info", "{late}");
        assert_eq!(case.confirmation(&id).await["status"], "expired");
        assert_eq!(case.pay_calls().await, 0);
        assert_transcript!("expired", &frames);
    }
}

#[tokio::test]
async fn a_forged_signature_is_refused_and_decides_nothing() {
    for db in databases().await {
        let case = Case::new(db, 3).await;
        let (sse, id) = case.start().await;
        let click = card_click(&event_id(), &id, "approve", &case.org.requester.open_id);
        // Signed (and encrypted) with the wrong key.
        let forged = encrypted_delivery("not-the-encrypt-key", &click);
        let answer = case.server.feishu_callback(case.channel_id(), &forged).await;
        assert_eq!(answer.expect_error(401), "bad_signature");
        // The right key, but the body changed after signing.
        let mut tampered = encrypted_delivery(ENCRYPT_KEY, &click);
        let signature = &mut tampered.headers.iter_mut().find(|(n, _)| n == "X-Lark-Signature").unwrap().1;
        *signature = signature.chars().rev().collect();
        assert_eq!(case.server.feishu_callback(case.channel_id(), &tampered).await.expect_error(401), "bad_signature");
        // No signature at all.
        let mut unsigned = encrypted_delivery(ENCRYPT_KEY, &click);
        unsigned.headers.clear();
        assert_eq!(case.server.feishu_callback(case.channel_id(), &unsigned).await.expect_error(401), "bad_signature");
        assert_eq!(case.confirmation(&id).await["status"], "pending");
        let frames = sse.finish().await;
        assert_eq!(case.pay_calls().await, 0, "{}", case.server.label);
        assert_eq!(case.confirmation(&id).await["status"], "expired");
        assert_transcript!("forged_signature", &frames);
    }
}

#[tokio::test]
async fn a_click_from_outside_the_approver_scope_decides_nothing() {
    for db in databases().await {
        let case = Case::new(db, 3).await;
        let (sse, id) = case.start().await;
        // A member of the org who did not start the run (scope `initiator`).
        let (_, answer) = case.click(&event_id(), &id, "approve", &case.org.bystander.open_id).await;
        assert_eq!(answer["toast"]["type"], "error", "{answer}");
        // Someone Feishu knows but the org does not.
        let (_, answer) = case.click(&event_id(), &id, "approve", "ou_stranger").await;
        assert_eq!(answer["toast"]["type"], "error", "{answer}");
        assert_eq!(case.confirmation(&id).await["status"], "pending");
        let frames = sse.finish().await;
        assert_eq!(case.pay_calls().await, 0, "{}", case.server.label);
        assert_eq!(case.confirmation(&id).await["status"], "expired");
        assert_transcript!("click_outside_scope", &frames);
    }
}

#[tokio::test]
async fn the_decision_api_answers_403_404_409_and_approves_once() {
    for db in databases().await {
        let case = Case::new(db, 30).await;
        let other = org(&case.server, "beta", None, &case.upstream).await;
        let (sse, id) = case.start().await;
        let path = format!("/api/v1/confirmations/{id}/decision");
        let approve = json!({"decision": "approve", "reason": "budgeted"});
        let answer = case.server.post(&path, &case.org.bystander.key, &approve).await;
        assert_eq!(answer.expect_error(403), "forbidden");
        let answer = case.server.post(&path, &other.admin.key, &approve).await;
        assert_eq!(answer.expect_error(404), "not_found");
        let answer = case.server.post(&path, ADMIN, &approve).await;
        assert_eq!(answer.expect_error(403), "forbidden");
        let answer = case.server.post(&path, &case.org.requester.key, &json!({"decision": "maybe"})).await;
        assert_eq!(answer.expect_error(400), "validation_failed");
        assert_eq!(case.confirmation(&id).await["status"], "pending");

        let decided = case.server.post(&path, &case.org.requester.key, &approve).await.expect(200);
        assert_eq!(decided["status"], "approved");
        assert_eq!(decided["responded_by_user_id"], case.org.requester.id);
        assert_eq!(decided["reason"], "budgeted");
        let again = case.server.post(&path, &case.org.requester.key, &json!({"decision": "reject"})).await;
        assert_eq!(again.expect_error(409), "already_decided");
        let frames = sse.finish().await;
        assert_eq!(case.pay_calls().await, 1, "{}", case.server.label);
        // A late click on the card changes nothing either.
        let (_, late) = case.click(&event_id(), &id, "reject", &case.org.requester.open_id).await;
        assert_eq!(late["toast"]["type"], "info", "{late}");
        assert_eq!(case.confirmation(&id).await["status"], "approved");
        assert_eq!(case.pay_calls().await, 1);
        assert_card_patched(&case.feishu).await;
        assert_transcript!("approved_through_the_api", &frames);
    }
}
