mod audit;
mod gate;
mod rate_limit;
mod read_only;
mod sql;
mod support;
mod truncate;

#[test]
fn builtin_names_are_the_designed_ones() {
    assert_eq!(
        hook_builtins::builtin_names(),
        ["audit_log", "read_only_guard", "result_truncate", "connector_rate_limit", "confirmation_gate", "feishu_gate"]
    );
}
