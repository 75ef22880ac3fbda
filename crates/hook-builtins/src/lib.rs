//! Tollgate's built-in hooks: `audit_log`, `read_only_guard`, `result_truncate`,
//! `connector_rate_limit` and the `confirmation_gate`, with the small traits ("ports") through which
//! they reach the outside world ([`ports`]). A downstream crate can reuse any hook without our
//! database by implementing the ports; the `store` crate implements them on SQLite/PostgreSQL.

pub mod ports;
