//! `run_pre_tool_use` with four trivial hooks (one rewriting, three allowing) on a small args
//! object. Target: ≤ 500 ns median per call on a 2-core machine (see docs/performance.md).

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use hook_core::{HookContext, HookError, HookRegistry, HookResult, PreToolUseHook};
use serde_json::json;

struct Allow(&'static str);

#[async_trait::async_trait]
impl PreToolUseHook for Allow {
    fn name(&self) -> &str {
        self.0
    }
    async fn execute(&self, _ctx: &HookContext) -> Result<HookResult, HookError> {
        Ok(HookResult::allow())
    }
}

struct Rewrite;

#[async_trait::async_trait]
impl PreToolUseHook for Rewrite {
    fn name(&self) -> &str {
        "rewrite"
    }
    fn priority(&self) -> i32 {
        10
    }
    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        let mut args = ctx.tool_args.clone();
        args["limit"] = json!(100);
        Ok(HookResult::with_args(args))
    }
}

fn bench_pre_chain(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let mut registry = HookRegistry::new();
    registry.register_pre(Arc::new(Rewrite));
    for name in ["a", "b", "c"] {
        registry.register_pre(Arc::new(Allow(name)));
    }
    let ctx = HookContext::pre_tool_use("crm__search", json!({"query": "acme", "limit": 10}));
    c.bench_function("run_pre_tool_use/4_hooks_1_rewrite", |b| {
        b.to_async(&runtime).iter(|| registry.run_pre_tool_use(std::hint::black_box(&ctx)))
    });
}

criterion_group!(benches, bench_pre_chain);
criterion_main!(benches);
