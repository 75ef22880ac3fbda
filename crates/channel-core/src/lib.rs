//! The vendor-free approval-channel contract: the `ApprovalChannel` trait through which the
//! confirmation gate asks humans, and the card and decision types. No vendor code lives here.
//!
//! Filled in by the channel-feishu issue.
