//! The demo: an org, a user, the local ERP connector (served by this process under
//! `/demo-upstream`) and four agents on the offline scripted model, each showing one rule.

use serde_json::json;

use crate::state::AppState;

/// The demo user's `feishu_open_id` (for trying the callback by hand).
pub const DEMO_OPEN_ID: &str = "ou_demo_admin";
const DEMO_ORG: &str = "Demo Org";

/// What the demo seeded (or found), for the startup banner.
#[derive(Debug)]
pub struct Demo {
    pub org_id: String,
    pub user_id: String,
    /// A fresh API key of the demo user (keys are stored hashed, so each start mints one).
    pub api_key: String,
    /// (agent name, agent id, what it shows).
    pub agents: Vec<(String, String, &'static str)>,
}

/// Seeds the demo on an empty database; on a database that already has the demo org, finds it.
/// Returns `None` when the database has other data and no demo org.
pub async fn seed(state: &AppState) -> anyhow::Result<Option<Demo>> {
    let store = state.store();
    let existing = store.find_org_by_name(DEMO_ORG).await?;
    let (org, user) = match existing {
        Some(org) => {
            let users = store.list_users(&org.id).await?;
            let Some(user) = users.into_iter().find(|u| u.feishu_open_id.as_deref() == Some(DEMO_OPEN_ID)) else {
                return Ok(None);
            };
            (org, user)
        }
        None if store.count_orgs().await? == 0 => {
            let org = store.create_org(DEMO_ORG).await?;
            let user = store
                .create_user(&store::NewUser {
                    org_id: org.id.clone(),
                    name: "Demo Admin".to_owned(),
                    role: store::Role::Admin,
                    feishu_open_id: Some(DEMO_OPEN_ID.to_owned()),
                })
                .await?;
            seed_connector_and_agents(state, &org.id, &user.id).await?;
            (org, user)
        }
        None => return Ok(None),
    };
    let api_key = store.create_api_key(&user.id).await?.api_key;
    let agents = store
        .list_agents(&org.id)
        .await?
        .into_iter()
        .map(|a| {
            let what = match a.name.as_str() {
                "payments" => "a ¥68,000 payment that waits for a human's approval",
                "ops" => "a customer update, blocked while the org is read-only",
                "reports" => "a report of about 18,600 characters, truncated to 8,000 for the model",
                "fx-burst" => "five calls at once against a 3-call burst: rate limited",
                _ => "",
            };
            (a.name, a.id, what)
        })
        .collect();
    Ok(Some(Demo { org_id: org.id, user_id: user.id, api_key, agents }))
}

async fn seed_connector_and_agents(state: &AppState, org_id: &str, user_id: &str) -> anyhow::Result<()> {
    let store = state.store();
    let base_url = format!("http://{}{}", state.config().bind, crate::demo_upstream::PREFIX);
    let action =
        |name: &str, method: &str, path: &str, schema: serde_json::Value, confirm: bool| store::NewConnectorAction {
            name: name.to_owned(),
            description: format!("{method} {path}"),
            method: method.to_owned(),
            path: path.to_owned(),
            parameters_schema: schema,
            requires_confirmation: confirm,
            side_effect: if method == "GET" { store::SideEffect::Read } else { store::SideEffect::Write },
        };
    let erp = store
        .create_connector(&store::NewConnector {
            org_id: org_id.to_owned(),
            name: "erp".to_owned(),
            kind: store::ConnectorKind::Http,
            base_url: Some(base_url),
            url: None,
            auth: Some(json!({"type": "bearer", "token": "demo-erp-token"})),
            rate_limit: Some(store::RateLimit { per_minute: 6, burst: 3 }),
            actions: vec![
                action(
                    "create_payment",
                    "POST",
                    "/payments",
                    json!({"type": "object", "properties": {"amount_cny": {"type": "number"}, "payee": {"type": "string"}, "memo": {"type": "string"}}, "required": ["amount_cny", "payee"]}),
                    true,
                ),
                action("get_customer", "GET", "/customers/{id}", json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}), false),
                action(
                    "update_customer",
                    "PATCH",
                    "/customers/{id}",
                    json!({"type": "object", "properties": {"id": {"type": "string"}, "tier": {"type": "string"}}, "required": ["id"]}),
                    false,
                ),
                action("get_report", "GET", "/reports/{name}", json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}), false),
                action("get_fx_rate", "GET", "/fx/{currency}", json!({"type": "object", "properties": {"currency": {"type": "string"}}, "required": ["currency"]}), false),
            ],
        })
        .await?;
    let call = |name: &str, args: serde_json::Value| json!({"name": name, "arguments": args});
    let agents = [
        (
            "payments",
            "You pay supplier invoices.",
            vec![call(
                "erp__create_payment",
                json!({"amount_cny": 68000, "payee": "Acme Trading Co.", "memo": "INV-2026-1130"}),
            )],
            "Payment submitted for approval and executed.",
        ),
        (
            "ops",
            "You maintain customer records.",
            vec![call("erp__update_customer", json!({"id": "C-1001", "tier": "platinum"}))],
            "Customer update attempted.",
        ),
        (
            "reports",
            "You summarise reports.",
            vec![call("erp__get_report", json!({"name": "q4-ledger"}))],
            "The Q4 ledger has 200 entries.",
        ),
        (
            "fx-burst",
            "You quote FX rates.",
            ["USD", "EUR", "JPY", "HKD", "GBP"]
                .iter()
                .map(|c| call("erp__get_fx_rate", json!({"currency": c})))
                .collect(),
            "Quoted the rates I could get.",
        ),
    ];
    for (name, instructions, calls, answer) in agents {
        let config = json!({
            "version": agent_react::AGENT_CONFIG_VERSION,
            "instructions": instructions,
            "model": {"provider": "scripted", "turns": [{"tool_calls": calls}, {"content": answer}]},
            "connectors": [erp.id],
            "confirmation": {"timeout_s": 600, "approver_scope": "org_members"},
        });
        store
            .create_agent(&store::NewAgent {
                org_id: org_id.to_owned(),
                owner_user_id: Some(user_id.to_owned()),
                name: name.to_owned(),
                instructions: instructions.to_owned(),
                require_confirmation_for_all: false,
                model_config: config,
            })
            .await?;
    }
    Ok(())
}

/// The startup banner: the demo key and copy-paste commands.
pub fn banner(base: &str, demo: &Demo) -> String {
    let key = &demo.api_key;
    let agent = |name: &str| demo.agents.iter().find(|a| a.0 == name).map(|a| a.1.clone()).unwrap_or_default();
    let mut out = String::new();
    out.push_str("\nTollgate demo is ready.\n");
    out.push_str(&format!("  org:     {}\n  API key: {key}\n", demo.org_id));
    for (name, id, what) in &demo.agents {
        out.push_str(&format!("  agent {name:<9} {id}  {what}\n"));
    }
    out.push_str(&format!(
        r#"
Try it (another terminal):
  export TG={base} KEY={key}
  # 1. A gated payment: the run waits for approval …
  curl -N -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{{"message":"pay Acme"}}' $TG/api/v1/agents/{payments}/chat
  # … approve it (from a second terminal while the first waits):
  curl -H "Authorization: Bearer $KEY" "$TG/api/v1/confirmations?status=pending"
  curl -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{{"decision":"approve"}}' $TG/api/v1/confirmations/<id>/decision
  # 2. Read-only org blocks writes:
  curl -X PATCH -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{{"read_only":true}}' $TG/api/v1/orgs/{org}
  curl -N -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{{"message":"upgrade C-1001"}}' $TG/api/v1/agents/{ops}/chat
  # 3. A long result truncated:
  curl -N -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{{"message":"q4 ledger"}}' $TG/api/v1/agents/{reports}/chat
  # 4. A rate-limited burst:
  curl -N -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{{"message":"rates"}}' $TG/api/v1/agents/{burst}/chat
  # 5. The audit log of all of it:
  curl -H "Authorization: Bearer $KEY" $TG/api/v1/audit/connector-calls
"#,
        payments = agent("payments"),
        ops = agent("ops"),
        reports = agent("reports"),
        burst = agent("fx-burst"),
        org = demo.org_id,
    ));
    out
}
