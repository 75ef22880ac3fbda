//! Tollgate's database schema, as sea-orm-migration migrations written with the schema DSL.
//!
//! Filled in by the store issue.
