//! `/metrics` in the Prometheus text format: runs, tool calls by outcome, hook latency and pending
//! approvals.

use std::fmt::Write as _;
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
    /// Cumulative buckets of hook durations (µs): ≤100, ≤1000, ≤10000, ≤100000, ≤1000000, +Inf.
    hook_buckets: [AtomicU64; 6],
    hook_sum_us: AtomicU64,
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
            hook_buckets: [const { AtomicU64::new(0) }; 6],
            hook_sum_us: AtomicU64::new(0),
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

    /// Records one hook execution of `duration_us` microseconds.
    pub fn hook_duration(&self, duration_us: u64) {
        let bucket = HOOK_BUCKETS_US.iter().position(|&b| duration_us <= b).unwrap_or(HOOK_BUCKETS_US.len());
        self.hook_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.hook_sum_us.fetch_add(duration_us, Ordering::Relaxed);
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
        let _ = writeln!(out, "# HELP tollgate_hook_duration_seconds Hook execution time.");
        let _ = writeln!(out, "# TYPE tollgate_hook_duration_seconds histogram");
        let mut cumulative = 0;
        for (i, bound) in HOOK_BUCKETS_US.iter().enumerate() {
            cumulative += get(&self.hook_buckets[i]);
            let le = *bound as f64 / 1e6;
            let _ = writeln!(out, "tollgate_hook_duration_seconds_bucket{{le=\"{le}\"}} {cumulative}");
        }
        cumulative += get(&self.hook_buckets[HOOK_BUCKETS_US.len()]);
        let _ = writeln!(out, "tollgate_hook_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "tollgate_hook_duration_seconds_sum {}", get(&self.hook_sum_us) as f64 / 1e6);
        let _ = writeln!(out, "tollgate_hook_duration_seconds_count {cumulative}");
        let _ = writeln!(out, "# HELP tollgate_pending_approvals Confirmation requests waiting for a decision.");
        let _ = writeln!(out, "# TYPE tollgate_pending_approvals gauge");
        let _ = writeln!(out, "tollgate_pending_approvals {pending_approvals}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let m = Metrics::default();
        m.run_started();
        m.tool_call("blocked");
        m.hook_duration(50);
        m.hook_duration(5_000);
        let text = m.render(3);
        assert!(text.contains("tollgate_runs_total{status=\"started\"} 1"));
        assert!(text.contains("tollgate_tool_calls_total{outcome=\"blocked\"} 1"));
        assert!(text.contains("tollgate_hook_duration_seconds_bucket{le=\"0.0001\"} 1"));
        assert!(text.contains("tollgate_hook_duration_seconds_bucket{le=\"0.01\"} 2"));
        assert!(text.contains("tollgate_hook_duration_seconds_count 2"));
        assert!(text.contains("tollgate_pending_approvals 3"));
    }
}

/// A tracing layer that feeds [`METRICS`]' hook histogram from the `hook` spans of `hook-core`
/// (field `hook.duration_us`).
#[derive(Debug, Default)]
pub struct HookTimingLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for HookTimingLayer {
    fn on_record(
        &self,
        _id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Visitor;
        impl tracing::field::Visit for Visitor {
            fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
                if field.name() == "hook.duration_us" {
                    METRICS.hook_duration(value);
                }
            }
            fn record_debug(&mut self, _field: &tracing::field::Field, _value: &dyn std::fmt::Debug) {}
        }
        values.record(&mut Visitor);
    }
}
