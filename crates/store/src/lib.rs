//! Tollgate's persistence: sea-orm entities and repository functions over SQLite (embedded
//! default) and PostgreSQL. It implements the ports of `hook-builtins` (`AuditSink`, `OrgPolicy`,
//! `ConfirmationStore`, `ApproverDirectory`). The only crate that knows SQL.
//!
//! ```no_run
//! # async fn demo() -> Result<(), store::StoreError> {
//! let store = store::Store::connect("sqlite://tollgate.db?mode=rwc").await?;
//! store.migrate().await?;
//! let org = store.create_org("acme").await?;
//! # Ok(()) }
//! ```
//!
//! Invariants:
//! - Repositories take and return the plain structs of [`model`] (and the port records of
//!   `hook_builtins::ports`); sea-orm models stay private.
//! - No query on the pool inside a transaction: a transaction only ever uses its own connection, so
//!   a SQLite pool larger than one connection cannot deadlock.
//! - Secrets (`channels.config`, `connectors.auth`, `connectors.url`) are encrypted at rest with
//!   [`SecretBox`]; see its docs for the key (`TOLLGATE_SECRET_KEY`).
//! - Ids are UUID v4 strings; timestamps are UTC.

use std::path::PathBuf;
use std::str::FromStr as _;
use std::sync::Arc;
use std::time::Duration;

use migrations::{Migrator, MigratorTrait};
use sea_orm::sqlx::postgres::PgConnectOptions;
use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sea_orm::{ConnectOptions, Database, DatabaseConnection};

mod agents;
mod audit;
mod confirmations;
mod connectors;
mod entities;
mod error;
pub mod model;
mod orgs;
mod ports;
mod runs;
mod secret;

pub use confirmations::{DECISIONS_CHANNEL, DecisionListener};
pub use error::StoreError;
pub use model::*;
pub use secret::SecretBox;

/// The environment variable holding the key of [`SecretBox`].
pub const SECRET_KEY_ENV: &str = "TOLLGATE_SECRET_KEY";

/// How to open a [`Store`]. [`StoreConfig::from_env`] is what the server uses.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `sqlite://<path>?mode=rwc`, `sqlite::memory:` or `postgres://user:password@host:port/db`
    /// (PostgreSQL options such as `?options=-c%20search_path%3Dmy_schema` pass through).
    pub url: String,
    /// The secret key text (`TOLLGATE_SECRET_KEY`'s format). `None`: a key file beside a SQLite
    /// database, an ephemeral key for in-memory SQLite, no key for PostgreSQL.
    pub secret_key: Option<String>,
    /// Pool size (default 8). In-memory SQLite always uses one connection (each connection would
    /// otherwise see its own database).
    pub max_connections: u32,
    /// How long to wait for a connection, including the first one (default 10 s). An unreachable
    /// server fails after this.
    pub acquire_timeout: Duration,
    /// How long SQLite waits on a locked database before failing a statement (default 10 s).
    pub sqlite_busy_timeout: Duration,
}

impl StoreConfig {
    /// Defaults for `url`, without a secret key.
    pub fn new(url: &str) -> StoreConfig {
        StoreConfig {
            url: url.to_owned(),
            secret_key: None,
            max_connections: 8,
            acquire_timeout: Duration::from_secs(10),
            sqlite_busy_timeout: Duration::from_secs(10),
        }
    }

    /// Defaults for `url`, with the secret key from `TOLLGATE_SECRET_KEY` when it is set and not
    /// empty.
    pub fn from_env(url: &str) -> StoreConfig {
        let mut config = StoreConfig::new(url);
        config.secret_key = std::env::var(SECRET_KEY_ENV).ok().filter(|key| !key.trim().is_empty());
        config
    }
}

/// Which database a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A connection pool plus the secret box. Cheap to clone (both are shared).
#[derive(Debug, Clone)]
pub struct Store {
    db: DatabaseConnection,
    backend: Backend,
    secrets: Option<Arc<SecretBox>>,
    /// File-backed SQLite: how to open a dedicated connection for migrations.
    sqlite_migration: Option<(String, Duration)>,
}

impl Store {
    /// Opens `url` with [`StoreConfig::from_env`]. Does not migrate: call [`Store::migrate`].
    ///
    /// Errors: [`StoreError::Config`] for an unsupported or malformed URL or a bad secret key;
    /// [`StoreError::Database`] when the database cannot be reached. Both name the URL with its
    /// password masked ([`mask_url`]).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        Store::connect_with(StoreConfig::from_env(url)).await
    }

    /// Opens the database described by `config`. SQLite runs in WAL mode with a busy timeout and
    /// foreign keys on.
    ///
    /// Errors: as [`Store::connect`].
    pub async fn connect_with(config: StoreConfig) -> Result<Store, StoreError> {
        let masked = mask_url(&config.url);
        let backend = if config.url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if config.url.starts_with("postgres://") || config.url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            let shown = if masked.is_empty() { "\"\"".to_owned() } else { masked };
            return Err(StoreError::Config(format!(
                "unsupported database URL {shown}: expected sqlite://… or postgres://…"
            )));
        };

        // Parse first, so a malformed URL is a configuration error rather than a failed connection.
        let parsed = match backend {
            Backend::Sqlite => SqliteConnectOptions::from_str(&config.url).map(drop),
            Backend::Postgres => PgConnectOptions::from_str(&config.url).map(drop),
        };
        if let Err(err) = parsed {
            let message = scrub(&err.to_string(), &config.url);
            return Err(StoreError::Config(format!("malformed database URL {masked}: {message}")));
        }

        let sqlite_path = match backend {
            Backend::Sqlite => sqlite_file_path(&config.url),
            Backend::Postgres => None,
        };
        let mut options = ConnectOptions::new(config.url.clone());
        options
            .max_connections(config.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(config.acquire_timeout)
            .connect_timeout(config.acquire_timeout)
            .sqlx_logging(false);
        if backend == Backend::Sqlite {
            if sqlite_path.is_none() {
                // One connection that never closes: it *is* the in-memory database.
                options.max_connections(1).min_connections(1).idle_timeout(None).max_lifetime(None);
            }
            let busy = config.sqlite_busy_timeout;
            options.map_sqlx_sqlite_opts(move |opts| {
                opts.journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(busy)
                    .foreign_keys(true)
            });
        }

        let db = Database::connect(options).await.map_err(|err| {
            let message = scrub(&err.to_string(), &config.url);
            StoreError::Database(format!("cannot connect to {masked}: {message}"))
        })?;

        // The key comes after the connection: a bad path fails above with the URL in the message.
        let secrets = match (&config.secret_key, backend, &sqlite_path) {
            (Some(text), _, _) => SecretBox::from_key_text(text).map(Some),
            (None, Backend::Sqlite, Some(path)) => {
                let mut key_path = path.clone().into_os_string();
                key_path.push(".key");
                let key_path = PathBuf::from(key_path);
                tracing::warn!(
                    key_file = %key_path.display(),
                    "{SECRET_KEY_ENV} is not set: secrets are encrypted with a key file beside the database; back it up with the database"
                );
                SecretBox::from_key_file(&key_path).map(Some)
            }
            (None, Backend::Sqlite, None) => {
                tracing::warn!("{SECRET_KEY_ENV} is not set: secrets of this in-memory database use an ephemeral key");
                SecretBox::from_key_text(&SecretBox::generate_key_text()).map(Some)
            }
            (None, Backend::Postgres, _) => {
                tracing::warn!(
                    "{SECRET_KEY_ENV} is not set: channels and connectors with secrets cannot be stored or read"
                );
                Ok(None)
            }
        }
        .map_err(|err| match err {
            StoreError::Config(message) => StoreError::Config(format!("{message} (database {masked})")),
            other => other,
        })?;

        let sqlite_migration = sqlite_path.as_ref().map(|_| (config.url.clone(), config.sqlite_busy_timeout));
        Ok(Store { db, backend, secrets: secrets.map(Arc::new), sqlite_migration })
    }

    /// Applies every pending migration of the `migrations` crate (idempotent).
    ///
    /// Errors: [`StoreError::Database`].
    pub async fn migrate(&self) -> Result<(), StoreError> {
        // File-backed SQLite migrates on a connection of its own, closed afterwards: a pooled
        // connection that read the schema halfway through the migrations (WAL keeps its snapshot)
        // could otherwise go on seeing a table without its unique index.
        if let Some((url, busy)) = &self.sqlite_migration {
            let busy = *busy;
            let mut options = ConnectOptions::new(url.clone());
            options.max_connections(1).min_connections(0).sqlx_logging(false);
            options.map_sqlx_sqlite_opts(move |opts| {
                opts.journal_mode(SqliteJournalMode::Wal).busy_timeout(busy).foreign_keys(true)
            });
            let db = Database::connect(options).await.map_err(StoreError::from)?;
            let migrated = Migrator::up(&db, None).await.map_err(StoreError::from);
            db.close().await.map_err(StoreError::from)?;
            return migrated;
        }
        Migrator::up(&self.db, None).await.map_err(StoreError::from)
    }

    /// Which database this store talks to.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The underlying sea-orm connection, for tests and tooling in this workspace that need raw
    /// SQL (e.g. checking that no plaintext secret reaches a table). Repositories are the API.
    pub fn connection(&self) -> &DatabaseConnection {
        &self.db
    }

    /// Closes the pool; later calls fail with [`StoreError::Database`].
    pub async fn close(self) -> Result<(), StoreError> {
        self.db.close().await.map_err(StoreError::from)
    }

    pub(crate) fn secrets(&self) -> Result<&SecretBox, StoreError> {
        self.secrets
            .as_deref()
            .ok_or_else(|| StoreError::Config(format!("{SECRET_KEY_ENV} is not set: cannot store or read secrets")))
    }
}

/// `url` with the password (userinfo after `:`, and any `password=` query value) replaced by
/// `***`: `postgres://u:pw@h/db` → `postgres://u:***@h/db`. Never fails; text that is not a URL is
/// returned as is.
pub fn mask_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let rest = &out[rest_start..];
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_len];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            if let Some(colon) = userinfo.find(':') {
                let start = rest_start + colon + 1;
                let end = rest_start + at;
                out.replace_range(start..end, "***");
            }
        }
    }
    if let Some(query_start) = out.find('?') {
        let (head, query) = out.split_at(query_start + 1);
        let masked: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out = format!("{head}{}", masked.join("&"));
    }
    out
}

/// `message` on one line, with `url`'s password replaced by `***` wherever it appears.
fn scrub(message: &str, url: &str) -> String {
    let mut message = error::one_line(message);
    if let Some(password) = url_password(url).filter(|p| !p.is_empty()) {
        message = message.replace(&password, "***");
    }
    message
}

/// The password in `url`'s userinfo, if any.
fn url_password(url: &str) -> Option<String> {
    let rest = &url[url.find("://")? + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let userinfo = &authority[..authority.rfind('@')?];
    Some(userinfo.split_once(':')?.1.to_owned())
}

/// The file behind a SQLite URL, or `None` for an in-memory database.
fn sqlite_file_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let in_memory = path.is_empty()
        || path == ":memory:"
        || path.starts_with("file::memory:")
        || query.split('&').any(|pair| pair == "mode=memory");
    (!in_memory).then(|| PathBuf::from(path))
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The current time at microsecond precision: what PostgreSQL stores, so a value read back
/// equals the value written on every backend.
pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound as _;
    chrono::Utc::now().trunc_subsecs(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_passwords() {
        assert_eq!(mask_url("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(mask_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(mask_url("postgres://h/db?user=u&password=secret"), "postgres://h/db?user=u&password=***");
        assert_eq!(mask_url("sqlite://x.db?mode=rwc"), "sqlite://x.db?mode=rwc");
        assert_eq!(mask_url("not a url"), "not a url");
        assert_eq!(mask_url("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
    }

    #[test]
    fn sqlite_paths() {
        assert_eq!(sqlite_file_path("sqlite://tollgate.db?mode=rwc"), Some("tollgate.db".into()));
        assert_eq!(sqlite_file_path("sqlite:///tmp/x.db"), Some("/tmp/x.db".into()));
        assert_eq!(sqlite_file_path("sqlite::memory:"), None);
        assert_eq!(sqlite_file_path("sqlite://:memory:"), None);
    }
}
