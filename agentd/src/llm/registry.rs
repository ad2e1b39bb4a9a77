//! The LLM registry (OpenHands' `LLMRegistry` and `ConversationStats`): every model a run
//! uses, by service id — `agent` (the agent; its delegates share it), `llm_for_routing.{name}`
//! (its router's models), `condenser` (the LLM summarising condenser's) — each with its own
//! metrics, summed into the conversation's stats (cost, tokens, latency), which the state
//! keeps (`stats` in `state.json`) and `agentd run` reports at the end. Their summed cost is
//! what the run's budget counts.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

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

    /// Each service's metrics and their sum.
    pub fn stats(&self) -> Stats {
        let services = self.services.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stats = Stats::default();
        for (id, llm) in services.iter() {
            let summary = ServiceStats::of(&llm.metrics(), llm.model());
            stats.total.add(&summary);
            stats.services.insert(id.clone(), summary);
        }
        stats
    }
}

/// The conversation's LLM stats, as the state keeps them (`stats` in `state.json`):
/// `{"services": {ID: SUMMARY}, "total": SUMMARY}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Each service's, by id.
    pub services: BTreeMap<String, ServiceStats>,
    /// Their sum (without a model).
    pub total: ServiceStats,
}

/// One service's LLM use (or the sum of all). The fields are in the order `state.json` has
/// always written them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceStats {
    /// What it cost (USD).
    pub accumulated_cost: f64,
    /// Prompt tokens read from a cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to a cache.
    pub cache_write_tokens: u64,
    /// Calls answered.
    pub calls: usize,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// The calls' latencies together (s).
    pub latency: f64,
    /// The model; empty (and left out) for the total.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
}

impl ServiceStats {
    fn of(metrics: &Metrics, model: &str) -> ServiceStats {
        let usage = &metrics.accumulated_token_usage;
        ServiceStats {
            accumulated_cost: metrics.accumulated_cost,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            calls: metrics.response_latencies.len(),
            completion_tokens: usage.completion_tokens,
            latency: metrics.response_latencies.iter().map(|l| l.latency).sum(),
            model: model.to_string(),
            prompt_tokens: usage.prompt_tokens,
        }
    }

    fn add(&mut self, other: &ServiceStats) {
        self.accumulated_cost += other.accumulated_cost;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.calls += other.calls;
        self.latency += other.latency;
    }
}
