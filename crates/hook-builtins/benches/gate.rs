//! Confirmation gate benchmarks.
//!
//! - `gate/decision_to_allow`: a committed decision (`decide` on the same process) until the
//!   waiting gate answers `allow` (target p99 ≤ 20 ms).
//! - `gate/10k_waiters`: 10,000 concurrent waiters on one hub; prints the store queries issued
//!   per poll interval (target ≤ 1) and the process's resident memory.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use channel_core::Decision;
use criterion::{Criterion, criterion_group, criterion_main};
use hook_builtins::{Actor, DecisionRequest, GateConfig, decide};
use hook_core::PreToolUseHook;
use serde_json::json;

#[allow(dead_code)]
#[path = "../tests/it/support.rs"]
mod support;

use support::{Rig, gated_ctx};

fn approve(id: &str) -> DecisionRequest {
    DecisionRequest {
        confirmation_id: id.into(),
        decision: Decision::Approve,
        actor: Actor::User { user_id: "alice".into() },
        reason: None,
    }
}

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn decision_to_allow(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut rig = runtime.block_on(async { Rig::new(GateConfig::default()) });
    let mut n = 0u64;
    c.bench_function("gate/decision_to_allow", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let gate = rig.gate.clone();
                    let ctx = gated_ctx(&format!("call{n}"), json!({"n": n}));
                    let call = tokio::spawn(async move { gate.execute(&ctx).await.unwrap() });
                    let id = rig.awaiting().await;
                    let start = Instant::now();
                    decide(rig.deps(), &approve(&id)).await.unwrap();
                    let verdict = call.await.unwrap();
                    total += start.elapsed();
                    assert!(verdict.allow);
                }
                total
            })
        })
    });
}

fn ten_thousand_waiters(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut group = c.benchmark_group("gate");
    group.sample_size(10);
    group.bench_function("10k_waiters", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let poll = Duration::from_millis(100);
                    let mut rig = Rig::new(GateConfig { poll_interval: poll, ..GateConfig::default() });
                    let rss_before = rss_kib();
                    let start = Instant::now();
                    let calls: Vec<_> = (0..10_000)
                        .map(|i| {
                            let gate = rig.gate.clone();
                            let ctx = gated_ctx(&format!("call{i}"), json!({"i": i}));
                            tokio::spawn(async move { gate.execute(&ctx).await.unwrap() })
                        })
                        .collect();
                    let mut ids = Vec::with_capacity(10_000);
                    for _ in 0..10_000 {
                        ids.push(rig.awaiting().await);
                    }
                    let rss_waiting = rss_kib();
                    let queries_before = rig.store.statuses_calls.load(Ordering::SeqCst);
                    let window = Instant::now();
                    tokio::time::sleep(poll * 10).await;
                    let queries = rig.store.statuses_calls.load(Ordering::SeqCst) - queries_before;
                    let intervals = window.elapsed().as_secs_f64() / poll.as_secs_f64();
                    for id in &ids {
                        decide(rig.deps(), &approve(id)).await.unwrap();
                    }
                    for call in calls {
                        assert!(call.await.unwrap().allow);
                    }
                    total += start.elapsed();
                    eprintln!(
                        "10k waiters: {queries} status queries in {intervals:.1} poll intervals ({:.2} per interval); \
                         RSS before {:?} KiB, while waiting {:?} KiB",
                        queries as f64 / intervals,
                        rss_before,
                        rss_waiting
                    );
                }
                total
            })
        })
    });
    group.finish();
}

criterion_group!(benches, decision_to_allow, ten_thousand_waiters);
criterion_main!(benches);
