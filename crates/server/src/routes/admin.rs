//! Orgs, users, API keys, channels, connectors and agents.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;

// ---------------------------------------------------------------------------------------------
// Orgs and users

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrg {
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchOrg {
    pub read_only: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OrgView {
    pub id: String,
    pub name: String,
    pub read_only: bool,
    pub created_at: String,
}

impl From<store::Org> for OrgView {
    fn from(org: store::Org) -> Self {
        OrgView { id: org.id, name: org.name, read_only: org.read_only, created_at: org.created_at.to_rfc3339() }
    }
}

fn non_empty(field: &str, value: &str) -> Result<(), ApiError> {
    if value.trim().is_empty() {
        return Err(ApiError::validation(format!("`{field}` must not be empty")));
    }
    Ok(())
}

/// Creates an organization (platform admin).
#[utoipa::path(post, path = "/api/v1/orgs", request_body = CreateOrg, responses((status = 201, body = OrgView)), tag = "orgs")]
pub async fn create_org(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateOrg>,
) -> Result<(StatusCode, Json<OrgView>), ApiError> {
    caller.platform_admin()?;
    non_empty("name", &body.name)?;
    let org = state.store().create_org(body.name.trim()).await?;
    Ok((StatusCode::CREATED, Json(org.into())))
}

/// An organization (its members and the platform admin).
#[utoipa::path(get, path = "/api/v1/orgs/{id}", responses((status = 200, body = OrgView)), tag = "orgs")]
pub async fn get_org(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<OrgView>, ApiError> {
    caller.org_member(&id, "org")?;
    let org = state.store().get_org(&id).await?.ok_or_else(|| ApiError::not_found("org"))?;
    Ok(Json(org.into()))
}

/// Switches an organization read-only or back (org admins). Applies to the very next tool call.
#[utoipa::path(patch, path = "/api/v1/orgs/{id}", request_body = PatchOrg, responses((status = 200, body = OrgView)), tag = "orgs")]
pub async fn patch_org(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PatchOrg>,
) -> Result<Json<OrgView>, ApiError> {
    caller.org_admin(&id, "org")?;
    state.store().get_org(&id).await?.ok_or_else(|| ApiError::not_found("org"))?;
    let org = match body.read_only {
        Some(read_only) => state.store().set_org_read_only(&id, read_only).await?,
        None => state.store().get_org(&id).await?.ok_or_else(|| ApiError::not_found("org"))?,
    };
    Ok(Json(org.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    pub name: String,
    /// `admin` or `member`.
    pub role: String,
    pub feishu_open_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub role: String,
    pub feishu_open_id: Option<String>,
    pub created_at: String,
}

impl From<store::User> for UserView {
    fn from(u: store::User) -> Self {
        UserView {
            id: u.id,
            org_id: u.org_id,
            name: u.name,
            role: u.role.as_str().to_owned(),
            feishu_open_id: u.feishu_open_id,
            created_at: u.created_at.to_rfc3339(),
        }
    }
}

/// Adds a user to an organization (org admins).
#[utoipa::path(post, path = "/api/v1/orgs/{id}/users", request_body = CreateUser, responses((status = 201, body = UserView)), tag = "orgs")]
pub async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(org_id): Path<String>,
    ApiJson(body): ApiJson<CreateUser>,
) -> Result<(StatusCode, Json<UserView>), ApiError> {
    caller.org_admin(&org_id, "org")?;
    non_empty("name", &body.name)?;
    let role = store::Role::parse(&body.role)
        .ok_or_else(|| ApiError::validation(format!("`role` must be admin or member, not `{}`", body.role)))?;
    state.store().get_org(&org_id).await?.ok_or_else(|| ApiError::not_found("org"))?;
    let user = state
        .store()
        .create_user(&store::NewUser {
            org_id,
            name: body.name.trim().to_owned(),
            role,
            feishu_open_id: body.feishu_open_id.filter(|s| !s.trim().is_empty()),
        })
        .await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyView {
    /// The key itself: shown once, stored hashed.
    pub api_key: String,
    pub id: String,
    pub prefix: String,
}

/// Creates an API key for a user (org admins, or the user for themself).
#[utoipa::path(post, path = "/api/v1/users/{id}/api-keys", responses((status = 201, body = ApiKeyView)), tag = "orgs")]
pub async fn create_api_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
) -> Result<(StatusCode, Json<ApiKeyView>), ApiError> {
    let user = state.store().get_user(&user_id).await?.ok_or_else(|| ApiError::not_found("user"))?;
    if caller.user_id() != Some(user.id.as_str()) {
        caller.org_admin(&user.org_id, "user")?;
    }
    let key = state.store().create_api_key(&user.id).await?;
    Ok((StatusCode::CREATED, Json(ApiKeyView { api_key: key.api_key, id: key.id, prefix: key.prefix })))
}

// ---------------------------------------------------------------------------------------------
// Channels

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateChannel {
    pub org_id: String,
    /// `feishu`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// Feishu: `{app_id, app_secret, verification_token, encrypt_key?, chat_id, base_url?}`.
    #[schema(value_type = Object)]
    pub config: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChannelView {
    pub id: String,
    pub org_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub is_active: bool,
    /// Where Feishu must send card callbacks.
    pub callback_url: String,
}

fn channel_view(state: &AppState, channel: store::Channel) -> ChannelView {
    let callback_url = format!("{}/api/v1/channels/{}/feishu/callback", state.config().public_url, channel.id);
    ChannelView {
        id: channel.id,
        org_id: channel.org_id,
        kind: channel.kind,
        name: channel.name,
        is_active: channel.is_active,
        callback_url,
    }
}

/// Registers an approval channel (org admins). Secrets are encrypted at rest and never returned.
#[utoipa::path(post, path = "/api/v1/channels", request_body = CreateChannel, responses((status = 201, body = ChannelView)), tag = "channels")]
pub async fn create_channel(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateChannel>,
) -> Result<(StatusCode, Json<ChannelView>), ApiError> {
    caller.org_admin(&body.org_id, "org")?;
    non_empty("name", &body.name)?;
    if body.kind != "feishu" {
        return Err(ApiError::validation(format!("unsupported channel type `{}`: expected feishu", body.kind)));
    }
    let config: channel_feishu::FeishuConfig =
        serde_json::from_value(body.config.clone()).map_err(|e| ApiError::validation(format!("config: {e}")))?;
    for (field, value) in [
        ("app_id", &config.app_id),
        ("app_secret", &config.app_secret),
        ("verification_token", &config.verification_token),
        ("chat_id", &config.chat_id),
    ] {
        non_empty(&format!("config.{field}"), value)?;
    }
    if let Some(base) = &config.base_url {
        reqwest::Url::parse(base).map_err(|e| ApiError::validation(format!("config.base_url: {e}")))?;
    }
    state.store().get_org(&body.org_id).await?.ok_or_else(|| ApiError::not_found("org"))?;
    let channel = state
        .store()
        .create_channel(&store::NewChannel {
            org_id: body.org_id,
            kind: body.kind,
            name: body.name.trim().to_owned(),
            config: body.config,
            is_active: true,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(channel_view(&state, channel))))
}

// ---------------------------------------------------------------------------------------------
// Connectors

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConnector {
    pub org_id: String,
    pub name: String,
    /// `http` (default) or `database`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    pub base_url: Option<String>,
    /// Database connectors: a SQLite or PostgreSQL URL.
    pub url: Option<String>,
    /// `{type: "bearer", token}` | `{type: "api_key", header, value}` | `{type: "basic", username, password}`.
    #[schema(value_type = Option<Object>)]
    pub auth: Option<Value>,
    pub rate_limit: Option<RateLimitBody>,
    #[serde(default)]
    pub actions: Vec<ActionBody>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitBody {
    pub per_minute: u32,
    pub burst: u32,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionBody {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub method: String,
    pub path: String,
    #[serde(default = "object_schema")]
    #[schema(value_type = Object)]
    pub parameters_schema: Value,
    #[serde(default)]
    pub requires_confirmation: bool,
    /// `read` or `write`; default: `read` for GET/HEAD/OPTIONS, else `write`.
    pub side_effect: Option<String>,
}

fn object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectorView {
    pub id: String,
    pub org_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub base_url: Option<String>,
    pub rate_limit: Option<RateLimitBody>,
    pub actions: Vec<ActionView>,
    /// The tool names agents see.
    pub tools: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActionView {
    pub name: String,
    pub description: String,
    pub method: String,
    pub path: String,
    #[schema(value_type = Object)]
    pub parameters_schema: Value,
    pub requires_confirmation: bool,
    pub side_effect: String,
}

fn connector_view(c: store::Connector) -> ConnectorView {
    let tools = match c.kind {
        store::ConnectorKind::Http => c.actions.iter().map(|a| format!("{}__{}", c.name, a.name)).collect(),
        store::ConnectorKind::Database => vec![format!("{}__sql_query", c.name)],
    };
    ConnectorView {
        id: c.id,
        org_id: c.org_id,
        name: c.name,
        kind: c.kind.as_str().to_owned(),
        base_url: c.base_url,
        rate_limit: c.rate_limit.map(|r| RateLimitBody { per_minute: r.per_minute, burst: r.burst }),
        actions: c
            .actions
            .into_iter()
            .map(|a| ActionView {
                name: a.name,
                description: a.description,
                method: a.method,
                path: a.path,
                parameters_schema: a.parameters_schema,
                requires_confirmation: a.requires_confirmation,
                side_effect: a.side_effect.as_str().to_owned(),
            })
            .collect(),
        tools,
    }
}

fn valid_name(field: &str, name: &str) -> Result<(), ApiError> {
    if name.is_empty() || name.len() > 40 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(ApiError::validation(format!("`{field}` must be 1-40 of A-Z a-z 0-9 _ -, got `{name}`")));
    }
    if name.contains("__") {
        return Err(ApiError::validation(format!(
            "`{field}` must not contain `__` (it separates connector and action)"
        )));
    }
    Ok(())
}

/// Registers a connector with its actions (org admins). `auth` and database URLs are encrypted at
/// rest and never returned.
#[utoipa::path(post, path = "/api/v1/connectors", request_body = CreateConnector, responses((status = 201, body = ConnectorView)), tag = "connectors")]
pub async fn create_connector(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateConnector>,
) -> Result<(StatusCode, Json<ConnectorView>), ApiError> {
    caller.org_admin(&body.org_id, "org")?;
    valid_name("name", &body.name)?;
    let kind = match body.kind.as_deref().unwrap_or("http") {
        "http" => store::ConnectorKind::Http,
        "database" => store::ConnectorKind::Database,
        other => return Err(ApiError::validation(format!("`type` must be http or database, not `{other}`"))),
    };
    if let Some(limit) = body.rate_limit
        && (limit.per_minute == 0 || limit.burst == 0)
    {
        return Err(ApiError::validation("`rate_limit.per_minute` and `rate_limit.burst` must be at least 1"));
    }
    let mut actions = Vec::new();
    match kind {
        store::ConnectorKind::Http => {
            let base = body
                .base_url
                .as_deref()
                .ok_or_else(|| ApiError::validation("`base_url` is required for http connectors"))?;
            let url = reqwest::Url::parse(base).map_err(|e| ApiError::validation(format!("`base_url`: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(ApiError::validation("`base_url` must be http or https"));
            }
            if body.url.is_some() {
                return Err(ApiError::validation("`url` is for database connectors; use `base_url`"));
            }
            if let Some(auth) = &body.auth {
                serde_json::from_value::<agent_react::ConnectorAuth>(auth.clone())
                    .map_err(|e| ApiError::validation(format!("`auth`: {e}")))?;
            }
            for action in &body.actions {
                valid_name("actions[].name", &action.name)?;
                reqwest::Method::from_bytes(action.method.to_ascii_uppercase().as_bytes())
                    .map_err(|_| ApiError::validation(format!("unknown HTTP method `{}`", action.method)))?;
                if !action.path.starts_with('/') {
                    return Err(ApiError::validation(format!("action `{}`: `path` must start with /", action.name)));
                }
                if !action.parameters_schema.is_object() {
                    return Err(ApiError::validation(format!(
                        "action `{}`: `parameters_schema` must be an object",
                        action.name
                    )));
                }
                let method = action.method.to_ascii_uppercase();
                let side_effect = match action.side_effect.as_deref() {
                    Some(s) => store::SideEffect::parse(s).ok_or_else(|| {
                        ApiError::validation(format!("`side_effect` must be read or write, not `{s}`"))
                    })?,
                    None if matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS") => store::SideEffect::Read,
                    None => store::SideEffect::Write,
                };
                actions.push(store::NewConnectorAction {
                    name: action.name.clone(),
                    description: action.description.clone(),
                    method,
                    path: action.path.clone(),
                    parameters_schema: action.parameters_schema.clone(),
                    requires_confirmation: action.requires_confirmation,
                    side_effect,
                });
            }
        }
        store::ConnectorKind::Database => {
            let url =
                body.url.as_deref().ok_or_else(|| ApiError::validation("`url` is required for database connectors"))?;
            if !(url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(ApiError::validation("`url` must be a sqlite: or postgres:// URL"));
            }
            if !body.actions.is_empty() || body.base_url.is_some() {
                return Err(ApiError::validation("database connectors take `url` only (one tool: <name>__sql_query)"));
            }
        }
    }
    state.store().get_org(&body.org_id).await?.ok_or_else(|| ApiError::not_found("org"))?;
    let connector = state
        .store()
        .create_connector(&store::NewConnector {
            org_id: body.org_id,
            name: body.name,
            kind,
            base_url: body.base_url,
            url: body.url,
            auth: body.auth,
            rate_limit: body.rate_limit.map(|r| store::RateLimit { per_minute: r.per_minute, burst: r.burst }),
            actions,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(connector_view(connector))))
}

/// A connector (members of its org).
#[utoipa::path(get, path = "/api/v1/connectors/{id}", responses((status = 200, body = ConnectorView)), tag = "connectors")]
pub async fn get_connector(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConnectorView>, ApiError> {
    let connector = state.store().get_connector(&id).await?.ok_or_else(|| ApiError::not_found("connector"))?;
    caller.org_member(&connector.org_id, "connector")?;
    Ok(Json(connector_view(connector)))
}

// ---------------------------------------------------------------------------------------------
// Agents

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAgent {
    pub org_id: String,
    pub name: String,
    pub instructions: String,
    /// `{"provider":"scripted","turns":[…]}` or `{"provider":"openai","base_url","model","api_key_env"}`.
    #[schema(value_type = Object)]
    pub model: Value,
    #[serde(default)]
    pub connectors: Vec<String>,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub delegates: Vec<String>,
    #[serde(default)]
    pub require_confirmation_for_all: bool,
    /// `{timeout_s, approver_scope, channel_id?}`.
    #[schema(value_type = Option<Object>)]
    pub confirmation: Option<Value>,
    /// `{class_hooks: [name | {name, config}]}`.
    #[schema(value_type = Option<Object>)]
    pub hooks: Option<Value>,
    /// Defaults to the caller.
    pub owner_user_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub owner_user_id: Option<String>,
    pub require_confirmation_for_all: bool,
    /// The stored, versioned configuration.
    #[schema(value_type = Object)]
    pub config: Value,
    pub created_at: String,
}

impl From<store::Agent> for AgentView {
    fn from(a: store::Agent) -> Self {
        AgentView {
            id: a.id,
            org_id: a.org_id,
            name: a.name,
            owner_user_id: a.owner_user_id,
            require_confirmation_for_all: a.require_confirmation_for_all,
            config: a.model_config,
            created_at: a.created_at.to_rfc3339(),
        }
    }
}

/// Creates an agent (org admins). The model, connectors, delegates, tools and hooks are checked
/// now: an agent that could not run is refused.
#[utoipa::path(post, path = "/api/v1/agents", request_body = CreateAgent, responses((status = 201, body = AgentView)), tag = "agents")]
pub async fn create_agent(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateAgent>,
) -> Result<(StatusCode, Json<AgentView>), ApiError> {
    caller.org_admin(&body.org_id, "org")?;
    non_empty("name", &body.name)?;
    state.store().get_org(&body.org_id).await?.ok_or_else(|| ApiError::not_found("org"))?;
    let mut config = serde_json::json!({
        "version": agent_react::AGENT_CONFIG_VERSION,
        "instructions": body.instructions,
        "model": body.model,
        "tools": body.tools,
        "connectors": body.connectors,
        "delegates": body.delegates,
        "require_confirmation_for_all": body.require_confirmation_for_all,
    });
    if let Some(confirmation) = body.confirmation {
        config["confirmation"] = confirmation;
    }
    if let Some(hooks) = body.hooks {
        config["hooks"] = hooks;
    }
    let parsed: agent_react::AgentConfig =
        serde_json::from_value(config.clone()).map_err(|e| ApiError::validation(format!("agent config: {e}")))?;
    for name in &parsed.tools {
        agent_react::builtin_tool(name).map_err(|e| ApiError::validation(e.to_string()))?;
    }
    for id in &parsed.connectors {
        let found = state.store().get_connector(id).await?.filter(|c| c.org_id == body.org_id);
        if found.is_none() {
            return Err(ApiError::validation(format!("connector {id} is not a connector of this organization")));
        }
    }
    for id in &parsed.delegates {
        let found = state.store().get_agent(id).await?.filter(|a| a.org_id == body.org_id);
        if found.is_none() {
            return Err(ApiError::validation(format!("delegate {id} is not an agent of this organization")));
        }
    }
    if let Some(channel_id) = &parsed.confirmation.channel_id {
        let found = state.store().get_channel(channel_id).await?.filter(|c| c.org_id == body.org_id);
        if found.is_none() {
            return Err(ApiError::validation(format!("channel {channel_id} is not a channel of this organization")));
        }
    }
    let owner = match body.owner_user_id {
        Some(id) => {
            let user = state.store().get_user(&id).await?.filter(|u| u.org_id == body.org_id);
            Some(user.ok_or_else(|| ApiError::validation(format!("owner {id} is not a user of this organization")))?.id)
        }
        None => caller.user_id().map(str::to_owned),
    };
    let candidate = store::Agent {
        id: String::new(),
        org_id: body.org_id.clone(),
        owner_user_id: owner.clone(),
        name: body.name.trim().to_owned(),
        instructions: parsed.instructions.clone(),
        require_confirmation_for_all: parsed.require_confirmation_for_all,
        model_config: config.clone(),
        created_at: chrono::Utc::now(),
    };
    crate::wiring::validate_agent(&state, &candidate).await?;
    let agent = state
        .store()
        .create_agent(&store::NewAgent {
            org_id: body.org_id,
            owner_user_id: owner,
            name: candidate.name,
            instructions: candidate.instructions,
            require_confirmation_for_all: candidate.require_confirmation_for_all,
            model_config: config,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(agent.into())))
}

/// An agent (members of its org).
#[utoipa::path(get, path = "/api/v1/agents/{id}", responses((status = 200, body = AgentView)), tag = "agents")]
pub async fn get_agent(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AgentView>, ApiError> {
    let agent = state.store().get_agent(&id).await?.ok_or_else(|| ApiError::not_found("agent"))?;
    caller.org_member(&agent.org_id, "agent")?;
    Ok(Json(agent.into()))
}
