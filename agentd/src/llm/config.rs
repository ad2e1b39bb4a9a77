//! The LLM settings: the `[llm]` section of agentd's settings file, with `LLM_MODEL`,
//! `LLM_BASE_URL` and `LLM_API_KEY` from the environment layered over it (the CLI does that
//! through its flags; [`LlmConfig::apply_vars`] for other callers).
//!
//! ```toml
//! [llm]
//! model = "gpt-4o"                      # as the server knows it
//! base_url = "https://api.openai.com/v1" # any OpenAI-compatible server (vLLM, Ollama, LiteLLM, OpenRouter)
//! api_key = "sk-..."                    # sent as `Authorization: Bearer ...`
//! tool_calling = "prompted"             # native | prompted; default: by model name (features.rs)
//! vision = false
//! temperature = 0.0                     # default 0; dropped for reasoning models (o1/o3/o4/gpt-5)
//! top_p = 1.0
//! max_output_tokens = 4096
//! max_input_tokens = 128000             # context window, reported in the metrics
//! reasoning_effort = "high"             # low | medium | high, sent when set
//! seed = 42
//! timeout = 300                         # seconds, per HTTP call
//! num_retries = 5                       # retries after the first call (429, 5xx, connection, timeout)
//! retry_min_wait = 8                    # seconds; wait n = clamp(multiplier * 2^(n-1), min, max)
//! retry_max_wait = 64                   # also caps a server's Retry-After
//! retry_multiplier = 8
//! log_completions_folder = "logs/llm"   # one JSON file per call: request, response, cost, latency
//! dump_requests_folder = "dump"         # each request body exactly as sent: 000001.json, ...
//! in_context_example = true             # prompted mode: the worked example in the first user message
//! extra_headers = { "X-Title" = "agentd" }
//!
//! [llm.prices."gpt-4o"]                 # USD per token, by model name (or its part after the last '/')
//! input_cost_per_token = 2.5e-6
//! output_cost_per_token = 1e-5
//! cache_read_cost_per_token = 1.25e-6   # default: the input price
//! cache_write_cost_per_token = 3.125e-6 # default: the input price
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::features;

/// How tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ToolCalling {
    /// `tools` in the request, `tool_calls` in the answer, results as `role=tool`.
    Native,
    /// The schemas rendered into the system prompt, `<function=...>` calls parsed from the
    /// text, results as user messages `EXECUTION RESULT of [NAME]:`.
    Prompted,
}

/// Prices of one model, in USD per token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per prompt token not read from the cache.
    pub(crate) input_cost_per_token: f64,
    /// Per generated token.
    pub(crate) output_cost_per_token: f64,
    /// Per prompt token read from the cache (default: the input price).
    #[serde(default)]
    pub(crate) cache_read_cost_per_token: Option<f64>,
    /// Per prompt token written to the cache (default: the input price).
    #[serde(default)]
    pub(crate) cache_write_cost_per_token: Option<f64>,
}

/// Settings of an [`Llm`](super::Llm) (the `[llm]` section of the settings file; see the
/// module docs for every key). `Debug` does not show the API key.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// The model name as the server knows it (may come from `LLM_MODEL` instead).
    #[serde(default)]
    pub model: String,
    /// The server's base URL (`.../v1`); `/chat/completions` is appended.
    #[serde(default = "default_base_url")]
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY`.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Native or prompted tool calling; `None` chooses by model name
    /// ([`supports_native_tool_calling`](super::features::supports_native_tool_calling)).
    #[serde(default)]
    pub tool_calling: Option<ToolCalling>,
    /// Whether the model takes images.
    #[serde(default)]
    pub(crate) vision: bool,
    /// Longest wait for one HTTP call (seconds in TOML).
    #[serde(default = "default_timeout", with = "secs")]
    pub(crate) timeout: Duration,
    /// Folder to write every request/response pair to (OpenHands' `log_completions`).
    #[serde(default)]
    pub(crate) log_completions_folder: Option<PathBuf>,
    /// Folder to write each request body to, exactly as sent, one numbered file per call
    /// (`--dump-requests DIR`).
    #[serde(default)]
    pub dump_requests_folder: Option<PathBuf>,
    /// Sampling temperature (default 0; not sent to reasoning models).
    #[serde(default = "default_temperature")]
    pub(crate) temperature: Option<f64>,
    /// Nucleus sampling (not sent to reasoning models).
    #[serde(default)]
    pub(crate) top_p: Option<f64>,
    /// Most tokens to generate (`max_tokens`, or `max_completion_tokens` for reasoning models).
    #[serde(default)]
    pub(crate) max_output_tokens: Option<u32>,
    /// The model's context window, reported as `context_window` in the metrics.
    #[serde(default)]
    pub(crate) max_input_tokens: Option<u64>,
    /// `low`, `medium` or `high`, sent as `reasoning_effort` when set.
    #[serde(default)]
    pub(crate) reasoning_effort: Option<String>,
    /// Seed for reproducible sampling, where the server supports it.
    #[serde(default)]
    pub(crate) seed: Option<i64>,
    /// Retries after the first call, for errors a retry can fix.
    #[serde(default = "default_num_retries")]
    pub(crate) num_retries: u32,
    /// Shortest wait before a retry (seconds in TOML).
    #[serde(default = "default_retry_min_wait", with = "secs")]
    pub(crate) retry_min_wait: Duration,
    /// Longest wait before a retry, also the cap on a server's `Retry-After` (seconds in TOML).
    #[serde(default = "default_retry_max_wait", with = "secs")]
    pub(crate) retry_max_wait: Duration,
    /// Retry `n` (from 1) waits `retry_multiplier * 2^(n-1)` seconds, clamped to the two
    /// bounds above.
    #[serde(default = "default_retry_multiplier")]
    pub(crate) retry_multiplier: f64,
    /// Prices by model name (exact, else the part after the last `/`), in USD per token.
    #[serde(default)]
    pub(crate) prices: BTreeMap<String, Price>,
    /// Prompted mode: put the worked example in the first user message (default: yes, except
    /// for models whose name contains `openhands-lm`, which were trained on the format).
    #[serde(default)]
    pub(crate) in_context_example: Option<bool>,
    /// More headers for every request (`api-key` for Azure, `HTTP-Referer` for OpenRouter...).
    #[serde(default)]
    pub(crate) extra_headers: BTreeMap<String, String>,
    /// `[llm.router]`: other models that take some of this one's requests.
    #[serde(default)]
    pub router: Option<RouterConfig>,
}

/// `[llm.router]`: a request carrying images goes to `vision`; a request over this model's
/// context window goes to `fallback` (and every later one: once the history outgrew the
/// window, it does not shrink back). Each is a whole `[llm]` section of its own.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    /// The model for requests with images (`[llm.router.vision]`).
    #[serde(default)]
    pub vision: Option<Box<LlmConfig>>,
    /// The model for requests over the main model's context window (`[llm.router.fallback]`).
    #[serde(default)]
    pub fallback: Option<Box<LlmConfig>>,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("tool_calling", &self.tool_calling)
            .field("vision", &self.vision)
            .field("timeout", &self.timeout)
            .field("temperature", &self.temperature)
            .field("top_p", &self.top_p)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("num_retries", &self.num_retries)
            .field("log_completions_folder", &self.log_completions_folder)
            .field("dump_requests_folder", &self.dump_requests_folder)
            .finish_non_exhaustive()
    }
}

/// The endpoint when none is configured: OpenAI's.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

fn default_base_url() -> String {
    DEFAULT_BASE_URL.to_owned()
}
fn default_timeout() -> Duration {
    Duration::from_secs(300)
}
fn default_temperature() -> Option<f64> {
    Some(0.0)
}
fn default_num_retries() -> u32 {
    5
}
fn default_retry_min_wait() -> Duration {
    Duration::from_secs(8)
}
fn default_retry_max_wait() -> Duration {
    Duration::from_secs(64)
}
fn default_retry_multiplier() -> f64 {
    8.0
}

mod secs {
    use serde::{Deserialize, Deserializer, de::Error};
    use std::time::Duration;
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(D::Error::custom)
    }
}

impl LlmConfig {
    /// Sets the sampling temperature (a conversation's own setting).
    pub fn set_temperature(&mut self, temperature: f64) {
        self.temperature = Some(temperature);
    }

    /// These settings for another service of the run on the same model (the condenser's): no
    /// router (the agent's client routes its own requests), and request dumps and completion
    /// logs in a subfolder named after the service, where the other client's numbered files
    /// cannot collide with its own.
    pub fn for_service(&self, service_id: &str) -> LlmConfig {
        let mut config = self.clone();
        config.router = None;
        config.dump_requests_folder = self
            .dump_requests_folder
            .as_ref()
            .map(|d| d.join(service_id));
        config.log_completions_folder = self
            .log_completions_folder
            .as_ref()
            .map(|d| d.join(service_id));
        config
    }

    /// Settings for `model` at `base_url`, everything else at its default.
    pub fn new(model: impl Into<String>, base_url: impl Into<String>) -> LlmConfig {
        LlmConfig {
            model: model.into(),
            base_url: base_url.into(),
            api_key: None,
            tool_calling: None,
            vision: false,
            timeout: default_timeout(),
            log_completions_folder: None,
            dump_requests_folder: None,
            temperature: default_temperature(),
            top_p: None,
            max_output_tokens: None,
            max_input_tokens: None,
            reasoning_effort: None,
            seed: None,
            num_retries: default_num_retries(),
            retry_min_wait: default_retry_min_wait(),
            retry_max_wait: default_retry_max_wait(),
            retry_multiplier: default_retry_multiplier(),
            prices: BTreeMap::new(),
            in_context_example: None,
            extra_headers: BTreeMap::new(),
            router: None,
        }
    }

    /// Overrides model, base URL and API key with the variables `LLM_MODEL`, `LLM_BASE_URL`
    /// and `LLM_API_KEY` that `var` gives and that are not empty (for callers that keep their
    /// own environment; the CLI reads these variables through its flags).
    #[cfg(test)]
    pub(crate) fn apply_vars(&mut self, var: impl Fn(&str) -> Option<String>) {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if let Some(model) = get("LLM_MODEL") {
            self.model = model;
        }
        if let Some(base_url) = get("LLM_BASE_URL") {
            self.base_url = base_url;
        }
        if let Some(api_key) = get("LLM_API_KEY") {
            self.api_key = Some(api_key);
        }
    }

    /// The tool-calling mode: the configured one, else by model name.
    pub(crate) fn effective_tool_calling(&self) -> ToolCalling {
        self.tool_calling.unwrap_or_else(|| {
            if features::supports_native_tool_calling(&self.model) {
                ToolCalling::Native
            } else {
                ToolCalling::Prompted
            }
        })
    }

    /// The price of the configured model: by its exact name, else by its name after the last
    /// `/` (`openrouter/openai/gpt-4o` finds `gpt-4o`).
    pub(crate) fn price(&self) -> Option<Price> {
        if let Some(price) = self.prices.get(&self.model) {
            return Some(*price);
        }
        let base = self.model.rsplit('/').next().unwrap_or(&self.model);
        self.prices.get(base).copied()
    }

    /// The URL requests go to: the base URL with `/chat/completions` appended (unless it
    /// already ends with it).
    pub(crate) fn completions_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/chat/completions") {
            base.to_owned()
        } else {
            format!("{base}/chat/completions")
        }
    }
}
