//! Tollgate's built-in hooks: `audit_log`, `read_only_guard`, `result_truncate`,
//! `connector_rate_limit` and the `confirmation_gate`, with the small traits ("ports") through which
//! they reach the outside world (`AuditSink`, `OrgPolicy`, `ConfirmationStore`, `ApprovalNotifier`).
//!
//! Filled in by the hook-builtins issue.
