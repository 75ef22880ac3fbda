//! `server`: the Tollgate platform.
//!
//! `server serve` (the default) applies migrations, seeds the demo unless `TOLLGATE_DEMO=0`, and
//! serves the API on `TOLLGATE_BIND`. `server migrate` applies migrations and exits. Configuration
//! comes from the `TOLLGATE_*` environment variables (see `Config`).

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

#[derive(Parser)]
#[command(name = "server", version, about = "Tollgate: runtime enforcement for LLM agents")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Clone, Copy)]
enum Command {
    /// Migrate, seed the demo (unless TOLLGATE_DEMO=0) and serve the API (the default).
    Serve,
    /// Apply the database migrations to TOLLGATE_DATABASE_URL and exit.
    Migrate,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command.unwrap_or(Command::Serve))) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line: the chain of causes, no backtrace, no panic.
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    let config = server::Config::from_env()?;
    init_tracing(config.log_json);
    match command {
        Command::Migrate => {
            server::open_store(&config).await?;
            eprintln!("migrations applied to {}", store::mask_url(&config.database_url));
            Ok(())
        }
        Command::Serve => {
            let bind = config.bind;
            let listener =
                tokio::net::TcpListener::bind(bind).await.with_context(|| format!("cannot listen on {bind}"))?;
            let started = server::prepare(config).await?;
            if let Some(banner) = &started.banner {
                eprintln!("{banner}");
            }
            tracing::info!("listening on http://{bind}");
            // Graceful shutdown drains requests, but an SSE stream of a run waiting for a human can
            // last minutes: give in-flight requests a grace period, then stop. Waiting runs are
            // durable and resume at the next start.
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let serving = tokio::spawn(server::serve(listener, started.state, async {
                let _ = stop_rx.await;
            }));
            shutdown_signal().await;
            let _ = stop_tx.send(());
            tokio::select! {
                served = serving => served.context("the server task failed")?,
                () = tokio::time::sleep(SHUTDOWN_GRACE) => {
                    tracing::warn!("in-flight requests still open after {SHUTDOWN_GRACE:?}; stopping (waiting runs resume at the next start)");
                    Ok(())
                }
                () = shutdown_signal() => {
                    tracing::warn!("second signal: stopping now");
                    Ok(())
                }
            }
        }
    }
}

/// How long in-flight requests may take to finish after a stop signal.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

fn init_tracing(json: bool) {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = if json {
        tracing_subscriber::fmt::layer().json().with_filter(filter()).boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter())
            .boxed()
    };
    let _ = tracing_subscriber::registry().with(fmt).with(server::metrics::HookTimingLayer).try_init();
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down (a second Ctrl-C stops at once)");
}
