//! The channel-feishu integration tests: every fixture in `tests/fixtures/feishu`, the outbound
//! client against wiremock, card snapshots and a no-panic property of the decoder.

mod callbacks;
mod cards;
mod client;
mod support;
