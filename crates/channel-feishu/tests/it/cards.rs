//! Card JSON: snapshots of the approval card and every final state, the size cap and the buttons.

use channel_core::{ApprovalCard, CardState};
use channel_feishu::{MAX_CARD_BYTES, approval_card, final_card};
use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

fn sample() -> ApprovalCard {
    ApprovalCard {
        confirmation_id: "0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f".into(),
        agent_name: "finance-assistant".into(),
        requester: "Li Lei".into(),
        tool_name: "erp__create_payment".into(),
        tool_args: json!({"vendor": "ACME Ltd", "amount": 62000, "currency": "CNY", "memo": "Q1 invoice"}),
        expires_at: Utc.timestamp_opt(1_767_225_900, 0).unwrap(),
    }
}

fn decided_at() -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_767_225_660, 0).unwrap()
}

/// Every button anywhere in the card.
fn buttons(card: &Value) -> Vec<Value> {
    fn walk(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(map) => {
                if map.get("tag") == Some(&json!("button")) {
                    out.push(v.clone());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(card, &mut out);
    out
}

#[test]
fn approval_card_snapshot() {
    insta::assert_json_snapshot!("approval_card", approval_card(&sample()));
}

#[test]
fn approved_card_snapshot() {
    let state = CardState::Approved { decided_by: "Han Meimei".into(), decided_at: decided_at() };
    insta::assert_json_snapshot!("final_approved", final_card(&sample(), &state));
}

#[test]
fn rejected_card_snapshot() {
    let state = CardState::Rejected {
        decided_by: "Han Meimei".into(),
        decided_at: decided_at(),
        reason: Some("Amount above the quarterly budget".into()),
    };
    insta::assert_json_snapshot!("final_rejected", final_card(&sample(), &state));
}

#[test]
fn expired_card_snapshot() {
    let state = CardState::Expired { at: sample().expires_at };
    insta::assert_json_snapshot!("final_expired", final_card(&sample(), &state));
}

#[test]
fn cancelled_card_snapshot() {
    let state = CardState::Cancelled { at: decided_at(), reason: "the run was cancelled".into() };
    insta::assert_json_snapshot!("final_cancelled", final_card(&sample(), &state));
}

#[test]
fn approval_card_has_update_multi_and_two_callback_buttons() {
    let card = approval_card(&sample());
    assert_eq!(card["schema"], "2.0");
    assert_eq!(card["config"]["update_multi"], true);
    let buttons = buttons(&card);
    assert_eq!(buttons.len(), 2);
    assert_ne!(buttons[0]["name"], buttons[1]["name"]);
    let values: Vec<Value> = buttons.iter().map(|b| b["behaviors"][0].clone()).collect();
    assert_eq!(
        values,
        vec![
            json!({"type": "callback", "value": {"confirmation_id": "0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f", "decision": "approve"}}),
            json!({"type": "callback", "value": {"confirmation_id": "0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f", "decision": "reject"}}),
        ]
    );
}

#[test]
fn final_cards_have_no_buttons_and_keep_update_multi() {
    let states = [
        CardState::Approved { decided_by: "a".into(), decided_at: decided_at() },
        CardState::Rejected { decided_by: "a".into(), decided_at: decided_at(), reason: None },
        CardState::Expired { at: decided_at() },
        CardState::Cancelled { at: decided_at(), reason: "r".into() },
    ];
    let templates: Vec<Value> = states
        .iter()
        .map(|s| {
            let card = final_card(&sample(), s);
            assert!(buttons(&card).is_empty());
            assert_eq!(card["config"]["update_multi"], true);
            card["header"]["template"].clone()
        })
        .collect();
    assert_eq!(templates, vec![json!("green"), json!("red"), json!("grey"), json!("grey")]);
}

#[test]
fn huge_arguments_are_cut_to_fit_the_size_limit() {
    // Quotes and newlines double in size when the card is escaped, so measure the real thing.
    let mut card = sample();
    card.tool_args = json!({ "rows": vec!["\"quoted\"\n値 ".repeat(20); 400] });
    card.agent_name = "x".repeat(10_000);
    for built in [approval_card(&card), final_card(&card, &CardState::Expired { at: decided_at() })] {
        let size = serde_json::to_vec(&built).unwrap().len();
        assert!(size <= MAX_CARD_BYTES, "{size} bytes");
        assert!(size > MAX_CARD_BYTES / 2, "cut far more than needed: {size} bytes");
        assert!(built.to_string().contains("arguments truncated"));
    }
    // Small arguments are shown whole.
    assert!(!approval_card(&sample()).to_string().contains("truncated"));
}

#[test]
fn user_text_never_lands_in_markdown() {
    let mut card = sample();
    card.agent_name = "<at id=all></at> **bold**".into();
    let built = approval_card(&card);
    fn markdown_contents(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if map.get("tag") == Some(&json!("markdown")) {
                    out.push(map["content"].as_str().unwrap().to_owned());
                }
                map.values().for_each(|v| markdown_contents(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| markdown_contents(v, out)),
            _ => {}
        }
    }
    let mut md = Vec::new();
    markdown_contents(&built, &mut md);
    assert!(md.iter().all(|m| !m.contains("<at")), "{md:?}");
    assert!(built.to_string().contains("<at id=all></at> **bold**"));
}
