//! Interactive cards (Feishu card JSON schema 2.0) as pure functions of the vendor-free card
//! types: the pending approval card and its final states.
//!
//! Source: Feishu card JSON 2.0 structure docs — buttons need a unique `name` and
//! `behaviors: [{type: "callback", value}]`; `config.update_multi = true` lets the card be patched
//! for everyone; a card must stay ≤ 30 KB. User-controlled text (names, arguments) goes into
//! `plain_text` elements, never markdown, so it cannot inject mentions or links.

use channel_core::{ApprovalCard, CardState, Decision};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// The largest card we send, in bytes of compact JSON (Feishu's limit is 30 KB).
pub const MAX_CARD_BYTES: usize = 30 * 1024;
/// Longest agent / requester / tool name shown, in characters; longer ones end with `…`.
const MAX_NAME_CHARS: usize = 200;
const TRUNCATION_NOTE: &str = "\n… [arguments truncated to fit the card]";

/// The pending approval card: header, who asks, the tool, the pretty-printed arguments (cut so the
/// card stays ≤ [`MAX_CARD_BYTES`]), the request id and expiry, and Approve / Reject buttons whose
/// callback value is `{"confirmation_id", "decision": "approve" | "reject"}`.
pub fn approval_card(card: &ApprovalCard) -> Value {
    let buttons = json!({
        "tag": "column_set",
        "flex_mode": "none",
        "horizontal_spacing": "default",
        "columns": [
            { "tag": "column", "width": "auto", "elements": [button(card, Decision::Approve)] },
            { "tag": "column", "width": "auto", "elements": [button(card, Decision::Reject)] },
        ],
    });
    let status = json!({
        "tag": "markdown",
        "content": format!("Waiting for a decision until **{}**.", fmt_time(card.expires_at)),
    });
    fit(card, |args| {
        build(
            "orange",
            &format!("Approval required: {}", clip(&card.tool_name)),
            card,
            args,
            vec![status.clone(), buttons.clone()],
        )
    })
}

/// The card in its final state, without buttons: Approved (green), Rejected (red, with the
/// reason), Expired (grey), Cancelled (grey, with why), saying who decided and when.
pub fn final_card(card: &ApprovalCard, state: &CardState) -> Value {
    let (template, title, line) = match state {
        CardState::Approved { decided_by, decided_at } => {
            ("green", "Approved", format!("Approved by {} at {}.", clip(decided_by), fmt_time(*decided_at)))
        }
        CardState::Rejected { decided_by, decided_at, reason } => (
            "red",
            "Rejected",
            match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                Some(reason) => {
                    format!("Rejected by {} at {}. Reason: {}", clip(decided_by), fmt_time(*decided_at), clip(reason))
                }
                None => format!("Rejected by {} at {}.", clip(decided_by), fmt_time(*decided_at)),
            },
        ),
        CardState::Expired { at } => {
            ("grey", "Expired", format!("Nobody decided before the deadline ({}).", fmt_time(*at)))
        }
        CardState::Cancelled { at, reason } => {
            ("grey", "Cancelled", format!("Cancelled at {}: {}", fmt_time(*at), clip(reason)))
        }
    };
    let status = plain(&line);
    fit(card, |args| build(template, &format!("{title}: {}", clip(&card.tool_name)), card, args, vec![status.clone()]))
}

fn button(card: &ApprovalCard, decision: Decision) -> Value {
    let (label, style) = match decision {
        Decision::Approve => ("Approve", "primary"),
        Decision::Reject => ("Reject", "danger"),
    };
    json!({
        "tag": "button",
        // Unique per card, as schema 2.0 requires; letters, digits and `_` only.
        "name": format!("btn_{}_{}", decision.as_str(), name_suffix(&card.confirmation_id)),
        "text": { "tag": "plain_text", "content": label },
        "type": style,
        "behaviors": [{
            "type": "callback",
            "value": { "confirmation_id": card.confirmation_id, "decision": decision.as_str() },
        }],
    })
}

fn build(template: &str, title: &str, card: &ApprovalCard, args: &str, tail: Vec<Value>) -> Value {
    let mut elements = vec![
        plain(&format!(
            "Agent: {}\nRequested by: {}\nTool: {}",
            clip(&card.agent_name),
            clip(&card.requester),
            clip(&card.tool_name)
        )),
        json!({ "tag": "markdown", "content": "**Arguments**" }),
        plain(args),
        plain(&format!("Request id: {}\nExpires: {}", clip(&card.confirmation_id), fmt_time(card.expires_at))),
        json!({ "tag": "hr" }),
    ];
    elements.extend(tail);
    json!({
        "schema": "2.0",
        "config": { "update_multi": true, "width_mode": "fill" },
        "header": {
            "template": template,
            "title": { "tag": "plain_text", "content": title },
        },
        "body": { "elements": elements },
    })
}

/// Builds the card with the full pretty-printed arguments, then cuts them (on a char boundary)
/// until the compact JSON fits in [`MAX_CARD_BYTES`]. JSON escaping makes the serialized size
/// hard to predict, so this measures: a first cut proportional to the overflow, then 1/16 steps.
fn fit(card: &ApprovalCard, make: impl Fn(&str) -> Value) -> Value {
    let size_of = |v: &Value| serde_json::to_vec(v).map_or(usize::MAX, |v| v.len());
    let pretty = serde_json::to_string_pretty(&card.tool_args).unwrap_or_else(|_| "null".into());
    let built = make(&pretty);
    let size = size_of(&built);
    if size <= MAX_CARD_BYTES {
        return built;
    }
    // How many serialized bytes the arguments take, and how many they may take.
    let frame = size_of(&make(TRUNCATION_NOTE));
    let budget = MAX_CARD_BYTES.saturating_sub(frame);
    let args_size = size.saturating_sub(frame).max(1);
    let mut keep = ((pretty.len() as u128 * budget as u128) / args_size as u128) as usize;
    loop {
        while !pretty.is_char_boundary(keep) {
            keep -= 1;
        }
        let built = make(&format!("{}{TRUNCATION_NOTE}", &pretty[..keep]));
        if size_of(&built) <= MAX_CARD_BYTES || keep == 0 {
            return built;
        }
        keep -= (keep / 16).max(1);
    }
}

/// The first 8 letters or digits of the confirmation id (`0193a0c4` for a UUID).
fn name_suffix(confirmation_id: &str) -> String {
    confirmation_id.chars().filter(char::is_ascii_alphanumeric).take(8).collect()
}

fn plain(text: &str) -> Value {
    json!({ "tag": "div", "text": { "tag": "plain_text", "content": text } })
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_NAME_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

fn fmt_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}
