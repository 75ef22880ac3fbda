use std::sync::{Arc, LazyLock};

use sea_orm::{ConnectionTrait, Database, DatabaseConnection, FromQueryResult, JsonValue, Statement};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::OnceCell;

use crate::ToolBuildError;
use crate::tool::{ConnectorIdentity, SideEffect, Tool, ToolCallContext, ToolError, ToolOutput, is_valid_tool_name};

/// A database connector (DESIGN §4, `type: "database"`): a SQLite or PostgreSQL URL.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseConnector {
    pub id: String,
    /// The tool-name prefix: `<name>__sql_query`.
    pub name: String,
    /// `sqlite://path.db?mode=rwc`, `sqlite::memory:` or `postgres://user@host/db`.
    pub url: String,
}

impl std::fmt::Debug for DatabaseConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password.
        f.debug_struct("DatabaseConnector").field("id", &self.id).field("name", &self.name).finish_non_exhaustive()
    }
}

/// `<connector>__sql_query` with arguments `{sql, params?}`: runs one statement on the connector's
/// database and returns the rows as a JSON array of objects (column name → value), or
/// `{"rows_affected": n}` for a statement that returns no rows.
///
/// `params` are bound positionally, in the database's own placeholder syntax (`?` or `$1` on
/// SQLite, `$1` on PostgreSQL). Whether a call writes is decided per statement by the read-only
/// guard's classifier (DESIGN §3): this tool's `side_effect` metadata is `read` and the guard
/// reads the SQL from the arguments. The connection (pool) is opened at the first call and kept.
pub struct SqlQueryTool {
    name: String,
    connector: DatabaseConnector,
    identity: ConnectorIdentity,
    connection: OnceCell<DatabaseConnection>,
}

impl std::fmt::Debug for SqlQueryTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlQueryTool")
            .field("name", &self.name)
            .field("connector", &self.connector)
            .finish_non_exhaustive()
    }
}

static PARAMETERS: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "sql": {"type": "string", "minLength": 1, "description": "One SQL statement."},
            "params": {"type": "array", "description": "Positional parameters for the statement's placeholders."}
        },
        "required": ["sql"],
        "additionalProperties": false
    })
});

impl SqlQueryTool {
    /// # Errors
    /// [`ToolBuildError`] when the name is invalid or the URL is neither SQLite nor PostgreSQL.
    pub fn new(connector: DatabaseConnector) -> Result<Arc<Self>, ToolBuildError> {
        let name = format!("{}__sql_query", connector.name);
        if !is_valid_tool_name(&name) {
            return Err(ToolBuildError::InvalidName(name));
        }
        if !(connector.url.starts_with("sqlite:")
            || connector.url.starts_with("postgres://")
            || connector.url.starts_with("postgresql://"))
        {
            return Err(ToolBuildError::InvalidConnector {
                connector: connector.name.clone(),
                reason: "the URL must be a sqlite: or postgres:// URL".into(),
            });
        }
        let identity =
            ConnectorIdentity { id: connector.id.clone(), name: connector.name.clone(), action: "sql_query".into() };
        Ok(Arc::new(SqlQueryTool { name, connector, identity, connection: OnceCell::new() }))
    }

    async fn connection(&self) -> Result<&DatabaseConnection, ToolError> {
        self.connection
            .get_or_try_init(|| async {
                Database::connect(self.connector.url.as_str())
                    .await
                    .map_err(|e| ToolError::Database(format!("cannot connect: {e}")))
            })
            .await
    }
}

/// Whether a statement returns rows (so is run as a query rather than executed).
fn returns_rows(sql: &str) -> bool {
    let lower = sql.trim_start().to_ascii_lowercase();
    let first = lower.split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or_default();
    matches!(first, "select" | "with" | "values" | "pragma" | "explain" | "show" | "table")
        || lower.contains(" returning ")
}

fn bind(value: &Value) -> sea_orm::Value {
    match value {
        Value::Null => sea_orm::Value::String(None),
        Value::Bool(b) => sea_orm::Value::Bool(Some(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => sea_orm::Value::BigInt(Some(i)),
            None => sea_orm::Value::Double(n.as_f64()),
        },
        Value::String(s) => sea_orm::Value::String(Some(s.clone())),
        other => sea_orm::Value::String(Some(other.to_string())),
    }
}

#[async_trait::async_trait]
impl Tool for SqlQueryTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "Runs one SQL statement on the connector's database and returns the rows as JSON."
    }
    fn parameters(&self) -> &Value {
        &PARAMETERS
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    fn connector(&self) -> Option<&ConnectorIdentity> {
        Some(&self.identity)
    }
    /// `sql_dialect` (`sqlite` or `postgresql`), so the read-only guard parses the SQL the way the
    /// database will (e.g. SQLite's `?` placeholders).
    fn extra_metadata(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let url = self.connector.url.as_str();
        let dialect = if url.starts_with("sqlite:") {
            Some("sqlite")
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some("postgresql")
        } else {
            None
        };
        if let Some(dialect) = dialect {
            m.insert(hook_core::meta::SQL_DIALECT.into(), dialect.into());
        }
        m
    }

    async fn call(&self, args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
        let sql = args
            .get("sql")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArguments("'sql' must be a string".into()))?;
        let params: Vec<sea_orm::Value> =
            args.get("params").and_then(Value::as_array).map(|a| a.iter().map(bind).collect()).unwrap_or_default();
        let db = self.connection().await?;
        let statement = Statement::from_sql_and_values(db.get_database_backend(), sql, params);
        if returns_rows(sql) {
            let rows = JsonValue::find_by_statement(statement)
                .all(db)
                .await
                .map_err(|e| ToolError::Database(e.to_string()))?;
            Ok(ToolOutput::new(Value::Array(rows)))
        } else {
            let result = db.execute_raw(statement).await.map_err(|e| ToolError::Database(e.to_string()))?;
            Ok(ToolOutput::new(json!({"rows_affected": result.rows_affected()})))
        }
    }
}
