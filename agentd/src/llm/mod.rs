//! The LLM client: any OpenAI-compatible chat-completions endpoint, with retries, metrics, and
//! tool calling either native (`tools`/`tool_calls`/`role=tool`) or prompted (the tool schemas
//! in the system prompt, calls parsed back from the text), so that the agent sees the same
//! [`Completion`] in both modes.
//!
//! SKELETON: the public API other modules code against; the implementation lands with the LLM
//! client work (issue 6).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use protocol::llm::{ChatResponse, Content, ContentPart, Message, Role, Tool, ToolCall};
use serde::Deserialize;

/// How tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCalling {
    /// `tools` in the request, `tool_calls` in the answer, results as `role=tool`.
    Native,
    /// The schemas rendered into the system prompt, `<function=...>` calls parsed from the
    /// text, results as user messages `EXECUTION RESULT of [NAME]:`.
    Prompted,
}

/// Settings of an [`Llm`] (the `[llm]` section of the settings file; `LLM_MODEL`,
/// `LLM_BASE_URL`, `LLM_API_KEY` in the environment).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// The model name as the server knows it.
    pub model: String,
    /// The server's base URL (`.../v1`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY`.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Native or prompted tool calling; `None` chooses by model name.
    #[serde(default)]
    pub tool_calling: Option<ToolCalling>,
    /// Whether the model takes images.
    #[serde(default)]
    pub vision: bool,
    /// Longest wait for one HTTP call.
    #[serde(default = "default_timeout", with = "secs")]
    pub timeout: Duration,
    /// Folder to write every request/response pair to.
    #[serde(default)]
    pub log_completions_folder: Option<PathBuf>,
}

fn default_timeout() -> Duration {
    Duration::from_secs(120)
}

mod secs {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs_f64(f64::deserialize(d)?))
    }
}

/// One answer of the model, in native form whatever the mode.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The assistant message: its text (in prompted mode, the text before the call) and its
    /// tool calls (in prompted mode, parsed from the text, with generated ids).
    pub message: Message,
    /// The whole response (in prompted mode, with the message replaced by the native form):
    /// `model_response` of the actions' `ToolCallMetadata`.
    pub response: ChatResponse,
    /// The accumulated metrics after this call (for `llm_metrics` of the actions).
    pub metrics: serde_json::Value,
}

/// Why a completion failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The model's text holds a tool call that does not parse (prompted mode). The model can
    /// do better: show it the message.
    #[error("{0}")]
    ToolCallFormat(String),
    /// Anything else, after the retries.
    #[error("{kind}: {message}")]
    Failed {
        /// The error type name, as OpenHands reports it (`RateLimitError`,
        /// `APIConnectionError`, `ContextWindowExceededError`...).
        kind: String,
        /// What went wrong.
        message: String,
    },
}

/// A chat-completions client; cheap to clone (clones share metrics).
#[derive(Debug, Clone)]
pub struct Llm {
    config: Arc<LlmConfig>,
}

impl Llm {
    /// A client for `config`.
    pub fn new(config: LlmConfig) -> Result<Llm, LlmError> {
        Ok(Llm {
            config: Arc::new(config),
        })
    }

    /// The settings.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// Native or prompted.
    pub fn tool_calling(&self) -> ToolCalling {
        self.config.tool_calling.unwrap_or(ToolCalling::Native)
    }

    /// Whether images may be sent.
    pub fn vision(&self) -> bool {
        self.config.vision
    }

    /// One completion of `messages` (native form: `role=tool` results, assistant `tool_calls`)
    /// with `tools` (may be empty).
    pub async fn completion(
        &self,
        _messages: Vec<Message>,
        _tools: &[Tool],
    ) -> Result<Completion, LlmError> {
        Err(LlmError::Failed {
            kind: "NotImplemented".to_string(),
            message: "the LLM client is a skeleton".to_string(),
        })
    }
}
