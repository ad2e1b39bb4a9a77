//! Why a completion failed: [`LlmError`] at the boundary, carrying an [`ErrorKind`] (which has
//! OpenHands' error type name), and the classification of one attempt's failure (HTTP status,
//! body, transport error) into a kind and whether a retry can help.

use std::time::Duration;

use protocol::llm::ErrorBody;

/// Why a completion failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The model's answer holds a tool call that does not parse or does not fit the tool's
    /// schema (unknown tool, missing or unknown parameter, wrong type or value). Retrying the
    /// same request does not help; showing the model this message (an error observation) does.
    #[error("{0}")]
    ToolCallFormat(String),
    /// Anything else. Errors a retry can fix (see [`ErrorKind::is_retryable`]) were already
    /// retried `num_retries` times; the others were not, and retrying them does not help (a
    /// [`ErrorKind::ContextWindowExceeded`] needs a shorter history).
    #[error("{kind}: {message}")]
    Failed {
        /// What kind of failure.
        kind: ErrorKind,
        /// What went wrong.
        message: String,
    },
}

impl LlmError {
    /// The kind: `kind` of [`LlmError::Failed`], [`ErrorKind::FunctionCallValidation`] for
    /// [`LlmError::ToolCallFormat`].
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            LlmError::ToolCallFormat(_) => ErrorKind::FunctionCallValidation,
            LlmError::Failed { kind, .. } => *kind,
        }
    }

    /// Whether the prompt did not fit the model's context window (the caller should condense
    /// the history).
    pub(crate) fn is_context_window_exceeded(&self) -> bool {
        self.kind() == ErrorKind::ContextWindowExceeded
    }

    pub(crate) fn config(message: impl Into<String>) -> LlmError {
        LlmError::Failed {
            kind: ErrorKind::Config,
            message: message.into(),
        }
    }
}

/// The kinds of failure, each with the error type name OpenHands (litellm) reports it under
/// ([`ErrorKind::name`], also its `Display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `RateLimitError` (429); retryable unless the quota is exhausted.
    RateLimit,
    /// `APIConnectionError`: no HTTP answer at all; retryable.
    Connection,
    /// `Timeout` (408, 504, or no answer in time); retryable.
    Timeout,
    /// `InternalServerError` (5xx); retryable.
    InternalServer,
    /// `ServiceUnavailableError` (503); retryable.
    ServiceUnavailable,
    /// `LLMNoResponseError`: an answer without choices or content; retryable.
    NoResponse,
    /// `AuthenticationError` (401).
    Authentication,
    /// `PermissionDeniedError` (403).
    PermissionDenied,
    /// `BadRequestError` (400, 422).
    BadRequest,
    /// `NotFoundError` (404).
    NotFound,
    /// `ContextWindowExceededError`: the prompt is longer than the model takes.
    ContextWindowExceeded,
    /// `APIError`: anything else the server or the exchange got wrong.
    Api,
    /// `ConfigError`: the client's settings are unusable.
    Config,
    /// `FunctionCallValidationError`: a malformed tool call ([`LlmError::ToolCallFormat`]).
    FunctionCallValidation,
}

impl ErrorKind {
    /// The error type name, as OpenHands/litellm report it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ErrorKind::RateLimit => "RateLimitError",
            ErrorKind::Connection => "APIConnectionError",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::InternalServer => "InternalServerError",
            ErrorKind::ServiceUnavailable => "ServiceUnavailableError",
            ErrorKind::NoResponse => "LLMNoResponseError",
            ErrorKind::Authentication => "AuthenticationError",
            ErrorKind::PermissionDenied => "PermissionDeniedError",
            ErrorKind::BadRequest => "BadRequestError",
            ErrorKind::NotFound => "NotFoundError",
            ErrorKind::ContextWindowExceeded => "ContextWindowExceededError",
            ErrorKind::Api => "APIError",
            ErrorKind::Config => "ConfigError",
            ErrorKind::FunctionCallValidation => "FunctionCallValidationError",
        }
    }

    /// Whether another attempt can succeed (for most errors of the kind: an exhausted quota
    /// is a [`ErrorKind::RateLimit`] that cannot).
    pub(crate) fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimit
                | ErrorKind::Connection
                | ErrorKind::Timeout
                | ErrorKind::InternalServer
                | ErrorKind::ServiceUnavailable
                | ErrorKind::NoResponse
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One failed attempt.
#[derive(Debug, Clone)]
pub(crate) struct AttemptError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    /// Whether another attempt can succeed.
    pub(crate) retryable: bool,
    /// The server's `Retry-After` (or `retry-after-ms`).
    pub(crate) retry_after: Option<Duration>,
}

impl AttemptError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> AttemptError {
        AttemptError {
            kind,
            message: message.into(),
            retryable: kind.is_retryable(),
            retry_after: None,
        }
    }

    /// A transport failure: no HTTP answer at all.
    pub(crate) fn transport(error: &reqwest::Error) -> AttemptError {
        let kind = if error.is_timeout() {
            ErrorKind::Timeout
        } else {
            ErrorKind::Connection
        };
        AttemptError::new(kind, error_chain(error))
    }

    /// A non-2xx answer (or a 2xx whose body is an error object, as OpenRouter sends).
    pub(crate) fn http(status: u16, body: &str, retry_after: Option<Duration>) -> AttemptError {
        let detail = serde_json::from_str::<ErrorBody>(body)
            .ok()
            .map(|b| b.error)
            .filter(|e| !e.message.is_empty());
        let message = match &detail {
            Some(detail) => format!("HTTP {status}: {}", detail.message),
            None => format!("HTTP {status}: {}", truncate(body.trim(), 1000)),
        };
        let code = detail
            .as_ref()
            .and_then(|d| d.code.as_ref())
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
            .unwrap_or_default();
        let kind = match status {
            400 | 413 | 422 if is_context_window_message(body) => ErrorKind::ContextWindowExceeded,
            413 => ErrorKind::ContextWindowExceeded,
            400 | 422 => ErrorKind::BadRequest,
            401 => ErrorKind::Authentication,
            403 => ErrorKind::PermissionDenied,
            404 => ErrorKind::NotFound,
            408 => ErrorKind::Timeout,
            429 => ErrorKind::RateLimit,
            503 => ErrorKind::ServiceUnavailable,
            504 => ErrorKind::Timeout,
            500..=599 => ErrorKind::InternalServer,
            _ => ErrorKind::Api,
        };
        let mut error = AttemptError::new(kind, message);
        error.retry_after = retry_after;
        // OpenAI answers an exhausted quota with 429: waiting does not refill it.
        if kind == ErrorKind::RateLimit
            && (code == "insufficient_quota" || body.contains("insufficient_quota"))
        {
            error.retryable = false;
        }
        error
    }

    pub(crate) fn into_error(self, attempts: u32) -> LlmError {
        let message = if self.retryable && attempts > 1 {
            format!("{} (gave up after {attempts} attempts)", self.message)
        } else {
            self.message
        };
        LlmError::Failed {
            kind: self.kind,
            message,
        }
    }
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// Whether an error body says the prompt is longer than the context window, in the words of
/// OpenAI, vLLM, Anthropic, Ollama, LiteLLM and friends.
pub(crate) fn is_context_window_message(body: &str) -> bool {
    const NEEDLES: &[&str] = &[
        "context_length_exceeded",
        "context length",
        "context window",
        "context_window",
        "maximum context",
        "contextwindowexceedederror",
        "prompt is too long",
        "input is too long",
        "too many tokens",
        "exceeds the maximum number of tokens",
        "input length and `max_tokens` exceed context limit",
        "please reduce the length",
        "reduce the length of the messages",
    ];
    let body = body.to_lowercase();
    NEEDLES.iter().any(|needle| body.contains(needle))
}

/// `error` and its sources, `: `-separated (reqwest's own text hides the cause).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests;
