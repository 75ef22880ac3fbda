//! `server`: serves the Tollgate API. The full platform (database, demo seed, agents, approvals)
//! arrives with the store and server issues; for now it serves `/healthz`.

use anyhow::Context as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let bind = std::env::var("TOLLGATE_BIND").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&bind).await.with_context(|| format!("cannot bind {bind}"))?;
    tracing::info!("listening on http://{bind}");
    server::serve(listener).await;
    Ok(())
}
