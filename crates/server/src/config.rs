//! Configuration from the environment (DESIGN §4).

use std::net::SocketAddr;

/// The server's configuration. Every field comes from a `TOLLGATE_*` environment variable.
/// `Debug` masks the admin token and the secret key.
#[derive(Clone)]
pub struct Config {
    /// `TOLLGATE_BIND`, default `127.0.0.1:8080`.
    pub bind: SocketAddr,
    /// `TOLLGATE_DATABASE_URL`, default `sqlite://tollgate.db?mode=rwc`; `postgres://…` in
    /// production.
    pub database_url: String,
    /// `TOLLGATE_ADMIN_TOKEN`: the platform admin's bearer token. Without it, admin routes answer
    /// 401 (the demo prints a user API key instead).
    pub admin_token: Option<String>,
    /// `TOLLGATE_PUBLIC_URL`: the base of callback URLs, default `http://<bind>`.
    pub public_url: String,
    /// `TOLLGATE_SECRET_KEY`: the key encrypting channel and connector secrets at rest (32 bytes,
    /// base64 or hex; see `store::StoreConfig::secret_key`). Unset: a key file beside a SQLite
    /// database; PostgreSQL then cannot store secrets.
    pub secret_key: Option<String>,
    /// `TOLLGATE_DEMO`: seed the demo on an empty database (`1`, the default) or not (`0`).
    pub demo: bool,
    /// `TOLLGATE_LOG_FORMAT`: `text` (default) or `json`.
    pub log_json: bool,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mask = |v: &Option<String>| v.as_ref().map(|_| "***");
        f.debug_struct("Config")
            .field("bind", &self.bind)
            .field("database_url", &store::mask_url(&self.database_url))
            .field("admin_token", &mask(&self.admin_token))
            .field("public_url", &self.public_url)
            .field("secret_key", &mask(&self.secret_key))
            .field("demo", &self.demo)
            .field("log_json", &self.log_json)
            .finish()
    }
}

/// A configuration value that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{var}: {message}")]
pub struct ConfigError {
    pub var: &'static str,
    pub message: String,
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (the environment in production, a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let bind_raw = get("TOLLGATE_BIND").unwrap_or_else(|| "127.0.0.1:8080".to_owned());
        let bind = bind_raw.parse::<SocketAddr>().map_err(|e| ConfigError {
            var: "TOLLGATE_BIND",
            message: format!("`{bind_raw}` is not host:port ({e})"),
        })?;
        let demo = match get("TOLLGATE_DEMO").as_deref() {
            None | Some("1") | Some("true") => true,
            Some("0") | Some("false") => false,
            Some(other) => {
                return Err(ConfigError { var: "TOLLGATE_DEMO", message: format!("`{other}` is not 1 or 0") });
            }
        };
        let log_json = match get("TOLLGATE_LOG_FORMAT").as_deref() {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => {
                return Err(ConfigError {
                    var: "TOLLGATE_LOG_FORMAT",
                    message: format!("`{other}` is not text or json"),
                });
            }
        };
        Ok(Config {
            bind,
            database_url: get("TOLLGATE_DATABASE_URL").unwrap_or_else(|| "sqlite://tollgate.db?mode=rwc".to_owned()),
            admin_token: get("TOLLGATE_ADMIN_TOKEN"),
            public_url: get("TOLLGATE_PUBLIC_URL")
                .unwrap_or_else(|| format!("http://{bind}"))
                .trim_end_matches('/')
                .to_owned(),
            secret_key: get("TOLLGATE_SECRET_KEY"),
            demo,
            log_json,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_follow_the_design() {
        let c = config(&[]).unwrap();
        assert_eq!(c.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(c.database_url, "sqlite://tollgate.db?mode=rwc");
        assert_eq!(c.public_url, "http://127.0.0.1:8080");
        assert!(c.demo);
        assert!(c.admin_token.is_none());
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = config(&[("TOLLGATE_BIND", "nowhere")]).unwrap_err();
        assert_eq!(e.var, "TOLLGATE_BIND");
        let e = config(&[("TOLLGATE_DEMO", "maybe")]).unwrap_err();
        assert_eq!(e.var, "TOLLGATE_DEMO");
        assert!(!config(&[("TOLLGATE_DEMO", "0")]).unwrap().demo);
    }
}
