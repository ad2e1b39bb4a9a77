//! Unit tests of `llm/error.rs`.

use super::*;

#[test]
fn statuses_map_to_openhands_kinds() {
    let cases = [
        (429, "{}", "RateLimitError", true),
        (500, "oops", "InternalServerError", true),
        (502, "", "InternalServerError", true),
        (503, "", "ServiceUnavailableError", true),
        (504, "", "Timeout", true),
        (401, "", "AuthenticationError", false),
        (403, "", "PermissionDeniedError", false),
        (404, "", "NotFoundError", false),
        (
            400,
            r#"{"error":{"message":"bad role"}}"#,
            "BadRequestError",
            false,
        ),
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
            "ContextWindowExceededError",
            false,
        ),
        (
            400,
            "prompt is too long: 210000 tokens > 200000 maximum",
            "ContextWindowExceededError",
            false,
        ),
        (
            429,
            r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
            "RateLimitError",
            false,
        ),
    ];
    for (status, body, kind, retryable) in cases {
        let error = AttemptError::http(status, body, None);
        assert_eq!(
            (error.kind.name(), error.retryable),
            (kind, retryable),
            "{status} {body}"
        );
    }
    let error = AttemptError::http(400, r#"{"error":{"message":"bad role"}}"#, None);
    assert_eq!(
        error.into_error(1).to_string(),
        "BadRequestError: HTTP 400: bad role"
    );
}
