//! Tollgate's persistence: sea-orm entities and repository functions over SQLite (embedded
//! default) and PostgreSQL. It implements the ports of `hook-builtins`. The only crate that knows
//! SQL.
//!
//! Filled in by the store issue.
