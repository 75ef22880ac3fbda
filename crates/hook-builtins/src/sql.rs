//! SQL read/write classification for `read_only_guard` and the database connector tool.
//!
//! The rule (DESIGN §3, issue 5): only statements that cannot change state pass as reads. The
//! classifier is an allowlist, so anything it does not recognise is a write:
//!
//! - with an unknown dialect ([`classify_sql`]), the input is parsed with the PostgreSQL, SQLite
//!   and generic dialects of `sqlparser`; it is a read only if **every** dialect parses it and
//!   every dialect's AST is a read (a text that one dialect reads differently from another —
//!   nested comments, for example — is a write). [`classify_sql_for`] parses with the one dialect
//!   the statement will run in;
//! - unparseable or empty input is a write;
//! - a multi-statement input is a write if any statement is;
//! - read statements are `SELECT`/`VALUES`/`TABLE` queries, `SHOW …`, `DESCRIBE`, `EXPLAIN` of a
//!   read (an `EXPLAIN [ANALYZE]` of DML is a write) and a short list of query-only SQLite
//!   `PRAGMA`s without `=`;
//! - inside a read, any nested DML (data-modifying CTE), `SELECT … INTO`, a locking clause
//!   (`FOR UPDATE`/`FOR SHARE`, which take write locks) or a call to a function not known to be
//!   pure (`nextval`, `pg_sleep`, `set_config`, `dblink`, `lo_import`, user-defined functions, …)
//!   makes it a write;
//! - everything else — DML, DDL, `COPY`, `ATTACH`, `VACUUM`, `CALL`, `EXECUTE`, `SET`,
//!   transaction control, `LOCK`, `GRANT`, … — is a write.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, ObjectName, Query, Select, SetExpr, Statement, TableFactor, Visit, Visitor};
use sqlparser::dialect::{Dialect, GenericDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;

/// The verdict of [`classify_sql`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlClass {
    /// Every statement is a pure read.
    Read,
    /// At least one statement may change state; `reason` says which rule matched (for the block
    /// message and logs).
    Write { reason: String },
}

impl SqlClass {
    /// Whether this is [`SqlClass::Write`].
    pub fn is_write(&self) -> bool {
        matches!(self, SqlClass::Write { .. })
    }
}

/// The SQL dialect a statement will run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SqlDialect {
    /// Unknown: the text must parse, and be a read, in the PostgreSQL, SQLite **and** generic
    /// dialects. Dialect-specific syntax such as SQLite's `?` placeholders is then a write.
    #[default]
    Any,
    /// PostgreSQL (`postgres://` connectors).
    Postgresql,
    /// SQLite (`sqlite:` connectors).
    Sqlite,
}

impl SqlDialect {
    /// Parses `"postgresql"`/`"postgres"`, `"sqlite"`, `"any"`.
    pub fn parse(s: &str) -> Option<SqlDialect> {
        match s {
            "postgresql" | "postgres" => Some(SqlDialect::Postgresql),
            "sqlite" => Some(SqlDialect::Sqlite),
            "any" => Some(SqlDialect::Any),
            _ => None,
        }
    }
}

/// Classifies `sql` (one or more statements) as a pure read or a write, for an unknown dialect
/// ([`SqlDialect::Any`]). See the module docs for the rules; when in doubt the answer is
/// [`SqlClass::Write`].
pub fn classify_sql(sql: &str) -> SqlClass {
    classify_sql_for(sql, SqlDialect::Any)
}

/// Like [`classify_sql`], parsing only with the dialect the statement will run in (so a text that
/// other dialects would read differently is judged as that database reads it).
pub fn classify_sql_for(sql: &str, dialect: SqlDialect) -> SqlClass {
    if sql.trim().is_empty() {
        return write("empty SQL");
    }
    if is_simple_read_pragma(sql) {
        return SqlClass::Read;
    }
    let all: [(&str, &dyn Dialect); 3] =
        [("postgresql", &PostgreSqlDialect {}), ("sqlite", &SQLiteDialect {}), ("generic", &GenericDialect {})];
    let dialects = match dialect {
        SqlDialect::Any => &all[..],
        SqlDialect::Postgresql => &all[0..1],
        SqlDialect::Sqlite => &all[1..2],
    };
    for &(dialect_name, dialect) in dialects {
        let statements = match Parser::parse_sql(dialect, sql) {
            Ok(statements) => statements,
            Err(e) => return write(format!("unparseable SQL ({dialect_name}: {e})")),
        };
        if statements.is_empty() {
            return write("no SQL statement");
        }
        for statement in &statements {
            if let Some(reason) = statement_write_reason(statement) {
                return SqlClass::Write { reason };
            }
        }
    }
    SqlClass::Read
}

/// `PRAGMA [schema.]name(identifier)` alone, for a query-only `name` — SQLite's call form with a
/// bare identifier, which `sqlparser` does not parse. Only identifier characters are accepted, so
/// no comment or second statement can hide in it.
fn is_simple_read_pragma(sql: &str) -> bool {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let Some(rest) = text.get(..6).filter(|k| k.eq_ignore_ascii_case("pragma")).map(|_| &text[6..]) else {
        return false;
    };
    if !rest.starts_with(char::is_whitespace) {
        return false;
    }
    let Some((name, arg)) = rest.trim_start().split_once('(') else { return false };
    let Some(arg) = arg.strip_suffix(')') else { return false };
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let name = name.trim_end();
    let pragma = match name.split_once('.') {
        Some((schema, pragma)) if ident(schema) => pragma,
        Some(_) => return false,
        None => name,
    };
    ident(pragma) && ident(arg.trim()) && READ_PRAGMAS_WITH_ARG.contains(&pragma.to_ascii_lowercase().as_str())
}

fn write(reason: impl Into<String>) -> SqlClass {
    SqlClass::Write { reason: reason.into() }
}

/// `Some(reason)` when `statement` (a top-level or nested one) may change state.
fn statement_write_reason(statement: &Statement) -> Option<String> {
    let mut visitor = WriteFinder;
    match statement.visit(&mut visitor) {
        ControlFlow::Break(reason) => Some(reason),
        ControlFlow::Continue(()) => None,
    }
}

struct WriteFinder;

impl Visitor for WriteFinder {
    type Break = String;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<String> {
        match statement {
            Statement::Query(_) => ControlFlow::Continue(()),
            // EXPLAIN [ANALYZE] is a read only when the explained statement is; the visitor
            // descends into it next.
            Statement::Explain { .. } | Statement::ExplainTable { .. } => ControlFlow::Continue(()),
            Statement::ShowFunctions { .. }
            | Statement::ShowVariable { .. }
            | Statement::ShowStatus { .. }
            | Statement::ShowVariables { .. }
            | Statement::ShowCreate { .. }
            | Statement::ShowColumns { .. }
            | Statement::ShowCatalogs { .. }
            | Statement::ShowDatabases { .. }
            | Statement::ShowProcessList { .. }
            | Statement::ShowSchemas { .. }
            | Statement::ShowCharset(_)
            | Statement::ShowObjects(_)
            | Statement::ShowTables { .. }
            | Statement::ShowViews { .. }
            | Statement::ShowCollation { .. } => ControlFlow::Continue(()),
            Statement::Pragma { name, value, is_eq } => pragma_verdict(name, value.is_some(), *is_eq),
            other => ControlFlow::Break(format!("{} statement", statement_kind(other))),
        }
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<String> {
        if !query.locks.is_empty() {
            return ControlFlow::Break("locking clause (FOR UPDATE/SHARE)".into());
        }
        if set_expr_has_into(&query.body) {
            return ControlFlow::Break("SELECT … INTO".into());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<String> {
        if select.into.is_some() {
            return ControlFlow::Break("SELECT … INTO".into());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<String> {
        if let Expr::Function(function) = expr {
            return function_verdict(&function.name);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<String> {
        match factor {
            // `FROM f(…)`: a table-valued function call.
            TableFactor::Table { name, args: Some(_), .. } => function_verdict(name),
            TableFactor::Function { name, .. } => function_verdict(name),
            _ => ControlFlow::Continue(()),
        }
    }
}

fn set_expr_has_into(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => select.into.is_some(),
        SetExpr::SetOperation { left, right, .. } => set_expr_has_into(left) || set_expr_has_into(right),
        _ => false,
    }
}

/// The statement's leading keyword(s), for the block reason.
fn statement_kind(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    let first = words.first().copied().unwrap_or("unknown").to_ascii_uppercase();
    match first.as_str() {
        "CREATE" | "DROP" | "ALTER" | "VACUUM" | "START" => {
            format!("{first} {}", words.get(1).copied().unwrap_or("").to_ascii_uppercase()).trim().to_string()
        }
        _ => first,
    }
}

fn last_name_part(name: &ObjectName) -> Option<String> {
    name.0.last().and_then(|part| part.as_ident()).map(|ident| ident.value.to_ascii_lowercase())
}

fn function_verdict(name: &ObjectName) -> ControlFlow<String> {
    let Some(function) = last_name_part(name) else {
        return ControlFlow::Break(format!("call of function {name}"));
    };
    // A schema other than pg_catalog / main could shadow a pure name with a user function.
    if name.0.len() > 1 {
        let schema = name.0[name.0.len() - 2].as_ident().map(|i| i.value.to_ascii_lowercase());
        if !matches!(schema.as_deref(), Some("pg_catalog") | Some("main")) {
            return ControlFlow::Break(format!("call of function {name}"));
        }
    }
    if PURE_FUNCTIONS.binary_search(&function.as_str()).is_ok() {
        ControlFlow::Continue(())
    } else {
        ControlFlow::Break(format!("call of function {function} (not known to be side-effect free)"))
    }
}

fn pragma_verdict(name: &ObjectName, has_value: bool, is_eq: bool) -> ControlFlow<String> {
    let pragma = last_name_part(name).unwrap_or_default();
    if is_eq {
        return ControlFlow::Break(format!("PRAGMA {pragma} = …"));
    }
    let allowed = if has_value { READ_PRAGMAS_WITH_ARG } else { READ_PRAGMAS };
    if allowed.contains(&pragma.as_str()) {
        ControlFlow::Continue(())
    } else {
        ControlFlow::Break(format!("PRAGMA {pragma}"))
    }
}

/// SQLite pragmas that only report, in their argument-less form.
const READ_PRAGMAS: &[&str] = &[
    "application_id",
    "auto_vacuum",
    "cache_size",
    "collation_list",
    "compile_options",
    "data_version",
    "database_list",
    "encoding",
    "foreign_key_check",
    "foreign_keys",
    "freelist_count",
    "function_list",
    "integrity_check",
    "journal_mode",
    "module_list",
    "page_count",
    "page_size",
    "pragma_list",
    "quick_check",
    "schema_version",
    "synchronous",
    "table_list",
    "user_version",
];

/// SQLite pragmas whose call form `PRAGMA name(arg)` only reports.
const READ_PRAGMAS_WITH_ARG: &[&str] = &[
    "foreign_key_check",
    "foreign_key_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// Functions known to be free of side effects in PostgreSQL and SQLite, sorted for binary search.
/// Every other function (including user-defined ones) makes a query a write.
const PURE_FUNCTIONS: &[&str] = &[
    "abs",
    "acos",
    "age",
    "any_value",
    "array_agg",
    "array_length",
    "array_position",
    "array_to_string",
    "ascii",
    "asin",
    "atan",
    "atan2",
    "avg",
    "bit_and",
    "bit_or",
    "bool_and",
    "bool_or",
    "btrim",
    "cardinality",
    "cast",
    "cbrt",
    "ceil",
    "ceiling",
    "char",
    "char_length",
    "character_length",
    "chr",
    "coalesce",
    "concat",
    "concat_ws",
    "corr",
    "cos",
    "count",
    "covar_pop",
    "covar_samp",
    "cume_dist",
    "current_date",
    "current_time",
    "current_timestamp",
    "date",
    "date_part",
    "date_trunc",
    "datetime",
    "degrees",
    "dense_rank",
    "every",
    "exp",
    "extract",
    "first_value",
    "floor",
    "format",
    "generate_series",
    "glob",
    "greatest",
    "group_concat",
    "hex",
    "ifnull",
    "iif",
    "initcap",
    "instr",
    "json",
    "json_agg",
    "json_array",
    "json_array_length",
    "json_build_array",
    "json_build_object",
    "json_each",
    "json_extract",
    "json_group_array",
    "json_group_object",
    "json_object",
    "json_object_agg",
    "json_type",
    "json_valid",
    "jsonb_agg",
    "jsonb_array_length",
    "jsonb_build_array",
    "jsonb_build_object",
    "jsonb_each",
    "jsonb_extract_path",
    "jsonb_extract_path_text",
    "jsonb_object_agg",
    "jsonb_typeof",
    "julianday",
    "justify_days",
    "justify_hours",
    "lag",
    "last_value",
    "lead",
    "least",
    "left",
    "length",
    "like",
    "ln",
    "localtime",
    "localtimestamp",
    "log",
    "log10",
    "lower",
    "lpad",
    "ltrim",
    "make_date",
    "make_interval",
    "make_timestamp",
    "max",
    "md5",
    "min",
    "mod",
    "now",
    "nth_value",
    "ntile",
    "nullif",
    "octet_length",
    "percent_rank",
    "percentile_cont",
    "percentile_disc",
    "pi",
    "position",
    "pow",
    "power",
    "printf",
    "quote",
    "radians",
    "random",
    "rank",
    "regexp_match",
    "regexp_matches",
    "regexp_replace",
    "repeat",
    "replace",
    "reverse",
    "right",
    "round",
    "row_number",
    "rpad",
    "rtrim",
    "sign",
    "sin",
    "split_part",
    "sqrt",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "strftime",
    "string_agg",
    "strpos",
    "substr",
    "substring",
    "sum",
    "tan",
    "time",
    "timezone",
    "to_char",
    "to_date",
    "to_json",
    "to_jsonb",
    "to_number",
    "to_timestamp",
    "total",
    "translate",
    "trim",
    "trunc",
    "typeof",
    "unistr",
    "unixepoch",
    "unnest",
    "upper",
    "var_pop",
    "var_samp",
    "variance",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlists_are_sorted_for_binary_search() {
        let mut sorted = PURE_FUNCTIONS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, PURE_FUNCTIONS);
    }

    #[test]
    fn simple_read_pragmas_are_recognised_strictly() {
        assert!(is_simple_read_pragma("PRAGMA table_info(orders)"));
        assert!(is_simple_read_pragma("  pragma main.index_list( orders ) ; "));
        assert!(!is_simple_read_pragma("PRAGMA journal_mode(WAL)"));
        assert!(!is_simple_read_pragma("PRAGMA table_info(orders); DELETE FROM orders"));
        assert!(!is_simple_read_pragma("PRAGMA table_info(orders) /* x */"));
        assert!(!is_simple_read_pragma("PRAGMAtable_info(orders)"));
        assert!(!is_simple_read_pragma("PRAGMA table_info(or ders)"));
    }
}
