//! Model providers: OpenAI-compatible Chat Completions (OpenAI, llama.cpp, vLLM, LM Studio,
//! OpenRouter, DeepSeek, ...), Ollama's native chat API, and Anthropic's Messages API.
//!
//! All three stream. A provider turns the engine's `ChatRequest` into its own request body,
//! and its stream back into `StreamEvent`s as they arrive: text deltas, tool-call fragments,
//! usage. The transport (`transport`) owns what is common: connecting, retrying with backoff,
//! framing (SSE or NDJSON), the idle timeout between chunks, and clear errors.
//! This module knows nothing of kernels, approval or widgets.

mod anthropic;
pub mod args_stream;
mod error;
pub mod image_encode;
mod ollama;
mod openai;
mod transport;
pub mod vision;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) use error::shorten;
pub use error::{LlmError, LlmErrorKind};
pub use transport::RetryPolicy;

/// Which API a model is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    OpenAi,
    Ollama,
    Anthropic,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    pub fn parse(name: &str) -> Option<ProviderKind> {
        match name.to_ascii_lowercase().as_str() {
            "openai" => Some(ProviderKind::OpenAi),
            "ollama" => Some(ProviderKind::Ollama),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    /// The base URL used when none is configured.
    pub fn default_base(self) -> String {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1".to_string(),
            ProviderKind::Ollama => std::env::var("OLLAMA_HOST")
                .ok()
                .filter(|h| !h.trim().is_empty())
                .map(|h| ollama_host_to_base(&h))
                .unwrap_or_else(|| "http://localhost:11434".to_string()),
            ProviderKind::Anthropic => "https://api.anthropic.com".to_string(),
        }
    }

    /// The environment variable that holds this provider's API key.
    pub fn key_variable(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Ollama => None,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `OLLAMA_HOST` may be `host`, `host:port` or a URL, and `0.0.0.0` (a bind address).
fn ollama_host_to_base(host: &str) -> String {
    let host = host
        .trim()
        .trim_end_matches('/')
        .replacen("0.0.0.0", "127.0.0.1", 1);
    if host.contains("://") {
        return host;
    }
    let authority = host.split('/').next().unwrap_or_default();
    if authority.contains(':') {
        format!("http://{host}")
    } else {
        format!("http://{host}:11434")
    }
}

/// A model named `provider/model`, such as `ollama/qwen2.5-coder:7b` or `openai/gpt-4o`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub provider: ProviderKind,
    pub model: String,
}

impl ModelSpec {
    pub fn parse(spec: &str) -> Result<ModelSpec, String> {
        let (provider, model) = spec.split_once('/').ok_or_else(|| {
            format!(
                "model `{spec}` has no provider: write it as provider/model, for example ollama/{spec} or openai/{spec}"
            )
        })?;
        let provider = ProviderKind::parse(provider).ok_or_else(|| {
            format!(
                "unknown provider `{provider}` in model `{spec}`: use openai/, ollama/ or anthropic/"
            )
        })?;
        if model.trim().is_empty() {
            return Err(format!("model `{spec}` names no model after the provider"));
        }
        Ok(ModelSpec {
            provider,
            model: model.to_string(),
        })
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// An API key: never printed, never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How to reach a model.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub spec: ModelSpec,
    pub api_base: String,
    pub api_key: Option<Secret>,
    pub connect_timeout: Duration,
    /// The longest gap allowed between two chunks of a stream (and before the first).
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// The most bytes of text and tool-call arguments one reply may have; a reply that goes
    /// on is cut there (and no single chunk of a stream may be much larger).
    pub max_reply_bytes: usize,
    /// The longest one reply may take, from sending the request to its last chunk.
    pub reply_timeout: Duration,
}

/// The most bytes one reply may have when nothing else is configured.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// The longest one reply may take when nothing else is configured.
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// The result of a tool call.
    Tool,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments, as the JSON text the model produced.
    pub arguments: String,
}

/// One message of the conversation (the system prompt travels apart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// What the engine asks of the model.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// The tools offered (none: the model proposes code as fenced blocks). The engine
    /// defines them; a provider only puts them in its own shape.
    pub tools: Vec<crate::protocol::ToolDef>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// The context window, for servers that size it per request (Ollama's `num_ctx`).
    pub context_window: Option<u32>,
    /// Images that go with result messages, for vision models (empty: none).
    pub images: Vec<vision::ResultImages>,
}

impl ChatRequest {
    /// The images that go with the message at `index`, if any.
    pub fn images_of(&self, index: usize) -> Option<&vision::ResultImages> {
        self.images.iter().find(|r| r.message == index)
    }
}

/// What streams back.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Reply text.
    Text(String),
    /// A fragment of a tool call: its id and name come once (or again), its arguments in
    /// pieces, all under the call's index.
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Usage {
        prompt_tokens: u64,
        completion_tokens: u64,
    },
    /// The request failed and will be tried again after `delay`.
    Retrying {
        attempt: u32,
        max: u32,
        delay: Duration,
        reason: String,
    },
}

/// A model the server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub id: String,
}

/// A configured provider.
pub struct Client {
    config: ProviderConfig,
    http: reqwest::Client,
}

impl Client {
    pub fn new(config: ProviderConfig) -> Result<Client, LlmError> {
        let http = transport::http_client(config.connect_timeout)?;
        Ok(Client { config, http })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Streams one reply. Events go to `on_event` as they arrive; the call returns when the
    /// reply is complete, or with the error that ended it (what streamed before stays
    /// delivered).
    pub async fn stream(
        &self,
        request: &ChatRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), LlmError> {
        let stream = async {
            match self.config.spec.provider {
                ProviderKind::OpenAi => {
                    openai::stream(&self.http, &self.config, request, on_event).await
                }
                ProviderKind::Ollama => {
                    ollama::stream(&self.http, &self.config, request, on_event).await
                }
                ProviderKind::Anthropic => {
                    anthropic::stream(&self.http, &self.config, request, on_event).await
                }
            }
        };
        // The whole reply, retries and all, within its time (what came stays delivered).
        tokio::time::timeout(self.config.reply_timeout, stream)
            .await
            .unwrap_or_else(|_| Err(transport::reply_timeout_error(&self.config)))
    }

    /// The models the server offers.
    pub async fn list_models(&self) -> Result<Vec<ModelInfo>, LlmError> {
        match self.config.spec.provider {
            ProviderKind::OpenAi => openai::list_models(&self.http, &self.config).await,
            ProviderKind::Ollama => ollama::list_models(&self.http, &self.config).await,
            ProviderKind::Anthropic => anthropic::list_models(&self.http, &self.config).await,
        }
    }
}

/// Joins a base URL and a path with exactly one slash between them.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_specs_parse_with_clear_errors() {
        let spec = ModelSpec::parse("ollama/qwen2.5-coder:7b").unwrap();
        assert_eq!(spec.provider, ProviderKind::Ollama);
        assert_eq!(spec.model, "qwen2.5-coder:7b");
        let spec = ModelSpec::parse("openai/meta-llama/Llama-3-8B").unwrap();
        assert_eq!(spec.model, "meta-llama/Llama-3-8B");
        assert!(
            ModelSpec::parse("gpt-4o")
                .unwrap_err()
                .contains("provider/model")
        );
        assert!(
            ModelSpec::parse("foo/bar")
                .unwrap_err()
                .contains("unknown provider")
        );
        assert!(
            ModelSpec::parse("openai/")
                .unwrap_err()
                .contains("names no model")
        );
    }

    #[test]
    fn ollama_host_forms() {
        assert_eq!(ollama_host_to_base("0.0.0.0"), "http://127.0.0.1:11434");
        assert_eq!(ollama_host_to_base("gpu-box:9999"), "http://gpu-box:9999");
        assert_eq!(
            ollama_host_to_base("https://ollama.example/"),
            "https://ollama.example"
        );
        assert_eq!(
            ollama_host_to_base("http://127.0.0.1:11434"),
            "http://127.0.0.1:11434"
        );
    }

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::new("sk-very-secret");
        assert_eq!(format!("{s:?}"), "Secret(***)");
    }
}
