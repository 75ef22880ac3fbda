//! The application state shared by every route: cheap to clone (one `Arc` inside).

use std::sync::Arc;

use agent_react::{AgentEvent, RunHub};
use channel_core::ApprovalChannel;
use dashmap::DashMap;
use hook_builtins::{ConfirmationHub, ConnectorRateLimitConfig, ConnectorRateLimitHook};
use store::Store;
use tokio::sync::broadcast;

use crate::config::Config;
use crate::metrics::{METRICS, Metrics};

/// Everything a request handler needs.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

struct Inner {
    config: Config,
    store: Store,
    confirmations: Arc<ConfirmationHub>,
    runs: Arc<RunHub>,
    streams: DashMap<String, broadcast::Sender<AgentEvent>>,
    tasks: DashMap<String, tokio::task::AbortHandle>,
    rate_limit: Arc<ConnectorRateLimitHook>,
    http: reqwest::Client,
    channels: DashMap<String, Arc<dyn ApprovalChannel>>,
    /// Agents' own `connector_rate_limit` configs, by config text: one limiter per config for the
    /// process, so quotas hold across runs.
    limiters: DashMap<String, Arc<ConnectorRateLimitHook>>,
    /// This process's id: the owner of the run leases it holds.
    instance_id: String,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("config", &self.0.config).finish_non_exhaustive()
    }
}

impl AppState {
    /// Builds the state. Must run inside a Tokio runtime (the confirmation hub and the rate limiter
    /// start background tasks).
    pub fn new(config: Config, store: Store, http: reqwest::Client) -> AppState {
        let confirmations = ConfirmationHub::new(Arc::new(store.clone()));
        AppState(Arc::new(Inner {
            config,
            store,
            confirmations,
            runs: Arc::new(RunHub::new()),
            streams: DashMap::new(),
            tasks: DashMap::new(),
            rate_limit: Arc::new(ConnectorRateLimitHook::new(ConnectorRateLimitConfig::default())),
            http,
            channels: DashMap::new(),
            limiters: DashMap::new(),
            instance_id: format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()),
        }))
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }

    pub fn store(&self) -> &Store {
        &self.0.store
    }

    /// The process's confirmation waiters (the gate's `ConfirmationHub`, also the
    /// `ApprovalNotifier` of every decision path).
    pub fn confirmations(&self) -> &Arc<ConfirmationHub> {
        &self.0.confirmations
    }

    /// The live runs of this process, through which the gate adds events to a run's stream.
    pub fn runs(&self) -> &Arc<RunHub> {
        &self.0.runs
    }

    /// The process-wide rate limiter: quotas are per (connector, user) across every agent of this
    /// process (not across replicas).
    pub fn rate_limit(&self) -> &Arc<ConnectorRateLimitHook> {
        &self.0.rate_limit
    }

    /// The process-wide limiter for an agent's own `connector_rate_limit` config.
    pub fn rate_limit_for(&self, config: ConnectorRateLimitConfig) -> Arc<ConnectorRateLimitHook> {
        let key = serde_json::to_string(&config).unwrap_or_default();
        self.0.limiters.entry(key).or_insert_with(|| Arc::new(ConnectorRateLimitHook::new(config))).clone()
    }

    /// This process's id (the owner of its run leases).
    pub fn instance_id(&self) -> &str {
        &self.0.instance_id
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.0.http
    }

    pub fn metrics(&self) -> &'static Metrics {
        &METRICS
    }

    /// The live event stream of a top-level run, if it runs in this process.
    pub fn subscribe_run(&self, run_id: &str) -> Option<broadcast::Receiver<AgentEvent>> {
        self.0.streams.get(run_id).map(|tx| tx.subscribe())
    }

    /// Opens the live stream of a new top-level run and subscribes to it.
    pub fn open_run_stream(&self, run_id: &str) -> (broadcast::Sender<AgentEvent>, broadcast::Receiver<AgentEvent>) {
        let (tx, rx) = broadcast::channel(1024);
        self.0.streams.insert(run_id.to_owned(), tx.clone());
        (tx, rx)
    }

    /// Remembers the task of a run started by this process (for cancellation).
    pub fn track_run(&self, run_id: &str, task: tokio::task::AbortHandle) {
        self.0.tasks.insert(run_id.to_owned(), task);
    }

    /// Whether this process runs `run_id`.
    pub fn is_tracked(&self, run_id: &str) -> bool {
        self.0.tasks.contains_key(run_id)
    }

    /// Stops the task of `run_id` if this process runs it, and closes its stream.
    pub fn abort_run(&self, run_id: &str) {
        if let Some((_, task)) = self.0.tasks.remove(run_id) {
            task.abort();
        }
        self.0.streams.remove(run_id);
    }

    /// Stops every run of this process (lease fencing); returns how many.
    pub fn abort_all_runs(&self) -> usize {
        let ids: Vec<String> = self.0.tasks.iter().map(|e| e.key().clone()).collect();
        for id in &ids {
            self.abort_run(id);
        }
        ids.len()
    }

    /// Forgets a run that ended: its task and its live stream.
    pub fn finish_run(&self, run_id: &str) {
        self.0.tasks.remove(run_id);
        self.0.streams.remove(run_id);
    }

    /// The approval channel `channel_id`, built once from its stored config and cached.
    pub async fn channel(&self, channel_id: &str) -> Result<Option<Arc<dyn ApprovalChannel>>, crate::error::ApiError> {
        if let Some(channel) = self.0.channels.get(channel_id) {
            return Ok(Some(channel.clone()));
        }
        let Some(row) = self.store().get_channel(channel_id).await? else { return Ok(None) };
        if !row.is_active {
            return Ok(None);
        }
        let channel = crate::wiring::build_channel(&row, self.http())?;
        self.0.channels.insert(channel_id.to_owned(), channel.clone());
        Ok(Some(channel))
    }
}
