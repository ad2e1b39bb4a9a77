//! Token counts, costs and latencies of an [`Llm`](super::Llm)'s calls, in the shape of
//! OpenHands' `Metrics` (`accumulated_cost`, `accumulated_token_usage`, `costs`,
//! `response_latencies`, `token_usages`), and the cost of one call from the price table.

use std::time::Duration;

use protocol::llm::Usage;
use serde_json::{Value, json};

use super::config::Price;

/// Token counts of one call, or accumulated (OpenHands' `TokenUsage`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TokenUsage {
    /// The model.
    pub(crate) model: String,
    /// Prompt tokens (cached ones included).
    pub(crate) prompt_tokens: u64,
    /// Generated tokens.
    pub(crate) completion_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub(crate) cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub(crate) cache_write_tokens: u64,
    /// The model's context window (`max_input_tokens`; 0 when unknown).
    pub(crate) context_window: u64,
    /// Prompt plus completion tokens of the last call.
    pub(crate) per_turn_token: u64,
    /// The response id (empty when accumulated).
    pub(crate) response_id: String,
}

impl TokenUsage {
    fn to_json(&self) -> Value {
        json!({
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "context_window": self.context_window,
            "per_turn_token": self.per_turn_token,
            "response_id": self.response_id,
        })
    }
}

/// The cost of one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cost {
    /// The model.
    pub(crate) model: String,
    /// USD.
    pub(crate) cost: f64,
    /// Unix time of the call, in seconds.
    pub(crate) timestamp: f64,
}

/// The latency of one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResponseLatency {
    /// The model.
    pub(crate) model: String,
    /// Seconds from sending the request to reading the whole answer (of the attempt that
    /// succeeded).
    pub(crate) latency: f64,
    /// The response id.
    pub(crate) response_id: String,
}

/// Everything an [`Llm`](super::Llm) (and its clones) spent so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Metrics {
    /// The model.
    pub(crate) model_name: String,
    /// Total cost in USD.
    pub(crate) accumulated_cost: f64,
    /// Total token counts.
    pub(crate) accumulated_token_usage: TokenUsage,
    /// Each call's cost.
    pub(crate) costs: Vec<Cost>,
    /// Each call's latency.
    pub(crate) response_latencies: Vec<ResponseLatency>,
    /// Each call's token counts.
    pub(crate) token_usages: Vec<TokenUsage>,
}

/// What one call adds to the [`Metrics`].
#[derive(Debug, Clone)]
pub(crate) struct CallMetrics {
    pub(crate) usage: TokenUsage,
    pub(crate) cost: f64,
    pub(crate) latency: Duration,
    pub(crate) timestamp: f64,
}

impl Metrics {
    /// Empty metrics for `model`.
    pub(crate) fn new(model: &str) -> Metrics {
        Metrics {
            model_name: model.to_owned(),
            accumulated_token_usage: TokenUsage {
                model: model.to_owned(),
                ..TokenUsage::default()
            },
            ..Metrics::default()
        }
    }

    /// The metrics as OpenHands' `Metrics.get()` JSON (the shape of an action's
    /// `llm_metrics`).
    pub(crate) fn to_json(&self) -> Value {
        let costs: Vec<Value> = self
            .costs
            .iter()
            .map(|c| json!({"model": c.model, "cost": c.cost, "timestamp": c.timestamp}))
            .collect();
        let latencies: Vec<Value> = self
            .response_latencies
            .iter()
            .map(|l| json!({"model": l.model, "latency": l.latency, "response_id": l.response_id}))
            .collect();
        let usages: Vec<Value> = self.token_usages.iter().map(TokenUsage::to_json).collect();
        json!({
            "accumulated_cost": self.accumulated_cost,
            "accumulated_token_usage": self.accumulated_token_usage.to_json(),
            "costs": costs,
            "response_latencies": latencies,
            "token_usages": usages,
        })
    }

    /// Adds one call; answers the metrics for that call's action: the accumulated totals, and
    /// lists holding only this call's entries.
    pub(crate) fn record(&mut self, call: CallMetrics) -> Metrics {
        let usage = call.usage;
        let total = &mut self.accumulated_token_usage;
        total.prompt_tokens += usage.prompt_tokens;
        total.completion_tokens += usage.completion_tokens;
        total.cache_read_tokens += usage.cache_read_tokens;
        total.cache_write_tokens += usage.cache_write_tokens;
        total.context_window = total.context_window.max(usage.context_window);
        total.per_turn_token = usage.per_turn_token;
        self.accumulated_cost += call.cost;
        let cost = Cost {
            model: self.model_name.clone(),
            cost: call.cost,
            timestamp: call.timestamp,
        };
        let latency = ResponseLatency {
            model: self.model_name.clone(),
            latency: call.latency.as_secs_f64(),
            response_id: usage.response_id.clone(),
        };
        let this_call = Metrics {
            model_name: self.model_name.clone(),
            accumulated_cost: self.accumulated_cost,
            accumulated_token_usage: self.accumulated_token_usage.clone(),
            costs: vec![cost.clone()],
            response_latencies: vec![latency.clone()],
            token_usages: vec![usage.clone()],
        };
        self.costs.push(cost);
        self.response_latencies.push(latency);
        self.token_usages.push(usage);
        this_call
    }
}

/// The token counts of a response's `usage`.
pub(crate) fn token_usage(
    model: &str,
    usage: Option<&Usage>,
    context_window: u64,
    response_id: &str,
) -> TokenUsage {
    let usage = usage.cloned().unwrap_or_default();
    let cache_read = usage
        .prompt_tokens_details
        .as_ref()
        .map_or(0, |d| d.cached_tokens);
    TokenUsage {
        model: model.to_owned(),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cache_read_tokens: cache_read,
        cache_write_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
        context_window,
        per_turn_token: usage.prompt_tokens + usage.completion_tokens,
        response_id: response_id.to_owned(),
    }
}

/// The cost of one call: from the price table when the model has a price, else what the
/// server reported (LiteLLM's `x-litellm-response-cost` header, OpenRouter's `usage.cost`),
/// else 0.
pub(crate) fn cost(
    price: Option<Price>,
    usage: &TokenUsage,
    header_cost: Option<f64>,
    reported: Option<f64>,
) -> f64 {
    if let Some(price) = price {
        let cached = usage.cache_read_tokens.min(usage.prompt_tokens);
        let written = usage.cache_write_tokens.min(usage.prompt_tokens - cached);
        let fresh = usage.prompt_tokens - cached - written;
        let read_price = price
            .cache_read_cost_per_token
            .unwrap_or(price.input_cost_per_token);
        let write_price = price
            .cache_write_cost_per_token
            .unwrap_or(price.input_cost_per_token);
        return fresh as f64 * price.input_cost_per_token
            + cached as f64 * read_price
            + written as f64 * write_price
            + usage.completion_tokens as f64 * price.output_cost_per_token;
    }
    header_cost
        .or(reported)
        .filter(|c| c.is_finite() && *c >= 0.0)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests;
