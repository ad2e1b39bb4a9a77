//! The LLM client: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
//! LiteLLM's proxy, OpenRouter), with retries, metrics, and tool calling either native
//! (`tools`/`tool_calls`/`role=tool`) or prompted (the tool schemas in the system prompt, calls
//! parsed back from the text), so that the agent sees the same [`Completion`] in both modes.
//!
//! One [`Llm::completion`] call:
//!
//! 1. builds the request from native messages (prompted mode: [`prompted::to_prompted`], no
//!    `tools`, stop word `</function`), secret values masked ([`Llm::with_secret_mask`]);
//!    writes it to `dump_requests_folder` if set;
//! 2. sends it, retrying errors a retry can fix (429, 5xx, connection errors, timeouts, empty
//!    answers) with exponential backoff and the server's `Retry-After` (capped), telling the
//!    retry listener before each wait; never retrying 400/401/403/404 or a full context window;
//! 3. records tokens, cost (the `[llm.prices]` table, else the cost the server reports) and
//!    latency in the shared [`Metrics`]; logs the pair to `log_completions_folder` if set;
//! 4. answers the assistant message in native form (prompted mode: the call parsed from the
//!    text, [`prompted::parse_answer`]), or [`LlmError::ToolCallFormat`] for a malformed call.

mod config;
mod error;
pub(crate) mod features;
mod metrics;
pub(crate) mod prompted;
mod record;
mod registry;
mod router;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
pub use config::{DEFAULT_BASE_URL, LlmConfig, ToolCalling};
use error::AttemptError;
pub use error::{ErrorKind, LlmError};
pub(crate) use metrics::Metrics;
pub(crate) use protocol::llm::{ChatRequest, ChatResponse, Content, Message, Role, Tool};
use record::{CompletionLog, RequestDump};
pub use registry::{AGENT_SERVICE, CONDENSER_SERVICE, LlmRegistry, RegistryError, Stats};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::secrets::SecretMask;

/// One answer of the model, in native form whatever the mode.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    /// The assistant message: its text (in prompted mode, the text before the call) and its
    /// tool calls (in prompted mode, parsed from the text, with generated ids).
    pub(crate) message: Message,
    /// The whole response (in prompted mode, with the message replaced by the native form):
    /// `model_response` of the actions' `ToolCallMetadata`.
    pub(crate) response: ChatResponse,
    /// The metrics for the actions: the accumulated cost and token usage after this call, and
    /// lists (`costs`, `response_latencies`, `token_usages`) holding only this call's entries.
    /// [`Metrics::to_json`] makes an action's `llm_metrics` of them.
    pub(crate) metrics: Metrics,
}

/// What the retry listener is told before each wait.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// How many attempts there will be at most (`num_retries + 1`).
    pub max_attempts: u32,
    /// How long the client waits before the next attempt.
    pub wait: Duration,
    /// The error, `"{kind}: {message}"`.
    pub error: String,
}

/// Called before each retry (for progress displays).
pub(crate) type RetryListener = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// A chat-completions client; cheap to clone (clones share metrics and the HTTP connection
/// pool).
#[derive(Clone)]
pub struct Llm {
    inner: Arc<Inner>,
    listener: Option<RetryListener>,
    /// Secret values masked in every request body (sent and dumped) and completion log.
    mask: SecretMask,
}

struct Inner {
    config: LlmConfig,
    tool_calling: ToolCalling,
    url: String,
    http: reqwest::Client,
    metrics: Mutex<Metrics>,
    dump: Option<RequestDump>,
    log: Option<CompletionLog>,
    router: Option<router::Router>,
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("config", &self.inner.config)
            .field("tool_calling", &self.inner.tool_calling)
            .field("url", &self.inner.url)
            .field("retry_listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

/// A successful HTTP answer with at least one choice.
struct Answer {
    response: ChatResponse,
    raw: Value,
    latency: Duration,
    header_cost: Option<f64>,
}

impl Llm {
    /// A client for `config`. Fails (`ConfigError`) without a model, with a base URL that is
    /// not `http(s)://`, a key or header that cannot be sent, or folders that cannot be made.
    pub fn new(config: LlmConfig) -> Result<Llm, LlmError> {
        if config.model.trim().is_empty() {
            return Err(LlmError::config(
                "no model: set `model` in [llm] or LLM_MODEL",
            ));
        }
        let url = config.completions_url();
        match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
            _ => {
                return Err(LlmError::config(format!(
                    "base URL {:?} is not an http(s) URL",
                    config.base_url
                )));
            }
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| LlmError::config("the API key has characters a header cannot hold"))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in &config.extra_headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| LlmError::config(format!("bad header name {name:?}")))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| LlmError::config(format!("bad value for header {name}")))?;
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(30)))
            .default_headers(headers)
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::config(format!("cannot build the HTTP client: {e}")))?;
        let dump = open_folder(
            &config.dump_requests_folder,
            "request dumps",
            RequestDump::open,
        )?;
        let log = open_folder(
            &config.log_completions_folder,
            "completion logs",
            CompletionLog::open,
        )?;
        let tool_calling = config.effective_tool_calling();
        let router = match &config.router {
            Some(settings) => Some(router::Router::new(settings)?),
            None => None,
        };
        tracing::debug!(model = %config.model, %url, ?tool_calling, "LLM client ready");
        Ok(Llm {
            inner: Arc::new(Inner {
                metrics: Mutex::new(Metrics::new(&config.model)),
                tool_calling,
                url,
                http,
                dump,
                log,
                config,
                router,
            }),
            listener: None,
            mask: SecretMask::default(),
        })
    }

    /// This client, masking `mask`'s secret values in what it sends and writes.
    pub fn with_secret_mask(mut self, mask: SecretMask) -> Llm {
        self.mask = mask;
        self
    }

    /// This client, telling `listener` before each retry.
    pub fn with_retry_listener(mut self, listener: RetryListener) -> Llm {
        self.listener = Some(listener);
        self
    }

    /// Native or prompted (the configured mode, else chosen by model name).
    pub(crate) fn tool_calling(&self) -> ToolCalling {
        self.inner.tool_calling
    }

    /// Whether images may be sent (to this model, or to its router's vision model).
    pub(crate) fn vision(&self) -> bool {
        self.inner.config.vision
            || self
                .inner
                .router
                .as_ref()
                .is_some_and(|r| r.vision.is_some())
    }

    /// The models of this client's router, by name (`vision`, `fallback`).
    pub(crate) fn routed(&self) -> Vec<(&'static str, Llm)> {
        self.inner
            .router
            .as_ref()
            .map(router::Router::targets)
            .unwrap_or_default()
    }

    /// The model's name.
    pub(crate) fn model(&self) -> &str {
        &self.inner.config.model
    }

    /// Everything spent so far, by this client and its clones (not its router's models).
    pub(crate) fn metrics(&self) -> Metrics {
        lock(&self.inner.metrics).clone()
    }

    /// The request [`completion`](Self::completion) sends for `messages` and `tools`.
    pub(crate) fn request(&self, messages: &[Message], tools: &[Tool]) -> ChatRequest {
        let config = &self.inner.config;
        let prompted = self.tool_calling() == ToolCalling::Prompted && !tools.is_empty();
        let reasoning = features::is_reasoning_model(&config.model);
        let messages = if prompted {
            let example = config
                .in_context_example
                .unwrap_or_else(|| !config.model.to_lowercase().contains("openhands-lm"));
            prompted::to_prompted(messages, tools, example)
        } else {
            messages.to_vec()
        };
        let native_tools = !prompted && !tools.is_empty();
        let stop = (prompted && features::supports_stop_words(&config.model)).then(|| {
            prompted::STOP_WORDS
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        });
        ChatRequest {
            model: config.model.clone(),
            messages,
            tools: native_tools.then(|| tools.to_vec()),
            tool_choice: native_tools.then(|| "auto".to_owned()),
            temperature: if reasoning { None } else { config.temperature },
            top_p: if reasoning { None } else { config.top_p },
            max_tokens: if reasoning {
                None
            } else {
                config.max_output_tokens
            },
            max_completion_tokens: if reasoning {
                config.max_output_tokens
            } else {
                None
            },
            reasoning_effort: config.reasoning_effort.clone(),
            stop,
            seed: config.seed,
        }
    }

    /// One completion of `messages` (native form: `role=tool` results, assistant `tool_calls`)
    /// with `tools` (may be empty), by this model or the one its router chooses. The
    /// completion's `accumulated_cost` is then that of all of them.
    pub(crate) async fn completion(
        &self,
        messages: Vec<Message>,
        tools: &[Tool],
    ) -> Result<Completion, LlmError> {
        match &self.inner.router {
            None => self.complete(messages, tools).await,
            Some(router) => router.completion(self, messages, tools).await,
        }
    }

    /// [`Llm::completion`] by this model itself.
    async fn complete(
        &self,
        messages: Vec<Message>,
        tools: &[Tool],
    ) -> Result<Completion, LlmError> {
        let config = &self.inner.config;
        let prompted = self.tool_calling() == ToolCalling::Prompted && !tools.is_empty();
        let request = self.request(&messages, tools);
        // The one place every request body is made: what is sent and what is dumped.
        let encode = |e: serde_json::Error| LlmError::Failed {
            kind: ErrorKind::Api,
            message: format!("cannot encode the request: {e}"),
        };
        let mut value = serde_json::to_value(&request).map_err(encode)?;
        self.mask.mask_json(&mut value);
        let body = serde_json::to_vec(&value).map_err(encode)?;
        let body = Bytes::from(body);
        if let Some(dump) = &self.inner.dump {
            dump.write(&body).await;
        }
        let started_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let answer = self.send_with_retries(body).await?;

        let mut response = answer.response;
        let usage = metrics::token_usage(
            &config.model,
            response.usage.as_ref(),
            config.max_input_tokens.unwrap_or(0),
            &response.id,
        );
        let reported = response.usage.as_ref().and_then(|u| u.cost);
        let cost = metrics::cost(config.price(), &usage, answer.header_cost, reported);
        tracing::debug!(
            model = %config.model,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            cache_read_tokens = usage.cache_read_tokens,
            cost,
            latency_ms = answer.latency.as_millis(),
            "LLM call done"
        );
        let metrics = lock(&self.inner.metrics).record(metrics::CallMetrics {
            usage,
            cost,
            latency: answer.latency,
            timestamp: started_at.as_secs_f64(),
        });

        // `send` guarantees a first choice.
        let converted = match response.choices.first_mut() {
            Some(choice) => {
                let truncated = choice.finish_reason.as_deref() == Some("length");
                let converted = if prompted {
                    from_prompted(&choice.message, tools, truncated)
                } else {
                    check_native(&choice.message, tools)
                };
                if let Ok(message) = &converted {
                    choice.message = message.clone();
                }
                converted
            }
            None => Err("the response has no choices".to_owned()),
        };

        if let Some(log) = &self.inner.log {
            let mut entry = serde_json::json!({
                "model": config.model,
                "messages": request.messages,
                "response": answer.raw,
                "kwargs": kwargs(&request),
                "timestamp": started_at.as_secs_f64(),
                "latency": answer.latency.as_secs_f64(),
                "cost": cost,
            });
            if prompted {
                entry["fncall_messages"] = serde_json::to_value(&messages).unwrap_or_default();
                entry["fncall_response"] = serde_json::to_value(&response).unwrap_or_default();
            }
            if let Err(error) = &converted {
                entry["tool_call_error"] = Value::String(error.clone());
            }
            self.mask.mask_json(&mut entry);
            log.write(&config.model, started_at.as_micros(), &entry)
                .await;
        }

        match converted {
            Ok(message) => Ok(Completion {
                message,
                response,
                metrics,
            }),
            Err(error) => {
                tracing::info!(model = %config.model, %error, "malformed tool call from the model");
                Err(LlmError::ToolCallFormat(error))
            }
        }
    }

    async fn send_with_retries(&self, body: Bytes) -> Result<Answer, LlmError> {
        let config = &self.inner.config;
        let max_attempts = config.num_retries.saturating_add(1);
        let mut attempt = 1;
        loop {
            let error = match self.send(body.clone()).await {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            if !error.retryable || attempt >= max_attempts {
                tracing::warn!(model = %config.model, attempt, %error, "LLM call failed");
                return Err(error.into_error(attempt));
            }
            let wait = self.backoff(attempt, error.retry_after);
            let notice = RetryNotice {
                attempt,
                max_attempts,
                wait,
                error: error.to_string(),
            };
            tracing::warn!(
                model = %config.model,
                attempt,
                max_attempts,
                wait_ms = wait.as_millis(),
                %error,
                "LLM call failed; retrying"
            );
            if let Some(listener) = &self.listener {
                listener(&notice);
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The wait after failed attempt `attempt` (from 1): the server's `Retry-After` if it
    /// sent one, else `multiplier * 2^(attempt-1)` seconds clamped to `[min, max]`; never
    /// more than `retry_max_wait`.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let config = &self.inner.config;
        let max = config.retry_max_wait;
        if let Some(after) = retry_after {
            return after.min(max);
        }
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = config.retry_multiplier * 2f64.powi(exponent.min(62));
        let wait = Duration::try_from_secs_f64(secs).unwrap_or(max);
        wait.clamp(config.retry_min_wait.min(max), max)
    }

    /// One attempt.
    async fn send(&self, body: Bytes) -> Result<Answer, AttemptError> {
        let started = Instant::now();
        let response = self
            .inner
            .http
            .post(&self.inner.url)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| AttemptError::transport(&e))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let header_cost = response
            .headers()
            .get("x-litellm-response-cost")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        let text = response
            .text()
            .await
            .map_err(|e| AttemptError::transport(&e))?;
        let latency = started.elapsed();
        if !(200..300).contains(&status) {
            return Err(AttemptError::http(status, &text, retry_after));
        }
        let raw: Value = serde_json::from_str(&text).map_err(|e| {
            let mut error = AttemptError::new(
                ErrorKind::Api,
                format!(
                    "the answer is not JSON ({e}): {}",
                    error::truncate(text.trim(), 300)
                ),
            );
            error.retryable = true;
            error
        })?;
        // Some servers (OpenRouter) answer 200 with an error object.
        if let Some(error) = raw.get("error").filter(|_| raw.get("choices").is_none()) {
            let code = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (400..600).contains(c))
                .unwrap_or(500);
            return Err(AttemptError::http(code, &text, retry_after));
        }
        let response: ChatResponse = serde_json::from_value(raw.clone()).map_err(|e| {
            let mut error = AttemptError::new(
                ErrorKind::Api,
                format!("the answer is not a chat completion: {e}"),
            );
            error.retryable = true;
            error
        })?;
        let Some(choice) = response.choices.first() else {
            return Err(AttemptError::new(
                ErrorKind::NoResponse,
                "the response has no choices",
            ));
        };
        let has_calls = choice
            .message
            .tool_calls
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        if !has_calls && text_of(choice.message.content.as_ref()).trim().is_empty() {
            return Err(AttemptError::new(
                ErrorKind::NoResponse,
                "the model's answer is empty",
            ));
        }
        Ok(Answer {
            response,
            raw,
            latency,
            header_cost,
        })
    }
}

/// The request's parameters other than the messages (the `kwargs` of the completion log).
fn kwargs(request: &ChatRequest) -> Value {
    let mut value = serde_json::to_value(request).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.remove("messages");
    }
    value
}

/// `retry-after-ms` (milliseconds, OpenAI) or `retry-after` (seconds, possibly fractional).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    number("retry-after").and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// `open` of `folder` when one is configured; `purpose` names it in the error.
fn open_folder<T, E: std::fmt::Display>(
    folder: &Option<PathBuf>,
    purpose: &str,
    open: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<Option<T>, LlmError> {
    folder
        .as_deref()
        .map(|dir| {
            open(dir).map_err(|e| {
                LlmError::config(format!("cannot use {} for {purpose}: {e}", dir.display()))
            })
        })
        .transpose()
}

/// A content's text (the text parts, joined).
pub(crate) fn text_of(content: Option<&Content>) -> String {
    content.map_or_else(String::new, |content| content.text_joined(""))
}

/// A prompted answer as a native assistant message.
fn from_prompted(message: &Message, tools: &[Tool], truncated: bool) -> Result<Message, String> {
    let text = text_of(message.content.as_ref());
    let parsed = prompted::parse_answer(&text, tools, truncated)?;
    Ok(Message {
        role: Role::Assistant,
        content: parsed.content.map(Content::Text),
        tool_calls: parsed.call.map(|call| vec![call]),
        tool_call_id: None,
        name: None,
        reasoning_content: message.reasoning_content.clone(),
    })
}

/// A native answer, checked: each call names a known tool (when tools were sent) and has a
/// JSON object as arguments (empty arguments become `{}`); missing ids are generated.
fn check_native(message: &Message, tools: &[Tool]) -> Result<Message, String> {
    let mut message = message.clone();
    for call in message.tool_calls.iter_mut().flatten() {
        let name = &call.function.name;
        if !tools.is_empty() && !tools.iter().any(|t| &t.function.name == name) {
            let names: Vec<&str> = tools.iter().map(|t| t.function.name.as_str()).collect();
            return Err(format!(
                "Function '{name}' not found in available tools: [{}].",
                names.join(", ")
            ));
        }
        if call.function.arguments.trim().is_empty() {
            call.function.arguments = "{}".to_owned();
        }
        match serde_json::from_str::<Value>(&call.function.arguments) {
            Ok(Value::Object(_)) => {}
            Ok(_) => {
                return Err(format!(
                    "The arguments of your call to '{name}' must be a JSON object."
                ));
            }
            Err(e) => {
                return Err(format!(
                    "The arguments of your call to '{name}' are not valid JSON ({e}). Call the function again with a JSON object as arguments."
                ));
            }
        }
        if call.id.is_empty() {
            call.id = prompted::unique_call_id();
        }
    }
    Ok(message)
}

fn lock(metrics: &Mutex<Metrics>) -> MutexGuard<'_, Metrics> {
    metrics
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
