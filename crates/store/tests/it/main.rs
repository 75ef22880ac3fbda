//! Integration tests of the store. Every test runs on a temp-file SQLite database, and again on
//! PostgreSQL (a fresh schema per test) when `TOLLGATE_TEST_POSTGRES_URL` is set.

mod accounts;
mod confirmations;
mod connect;
mod runs;
mod secrets;
mod support;
