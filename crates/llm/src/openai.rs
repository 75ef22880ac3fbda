use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, Message, ToolArguments, ToolCall, Usage};

/// Settings of an [`OpenAiModel`]. Build with [`OpenAiConfig::new`] and adjust the public fields.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The API base, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`;
    /// requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer <api_key>` when set.
    pub api_key: Option<String>,
    /// Ask for `stream: true` and assemble the server-sent events (tool-call fragments joined by
    /// `index`).
    pub stream: bool,
    /// TCP/TLS connect timeout. Default 10 s.
    pub connect_timeout: Duration,
    /// Whole-request timeout, body included. Default 120 s.
    pub request_timeout: Duration,
    /// Retries after a 429, a 5xx or a transport failure (so at most `1 + max_retries` attempts).
    /// Default 2.
    pub max_retries: u32,
    /// The longest `retry-after` honoured; a longer one ends the retries with
    /// [`LlmError::RateLimited`]. Default 30 s.
    pub max_retry_wait: Duration,
    /// The first backoff when the server sent no `retry-after`; doubled each retry. Default 500 ms.
    pub backoff: Duration,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never in logs.
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("stream", &self.stream)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_retries", &self.max_retries)
            .field("max_retry_wait", &self.max_retry_wait)
            .finish_non_exhaustive()
    }
}

impl OpenAiConfig {
    /// Defaults: no key, non-streaming, 10 s connect, 120 s request, 2 retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            stream: false,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
            max_retries: 2,
            max_retry_wait: Duration::from_secs(30),
            backoff: Duration::from_millis(500),
        }
    }
}

/// A client of any OpenAI-compatible `POST /chat/completions` (OpenAI, vLLM, Ollama, DeepSeek, …).
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    endpoint: String,
    label: String,
    client: reqwest::Client,
}

impl OpenAiModel {
    /// Builds the client (rustls with the `ring` provider).
    ///
    /// # Errors
    /// [`LlmError::Config`] when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        // reqwest is built with `rustls-no-provider`: a process-wide provider must exist. Another
        // crate may have installed one already, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        let endpoint = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let label = format!("openai:{}", config.model);
        Ok(OpenAiModel { config, endpoint, label, client })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut body = json!({ "model": self.config.model, "messages": messages });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
        }
        if self.config.stream {
            body["stream"] = Value::Bool(true);
        }
        body
    }

    async fn attempt(&self, body: &Value) -> Result<ChatResponse, Attempt> {
        let mut req = self.client.post(&self.endpoint).json(body);
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key);
        }
        let mut response = req.send().await.map_err(|e| Attempt::retry(transport_error(&e), None))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = response.text().await.unwrap_or_default();
            return Err(classify_status(status.as_u16(), &text, retry_after));
        }
        if self.config.stream {
            let mut assembler = StreamAssembler::default();
            let mut buffer: Vec<u8> = Vec::new();
            loop {
                let chunk = response
                    .chunk()
                    .await
                    .map_err(|e| Attempt::retry(LlmError::Transient(format!("stream broke: {e}")), None))?;
                let Some(chunk) = chunk else { break };
                buffer.extend_from_slice(&chunk);
                while let Some(pos) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=pos).collect();
                    let line = String::from_utf8_lossy(&line);
                    if assembler.line(line.trim_end_matches(['\r', '\n'])).map_err(Attempt::fail)? {
                        return Ok(assembler.finish());
                    }
                }
            }
            if !buffer.is_empty() {
                let line = String::from_utf8_lossy(&buffer).into_owned();
                assembler.line(line.trim_end()).map_err(Attempt::fail)?;
            }
            if !assembler.seen_any {
                return Err(Attempt::fail(LlmError::Permanent("the event stream carried no chunk".into())));
            }
            Ok(assembler.finish())
        } else {
            let text = response
                .text()
                .await
                .map_err(|e| Attempt::retry(LlmError::Transient(format!("reading the response: {e}")), None))?;
            parse_completion(&text).map_err(Attempt::fail)
        }
    }
}

#[async_trait::async_trait]
impl ChatModel for OpenAiModel {
    fn name(&self) -> &str {
        &self.label
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.body(request);
        let mut attempt = 0u32;
        loop {
            match self.attempt(&body).await {
                Ok(response) => return Ok(response),
                Err(Attempt { error, retryable, retry_after }) => {
                    if !retryable || attempt >= self.config.max_retries {
                        return Err(error);
                    }
                    let wait = match retry_after {
                        Some(wait) if wait > self.config.max_retry_wait => return Err(error),
                        Some(wait) => wait,
                        None => self.config.backoff.saturating_mul(2u32.saturating_pow(attempt)),
                    };
                    tracing::warn!(model = %self.label, attempt, ?wait, %error, "retrying the model call");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }
}

/// One failed attempt and whether it may be retried.
struct Attempt {
    error: LlmError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Attempt {
    fn retry(error: LlmError, retry_after: Option<Duration>) -> Self {
        Attempt { error, retryable: true, retry_after }
    }
    fn fail(error: LlmError) -> Self {
        Attempt { error, retryable: false, retry_after: None }
    }
}

fn transport_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::Transient(format!("the model call timed out: {e}"))
    } else if e.is_connect() {
        LlmError::Transient(format!("cannot connect to the model: {e}"))
    } else {
        LlmError::Transient(format!("the model call failed: {e}"))
    }
}

/// Maps a non-2xx answer to an error: 429 → rate limited, 5xx and 408 → transient, a context
/// overflow (OpenAI code `context_length_exceeded`, or the message says so) → context length,
/// other 4xx → permanent.
fn classify_status(status: u16, body: &str, retry_after: Option<Duration>) -> Attempt {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: ErrorDetail,
    }
    #[derive(Deserialize)]
    struct ErrorDetail {
        #[serde(default)]
        message: String,
        #[serde(default)]
        code: Option<Value>,
    }
    let detail = serde_json::from_str::<ErrorBody>(body).ok().map(|b| b.error);
    let message = match &detail {
        Some(d) if !d.message.is_empty() => format!("HTTP {status}: {}", d.message),
        _ => format!("HTTP {status}: {}", body.chars().take(300).collect::<String>()),
    };
    let code = detail.as_ref().and_then(|d| d.code.as_ref()).and_then(Value::as_str).unwrap_or("");
    match status {
        429 => Attempt::retry(LlmError::RateLimited { retry_after, message }, retry_after),
        500..=599 | 408 => Attempt::retry(LlmError::Transient(message), retry_after),
        _ if code == "context_length_exceeded"
            || message.contains("maximum context length")
            || message.contains("context length") =>
        {
            Attempt::fail(LlmError::ContextLength(message))
        }
        _ => Attempt::fail(LlmError::Permanent(message)),
    }
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant { content, tool_calls } => {
            let mut m = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                m["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": c.arguments.to_wire_string(),
                        }})
                    })
                    .collect();
            }
            m
        }
        Message::Tool { tool_call_id, content } => {
            json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
        }
    }
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: WireAssistant,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireAssistant {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// The provider's call id, or `call_<index>` when it sent none (some OpenAI-compatible servers
/// omit it): observations must answer a non-empty, unique id.
fn call_id(id: String, index: usize) -> String {
    if id.is_empty() { format!("call_{index}") } else { id }
}

fn parse_completion(text: &str) -> Result<ChatResponse, LlmError> {
    let completion: Completion =
        serde_json::from_str(text).map_err(|e| LlmError::Permanent(format!("unreadable chat completion: {e}")))?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| LlmError::Permanent("the chat completion has no choice".into()))?;
    Ok(ChatResponse {
        content: choice.message.content,
        tool_calls: choice
            .message
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: call_id(c.id, i),
                name: c.function.name,
                arguments: ToolArguments::parse(&c.function.arguments),
            })
            .collect(),
        finish_reason: choice.finish_reason,
        usage: completion.usage,
    })
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<DeltaToolCall>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    index: usize,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Joins the chunks of a `stream: true` answer: text deltas appended, tool-call fragments
/// concatenated per `index`.
#[derive(Default)]
struct StreamAssembler {
    content: Option<String>,
    calls: BTreeMap<usize, (String, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    seen_any: bool,
}

impl StreamAssembler {
    /// Feeds one SSE line; `Ok(true)` at `data: [DONE]`.
    fn line(&mut self, line: &str) -> Result<bool, LlmError> {
        let Some(data) = line.strip_prefix("data:") else {
            // Comments (`:`), `event:`/`id:` fields and blank separators carry nothing we need.
            return Ok(false);
        };
        let data = data.trim_start();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let value: Value =
            serde_json::from_str(data).map_err(|e| LlmError::Permanent(format!("unreadable stream chunk: {e}")))?;
        if let Some(error) = value.get("error") {
            return Err(LlmError::Permanent(format!("the stream reported an error: {error}")));
        }
        let chunk: Chunk =
            serde_json::from_value(value).map_err(|e| LlmError::Permanent(format!("unreadable stream chunk: {e}")))?;
        self.seen_any = true;
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content {
                self.content.get_or_insert_with(String::new).push_str(&text);
            }
            for fragment in choice.delta.tool_calls {
                let entry = self.calls.entry(fragment.index).or_default();
                if let Some(id) = fragment.id {
                    entry.0 = id;
                }
                if let Some(function) = fragment.function {
                    if let Some(name) = function.name {
                        entry.1.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        entry.2.push_str(&arguments);
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(false)
    }

    fn finish(self) -> ChatResponse {
        ChatResponse {
            content: self.content,
            tool_calls: self
                .calls
                .into_iter()
                .map(|(index, (id, name, arguments))| ToolCall {
                    id: call_id(id, index),
                    name,
                    arguments: ToolArguments::parse(&arguments),
                })
                .collect(),
            finish_reason: self.finish_reason,
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_fragments_are_joined_by_index() {
        let mut a = StreamAssembler::default();
        let lines = [
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"two","arguments":"{}"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"{\"x\":"}}]}}]}"#,
            "",
            ": keep-alive",
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}"#,
        ];
        for line in lines {
            assert!(!a.line(line).unwrap());
        }
        assert!(a.line("data: [DONE]").unwrap());
        let r = a.finish();
        assert_eq!(r.tool_calls[0].name, "one");
        assert_eq!(r.tool_calls[0].arguments, ToolArguments::Parsed { value: json!({"x": 1}) });
        assert_eq!(r.tool_calls[1].id, "b");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn statuses_are_classified() {
        assert!(matches!(classify_status(429, "{}", None).error, LlmError::RateLimited { .. }));
        assert!(matches!(classify_status(503, "oops", None).error, LlmError::Transient(_)));
        let body = r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#;
        assert!(matches!(classify_status(400, body, None).error, LlmError::ContextLength(_)));
        let c = classify_status(401, r#"{"error":{"message":"bad key"}}"#, None);
        assert!(!c.retryable);
        assert_eq!(c.error, LlmError::Permanent("HTTP 401: bad key".into()));
    }
}
