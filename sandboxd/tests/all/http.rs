//! HTTP surface: auth, status codes, error bodies, the OpenAPI document (docs/protocol.md §2).

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn alive_and_server_info_are_open_everything_else_needs_the_key() {
    let sb = Sandbox::start().await;
    let plain = reqwest::Client::new();
    let alive = testkit::json_answer(plain.get(format!("{}/alive", sb.url))).await;
    assert_eq!(alive, json!({"status": "ok"}));
    let info = testkit::json_answer(plain.get(format!("{}/server_info", sb.url))).await;
    for key in ["uptime", "idle_time"] {
        assert!(info[key].is_f64(), "{info}");
    }
    assert!(info["resources"]["memory"]["rss"].as_u64().unwrap() > 0);
    assert!(info["resources"]["disk"]["total"].as_u64().unwrap() > 0);
    assert!(info["resources"]["io"]["read_bytes"].is_u64());

    let body = json!({"action": {"action": "run", "args": {"command": "ls"}}});
    for key in [None, Some("wrong")] {
        let mut req = plain.post(format!("{}/execute_action", sb.url)).json(&body);
        if let Some(k) = key {
            req = req.header("X-Session-API-Key", k);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 403);
        assert_eq!(
            resp.json::<Value>().await.unwrap(),
            json!({"detail": "Invalid API Key"})
        );
    }
    for (method, path) in [
        (Method::POST, "/list_files"),
        (Method::GET, "/download_files?path=/"),
        (Method::GET, "/vscode/connection_token"),
    ] {
        let resp = plain
            .request(method, format!("{}{path}", sb.url))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403, "{path}");
    }
}

#[tokio::test]
async fn without_a_key_there_is_no_auth() {
    let sb = Sandbox::with(Options {
        key: None,
        ..Options::default()
    })
    .await;
    assert_eq!(content(&sb.run("echo open").await), "open");
}

#[tokio::test]
async fn bad_requests_get_the_reference_errors_and_the_server_survives() {
    let sb = Sandbox::start().await;
    let (status, body) = sb.post_json("/execute_action", &json!({"foo": 1})).await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"], json!("Invalid request parameters"));
    let resp = sb
        .request(Method::POST, "/execute_action")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);

    let cases = [
        (
            json!({"action": "nope", "args": {}}),
            "Internal server error: 'action['action']='nope'' is not defined. Available actions: ",
        ),
        (
            json!({"observation": "run", "content": "", "extras": {"command": "x"}}),
            "Internal server error: 400: Invalid action type",
        ),
        (
            json!({"action": "think", "args": {"thought": "x"}}),
            "Internal server error: 'ActionExecutor' object has no attribute 'think'",
        ),
        (
            json!({"action": "finish", "args": {}}),
            "Internal server error: 'ActionExecutor' object has no attribute 'finish'",
        ),
        (
            json!({"action": "run", "args": {"command": 5}}),
            "Internal server error: action={",
        ),
        (
            json!({"action": "read", "args": {}}),
            "Internal server error: action={",
        ),
        (
            json!([1, 2]),
            "Internal server error: 400: Invalid action type",
        ),
    ];
    for (action, prefix) in cases {
        let (status, body) = sb
            .post_json("/execute_action", &json!({"action": action}))
            .await;
        assert_eq!(status, 500, "{body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.starts_with(prefix), "{detail}");
    }
    // Unknown args and keys are ignored; integer timeouts are accepted.
    let obs = sb
        .act(json!({"action": "run", "args": {"command": "echo ok", "future_arg": 1}, "timeout": 5, "extra_key": true}))
        .await;
    assert_eq!(content(&obs), "ok");
    // Browser actions, with --no-enable-browser (as these tests start sandboxd).
    let obs = sb
        .act(json!({"action": "browse", "args": {"url": "http://example.com"}}))
        .await;
    assert_eq!(
        obs,
        json!({"message": "Browser functionality is not supported or disabled.", "observation": "error", "content": "Browser functionality is not supported or disabled.", "extras": {"error_id": ""}})
    );

    let resp = sb.request(Method::GET, "/nope").send().await.unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"detail": "Not Found"})
    );
    let (status, body) = sb.post_json("/update_mcp_server", &json!({"a": 1})).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"detail": "Request must be a list of MCP tools to sync"})
        )
    );
    let (status, body) = sb.post_json("/update_mcp_server", &json!([])).await;
    assert_eq!(status, 200);
    assert_eq!(body["detail"], json!("MCP server updated successfully"));
    let token = testkit::json_answer(sb.request(Method::GET, "/vscode/connection_token")).await;
    assert_eq!(token, json!({"token": null}));
    assert_eq!(content(&sb.run("echo still-alive").await), "still-alive");
}

#[tokio::test]
async fn bodies_are_size_bounded() {
    let sb = Sandbox::with_args(&["--max-body-bytes", "10000"]).await;
    let big = "x".repeat(20_000);
    let (status, _) = sb
        .post_json(
            "/execute_action",
            &json!({"action": {"action": "write", "args": {"path": "a", "content": big}}}),
        )
        .await;
    assert_eq!(status, 413);
    assert_eq!(content(&sb.run("echo fine").await), "fine");
}

#[tokio::test]
async fn openapi_document_lists_every_endpoint() {
    let sb = Sandbox::start().await;
    let doc: Value = reqwest::get(format!("{}/openapi.json", sb.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/alive",
        "/server_info",
        "/execute_action",
        "/upload_file",
        "/download_files",
        "/list_files",
        "/vscode/connection_token",
        "/update_mcp_server",
        "/mcp",
        "/mcp/proxy",
        "/mcp/sse",
        "/mcp/messages/",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
}
