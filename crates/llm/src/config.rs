use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{ChatModel, LlmError, OpenAiConfig, OpenAiModel, ScriptedModel, ScriptedTurn};

/// An agent's persisted model configuration (DESIGN §4), tagged by `provider`:
///
/// - `{"provider":"scripted","turns":[{"tool_calls":[{"name":"…","arguments":{…}}]},{"content":"…"}]}`
/// - `{"provider":"openai","base_url":"https://api.openai.com/v1","model":"gpt-4.1-mini","api_key_env":"OPENAI_API_KEY"}`
///   for any OpenAI-compatible `/chat/completions` (vLLM, Ollama, DeepSeek, …). `api_key_env`
///   names the environment variable holding the key (omit it for servers without auth);
///   `stream` (default `false`) asks for `stream: true` responses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelConfig {
    Scripted {
        turns: Vec<ScriptedTurn>,
    },
    Openai {
        base_url: String,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key_env: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        stream: bool,
    },
}

impl ModelConfig {
    /// Builds the model. The API key is read from the environment now, once.
    ///
    /// # Errors
    /// [`LlmError::Config`] when `api_key_env` names an unset variable or the HTTP client cannot be
    /// built.
    pub fn build(&self) -> Result<Arc<dyn ChatModel>, LlmError> {
        match self {
            ModelConfig::Scripted { turns } => Ok(Arc::new(ScriptedModel::new(turns.clone()))),
            ModelConfig::Openai { base_url, model, api_key_env, stream } => {
                let api_key = match api_key_env {
                    Some(var) => Some(std::env::var(var).map_err(|_| {
                        LlmError::Config(format!("environment variable {var} (api_key_env) is not set"))
                    })?),
                    None => None,
                };
                let mut config = OpenAiConfig::new(base_url.clone(), model.clone());
                config.api_key = api_key;
                config.stream = *stream;
                Ok(Arc::new(OpenAiModel::new(config)?))
            }
        }
    }
}
