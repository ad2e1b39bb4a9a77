//! Unit tests of `llm/features.rs`.

use super::*;

#[test]
fn model_names_choose_the_tool_calling_mode() {
    for native in [
        "gpt-4o",
        "gpt-4o-mini-2024-07-18",
        "openai/gpt-4.1",
        "litellm_proxy/claude-sonnet-4-20250514",
        "anthropic/claude-3-5-sonnet-20241022",
        "openrouter/qwen/qwen3-coder",
        "Qwen3-Coder-30B-A3B-Instruct",
        "ollama/qwen3-coder:30b",
        "bedrock/anthropic.claude-opus-4-1",
        "o3-mini",
    ] {
        assert!(supports_native_tool_calling(native), "{native}");
    }
    for prompted in [
        "llama3.1:8b",
        "openhands-lm-32b-v0.1",
        "deepseek-chat",
        "o1-mini",
        "mistral/devstral-small",
        "",
    ] {
        assert!(!supports_native_tool_calling(prompted), "{prompted}");
    }
    assert!(!supports_stop_words("o1-preview"));
    assert!(supports_stop_words("qwen2.5-coder:32b"));
    assert!(is_reasoning_model("openai/gpt-5-mini"));
    assert!(!is_reasoning_model("gpt-4o"));
}

#[test]
fn glob_matches_stars_anywhere() {
    assert!(glob("a*", "a"));
    assert!(glob("a*c", "abc"));
    assert!(glob("*b*", "abc"));
    assert!(!glob("a*c", "ab"));
    assert!(glob("abc", "abc"));
    assert!(!glob("abc", "abcd"));
    assert!(glob("a*a", "aa"));
    assert!(!glob("a*a", "a"));
}
