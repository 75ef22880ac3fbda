//! Every hook execution is a `hook` span with its name, point, verdict and duration.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hook_core::{HookContext, HookError, HookRegistry, HookResult, PreToolUseHook};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

type Spans = Arc<Mutex<BTreeMap<u64, BTreeMap<String, String>>>>;

/// Records the fields of every span, by span id.
struct Capture(Spans);

struct FieldVisitor<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        fields.insert("span".to_owned(), attrs.metadata().name().to_owned());
        attrs.record(&mut FieldVisitor(&mut fields));
        self.0.lock().unwrap().insert(id.into_u64(), fields);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(fields) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut FieldVisitor(fields));
        }
    }
}

struct Named(&'static str, bool);

#[async_trait::async_trait]
impl PreToolUseHook for Named {
    fn name(&self) -> &str {
        self.0
    }
    async fn execute(&self, _ctx: &HookContext) -> Result<HookResult, HookError> {
        Ok(if self.1 { HookResult::with_args(json!({"rewritten": true})) } else { HookResult::block("no") })
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_hook_execution_is_a_span_with_name_point_verdict_and_duration() {
    let spans: Spans = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Capture(spans.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut r = HookRegistry::new();
    r.register_pre(Arc::new(Named("rewriter", true)));
    r.register_pre(Arc::new(Named("blocker", false)));
    r.run_pre_tool_use(&HookContext::pre_tool_use("t", json!({}))).await;

    let spans = spans.lock().unwrap();
    let hooks: Vec<_> = spans.values().filter(|f| f["span"] == "hook").collect();
    assert_eq!(hooks.len(), 2, "{spans:?}");
    for (fields, (name, verdict)) in hooks.iter().zip([("rewriter", "rewrite"), ("blocker", "block")]) {
        assert_eq!(fields["hook.name"], name);
        assert_eq!(fields["hook.point"], "pre_tool_use");
        assert_eq!(fields["hook.verdict"], verdict);
        assert!(fields["hook.duration_us"].parse::<u64>().is_ok(), "{fields:?}");
    }
}
