//! A `server` process on a real port, and a small HTTP client for it.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A running `server` binary; killed (SIGKILL) on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    client: reqwest::Client,
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Server {
    /// Starts `server serve` on `database_url` and waits until `/healthz` answers.
    pub async fn start(database_url: &str, port: u16, admin_token: &str) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_server"))
            .arg("serve")
            .env("TOLLGATE_BIND", format!("127.0.0.1:{port}"))
            .env("TOLLGATE_DATABASE_URL", database_url)
            .env("TOLLGATE_ADMIN_TOKEN", admin_token)
            .env("TOLLGATE_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
            .env("TOLLGATE_DEMO", "0")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start the server binary");
        let client = agent_react::http_client().expect("HTTP client");
        let mut server = Server { child, port, client };
        for _ in 0..400 {
            if let Ok(response) = server.client.get(server.url("/healthz")).send().await
                && response.status() == 200
            {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited at start: {status}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server.kill();
        panic!("the server did not answer /healthz");
    }

    /// SIGKILL: no graceful shutdown, like a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub async fn post_raw(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        let response = self.client.post(self.url(path)).bearer_auth(token).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// POST expecting a 2xx JSON answer.
    pub async fn post(&self, token: &str, path: &str, body: Value) -> Value {
        let (status, body) = self.post_raw(token, path, body).await;
        assert!((200..300).contains(&status), "POST {path}: {status} {body}");
        body
    }

    pub async fn get(&self, token: &str, path: &str) -> Value {
        let response = self.client.get(self.url(path)).bearer_auth(token).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.unwrap()
    }

    /// POSTs a Feishu callback as Feishu would (no bearer).
    pub async fn callback(&self, channel_id: &str, headers: &[(String, String)], body: Vec<u8>) -> (u16, Value) {
        let mut request = self
            .client
            .post(self.url(&format!("/api/v1/channels/{channel_id}/feishu/callback")))
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request.body(body).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// GET a finished run's SSE replay after `Last-Event-ID: seq`.
    pub async fn get_text_after(&self, token: &str, path: &str, seq: u64) -> String {
        let response = self
            .client
            .get(self.url(path))
            .bearer_auth(token)
            .header("last-event-id", seq.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.unwrap()
    }

    /// GET a finished run's SSE replay as text.
    pub async fn get_text(&self, token: &str, path: &str) -> String {
        let response = self.client.get(self.url(path)).bearer_auth(token).send().await.unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A fresh schema in the PostgreSQL database at `base`, as a URL whose connections use it.
pub async fn fresh_postgres_schema(base: &str) -> String {
    use sea_orm::ConnectionTrait as _;
    let schema = format!("srv_{}", uuid_like());
    let mut config = store::StoreConfig::new(base);
    config.secret_key = Some("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=".into());
    let admin = store::Store::connect_with(config).await.unwrap();
    admin.connection().execute_unprepared(&format!("CREATE SCHEMA {schema}")).await.unwrap();
    admin.close().await.unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-c%20search_path%3D{schema}")
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{:x}{:x}", nanos, std::process::id())
}
