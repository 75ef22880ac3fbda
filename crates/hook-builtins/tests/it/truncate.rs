use hook_builtins::{ResultTruncateConfig, ResultTruncateHook};
use hook_core::{HookContext, PostToolUseHook};
use serde_json::{Value, json};

async fn run(config: ResultTruncateConfig, result: Value) -> Option<Value> {
    let hook = ResultTruncateHook::new(config);
    let ctx = HookContext::post_tool_use("t", json!({}), result);
    hook.execute(&ctx).await.unwrap().modified_result
}

#[tokio::test]
async fn long_strings_keep_a_prefix_and_a_marker() {
    let text = "é".repeat(8001);
    let out = run(ResultTruncateConfig::default(), Value::String(text)).await.unwrap();
    let out = out.as_str().unwrap();
    assert_eq!(out, format!("{}\n[truncated: showing 8000 of 8001 chars]", "é".repeat(8000)));
}

#[tokio::test]
async fn short_results_are_untouched_at_the_exact_limit() {
    assert_eq!(run(ResultTruncateConfig::default(), Value::String("x".repeat(8000))).await, None);
    assert_eq!(run(ResultTruncateConfig::default(), json!({"a": 1})).await, None);
}

#[tokio::test]
async fn json_results_are_serialized_first_and_the_limit_is_configurable() {
    let config: ResultTruncateConfig = serde_json::from_value(json!({"max_chars": 10})).unwrap();
    let result = json!({"rows": [1, 2, 3, 4, 5]});
    let serialized = serde_json::to_string(&result).unwrap();
    let out = run(config, result).await.unwrap();
    assert_eq!(
        out.as_str().unwrap(),
        format!("{}\n[truncated: showing 10 of {} chars]", &serialized[..10], serialized.chars().count())
    );
    assert!(serde_json::from_value::<ResultTruncateConfig>(json!({"max": 10})).is_err());
    let hook = ResultTruncateHook::new(ResultTruncateConfig::default());
    assert_eq!((hook.name(), hook.priority()), ("result_truncate", 100));
}
