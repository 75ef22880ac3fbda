//! End-to-end tests: the real server on a real loopback socket with a temp database (SQLite
//! always; PostgreSQL too when `TOLLGATE_TEST_POSTGRES_URL` is set), a fake Feishu open platform
//! and a fake connector upstream (wiremock).

mod approvals;
mod bad_input;
mod isolation;
mod openai;
mod support;
