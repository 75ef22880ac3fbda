//! Tollgate's built-in hooks: `audit_log`, `read_only_guard`, `result_truncate`,
//! `connector_rate_limit` and the `confirmation_gate`, with the small traits ("ports") through which
//! they reach the outside world ([`ports`]). A downstream crate can reuse any hook without our
//! database by implementing the ports; the `store` crate implements them on SQLite/PostgreSQL.
//!
//! | hook | point | priority | constructor |
//! |---|---|---|---|
//! | `read_only_guard` | Pre | 5 | [`ReadOnlyGuard::new`] |
//! | `connector_rate_limit` | Pre | 8 | [`ConnectorRateLimitHook::new`] |
//! | `confirmation_gate` (alias `feishu_gate`) | Pre | `i32::MAX` | [`ConfirmationGateHook::new`] |
//! | `result_truncate` | Post | 100 | [`ResultTruncateHook::new`] |
//! | `audit_log` | Post | 1000 | [`AuditLogHook::new`] |
//!
//! Every hook has a serde config struct (`deny_unknown_fields`) so agents can configure it by
//! name as `{name, config}`; the name → hook factory lives in the server.

mod audit;
pub mod gate;
mod hashing;
pub mod ports;
mod rate_limit;
mod read_only;
pub mod sql;
mod truncate;

pub use audit::{AuditLogConfig, AuditLogHook, FailurePolicyConfig};
pub use gate::{
    Actor, ConfirmationEvents, ConfirmationGateHook, ConfirmationHub, DecideDeps, DecideError, DecisionOutcome,
    DecisionRequest, ForbiddenReason, GateConfig, GateDeps, card_for_record, decide,
};
pub use hashing::{args_sha256, canonical_json};
pub use rate_limit::{ConnectorRateLimitConfig, ConnectorRateLimitHook, RateQuota};
pub use read_only::{ReadOnlyGuard, ReadOnlyGuardConfig};
pub use sql::{SqlClass, SqlDialect, classify_sql, classify_sql_for};
pub use truncate::{ResultTruncateConfig, ResultTruncateHook, truncate_text};

/// `audit_log`.
pub const AUDIT_LOG: &str = "audit_log";
/// `read_only_guard`.
pub const READ_ONLY_GUARD: &str = "read_only_guard";
/// `result_truncate`.
pub const RESULT_TRUNCATE: &str = "result_truncate";
/// `connector_rate_limit`.
pub const CONNECTOR_RATE_LIMIT: &str = "connector_rate_limit";
/// `confirmation_gate`.
pub const CONFIRMATION_GATE: &str = "confirmation_gate";
/// `feishu_gate`: an alias of [`CONFIRMATION_GATE`] accepted in agent configuration.
pub const FEISHU_GATE_ALIAS: &str = "feishu_gate";

/// The names under which agents may configure the built-ins (`{name, config}`), aliases included.
pub fn builtin_names() -> &'static [&'static str] {
    &[AUDIT_LOG, READ_ONLY_GUARD, RESULT_TRUNCATE, CONNECTOR_RATE_LIMIT, CONFIRMATION_GATE, FEISHU_GATE_ALIAS]
}
