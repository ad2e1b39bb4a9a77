//! MCP in a Docker sandbox, with the official Python SDK: an MCP host on this machine uses the
//! sandbox's own MCP server (`/mcp`), and a stdio server runs in the container as the sandbox
//! user behind its proxy. The container has no PyPI: the SDK's wheels (downloaded on the host,
//! `testkit::wheelhouse`) are uploaded and installed from there.

use serde_json::json;
use testkit::{McpClient, McpTransport, result_text};

use crate::common::Running;

fn connect(sandbox: &Running, path: &str) -> McpClient {
    McpClient::connect(
        McpTransport::StreamableHttp,
        &format!("{}{path}", sandbox.sandbox.url),
        &[("X-Session-API-Key", &sandbox.sandbox.session_api_key)],
    )
    .unwrap_or_else(|e| panic!("no MCP session with {path}: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_host_uses_a_container_and_its_stdio_servers_run_as_the_sandbox_user() {
    let sandbox = Running::with(|_| {}).await;

    // The sandbox's own tools.
    let mut tools = connect(&sandbox, "/mcp");
    let ran = tools.call(
        "execute_bash",
        json!({"command": "whoami && cd /tmp && pwd"}),
    );
    assert_eq!(ran["isError"], json!(false), "{ran}");
    assert!(result_text(&ran).starts_with("openhands\n/tmp\n"), "{ran}");
    let refused = McpClient::connect(
        McpTransport::StreamableHttp,
        &format!("{}/mcp", sandbox.sandbox.url),
        &[("X-Session-API-Key", "wrong")],
    )
    .unwrap_err();
    assert!(refused.contains("403"), "{refused}");

    // A stdio server, installed from uploaded wheels.
    let local = tempfile::tempdir().unwrap();
    let bundle = local.path().join("mcp");
    std::fs::create_dir(&bundle).unwrap();
    for file in ["requirements.txt", "mcp_server.py"] {
        std::fs::copy(testkit::python_mcp::script(file), bundle.join(file)).unwrap();
    }
    let wheels = bundle.join("wheels");
    std::fs::create_dir(&wheels).unwrap();
    for wheel in std::fs::read_dir(testkit::wheelhouse()).unwrap().flatten() {
        if wheel.path().extension().is_some_and(|e| e == "whl") {
            std::fs::copy(wheel.path(), wheels.join(wheel.file_name())).unwrap();
        }
    }
    sandbox
        .client
        .upload_file(&bundle, "/home/openhands", true)
        .await
        .unwrap();
    let installed = tools.call(
        "execute_bash",
        json!({
            "command": "python3 -m venv /home/openhands/mcpenv && /home/openhands/mcpenv/bin/pip install -q --no-index --find-links /home/openhands/mcp/wheels -r /home/openhands/mcp/requirements.txt && echo installed",
            "timeout": 300
        }),
    );
    assert!(
        result_text(&installed).contains("installed\n"),
        "{installed}"
    );

    let server = protocol::api::McpStdioServer {
        name: "demo".into(),
        command: "/home/openhands/mcpenv/bin/python".into(),
        args: vec!["/home/openhands/mcp/mcp_server.py".into(), "demo".into()],
        env: [("DEMO_ENV".to_owned(), "set".to_owned())].into(),
    };
    let answer = sandbox.client.update_mcp_servers(&[server]).await.unwrap();
    assert_eq!(answer.router_error_log, "");
    let mut proxy = connect(&sandbox, "/mcp/proxy");
    let echoed = proxy.call("echo", json!({"text": "from the container"}));
    assert_eq!(
        result_text(&echoed),
        "demo says from the container",
        "{echoed}"
    );
    let me: serde_json::Value =
        serde_json::from_str(&result_text(&proxy.call("whoami", json!({})))).unwrap();
    assert_eq!(me["uid"], 1000, "the sandbox user: {me}");
    assert_eq!(me["pid"], me["pgid"], "its own process group: {me}");
    assert_eq!(me["env"], "set");
    // The reference's transport reaches the same server.
    let mut sse = McpClient::connect(
        McpTransport::Sse,
        &format!("{}/mcp/sse", sandbox.sandbox.url),
        &[("X-Session-API-Key", &sandbox.sandbox.session_api_key)],
    )
    .unwrap();
    assert_eq!(
        result_text(&sse.call("echo", json!({"text": "x"}))),
        "demo says x"
    );
}
