//! The LLM registry (OpenHands' `LLMRegistry` and `ConversationStats`): every model a run
//! uses, by service id — `agent` (the agent; its delegates share it), `llm_for_routing.{name}`
//! (its router's models), `condenser` (the LLM summarising condenser's) — each with its own
//! metrics, summed into the conversation's stats (cost, tokens, latency), which the state
//! keeps (`stats` in `state.json`) and `agentd run` reports at the end. Their summed cost is
//! what the run's budget counts.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::{Llm, LlmConfig, LlmError, Metrics};

/// The agent's service (its delegates share it).
pub const AGENT_SERVICE: &str = "agent";
/// The service of a condenser that calls a model (the LLM summarising one).
pub const CONDENSER_SERVICE: &str = "condenser";

/// A service asked for in a way the registry cannot serve; the caller's mistake, retrying
/// cannot help.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The id is taken by another model.
    #[error("Requesting same service ID {0} with different config, use a new service ID")]
    DifferentConfig(String),
    /// A new id without settings.
    #[error("Requesting new LLM without specifying LLM config")]
    NoConfig,
    /// The settings do not make a client.
    #[error(transparent)]
    Llm(#[from] LlmError),
}

/// The run's models by service id; clones share it.
#[derive(Debug, Clone, Default)]
pub struct LlmRegistry {
    services: Arc<Mutex<BTreeMap<String, Llm>>>,
}

impl LlmRegistry {
    /// The model of `service_id`: the registered one (the same model and endpoint as `config`,
    /// if given), or a new one made of `config` — with its router's models registered as
    /// `llm_for_routing.{name}`.
    pub fn get(&self, service_id: &str, config: Option<&LlmConfig>) -> Result<Llm, RegistryError> {
        let mut services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(llm) = services.get(service_id) {
            let same = config.is_none_or(|c| {
                c.model == llm.inner.config.model && c.base_url == llm.inner.config.base_url
            });
            return if same {
                Ok(llm.clone())
            } else {
                Err(RegistryError::DifferentConfig(service_id.to_string()))
            };
        }
        let config = config.ok_or(RegistryError::NoConfig)?;
        let llm = Llm::new(config.clone())?;
        for (name, target) in llm.routed() {
            services.insert(format!("llm_for_routing.{name}"), target);
        }
        services.insert(service_id.to_string(), llm.clone());
        Ok(llm)
    }

    /// What every service has cost so far, together (USD): the conversation's spending, which
    /// the budget counts.
    pub(crate) fn accumulated_cost(&self) -> f64 {
        let services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        services
            .values()
            .map(|llm| llm.metrics().accumulated_cost)
            .sum()
    }

    /// Each service's metrics and their sum, as JSON: `{"services": {ID: SUMMARY},
    /// "total": SUMMARY}`, a summary being `model`, `accumulated_cost`, `prompt_tokens`,
    /// `completion_tokens`, `cache_read_tokens`, `cache_write_tokens`, `calls`, `latency` (s).
    pub fn stats(&self) -> Value {
        let services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        let mut total = Summary::default();
        let mut each = serde_json::Map::new();
        for (id, llm) in services.iter() {
            let summary = Summary::of(&llm.metrics());
            total.add(&summary);
            each.insert(id.clone(), summary.to_json(llm.model()));
        }
        json!({"services": each, "total": total.to_json("")})
    }
}

#[derive(Debug, Default)]
struct Summary {
    cost: f64,
    prompt: u64,
    completion: u64,
    cache_read: u64,
    cache_write: u64,
    calls: usize,
    latency: f64,
}

impl Summary {
    fn of(metrics: &Metrics) -> Summary {
        let usage = &metrics.accumulated_token_usage;
        Summary {
            cost: metrics.accumulated_cost,
            prompt: usage.prompt_tokens,
            completion: usage.completion_tokens,
            cache_read: usage.cache_read_tokens,
            cache_write: usage.cache_write_tokens,
            calls: metrics.response_latencies.len(),
            latency: metrics.response_latencies.iter().map(|l| l.latency).sum(),
        }
    }

    fn add(&mut self, other: &Summary) {
        self.cost += other.cost;
        self.prompt += other.prompt;
        self.completion += other.completion;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.calls += other.calls;
        self.latency += other.latency;
    }

    fn to_json(&self, model: &str) -> Value {
        let mut value = json!({
            "accumulated_cost": self.cost,
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "calls": self.calls,
            "latency": self.latency,
        });
        if !model.is_empty() {
            value["model"] = Value::String(model.to_string());
        }
        value
    }
}
