//! sandboxd as an MCP server (`/mcp`, streamable HTTP), driven by the official Python MCP SDK:
//! its tools list, a command, an edit, the long-output file, upload and download, and keys.

use serde_json::{Value, json};
use testkit::{McpClient, McpTransport, result_text};

use crate::common::{KEY, Options, Sandbox};

fn connect(sb: &Sandbox, headers: &[(&str, &str)]) -> Result<McpClient, String> {
    McpClient::connect(
        McpTransport::StreamableHttp,
        &format!("{}/mcp", sb.url),
        headers,
    )
}

fn ok_text(result: &Value) -> String {
    assert_eq!(result["isError"], json!(false), "{result}");
    result_text(result)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_host_runs_commands_edits_files_and_reads_the_long_output_file() {
    let sb = Sandbox::start().await;
    let bearer = format!("Bearer {KEY}");
    let mut mcp = connect(&sb, &[("Authorization", &bearer)]).unwrap();
    let names: Vec<String> = mcp
        .list_tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "execute_bash",
            "execute_ipython_cell",
            "str_replace_editor",
            "upload_file",
            "download_file",
            "read_full_output"
        ]
    );

    // The shell is the sandbox's persistent one: the directory stays.
    let ws = sb.ws_str();
    let text = ok_text(&mcp.call(
        "execute_bash",
        json!({"command": format!("mkdir -p {ws}/d && cd {ws}/d && echo hi")}),
    ));
    assert!(
        text.starts_with("hi\n[The command completed with exit code 0.]\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n[Current working directory: {ws}/d]\n")),
        "{text}"
    );
    assert!(
        text.ends_with("\n[Command finished with exit code 0]"),
        "{text}"
    );
    let text = ok_text(&mcp.call("execute_bash", json!({"command": "pwd; false"})));
    assert!(text.starts_with(&format!("{ws}/d\n")), "{text}");
    assert!(
        text.ends_with("[Command finished with exit code 1]"),
        "{text}"
    );

    // The editor: create, replace, view, and its refusal as a tool error.
    let file = format!("{ws}/d/app.py");
    ok_text(&mcp.call(
        "str_replace_editor",
        json!({"command": "create", "path": file, "file_text": "x = 1\ny = 2\n"}),
    ));
    let text = ok_text(&mcp.call(
        "str_replace_editor",
        json!({"command": "str_replace", "path": file, "old_str": "x = 1", "new_str": "x = 42"}),
    ));
    assert!(text.contains("has been edited"), "{text}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("d/app.py")).unwrap(),
        "x = 42\ny = 2\n"
    );
    let text = ok_text(&mcp.call(
        "str_replace_editor",
        json!({"command": "view", "path": file, "view_range": [2, 2]}),
    ));
    assert!(text.contains("2\ty = 2"), "{text}");
    let refused = mcp.call(
        "str_replace_editor",
        json!({"command": "str_replace", "path": file, "old_str": "nowhere", "new_str": ""}),
    );
    assert_eq!(refused["isError"], json!(true), "{refused}");
    assert!(
        result_text(&refused).contains("did not appear verbatim"),
        "{refused}"
    );

    // A long output is cut; the file it names has all of it, read by lines.
    let text = ok_text(&mcp.call("execute_bash", json!({"command": "seq 1 100000"})));
    let path = text
        .rsplit_once("[The whole output is in the file ")
        .map(|(_, rest)| rest.trim_end_matches(']').to_owned())
        .unwrap_or_else(|| panic!("no full-output file named in {}", &text[text.len() - 300..]));
    let text = ok_text(&mcp.call(
        "read_full_output",
        json!({"path": path, "start_line": 50000, "end_line": 50002}),
    ));
    assert_eq!(
        text,
        format!("[Lines 50000-50002 of 100000 of {path}]\n50000\n50001\n50002")
    );
    let refused = mcp.call("read_full_output", json!({"path": "/etc/passwd"}));
    assert_eq!(refused["isError"], json!(true), "{refused}");

    // Arguments the tool cannot take are a tool error with the agent's words.
    let refused = mcp.call("execute_bash", json!({"command": "ls", "timeout": -3}));
    assert_eq!(refused["isError"], json!(true));
    assert!(
        result_text(&refused).starts_with("Invalid argument \"timeout\""),
        "{refused}"
    );

    // Files in and out.
    ok_text(&mcp.call(
        "upload_file",
        json!({"path": format!("{ws}/up/bin.dat"), "content": "AAEC/w==", "encoding": "base64"}),
    ));
    assert_eq!(
        std::fs::read(sb.ws.join("up/bin.dat")).unwrap(),
        [0, 1, 2, 255]
    );
    let down = mcp.call("download_file", json!({"path": format!("{ws}/up/bin.dat")}));
    assert_eq!(down["content"][0]["resource"]["blob"], "AAEC/w==", "{down}");
    let down = mcp.call("download_file", json!({"path": file}));
    assert_eq!(
        down["content"][0]["resource"]["text"], "x = 42\ny = 2\n",
        "{down}"
    );
    let missing = mcp.call("download_file", json!({"path": format!("{ws}/nothing")}));
    assert_eq!(missing["isError"], json!(true), "{missing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_host_runs_ipython_cells_and_sends_input_to_a_running_command() {
    let sb = Sandbox::with(Options {
        extra_args: vec!["--python".to_owned(), crate::ipython::PYTHON.to_owned()],
        ..Options::default()
    })
    .await;
    let mut mcp = connect(&sb, &[("X-Session-API-Key", KEY)]).unwrap();
    let text = ok_text(&mcp.call(
        "execute_ipython_cell",
        json!({"code": "a = 6 * 7\nprint(a)"}),
    ));
    assert!(text.starts_with("42"), "{text}");
    let text = ok_text(&mcp.call(
        "execute_bash",
        json!({"command": "read line; echo got $line", "timeout": 2}),
    ));
    assert!(text.contains("[The command timed out after 2"), "{text}");
    let text = ok_text(&mcp.call(
        "execute_bash",
        json!({"command": "hello", "is_input": "true"}),
    ));
    assert!(text.contains("got hello"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_needs_the_session_key() {
    let sb = Sandbox::start().await;
    for headers in [
        vec![],
        vec![("X-Session-API-Key", "wrong")],
        vec![("Authorization", "Bearer wrong")],
    ] {
        let refused = connect(&sb, &headers).unwrap_err();
        assert!(refused.contains("403"), "{headers:?}: {refused}");
    }
    // The refusals cost nothing: the right key still works.
    let mut mcp = connect(&sb, &[("X-Session-API-Key", KEY)]).unwrap();
    assert_eq!(mcp.list_tools().len(), 6);
}

/// `POST /update_mcp_server` with `servers`: the `router_error_log` of a 200.
async fn update(sb: &Sandbox, servers: &[protocol::api::McpStdioServer]) -> String {
    let (status, body) = sb
        .post_json(
            "/update_mcp_server",
            &serde_json::to_value(servers).unwrap(),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["detail"], "MCP server updated successfully");
    body["router_error_log"].as_str().unwrap().to_owned()
}

fn proxy(sb: &Sandbox, transport: McpTransport) -> McpClient {
    let path = match transport {
        McpTransport::StreamableHttp => "/mcp/proxy",
        McpTransport::Sse => "/mcp/sse",
    };
    McpClient::connect(
        transport,
        &format!("{}{path}", sb.url),
        &[("X-Session-API-Key", KEY)],
    )
    .unwrap()
}

fn tool_names(mcp: &mut McpClient) -> Vec<String> {
    mcp.list_tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn whoami(mcp: &mut McpClient, tool: &str) -> Value {
    serde_json::from_str(&ok_text(&mcp.call(tool, json!({})))).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_servers_run_in_the_sandbox_behind_the_proxy_over_both_transports() {
    let mut sb = Sandbox::start().await;
    let mut demo = testkit::stdio_server("demo");
    demo.env.insert("DEMO_ENV".into(), "from the host".into());
    assert_eq!(update(&sb, std::slice::from_ref(&demo)).await, "");

    let mut shttp = proxy(&sb, McpTransport::StreamableHttp);
    let names = tool_names(&mut shttp);
    assert_eq!(
        names,
        ["echo", "whoami", "image", "fail", "slow", "crash"],
        "one server: its own names"
    );
    assert_eq!(
        ok_text(&shttp.call("echo", json!({"text": "hi"}))),
        "demo says hi"
    );
    let me = whoami(&mut shttp, "whoami");
    assert_eq!(me["pid"], me["pgid"], "its own process group: {me}");
    assert_eq!(me["cwd"], sb.ws_str());
    assert_eq!(me["env"], "from the host");
    let image = shttp.call("image", json!({}));
    assert_eq!(image["content"][0]["type"], "image", "{image}");
    let failed = shttp.call("fail", json!({}));
    assert_eq!(failed["isError"], json!(true), "{failed}");
    assert!(
        result_text(&failed).contains("this tool always fails"),
        "{failed}"
    );

    // The reference's transport: the same server, the same process.
    let mut sse = proxy(&sb, McpTransport::Sse);
    assert_eq!(
        ok_text(&sse.call("echo", json!({"text": "there"}))),
        "demo says there"
    );
    assert_eq!(whoami(&mut sse, "whoami")["pid"], me["pid"]);

    // A second server: names get their server's prefix; the unchanged one keeps running.
    let other = testkit::stdio_server("other");
    assert_eq!(update(&sb, &[demo.clone(), other]).await, "");
    let mut shttp = proxy(&sb, McpTransport::StreamableHttp);
    let names = tool_names(&mut shttp);
    assert!(
        names.contains(&"demo_echo".to_owned()) && names.contains(&"other_echo".to_owned()),
        "{names:?}"
    );
    assert_eq!(
        ok_text(&shttp.call("other_echo", json!({"text": "x"}))),
        "other says x"
    );
    assert_eq!(whoami(&mut shttp, "demo_whoami")["pid"], me["pid"]);
    let other_pid = whoami(&mut shttp, "other_whoami")["pid"].as_i64().unwrap();

    // Dropped from the list: stopped and reaped.
    assert_eq!(update(&sb, std::slice::from_ref(&demo)).await, "");
    crate::common::eventually("the removed server to be gone", || {
        !std::path::Path::new(&format!("/proc/{other_pid}")).exists()
    })
    .await;
    // And all of them go with sandboxd.
    sb.terminate();
    crate::common::eventually("the servers to go with sandboxd", || {
        !std::path::Path::new(&format!("/proc/{}", me["pid"])).exists()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_crashes_mid_call_fails_that_call_with_its_stderr_and_starts_again() {
    let sb = Sandbox::start().await;
    assert_eq!(update(&sb, &[testkit::stdio_server("demo")]).await, "");
    let mut mcp = proxy(&sb, McpTransport::StreamableHttp);
    let before = whoami(&mut mcp, "whoami")["pid"].clone();
    let crashed = mcp.call("crash", json!({"message": "out of cheese"}));
    let why = crashed["exception"]
        .as_str()
        .unwrap_or_else(|| panic!("{crashed}"));
    assert!(
        why.contains("MCP server demo exited during the call (exit code 3)"),
        "{why}"
    );
    assert!(why.contains("out of cheese"), "its stderr: {why}");
    // The next use starts it again.
    assert_eq!(
        ok_text(&mcp.call("echo", json!({"text": "again"}))),
        "demo says again"
    );
    assert_ne!(whoami(&mut mcp, "whoami")["pid"], before);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_server_lists_are_refused_and_servers_that_do_not_start_are_reported() {
    let sb = Sandbox::start().await;
    let (status, body) = sb
        .post_json(
            "/update_mcp_server",
            &json!([{"name": "a b", "command": "python3", "args": [], "env": {}}]),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["detail"],
        "MCP server \"a b\": Server name can only contain letters, numbers, hyphens, and underscores"
    );
    let (status, body) = sb
        .post_json("/update_mcp_server", &json!([{"name": "x", "command": 3}]))
        .await;
    assert_eq!(status, 400, "{body}");

    let mut broken = testkit::stdio_server("broken");
    broken.args = vec![
        "-c".into(),
        "import sys; print('no such module: nope', file=sys.stderr); sys.exit(2)".into(),
    ];
    let log = update(&sb, &[broken, testkit::stdio_server("demo")]).await;
    assert!(log.starts_with("MCP server broken did not start"), "{log}");
    assert!(log.contains("no such module: nope"), "{log}");
    // The other one works, under its prefixed names.
    let mut mcp = proxy(&sb, McpTransport::StreamableHttp);
    assert_eq!(
        ok_text(&mcp.call("demo_echo", json!({"text": "ok"}))),
        "demo says ok"
    );
    let unknown = mcp.call("nobody_echo", json!({}));
    assert!(
        unknown["exception"]
            .as_str()
            .unwrap()
            .contains("Unknown tool: nobody_echo"),
        "{unknown}"
    );

    for path in ["/mcp/proxy", "/mcp/sse"] {
        let transport = if path == "/mcp/sse" {
            McpTransport::Sse
        } else {
            McpTransport::StreamableHttp
        };
        let refused = McpClient::connect(
            transport,
            &format!("{}{path}", sb.url),
            &[("X-Session-API-Key", "wrong")],
        )
        .unwrap_err();
        assert!(refused.contains("403"), "{path}: {refused}");
    }
}
