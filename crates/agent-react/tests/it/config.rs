use agent_react::{AgentConfig, ApproverScope, HookSpec};
use serde_json::json;

#[test]
fn agent_config_parses_defaults_and_hook_specs() {
    let config: AgentConfig = serde_json::from_value(json!({
        "instructions": "You pay invoices.",
        "model": {"provider": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key_env": "K"},
        "tools": ["current_time"],
        "confirmation": {"approver_scope": "org_admins"},
        "hooks": {"class_hooks": ["result_truncate", {"name": "result_truncate", "config": {"max_chars": 10}}]}
    }))
    .unwrap();
    assert_eq!(config.version, 1);
    assert_eq!(config.confirmation.timeout_s, 300);
    assert_eq!(config.confirmation.approver_scope, ApproverScope::OrgAdmins);
    assert!(!config.require_confirmation_for_all);
    assert_eq!(config.hooks.class_hooks[0], HookSpec::Name("result_truncate".into()));
    assert_eq!(config.hooks.class_hooks[1].config(), &json!({"max_chars": 10}));
    // Round trip.
    let again: AgentConfig = serde_json::from_value(serde_json::to_value(&config).unwrap()).unwrap();
    assert_eq!(again, config);
}

#[test]
fn unknown_fields_are_refused() {
    let err = serde_json::from_value::<AgentConfig>(json!({
        "instructions": "x", "model": {"provider": "scripted", "turns": []}, "hookz": {}
    }))
    .unwrap_err();
    assert!(err.to_string().contains("hookz"), "{err}");
    let err = serde_json::from_value::<AgentConfig>(json!({
        "instructions": "x", "model": {"provider": "scripted", "turns": []},
        "confirmation": {"approver_scope": "everyone"}
    }));
    assert!(err.is_err());
}
