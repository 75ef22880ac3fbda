use std::time::Duration;

use governor::clock::FakeRelativeClock;
use hook_builtins::{ConnectorRateLimitConfig, ConnectorRateLimitHook};
use hook_core::{HookContext, PreToolUseHook, meta};
use serde_json::json;

fn ctx(connector: &str, user: &str) -> HookContext {
    let mut ctx = HookContext::pre_tool_use("erp__list", json!({}));
    ctx.user_id = Some(user.into());
    ctx.metadata.insert(meta::CONNECTOR_ID.into(), connector.into());
    ctx.metadata.insert(meta::CONNECTOR_NAME.into(), format!("{connector} name").into());
    ctx
}

async fn allowed(hook: &ConnectorRateLimitHook<FakeRelativeClock>, ctx: &HookContext) -> bool {
    hook.execute(ctx).await.unwrap().allow
}

#[tokio::test]
async fn default_quota_is_a_burst_of_ten_then_one_per_second_per_connector_and_user() {
    let clock = FakeRelativeClock::default();
    let hook = ConnectorRateLimitHook::with_clock(ConnectorRateLimitConfig::default(), clock.clone());
    assert_eq!((hook.name(), hook.priority()), ("connector_rate_limit", 8));
    let alice = ctx("c1", "alice");
    for i in 0..10 {
        assert!(allowed(&hook, &alice).await, "call {i} within the burst");
    }
    let blocked = hook.execute(&alice).await.unwrap();
    assert!(!blocked.allow);
    assert_eq!(
        blocked.error.as_deref(),
        Some("rate limit exceeded for connector 'c1 name' (60/min, burst 10): retry after 1 s; the tool did not run")
    );
    // Other users and other connectors have their own buckets.
    assert!(allowed(&hook, &ctx("c1", "bob")).await);
    assert!(allowed(&hook, &ctx("c2", "alice")).await);
    clock.advance(Duration::from_secs(1));
    assert!(allowed(&hook, &alice).await);
    assert!(!allowed(&hook, &alice).await);
    // Non-connector tools are not limited.
    assert!(!hook.should_trigger(&HookContext::pre_tool_use("calculator", json!({}))));
}

#[tokio::test]
async fn quotas_come_from_config_then_metadata_and_retry_after_is_rounded_up() {
    let clock = FakeRelativeClock::default();
    let config: ConnectorRateLimitConfig =
        serde_json::from_value(json!({"connectors": {"slow": {"per_minute": 2, "burst": 1}}})).unwrap();
    let hook = ConnectorRateLimitHook::with_clock(config, clock.clone());
    let slow = ctx("slow", "alice");
    assert!(allowed(&hook, &slow).await);
    let error = hook.execute(&slow).await.unwrap().error.unwrap();
    assert!(error.contains("(2/min, burst 1): retry after 30 s"), "{error}");
    clock.advance(Duration::from_millis(29_500));
    let error = hook.execute(&slow).await.unwrap().error.unwrap();
    assert!(error.contains("retry after 1 s"), "{error}");

    let mut declared = ctx("declared", "alice");
    declared.metadata.insert(meta::RATE_LIMIT_PER_MINUTE.into(), json!(6));
    declared.metadata.insert(meta::RATE_LIMIT_BURST.into(), json!(2));
    assert!(allowed(&hook, &declared).await);
    assert!(allowed(&hook, &declared).await);
    let error = hook.execute(&declared).await.unwrap().error.unwrap();
    assert!(error.contains("(6/min, burst 2): retry after 10 s"), "{error}");
    assert!(serde_json::from_value::<ConnectorRateLimitConfig>(json!({"per_minute": 1})).is_err());
}

#[tokio::test]
async fn idle_keys_are_evicted_so_memory_stays_bounded() {
    let clock = FakeRelativeClock::default();
    let hook = ConnectorRateLimitHook::with_clock(ConnectorRateLimitConfig::default(), clock.clone());
    for i in 0..100_000 {
        assert!(allowed(&hook, &ctx("c1", &format!("user{i}"))).await);
    }
    assert_eq!(hook.key_count(), 100_000);
    // Nothing is idle yet: eviction keeps every key.
    hook.evict_idle();
    assert_eq!(hook.key_count(), 100_000);
    // One cell refills in a second; after that every key is indistinguishable from a fresh one.
    clock.advance(Duration::from_secs(2));
    assert!(allowed(&hook, &ctx("c1", "active")).await);
    hook.evict_idle();
    assert_eq!(hook.key_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_eviction_timer_runs_on_its_own() {
    let clock = FakeRelativeClock::default();
    let config: ConnectorRateLimitConfig = serde_json::from_value(json!({"evict_every_s": 10})).unwrap();
    let hook = ConnectorRateLimitHook::with_clock(config, clock.clone());
    for i in 0..1000 {
        assert!(allowed(&hook, &ctx("c1", &format!("user{i}"))).await);
    }
    clock.advance(Duration::from_secs(2));
    assert_eq!(hook.key_count(), 1000);
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(hook.key_count(), 0);
}
