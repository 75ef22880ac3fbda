use agent_react::{AgentConfig, ApproverScope, HookSpec};
use serde_json::json;

#[test]
fn a_hook_spec_refuses_unknown_keys_and_non_string_names() {
    for bad in [json!({"name": "audit_log", "conifg": {}}), json!({"name": 5}), json!({"config": {}}), json!(7)] {
        let error = serde_json::from_value::<HookSpec>(bad.clone()).unwrap_err().to_string();
        assert!(error.contains("hook") || error.contains("expected"), "{bad}: {error}");
    }
    assert_eq!(
        serde_json::from_value::<HookSpec>(json!({"name": "audit_log"})).unwrap().config(),
        &serde_json::Value::Null
    );
}

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
    assert_eq!(config.confirmation.timeout_s, 120);
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

mod catalog {
    use std::sync::Arc;

    use agent_react::{AgentConfig, AgentContextInfo, HookBuildError, HookCatalog, HookEntry, HookFactory};
    use hook_core::{HookContext, HookError, HookResult, PreToolUseHook};
    use serde_json::{Value, json};

    struct Named(String);

    #[async_trait::async_trait]
    impl PreToolUseHook for Named {
        fn name(&self) -> &str {
            &self.0
        }
        async fn execute(&self, _ctx: &HookContext) -> Result<HookResult, HookError> {
            Ok(HookResult::allow())
        }
    }

    fn catalog() -> HookCatalog {
        HookCatalog::new()
            .always("confirmation_gate", |agent, config| {
                let timeout =
                    config.get("timeout_s").and_then(Value::as_u64).unwrap_or(agent.config.confirmation.timeout_s);
                Ok(vec![HookEntry::Pre(Arc::new(Named(format!("gate_{timeout}"))))])
            })
            .alias("feishu_gate", "confirmation_gate")
            .named("result_truncate", |_, config| match config {
                Value::Null => Ok(vec![HookEntry::Pre(Arc::new(Named("truncate".into())))]),
                Value::Object(m) if m.get("max_chars").is_some_and(Value::is_u64) => {
                    Ok(vec![HookEntry::Pre(Arc::new(Named("truncate_custom".into())))])
                }
                other => Err(format!("expected {{\"max_chars\": <integer>}}, got {other}")),
            })
    }

    fn agent(hooks: Value) -> AgentContextInfo {
        let config: AgentConfig = serde_json::from_value(json!({
            "instructions": "x", "model": {"provider": "scripted", "turns": []}, "hooks": hooks
        }))
        .unwrap();
        AgentContextInfo { agent_id: "a".into(), org_id: "o".into(), name: "a".into(), owner_user_id: None, config }
    }

    #[test]
    fn gate_always_then_class_hooks_by_name() {
        let registry = catalog().build(&agent(json!({}))).unwrap();
        assert_eq!(registry.pre_hook_names(), ["gate_120"]);
        let registry = catalog()
            .build(&agent(
                json!({"class_hooks": ["result_truncate", {"name": "feishu_gate", "config": {"timeout_s": 5}}]}),
            ))
            .unwrap();
        assert_eq!(registry.pre_hook_names(), ["gate_5", "truncate"]);
    }

    #[test]
    fn unknown_names_and_bad_configs_fail_the_build() {
        let err = catalog().build(&agent(json!({"class_hooks": ["nope"]}))).unwrap_err();
        assert_eq!(err, HookBuildError::UnknownHook { name: "nope".into() });
        let err = catalog()
            .build(&agent(json!({"class_hooks": [{"name": "result_truncate", "config": {"max_chars": "many"}}]})))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"bad config for hook 'result_truncate': expected {"max_chars": <integer>}, got {"max_chars":"many"}"#
        );
        let err = catalog().build(&agent(json!({"class_hooks": ["result_truncate", "result_truncate"]}))).unwrap_err();
        assert!(err.to_string().contains("listed more than once"), "{err}");
    }
}
