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
