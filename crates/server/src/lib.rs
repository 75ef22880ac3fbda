//! The Tollgate server: configuration, the HTTP API, and the wiring of every other crate into a
//! platform. The only crate that knows HTTP routes.
//!
//! [`start`] is what `server serve` runs: connect and migrate the database, seed the demo, start
//! the background tasks, serve [`app`] on a listener.

pub mod auth;
pub mod config;
pub mod demo;
pub mod demo_upstream;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod routes;
pub mod state;
pub mod wiring;

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use hook_builtins::ports::{ApprovalNotifier, ConfirmationStatus, DecisionUpdate};

pub use config::Config;
pub use routes::app;
pub use state::AppState;

/// Connects to the configured database and applies the migrations; the error names the URL with
/// its password masked.
pub async fn open_store(config: &Config) -> anyhow::Result<store::Store> {
    let masked = store::mask_url(&config.database_url);
    let mut store_config = store::StoreConfig::new(&config.database_url);
    store_config.secret_key = config.secret_key.clone();
    let store = store::Store::connect_with(store_config).await.with_context(|| format!("database {masked}"))?;
    store.migrate().await.with_context(|| format!("migrating {masked}"))?;
    Ok(store)
}

/// A running server.
#[derive(Debug)]
pub struct Started {
    pub state: AppState,
    /// The demo's banner, when the demo was seeded or found.
    pub banner: Option<String>,
}

/// Opens the store, seeds the demo (unless disabled), starts the sweeper, and returns the state
/// to serve.
pub async fn prepare(config: Config) -> anyhow::Result<Started> {
    let store = open_store(&config).await?;
    let http = agent_react::http_client().context("building the HTTP client")?;
    let state = AppState::new(config, store, http);
    let banner = if state.config().demo {
        demo::seed(&state).await.context("seeding the demo")?.map(|d| demo::banner(&state.config().public_url, &d))
    } else {
        None
    };
    tokio::spawn(sweep_expired(state.clone()));
    tokio::spawn(purge_callback_events(state.clone()));
    tokio::spawn(listen_decisions(state.clone()));
    tokio::spawn(wiring::lease_loop(state.clone()));
    Ok(Started { state, banner })
}

/// Serves `state` on `listener` until `shutdown` completes, then drains in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    axum::serve(listener, app(state)).with_graceful_shutdown(shutdown).await.context("serving HTTP")
}

/// Expires pending confirmation requests past their deadline whose waiter is gone (a crashed or
/// other process), notifies waiters and updates their cards. Every 5 s.
async fn sweep_expired(state: AppState) {
    let mut ticker = tokio::time::interval(Duration::from_secs(5));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        // A grace period lets the waiting gate expire its own request first.
        let cutoff = chrono::Utc::now() - chrono::Duration::seconds(5);
        let rows = match state.store().list_expired_pending_confirmations(cutoff).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!("expiry sweep failed: {e}");
                continue;
            }
        };
        for row in rows {
            let update = DecisionUpdate {
                status: ConfirmationStatus::Expired,
                responded_by_open_id: None,
                responded_by_user_id: None,
                reason: Some("expired: nobody decided before the deadline".to_owned()),
                at: chrono::Utc::now(),
            };
            if let Err(e) = wiring::close_request(&state, &row.id, &update).await {
                tracing::warn!(confirmation_id = %row.id, "cannot expire: {e}");
            }
        }
    }
}

/// Forgets Feishu delivery keys older than 24 h (de-duplication must hold ≥ 12 h). Hourly.
async fn purge_callback_events(state: AppState) {
    let mut ticker = tokio::time::interval(Duration::from_secs(3600));
    loop {
        ticker.tick().await;
        if let Err(e) = state.store().purge_callback_events(Duration::from_secs(24 * 3600)).await {
            tracing::warn!("callback de-duplication purge failed: {e}");
        }
    }
}

/// PostgreSQL: wakes this process's waiters when any replica decides a request (LISTEN/NOTIFY),
/// instead of at their next shared poll. Reconnects after a failure; returns at once on SQLite.
async fn listen_decisions(state: AppState) {
    loop {
        match state.store().decision_listener().await {
            Ok(None) => return,
            Ok(Some(mut listener)) => loop {
                match listener.next().await {
                    Ok(id) => state.confirmations().notify_decided(&id),
                    Err(e) => {
                        tracing::warn!("decision listener: {e}");
                        break;
                    }
                }
            },
            Err(e) => tracing::warn!("cannot listen for decisions: {e}"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
