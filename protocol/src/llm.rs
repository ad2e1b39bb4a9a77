//! The OpenAI chat-completions wire shapes (`POST {base_url}/chat/completions`), as spoken by
//! OpenAI, vLLM, Ollama, LiteLLM's proxy and OpenRouter: the request agentd sends, the response
//! it reads, and the messages and tool calls inside both.
//!
//! Only the fields agentd uses are typed; a response's unknown keys are ignored on decode, and
//! every optional request field is left out when unset, so servers that reject unknown or
//! `null` parameters accept the request.

use serde::{Deserialize, Serialize};

/// Who speaks a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user, and (prompted tool calling) tool results.
    User,
    /// The model.
    Assistant,
    /// A tool's result, paired with the assistant's call by `tool_call_id`.
    Tool,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The speaker.
    pub role: Role,
    /// The text, or text and image parts. An assistant message that only calls tools may have
    /// none (`null` on the wire).
    #[serde(default)]
    pub content: Option<Content>,
    /// The tools an assistant message calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Of a `tool` message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Of a `tool` message: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model's reasoning, where the server returns it apart from the content (vLLM,
    /// DeepSeek, OpenRouter); never sent back.
    #[serde(default, skip_serializing)]
    pub reasoning_content: Option<String>,
}

impl Message {
    /// A message of `role` with plain text.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: Some(Content::Text(text.into())),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            reasoning_content: None,
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Message {
        Message::text(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Message {
        Message::text(Role::User, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message::text(Role::Assistant, text)
    }

    /// A tool result for the call `tool_call_id` of tool `name`.
    pub fn tool(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Message {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            name: Some(name.into()),
            ..Message::text(Role::Tool, text)
        }
    }
}

/// A message's content: plain text, or a list of parts (text and images).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts, in order.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text: a plain text as it is, parts' texts joined by `separator` (images left out).
    pub fn text_joined(&self, separator: &str) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::ImageUrl { .. } => None,
                })
                .collect::<Vec<_>>()
                .join(separator),
        }
    }
}

/// One part of a [`Content::Parts`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by URL (`https://...` or `data:image/png;base64,...`).
    ImageUrl {
        /// The image.
        image_url: ImageUrl,
    },
}

/// The image of a [`ContentPart::ImageUrl`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// `https://...` or a `data:` URL.
    pub url: String,
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for the call; the tool result quotes it.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

/// The function a [`ToolCall`] calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object as text (as the model wrote it: it may not parse).
    #[serde(default)]
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `"function"`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function.
    pub function: FunctionDef,
}

/// A function's name, description and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    /// The name the model calls it by.
    pub name: String,
    /// What it does and when to use it.
    #[serde(default)]
    pub description: String,
    /// A JSON schema of its arguments (an `object`).
    #[serde(default)]
    pub parameters: serde_json::Value,
}

impl Tool {
    /// The function `name`, which does what `description` says, taking arguments of the JSON
    /// schema `parameters`.
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Tool {
        Tool {
            kind: function(),
            function: FunctionDef {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

fn function() -> String {
    "function".to_owned()
}

/// Body of `POST /chat/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model name, as the server knows it.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools (native tool calling); absent when the model is prompted instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// `"auto"` when tools are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Most tokens to generate, reasoning included: OpenAI's reasoning models (o-series,
    /// GPT-5) take this instead of `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// `low`, `medium` or `high`, for reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Stop sequences (prompted tool calling stops after a call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// Seed for reproducible sampling, where supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
}

/// Body of a successful `POST /chat/completions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The response id.
    #[serde(default)]
    pub id: String,
    /// The model that answered.
    #[serde(default)]
    pub model: String,
    /// Unix time of the response.
    #[serde(default)]
    pub created: i64,
    /// The answers (agentd asks for one).
    #[serde(default)]
    pub choices: Vec<Choice>,
    /// Token counts, when the server reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One answer of a [`ChatResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Its index.
    #[serde(default)]
    pub index: u32,
    /// The assistant's message.
    pub message: Message,
    /// `stop`, `length`, `tool_calls`, ...
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// Token counts of one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens generated.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Their sum.
    #[serde(default)]
    pub total_tokens: u64,
    /// Details of the prompt tokens (cached ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// Prompt tokens written to the provider's cache (Anthropic through LiteLLM's proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// The call's cost in USD, where the server reports it (OpenRouter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptTokensDetails {
    /// Prompt tokens read from the provider's cache.
    pub cached_tokens: u64,
}

/// Body of an error answer: `{"error": {"message", "type", "code"}}` (servers vary; any field
/// may be missing).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The `error` of an [`ErrorBody`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// The error's type (`invalid_request_error`, `rate_limit_error`...).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// A code (a string or a number, depending on the server).
    #[serde(default)]
    pub code: Option<serde_json::Value>,
}
