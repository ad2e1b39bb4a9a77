//! Unit tests of `mcp/hub.rs`; the calls against real servers are in `tests/agent/mcp.rs`.

use super::*;

fn args(name: &str) -> McpArgs {
    McpArgs {
        name: name.to_owned(),
        ..McpArgs::default()
    }
}

#[tokio::test]
async fn without_a_server_or_the_tool_the_call_is_answered_with_the_reference_s_error() {
    let hub = McpHub::default();
    let observation = hub.call(&args("echo")).await;
    assert_eq!(observation.content, error_content("No MCP clients found"));
    assert_eq!(observation.message, observation.content);
    assert!(matches!(&observation.kind, ObservationKind::Mcp(extras) if extras.name == "echo"));
}

#[tokio::test]
async fn a_server_that_does_not_answer_is_left_out_with_the_reason() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = McpSettings {
        sse_servers: vec![RemoteServer {
            url: format!("http://127.0.0.1:{port}/sse"),
            api_key: None,
            timeout: MCP_REQUEST_TIMEOUT,
        }],
        ..McpSettings::default()
    };
    let (hub, failures) = McpHub::connect(Endpoint::remote(&settings)).await;
    assert!(hub.tools().is_empty());
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].server, format!("http://127.0.0.1:{port}/sse"));
}

#[test]
fn a_key_goes_in_the_three_headers_the_reference_sends() {
    let headers = key_headers(Some("k"));
    assert_eq!(headers["authorization"], "Bearer k");
    assert_eq!(headers["s"], "k");
    assert_eq!(headers["x-session-api-key"], "k");
    assert!(key_headers(None).is_empty());
}

/// A server that takes the connection and never answers costs the run 30 s, not more (time
/// is paused here, so the test does not wait them).
#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_is_left_out_after_the_deadline() {
    // Connections queue in the backlog of a listener nobody accepts on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let settings = McpSettings {
        shttp_servers: vec![RemoteServer {
            url: url.clone(),
            api_key: None,
            timeout: Duration::from_secs(60),
        }],
        ..McpSettings::default()
    };
    let started = tokio::time::Instant::now();
    let (hub, failures) = McpHub::connect(Endpoint::remote(&settings)).await;
    assert!(hub.tools().is_empty());
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].reason, mcp_timeout_message(MCP_REQUEST_TIMEOUT));
    assert_eq!(started.elapsed(), MCP_REQUEST_TIMEOUT);
    drop(listener);
}
