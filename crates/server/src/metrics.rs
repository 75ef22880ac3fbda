//! `/metrics` in the Prometheus text format: runs, tool calls by outcome, hook latency and pending
//! approvals.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The process's metrics: one set per process, shared by the tracing layer that times hooks.
pub static METRICS: Metrics = Metrics::new();

/// Counters of this process.
#[derive(Debug, Default)]
pub struct Metrics {
    runs_started: AtomicU64,
    runs_completed: AtomicU64,
    runs_failed: AtomicU64,
    tool_calls_executed: AtomicU64,
    tool_calls_blocked: AtomicU64,
    tool_calls_failed: AtomicU64,
    /// Per hook name: counts of durations (µs) in ≤100, ≤1000, ≤10000, ≤100000, ≤1000000, +Inf,
    /// and their sum.
    hooks: Mutex<BTreeMap<String, HookStats>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct HookStats {
    buckets: [u64; 6],
    sum_us: u64,
}

const HOOK_BUCKETS_US: [u64; 5] = [100, 1_000, 10_000, 100_000, 1_000_000];

impl Metrics {
    pub const fn new() -> Metrics {
        Metrics {
            runs_started: AtomicU64::new(0),
            runs_completed: AtomicU64::new(0),
            runs_failed: AtomicU64::new(0),
            tool_calls_executed: AtomicU64::new(0),
            tool_calls_blocked: AtomicU64::new(0),
            tool_calls_failed: AtomicU64::new(0),
            hooks: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn run_started(&self) {
        self.runs_started.fetch_add(1, Ordering::Relaxed);
    }

    pub fn run_finished(&self, completed: bool) {
        let counter = if completed { &self.runs_completed } else { &self.runs_failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one tool call by its outcome: `executed`, `blocked` or `failed`.
    pub fn tool_call(&self, outcome: &str) {
        let counter = match outcome {
            "blocked" => &self.tool_calls_blocked,
            "failed" => &self.tool_calls_failed,
            _ => &self.tool_calls_executed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one execution of hook `name` that took `duration_us` microseconds (for the
    /// confirmation gate this includes the human's decision time: read it per hook).
    pub fn hook_duration(&self, name: &str, duration_us: u64) {
        let bucket = HOOK_BUCKETS_US.iter().position(|&b| duration_us <= b).unwrap_or(HOOK_BUCKETS_US.len());
        let mut hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        let stats = hooks.entry(name.to_owned()).or_default();
        stats.buckets[bucket] += 1;
        stats.sum_us += duration_us;
    }

    /// The Prometheus exposition text, with `pending_approvals` read from the database.
    pub fn render(&self, pending_approvals: u64) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        let _ = writeln!(out, "# HELP tollgate_runs_total Agent runs by final status.");
        let _ = writeln!(out, "# TYPE tollgate_runs_total counter");
        let _ = writeln!(out, "tollgate_runs_total{{status=\"started\"}} {}", get(&self.runs_started));
        let _ = writeln!(out, "tollgate_runs_total{{status=\"completed\"}} {}", get(&self.runs_completed));
        let _ = writeln!(out, "tollgate_runs_total{{status=\"failed\"}} {}", get(&self.runs_failed));
        let _ = writeln!(out, "# HELP tollgate_tool_calls_total Tool calls by outcome.");
        let _ = writeln!(out, "# TYPE tollgate_tool_calls_total counter");
        for (outcome, counter) in [
            ("executed", &self.tool_calls_executed),
            ("blocked", &self.tool_calls_blocked),
            ("failed", &self.tool_calls_failed),
        ] {
            let _ = writeln!(out, "tollgate_tool_calls_total{{outcome=\"{outcome}\"}} {}", get(counter));
        }
        let _ = writeln!(out, "# HELP tollgate_hook_duration_seconds Hook execution time, per hook.");
        let _ = writeln!(out, "# TYPE tollgate_hook_duration_seconds histogram");
        let hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (hook, stats) in &hooks {
            let mut cumulative = 0;
            for (i, bound) in HOOK_BUCKETS_US.iter().enumerate() {
                cumulative += stats.buckets[i];
                let le = *bound as f64 / 1e6;
                let _ =
                    writeln!(out, "tollgate_hook_duration_seconds_bucket{{hook=\"{hook}\",le=\"{le}\"}} {cumulative}");
            }
            cumulative += stats.buckets[HOOK_BUCKETS_US.len()];
            let _ = writeln!(out, "tollgate_hook_duration_seconds_bucket{{hook=\"{hook}\",le=\"+Inf\"}} {cumulative}");
            let _ =
                writeln!(out, "tollgate_hook_duration_seconds_sum{{hook=\"{hook}\"}} {}", stats.sum_us as f64 / 1e6);
            let _ = writeln!(out, "tollgate_hook_duration_seconds_count{{hook=\"{hook}\"}} {cumulative}");
        }
        let _ = writeln!(out, "# HELP tollgate_pending_approvals Confirmation requests waiting for a decision.");
        let _ = writeln!(out, "# TYPE tollgate_pending_approvals gauge");
        let _ = writeln!(out, "tollgate_pending_approvals {pending_approvals}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Quick;

    #[async_trait::async_trait]
    impl hook_core::PreToolUseHook for Quick {
        fn name(&self) -> &str {
            "metrics_probe_hook"
        }
        async fn execute(&self, _ctx: &hook_core::HookContext) -> Result<hook_core::HookResult, hook_core::HookError> {
            Ok(hook_core::HookResult::allow())
        }
    }

    /// The layer times real `hook-core` spans, per hook name.
    #[test]
    fn the_layer_records_hook_spans_by_name() {
        use tracing_subscriber::layer::SubscriberExt as _;
        let subscriber = tracing_subscriber::registry().with(HookTimingLayer);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        tracing::subscriber::with_default(subscriber, || {
            let mut registry = hook_core::HookRegistry::new();
            registry.register_pre(std::sync::Arc::new(Quick));
            let ctx = hook_core::HookContext::pre_tool_use("t", serde_json::json!({}));
            runtime.block_on(registry.run_pre_tool_use(&ctx));
        });
        let text = METRICS.render(0);
        assert!(text.contains("tollgate_hook_duration_seconds_count{hook=\"metrics_probe_hook\"} 1"), "{text}");
    }

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let m = Metrics::default();
        m.run_started();
        m.tool_call("blocked");
        m.hook_duration("audit_log", 50);
        m.hook_duration("audit_log", 5_000);
        m.hook_duration("confirmation_gate", 90_000_000);
        let text = m.render(3);
        assert!(text.contains("tollgate_runs_total{status=\"started\"} 1"));
        assert!(text.contains("tollgate_tool_calls_total{outcome=\"blocked\"} 1"));
        assert!(text.contains("tollgate_hook_duration_seconds_bucket{hook=\"audit_log\",le=\"0.0001\"} 1"));
        assert!(text.contains("tollgate_hook_duration_seconds_bucket{hook=\"audit_log\",le=\"0.01\"} 2"));
        assert!(text.contains("tollgate_hook_duration_seconds_count{hook=\"audit_log\"} 2"));
        assert!(text.contains("tollgate_hook_duration_seconds_bucket{hook=\"confirmation_gate\",le=\"1\"} 0"));
        assert!(text.contains("tollgate_hook_duration_seconds_bucket{hook=\"confirmation_gate\",le=\"+Inf\"} 1"));
        assert!(text.contains("tollgate_pending_approvals 3"));
    }
}

/// A tracing layer that feeds [`METRICS`]' hook histogram from the `hook` spans of `hook-core`
/// (field `hook.duration_us`).
#[derive(Debug, Default)]
pub struct HookTimingLayer;

/// The `hook.name` of a `hook` span, kept in the span's extensions.
struct HookName(String);

impl<S> tracing_subscriber::Layer<S> for HookTimingLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() != "hook" {
            return;
        }
        struct Visitor(Option<String>);
        impl tracing::field::Visit for Visitor {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "hook.name" {
                    self.0 = Some(value.to_owned());
                }
            }
            fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
        }
        let mut visitor = Visitor(None);
        attrs.record(&mut visitor);
        if let (Some(name), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(HookName(name));
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Visitor(Option<u64>);
        impl tracing::field::Visit for Visitor {
            fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
                if field.name() == "hook.duration_us" {
                    self.0 = Some(value);
                }
            }
            fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
        }
        let mut visitor = Visitor(None);
        values.record(&mut visitor);
        let (Some(duration_us), Some(span)) = (visitor.0, ctx.span(id)) else { return };
        if let Some(HookName(name)) = span.extensions().get::<HookName>() {
            METRICS.hook_duration(name, duration_us);
        }
    }
}
