//! Unit tests of `error.rs`.

use super::*;

#[test]
fn forbidden_detail_is_decoded() {
    let err = ClientError::from_http(403, br#"{"detail": "Invalid API Key"}"#);
    assert_eq!(err.status(), Some(403));
    assert_eq!(err.detail(), Some("Invalid API Key"));
    assert_eq!(err.to_string(), "HTTP 403: Invalid API Key");
    assert!(!err.is_retryable());
}

#[test]
fn internal_error_detail_is_kept_whole() {
    let body =
        br#"{"detail": "Internal server error: 'ActionExecutor' object has no attribute 'think'"}"#;
    let err = ClientError::from_http(500, body);
    assert_eq!(
        err.to_string(),
        "HTTP 500: Internal server error: 'ActionExecutor' object has no attribute 'think'"
    );
    let err = ClientError::from_http(
        500,
        br#"{"detail":"400: Destination must be an absolute path"}"#,
    );
    assert_eq!(
        err.detail(),
        Some("400: Destination must be an absolute path")
    );
}

#[test]
fn validation_errors_are_kept() {
    let body = br#"{"detail": "Invalid request parameters", "errors": "[{'type': 'missing'}]"}"#;
    match ClientError::from_http(422, body) {
        ClientError::Http {
            status,
            detail,
            errors,
        } => {
            assert_eq!(status, 422);
            assert_eq!(detail, "Invalid request parameters");
            assert_eq!(errors.as_deref(), Some("[{'type': 'missing'}]"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn non_string_detail_becomes_json_text() {
    // FastAPI's own validation errors carry a list.
    let body = br#"{"detail": [{"loc": ["body", "action"], "msg": "field required"}]}"#;
    let err = ClientError::from_http(422, body);
    assert_eq!(
        err.detail(),
        Some(r#"[{"loc":["body","action"],"msg":"field required"}]"#)
    );
}

#[test]
fn plain_text_and_empty_bodies() {
    let err = ClientError::from_http(502, b"  Bad gateway from proxy\n");
    assert_eq!(err.detail(), Some("Bad gateway from proxy"));
    assert!(err.is_retryable());
    let err = ClientError::from_http(503, b"");
    assert_eq!(err.to_string(), "HTTP 503: Service Unavailable");
    assert!(err.is_retryable());
    let err = ClientError::from_http(599, b"");
    assert_eq!(err.detail(), Some("(no details)"));
    let long = "x".repeat(MAX_RAW_DETAIL + 10);
    let err = ClientError::from_http(500, long.as_bytes());
    assert_eq!(err.detail().map(str::len), Some(MAX_RAW_DETAIL + 3));
}

#[test]
fn retryable_kinds() {
    assert!(
        ClientError::Timeout {
            endpoint: "/alive",
            after: Some(Duration::from_secs(5)),
        }
        .is_retryable()
    );
    assert!(ClientError::from_http(429, b"").is_retryable());
    assert!(!ClientError::from_http(404, br#"{"detail":"Not Found"}"#).is_retryable());
    assert!(!ClientError::InvalidApiKey.is_retryable());
    assert!(
        !ClientError::Decode {
            endpoint: "/alive",
            reason: String::new()
        }
        .is_retryable()
    );
}

#[test]
fn timeout_messages() {
    let err = ClientError::Timeout {
        endpoint: "/execute_action",
        after: Some(Duration::from_secs_f64(7.5)),
    };
    assert_eq!(
        err.to_string(),
        "no answer from /execute_action within 7.5s"
    );
    let err = ClientError::Timeout {
        endpoint: "/execute_action",
        after: None,
    };
    assert_eq!(
        err.to_string(),
        "no answer from /execute_action within the deadline"
    );
}
