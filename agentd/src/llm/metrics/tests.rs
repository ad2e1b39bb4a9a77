//! Unit tests of `llm/metrics.rs`.

use super::*;

#[test]
fn cached_and_written_tokens_have_their_own_prices() {
    let price = Price {
        input_cost_per_token: 1.0,
        output_cost_per_token: 10.0,
        cache_read_cost_per_token: Some(0.1),
        cache_write_cost_per_token: Some(2.0),
    };
    let usage = TokenUsage {
        prompt_tokens: 100,
        completion_tokens: 5,
        cache_read_tokens: 40,
        cache_write_tokens: 10,
        ..TokenUsage::default()
    };
    let cost = cost(Some(price), &usage, Some(99.0), None);
    assert!((cost - (50.0 + 4.0 + 20.0 + 50.0)).abs() < 1e-9, "{cost}");
    assert_eq!(super::cost(None, &usage, None, Some(0.25)), 0.25);
    assert_eq!(super::cost(None, &usage, Some(0.5), Some(0.25)), 0.5);
    assert_eq!(super::cost(None, &usage, None, None), 0.0);
}
