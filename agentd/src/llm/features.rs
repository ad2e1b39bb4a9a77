//! What a model can do, known from its name: native tool calling, stop words, and whether it
//! is a reasoning model (no temperature, `max_completion_tokens`). The pattern lists follow
//! OpenHands' `model_features.py`, with a few newer families added.
//!
//! A name is compared lowercased, with any provider prefix (`openrouter/`, `litellm_proxy/`,
//! `openai/`...) and Ollama tag (`:32b`) and `-gguf` suffix removed; a pattern with a `/` is
//! compared with the whole lowercased name instead. Patterns are globs where `*` matches any
//! run of characters.

/// Models that call tools natively (`tools`/`tool_calls`). Any other model is prompted,
/// unless `tool_calling` is set.
pub(crate) const NATIVE_TOOL_CALLING: &[&str] = &[
    // Anthropic
    "claude-3-7-sonnet*",
    "claude-3.7-sonnet*",
    "claude-sonnet-3-7-latest",
    "claude-3-5-sonnet*",
    "claude-3.5-haiku*",
    "claude-3-5-haiku*",
    "claude-sonnet-4*",
    "claude-opus-4*",
    "claude-haiku-4*",
    "bedrock/anthropic.claude-3-7-sonnet*",
    "bedrock/anthropic.claude-3-5-sonnet*",
    "bedrock/anthropic.claude-sonnet-4*",
    "bedrock/anthropic.claude-opus-4*",
    // OpenAI
    "gpt-4o*",
    "gpt-4.1*",
    "gpt-5*",
    "o1-2024-12-17",
    "o3*",
    "o4-mini*",
    // Google
    "gemini-2.5-pro*",
    // Others
    "kimi-k2-0711-preview",
    "kimi-k2-instruct",
    "qwen3-coder*",
];

/// Models that reject the `stop` parameter (prompted mode then relies on parsing alone).
pub(crate) const NO_STOP_WORDS: &[&str] = &["o1*", "grok-4-0709", "deepseek-r1-0528*"];

/// OpenAI's reasoning models: they reject `temperature`/`top_p` and take
/// `max_completion_tokens` instead of `max_tokens`.
pub(crate) const REASONING: &[&str] = &["o1*", "o3*", "o4*", "gpt-5*"];

/// Whether `model` calls tools natively.
pub(crate) fn supports_native_tool_calling(model: &str) -> bool {
    matches_any(model, NATIVE_TOOL_CALLING)
}

/// Whether `model` accepts stop words.
pub(crate) fn supports_stop_words(model: &str) -> bool {
    !matches_any(model, NO_STOP_WORDS)
}

/// Whether `model` is one of OpenAI's reasoning models.
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    matches_any(model, REASONING)
}

/// The name patterns are compared with: lowercased, provider prefix, Ollama tag and `-gguf`
/// removed.
pub(crate) fn normalize(model: &str) -> String {
    let raw = model.trim().to_lowercase();
    let base = raw.rsplit('/').next().unwrap_or(&raw);
    let base = base.split(':').next().unwrap_or(base);
    base.strip_suffix("-gguf").unwrap_or(base).to_owned()
}

/// Whether `model` matches one of `patterns` (see the module docs).
pub(crate) fn matches_any(model: &str, patterns: &[&str]) -> bool {
    let raw = model.trim().to_lowercase();
    let name = normalize(model);
    patterns.iter().any(|pattern| {
        let pattern = pattern.to_lowercase();
        if pattern.contains('/') {
            glob(&pattern, &raw)
        } else {
            glob(&pattern, &name)
        }
    })
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return text.is_empty();
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests;
