//! [`StoreError`]: what every repository function returns on failure.

use sea_orm::{DbErr, SqlErr};

/// A failure of the store. Messages are one line and never contain a database password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The row the call needs does not exist (the message names it, e.g. `org 7f…`).
    #[error("not found: {0}")]
    NotFound(String),
    /// A unique constraint was violated, e.g. a duplicate connector name within an org, a second
    /// user with the same `feishu_open_id` in an org, or an event `seq` already taken.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The database failed or is unreachable, or a stored row could not be read back.
    #[error("database error: {0}")]
    Database(String),
    /// The configuration is unusable: malformed database URL, bad `TOLLGATE_SECRET_KEY`, missing
    /// key for PostgreSQL secrets, unreadable key file.
    #[error("configuration error: {0}")]
    Config(String),
    /// A stored secret failed authentication: wrong key, or tampered ciphertext.
    #[error("cannot decrypt a stored secret (wrong TOLLGATE_SECRET_KEY or tampered row)")]
    Crypto,
}

impl From<DbErr> for StoreError {
    fn from(err: DbErr) -> Self {
        match err.sql_err() {
            Some(SqlErr::UniqueConstraintViolation(message)) => StoreError::Conflict(one_line(&message)),
            _ => match err {
                DbErr::RecordNotFound(what) => StoreError::NotFound(one_line(&what)),
                other => StoreError::Database(one_line(&other.to_string())),
            },
        }
    }
}

impl From<StoreError> for hook_builtins::ports::PortError {
    fn from(err: StoreError) -> Self {
        hook_builtins::ports::PortError::new(err.to_string())
    }
}

/// Collapses whitespace runs (newlines included) to single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A stored row that does not decode (bad enum text, bad JSON): reported as a database error.
pub(crate) fn corrupt(what: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Database(one_line(&format!("corrupt {what}: {detail}")))
}
