use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use hook_core::{HookContext, HookError, HookResult, PreToolUseHook, meta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A connector's quota: `per_minute` calls per minute per user, with bursts of up to `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateQuota {
    pub per_minute: NonZeroU32,
    pub burst: NonZeroU32,
}

impl RateQuota {
    /// The platform default: 60 per minute, burst 10.
    pub const DEFAULT: RateQuota =
        RateQuota { per_minute: NonZeroU32::new(60).unwrap(), burst: NonZeroU32::new(10).unwrap() };
}

impl Default for RateQuota {
    fn default() -> Self {
        RateQuota::DEFAULT
    }
}

/// Configuration of `connector_rate_limit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectorRateLimitConfig {
    /// Quotas by connector id; they win over the connector's own quota in metadata.
    pub connectors: HashMap<String, RateQuota>,
    /// The quota of connectors with neither an entry here nor metadata (default 60/min, burst 10).
    pub default: RateQuota,
    /// How often idle keys are evicted, in seconds (default 60).
    pub evict_every_s: u64,
}

impl Default for ConnectorRateLimitConfig {
    fn default() -> Self {
        ConnectorRateLimitConfig { connectors: HashMap::new(), default: RateQuota::DEFAULT, evict_every_s: 60 }
    }
}

type Key = (String, String);
type Limiter<C> = RateLimiter<Key, DashMapStateStore<Key>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// `connector_rate_limit` (Pre, priority 8): a per-(connector, user) quota.
///
/// Triggers on connector calls (metadata `connector_id`). The quota of a connector is, in order:
/// the config's `connectors[connector_id]`, the metadata `rate_limit_per_minute` /
/// `rate_limit_burst` (the connector's declared `rate_limit`), the config's `default`. Each
/// distinct quota has one `governor` keyed limiter, keyed by (`connector_id`, `user_id`; `""` for
/// an anonymous run). A call over quota is blocked with
/// `rate limit exceeded for connector '<name>' (<per_minute>/min, burst <burst>): retry after <N> s; the tool did not run`,
/// N rounded up to whole seconds.
///
/// Keyed limiters keep every key forever, so idle keys are evicted (`retain_recent` +
/// `shrink_to_fit`) every `evict_every_s` seconds by a task spawned in the constructor when a
/// Tokio runtime is running (it stops when the hook is dropped), and on demand by
/// [`evict_idle`](Self::evict_idle).
///
/// The clock parameter exists for tests (`governor::clock::FakeRelativeClock`); use
/// [`ConnectorRateLimitHook::new`] otherwise.
pub struct ConnectorRateLimitHook<C: Clock = DefaultClock> {
    inner: Arc<Inner<C>>,
}

struct Inner<C: Clock> {
    config: ConnectorRateLimitConfig,
    clock: C,
    limiters: Mutex<HashMap<RateQuota, Arc<Limiter<C>>>>,
}

impl ConnectorRateLimitHook<DefaultClock> {
    pub fn new(config: ConnectorRateLimitConfig) -> Self {
        Self::with_clock(config, DefaultClock::default())
    }
}

impl<C> ConnectorRateLimitHook<C>
where
    C: Clock + Clone + Send + Sync + 'static,
{
    /// Like [`new`](ConnectorRateLimitHook::new), with the given clock.
    pub fn with_clock(config: ConnectorRateLimitConfig, clock: C) -> Self {
        let every = Duration::from_secs(config.evict_every_s.max(1));
        let inner = Arc::new(Inner { config, clock, limiters: Mutex::new(HashMap::new()) });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let weak: Weak<Inner<C>> = Arc::downgrade(&inner);
            runtime.spawn(async move {
                let mut ticker = tokio::time::interval(every);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticker.tick().await;
                loop {
                    ticker.tick().await;
                    let Some(inner) = weak.upgrade() else { break };
                    inner.evict_idle();
                }
            });
        }
        ConnectorRateLimitHook { inner }
    }

    /// Drops every key whose state is indistinguishable from a fresh one, then shrinks the maps.
    pub fn evict_idle(&self) {
        self.inner.evict_idle();
    }

    /// The number of keys currently held, over all quotas.
    pub fn key_count(&self) -> usize {
        self.inner.limiters().iter().map(|l| l.len()).sum()
    }

    fn quota_for(&self, ctx: &HookContext, connector_id: &str) -> RateQuota {
        if let Some(quota) = self.inner.config.connectors.get(connector_id) {
            return *quota;
        }
        let nonzero = |key: &str| {
            ctx.metadata.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).and_then(NonZeroU32::new)
        };
        match nonzero(meta::RATE_LIMIT_PER_MINUTE) {
            Some(per_minute) => RateQuota {
                per_minute,
                burst: nonzero(meta::RATE_LIMIT_BURST).unwrap_or(self.inner.config.default.burst),
            },
            None => self.inner.config.default,
        }
    }
}

impl<C: Clock + Clone> Inner<C> {
    fn limiters(&self) -> Vec<Arc<Limiter<C>>> {
        self.limiters.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
    }

    fn limiter(&self, quota: RateQuota) -> Arc<Limiter<C>> {
        let mut limiters = self.limiters.lock().unwrap_or_else(|e| e.into_inner());
        limiters
            .entry(quota)
            .or_insert_with(|| {
                let q = Quota::per_minute(quota.per_minute).allow_burst(quota.burst);
                Arc::new(RateLimiter::new(q, DashMapStateStore::default(), self.clock.clone()))
            })
            .clone()
    }

    fn evict_idle(&self) {
        for limiter in self.limiters() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

impl<C: Clock> std::fmt::Debug for ConnectorRateLimitHook<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectorRateLimitHook").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl<C> PreToolUseHook for ConnectorRateLimitHook<C>
where
    C: Clock + Clone + Send + Sync + 'static,
    C::Instant: Send + Sync,
{
    fn name(&self) -> &str {
        crate::CONNECTOR_RATE_LIMIT
    }

    fn priority(&self) -> i32 {
        8
    }

    fn should_trigger(&self, ctx: &HookContext) -> bool {
        ctx.metadata.contains_key(meta::CONNECTOR_ID)
    }

    async fn execute(&self, ctx: &HookContext) -> Result<HookResult, HookError> {
        let Some(connector_id) = ctx.meta_str(meta::CONNECTOR_ID) else {
            return Ok(HookResult::allow());
        };
        let quota = self.quota_for(ctx, connector_id);
        let limiter = self.inner.limiter(quota);
        let key = (connector_id.to_owned(), ctx.user_id.clone().unwrap_or_default());
        match limiter.check_key(&key) {
            Ok(()) => Ok(HookResult::allow()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.inner.clock.now());
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                let name = ctx.meta_str(meta::CONNECTOR_NAME).unwrap_or(connector_id);
                let mut result = HookResult::block(format!(
                    "rate limit exceeded for connector '{name}' ({}/min, burst {}): retry after {} s; the tool did not run",
                    quota.per_minute,
                    quota.burst,
                    secs.max(1)
                ));
                result.side_effects.push(format!("connector_rate_limit: blocked {} for {}", ctx.tool_name, key.1));
                Ok(result)
            }
        }
    }
}
