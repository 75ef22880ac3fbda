use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, Url};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ToolBuildError;
use crate::tool::{
    ConnectorIdentity, HttpExchange, SideEffect, Tool, ToolCallContext, ToolError, ToolOutput, is_valid_tool_name,
};

/// An HTTP connector (DESIGN §4, `POST /api/v1/connectors`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpConnector {
    pub id: String,
    /// The tool-name prefix: `<name>__<action>`.
    pub name: String,
    /// e.g. `https://erp.example.com/api`; action paths are appended.
    pub base_url: String,
    #[serde(default)]
    pub auth: ConnectorAuth,
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// Allow link-local and cloud-metadata addresses (169.254.0.0/16, fe80::/10,
    /// `metadata.google.internal`, fd00:ec2::254). Off by default: a connector must not become a
    /// way to read cloud credentials. Loopback and private ranges are always allowed.
    #[serde(default)]
    pub allow_private_metadata: bool,
    /// Per-request timeout in seconds (connect included). Default 30.
    #[serde(default = "default_timeout_s")]
    pub timeout_s: u64,
}

fn default_timeout_s() -> u64 {
    30
}

/// How a connector authenticates. Serialized with a `type` tag: `{"type":"bearer","token":"…"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConnectorAuth {
    #[default]
    None,
    /// `Authorization: Bearer <token>`.
    Bearer { token: String },
    /// `<header>: <value>`.
    ApiKey { header: String, value: String },
    /// `Authorization: Basic base64(<username>:<password>)`.
    Basic { username: String, password: String },
}

/// A connector's own quota, passed to the rate-limit hook as metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    pub per_minute: u32,
    pub burst: u32,
}

/// One action of an HTTP connector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpAction {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD`, `OPTIONS`.
    pub method: String,
    /// Appended to the connector's `base_url`; `{param}` placeholders are filled from the
    /// arguments (percent-encoded) and those arguments are not sent again.
    pub path: String,
    /// The arguments' JSON schema. Default `{"type":"object"}`.
    #[serde(default = "default_schema")]
    pub parameters_schema: Value,
    #[serde(default)]
    pub requires_confirmation: bool,
    /// Default: `read` for GET/HEAD/OPTIONS, `write` otherwise (DESIGN §3).
    #[serde(default)]
    pub side_effect: Option<SideEffect>,
}

fn default_schema() -> Value {
    json!({"type": "object"})
}

/// A connector action as a tool named `<connector>__<action>`.
///
/// GET, HEAD and DELETE send the remaining arguments as the query string; other methods as a JSON
/// body. A 2xx answer's body (JSON, or text) is the result; any other status is a failure whose
/// message carries the status and the body's start. Redirects are not followed.
#[derive(Debug, Clone)]
pub struct HttpActionTool {
    name: String,
    connector: Arc<HttpConnector>,
    action: HttpAction,
    identity: ConnectorIdentity,
    method: Method,
    side_effect: SideEffect,
    client: reqwest::Client,
}

/// An HTTP client for connector tools: rustls with the `ring` provider, 10 s connect timeout, no
/// redirects (a redirect could lead to an address the checks refused). Share one per process.
///
/// # Errors
/// The client cannot be built (no TLS provider).
pub fn http_client() -> Result<reqwest::Client, ToolBuildError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ToolBuildError::InvalidConnector { connector: String::new(), reason: e.to_string() })
}

impl HttpActionTool {
    /// # Errors
    /// [`ToolBuildError`] when the tool name is invalid, the method unknown or the base URL not an
    /// `http`/`https` URL.
    pub fn new(
        connector: Arc<HttpConnector>,
        action: HttpAction,
        client: reqwest::Client,
    ) -> Result<Self, ToolBuildError> {
        let name = format!("{}__{}", connector.name, action.name);
        if !is_valid_tool_name(&name) {
            return Err(ToolBuildError::InvalidName(name));
        }
        let invalid = |reason: String| ToolBuildError::InvalidConnector { connector: connector.name.clone(), reason };
        let method = Method::from_bytes(action.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| invalid(format!("unknown HTTP method '{}'", action.method)))?;
        let base = Url::parse(&connector.base_url).map_err(|e| invalid(format!("bad base_url: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(invalid("base_url must be http or https".into()));
        }
        let side_effect =
            action.side_effect.unwrap_or(if matches!(method, Method::GET | Method::HEAD | Method::OPTIONS) {
                SideEffect::Read
            } else {
                SideEffect::Write
            });
        let identity =
            ConnectorIdentity { id: connector.id.clone(), name: connector.name.clone(), action: action.name.clone() };
        Ok(HttpActionTool { name, connector, action, identity, method, side_effect, client })
    }

    /// The URL and the arguments left after filling the path placeholders.
    fn url(&self, args: &Value) -> Result<(Url, Map<String, Value>), ToolError> {
        let mut rest = args.as_object().cloned().unwrap_or_default();
        let mut path = String::new();
        let mut template = self.action.path.as_str();
        while let Some(open) = template.find('{') {
            let close = template[open..]
                .find('}')
                .map(|c| open + c)
                .ok_or_else(|| ToolError::InvalidArguments(format!("unclosed '{{' in path '{}'", self.action.path)))?;
            path.push_str(&template[..open]);
            let key = &template[open + 1..close];
            let value = rest
                .remove(key)
                .ok_or_else(|| ToolError::InvalidArguments(format!("missing path parameter '{key}'")))?;
            let text = match value {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => {
                    return Err(ToolError::InvalidArguments(format!(
                        "path parameter '{key}' must be a scalar, got {other}"
                    )));
                }
            };
            path.push_str(&percent_encode(&text));
            template = &template[close + 1..];
        }
        path.push_str(template);
        let base = self.connector.base_url.trim_end_matches('/');
        let joined =
            if path.starts_with('/') || path.is_empty() { format!("{base}{path}") } else { format!("{base}/{path}") };
        let url = Url::parse(&joined).map_err(|e| ToolError::InvalidArguments(format!("bad URL '{joined}': {e}")))?;
        Ok((url, rest))
    }

    /// Refuses link-local and metadata destinations: by host name, by IP literal, and by every
    /// address the name resolves to. The request resolves the name again, so a DNS answer that
    /// changes in between (rebinding) is not caught; redirects are never followed.
    async fn check_destination(&self, url: &Url) -> Result<(), ToolError> {
        if self.connector.allow_private_metadata {
            return Ok(());
        }
        let refused = |what: &str| {
            ToolError::Refused(format!(
                "the connector's URL points at {what}, which connectors may not reach (set allow_private_metadata to allow it)"
            ))
        };
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_ascii_lowercase();
        if host == "metadata.google.internal" || host == "metadata" || host.ends_with(".metadata.google.internal") {
            return Err(refused("a cloud metadata service"));
        }
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => {
                let port = url.port_or_known_default().unwrap_or(80);
                tokio::net::lookup_host((host.as_str(), port))
                    .await
                    .map_err(|e| ToolError::Failed(format!("cannot resolve '{host}': {e}")))?
                    .map(|a| a.ip())
                    .collect()
            }
        };
        for ip in addrs {
            if is_forbidden(ip) {
                return Err(refused(&format!("the link-local or metadata address {ip}")));
            }
        }
        Ok(())
    }
}

/// Link-local (169.254.0.0/16, fe80::/10) and cloud metadata addresses (169.254.169.254 and
/// AWS's fd00:ec2::254), IPv4-mapped forms included.
fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.is_link_local();
            }
            let aws_metadata = std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
            (v6.segments()[0] & 0xffc0) == 0xfe80 || v6 == aws_metadata
        }
    }
}

/// The largest response body a connector call reads, in bytes (8 MiB); a larger one fails the
/// call rather than filling memory. Long results are cut further by the `result_truncate` hook.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading the response failed: {e}"))? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(format!("the response is larger than {MAX_RESPONSE_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The tools of an HTTP connector: one [`HttpActionTool`] per action, sharing `client`.
///
/// # Errors
/// The first action that cannot become a tool ([`HttpActionTool::new`]), or two actions with the
/// same name.
pub fn http_connector_tools(
    connector: HttpConnector,
    actions: Vec<HttpAction>,
    client: &reqwest::Client,
) -> Result<Vec<Arc<dyn Tool>>, ToolBuildError> {
    let connector = Arc::new(connector);
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(actions.len());
    for action in actions {
        let tool = HttpActionTool::new(connector.clone(), action, client.clone())?;
        if tools.iter().any(|t| t.name() == tool.name()) {
            return Err(ToolBuildError::InvalidConnector {
                connector: connector.name.clone(),
                reason: format!("two actions are named '{}'", tool.identity.action),
            });
        }
        tools.push(Arc::new(tool));
    }
    Ok(tools)
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn query_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl Tool for HttpActionTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.action.description
    }
    fn parameters(&self) -> &Value {
        &self.action.parameters_schema
    }
    fn requires_confirmation(&self) -> bool {
        self.action.requires_confirmation
    }
    fn side_effect(&self) -> SideEffect {
        self.side_effect
    }
    fn connector(&self) -> Option<&ConnectorIdentity> {
        Some(&self.identity)
    }
    fn extra_metadata(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(limit) = self.connector.rate_limit {
            m.insert(hook_core::meta::RATE_LIMIT_PER_MINUTE.into(), limit.per_minute.into());
            m.insert(hook_core::meta::RATE_LIMIT_BURST.into(), limit.burst.into());
        }
        m
    }
    fn timeout(&self) -> Duration {
        // The request's own timeout fires first and reports the exchange; this is a backstop.
        Duration::from_secs(self.connector.timeout_s + 5)
    }

    async fn call(&self, args: Value, _ctx: &ToolCallContext) -> Result<ToolOutput, ToolError> {
        let (mut url, rest) = self.url(&args)?;
        self.check_destination(&url).await?;
        let query_methods = matches!(self.method, Method::GET | Method::HEAD | Method::DELETE);
        if query_methods && !rest.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (key, value) in &rest {
                match value {
                    Value::Array(items) => {
                        for item in items {
                            pairs.append_pair(key, &query_value(item));
                        }
                    }
                    Value::Null => {}
                    other => {
                        pairs.append_pair(key, &query_value(other));
                    }
                }
            }
        }
        let mut request = self
            .client
            .request(self.method.clone(), url.clone())
            .timeout(Duration::from_secs(self.connector.timeout_s));
        if !query_methods {
            request = request.json(&Value::Object(rest));
        }
        request = match &self.connector.auth {
            ConnectorAuth::None => request,
            ConnectorAuth::Bearer { token } => request.bearer_auth(token),
            ConnectorAuth::ApiKey { header, value } => request.header(header.as_str(), value.as_str()),
            ConnectorAuth::Basic { username, password } => request.basic_auth(username, Some(password)),
        };
        let started = Instant::now();
        let mut exchange =
            HttpExchange { method: self.method.to_string(), url: url.to_string(), status: None, latency_ms: 0 };
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                exchange.latency_ms = started.elapsed().as_millis() as u64;
                let message = if e.is_timeout() {
                    format!("the request timed out after {}s", self.connector.timeout_s)
                } else {
                    format!("the request failed: {e}")
                };
                return Err(ToolError::Http { message, exchange });
            }
        };
        let status = response.status();
        exchange.status = Some(status.as_u16());
        let body = read_body(response).await;
        exchange.latency_ms = started.elapsed().as_millis() as u64;
        let body = body.map_err(|message| ToolError::Http { message, exchange: exchange.clone() })?;
        let value = serde_json::from_slice::<Value>(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        if !status.is_success() {
            let text = match &value {
                Value::String(s) => s.chars().take(500).collect::<String>(),
                other => other.to_string().chars().take(500).collect(),
            };
            return Err(ToolError::Http { message: format!("HTTP {}: {text}", status.as_u16()), exchange });
        }
        Ok(ToolOutput { result: value, http: Some(exchange) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_addresses() {
        for ip in ["169.254.169.254", "169.254.1.1", "fe80::1", "fd00:ec2::254", "::ffff:169.254.169.254"] {
            assert!(is_forbidden(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["127.0.0.1", "10.0.0.1", "::1", "8.8.8.8", "fd00::1"] {
            assert!(!is_forbidden(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn path_placeholders_are_filled_and_encoded() {
        let connector = Arc::new(HttpConnector {
            id: "c1".into(),
            name: "erp".into(),
            base_url: "http://127.0.0.1:9/api/".into(),
            auth: ConnectorAuth::None,
            rate_limit: None,
            allow_private_metadata: false,
            timeout_s: 5,
        });
        let action = HttpAction {
            name: "get_invoice".into(),
            description: String::new(),
            method: "get".into(),
            path: "/invoices/{id}/lines".into(),
            parameters_schema: default_schema(),
            requires_confirmation: false,
            side_effect: None,
        };
        let tool = HttpActionTool::new(connector, action, http_client().unwrap()).unwrap();
        assert_eq!(tool.name(), "erp__get_invoice");
        assert_eq!(tool.side_effect(), SideEffect::Read);
        let (url, rest) = tool.url(&json!({"id": "INV 1/2", "page": 2})).unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/api/invoices/INV%201%2F2/lines");
        assert_eq!(rest, json!({"page": 2}).as_object().unwrap().clone());
        assert!(matches!(tool.url(&json!({})), Err(ToolError::InvalidArguments(_))));
    }
}
