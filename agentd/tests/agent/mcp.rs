//! MCP tools end to end: `agentd run` with the CodeAct agent, a local sandbox and real MCP
//! servers on the official Python SDK: a stdio server the sandbox runs (through
//! `/update_mcp_server` and its proxy), and streamable-HTTP and SSE servers on 127.0.0.1. The
//! model (the fake) calls a tool and must see its result in its next request.

use protocol::{Action, Observation};
use testkit::McpTransport;

use super::*;

/// `[mcp]` with one stdio server, `python/mcp_server.py NAME`.
fn stdio_settings(name: &str) -> String {
    let server = testkit::stdio_server(name);
    format!(
        "[mcp]\nstdio_servers = [{{ name = {:?}, command = {:?}, args = {:?} }}]\n",
        server.name, server.command, server.args
    )
}

/// The `call_tool_mcp` actions of a session and the `mcp` observations that answer them.
fn mcp_pairs(events: &[Event]) -> Vec<(Action, Observation)> {
    actions(events)
        .filter(|a| matches!(a.kind, ActionKind::Mcp(_)))
        .map(|action| {
            let answers = answers(events, action.id.unwrap());
            assert_eq!(answers.len(), 1, "one observation per action: {answers:?}");
            (action.clone(), answers[0].clone())
        })
        .collect()
}

/// Checks that the action called `tool` and its observation is an `mcp` one with the action's
/// tool metadata; returns the observation's content.
fn answered(pair: &(Action, Observation), tool: &str) -> String {
    let (action, observation) = pair;
    let ActionKind::Mcp(args) = &action.kind else {
        panic!()
    };
    assert_eq!(args.name, tool);
    assert!(
        action
            .message
            .as_deref()
            .unwrap()
            .starts_with("I am interacting with the MCP server with name:")
    );
    let ObservationKind::Mcp(extras) = &observation.kind else {
        panic!("{observation:?}")
    };
    assert_eq!(extras.name, tool);
    assert_eq!(extras.arguments, args.arguments);
    assert_eq!(observation.tool_call_metadata, action.tool_call_metadata);
    assert_eq!(observation.source, Some(EventSource::Environment));
    observation.content.clone()
}

/// The last message of a recorded request (the result the model reads last).
fn last_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_in_the_sandbox_gives_the_model_its_tools_and_their_results() {
    let (dir, workspace) = dir_with_workspace();
    let fake = run_scripted(
        dir.path(),
        &workspace,
        [
            Reply::tool_calls([("echo", json!({"text": "hi"}))]),
            Reply::tool_calls([("image", json!({}))]),
            Reply::finish("the server answered"),
        ],
        "Ask the demo server.",
        &stdio_settings("demo"),
        &[],
    )
    .await;

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let tools = tool_names(&requests[0]);
    assert_eq!(
        tools[..5],
        [
            "execute_bash",
            "execute_ipython_cell",
            "str_replace_editor",
            "think",
            "finish"
        ]
    );
    assert_eq!(
        tools[5..],
        ["echo", "whoami", "image", "fail", "slow", "crash"]
    );
    let echo = requests[0]["tools"][5]["function"].clone();
    assert_eq!(
        echo["description"],
        "Say the text back, with the server's name."
    );
    assert_eq!(echo["parameters"]["required"], json!(["text"]));

    // The next request has the result as the call's role=tool message: the text, not JSON.
    let result = last_message(&requests[1]);
    assert_eq!(result["role"], "tool");
    assert_eq!(text(&result), "demo says hi");
    // The model has no vision: the image is a line.
    assert_eq!(
        text(&last_message(&requests[2])),
        "\n[An image the tool returned; this model cannot see images]"
    );

    let events = session_events(dir.path());
    assert_eq!(
        system_message(&events).tools.as_ref().unwrap().len(),
        11,
        "the MCP tools are in the system message"
    );
    let pairs = mcp_pairs(&events);
    assert_eq!(pairs.len(), 2);
    assert_eq!(
        answered(&pairs[0], "echo"),
        "{\"meta\": null, \"content\": [{\"type\": \"text\", \"text\": \"demo says hi\", \"annotations\": null, \"meta\": null}], \"structuredContent\": {\"result\": \"demo says hi\"}, \"isError\": false}"
    );
    assert!(answered(&pairs[1], "image").contains("\"type\": \"image\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_and_sse_servers_on_the_host_work_the_same_way_prompted_too() {
    let shttp = testkit::http_server("web", McpTransport::StreamableHttp, "web_");
    let sse = testkit::http_server("old", McpTransport::Sse, "old_");
    let settings = format!(
        "[mcp]\nshttp_servers = [{:?}]\nsse_servers = [{:?}]\n",
        shttp.url(),
        sse.url()
    );
    for prompted in [false, true] {
        let (dir, workspace) = dir_with_workspace();
        let replies = if prompted {
            vec![
                prompted_call("Asking.", "web_echo", &[("text", "one")]),
                prompted_call("Again.", "old_echo", &[("text", "two")]),
                prompted_call("Done.", "finish", &[("message", "both answered")]),
            ]
        } else {
            vec![
                Reply::tool_calls([("web_echo", json!({"text": "one"}))]),
                Reply::tool_calls([("old_echo", json!({"text": "two"}))]),
                Reply::finish("both answered"),
            ]
        };
        let fake = FakeLlm::start(replies).await;
        let mode = if prompted { "prompted" } else { "native" };
        succeeded(
            run(
                dir.path(),
                &workspace,
                &fake,
                "Ask both.",
                &settings,
                &["--tool-calling", mode],
            )
            .await,
        );
        let requests = fake.requests();
        let seen: Vec<String> = requests[1..]
            .iter()
            .map(|r| text(&last_message(r)))
            .collect();
        if prompted {
            assert!(
                seen[0].contains("EXECUTION RESULT of [web_echo]:\nweb says one"),
                "{seen:?}"
            );
            assert!(
                seen[1].contains("EXECUTION RESULT of [old_echo]:\nold says two"),
                "{seen:?}"
            );
            let system = text(&requests[0]["messages"][0]);
            assert!(
                system.contains("web_echo") && system.contains("old_echo"),
                "the tools are described in the prompt"
            );
        } else {
            assert_eq!(seen, ["web says one", "old says two"]);
            // The SSE servers come first, as the reference lists them.
            let tools = tool_names(&requests[0]);
            assert_eq!(tools[5], "old_echo");
            assert!(tools.contains(&"web_echo".to_owned()));
        }
        let pairs = mcp_pairs(&session_events(dir.path()));
        assert!(answered(&pairs[0], "web_echo").contains("web says one"));
        assert!(answered(&pairs[1], "old_echo").contains("old says two"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_an_error_observation_and_the_run_goes_on() {
    let (dir, workspace) = dir_with_workspace();
    // A port nothing listens on: that server is left out, and said so.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let settings = format!(
        "{}sse_servers = [\"http://{closed}/sse\"]\n",
        stdio_settings("demo")
    );
    let fake = FakeLlm::start([
        Reply::tool_calls([("crash", json!({"message": "out of cheese"}))]),
        Reply::tool_calls([("fail", json!({}))]),
        Reply::tool_calls([("echo", json!({"text": "still there?"}))]),
        Reply::finish("it recovered"),
    ])
    .await;
    let out = succeeded(run(dir.path(), &workspace, &fake, "Break it.", &settings, &[]).await);
    assert!(
        stderr(&out).contains(&format!("MCP server http://{closed}/sse left out")),
        "{}",
        stderr(&out)
    );

    let requests = fake.requests();
    let crashed = text(&last_message(&requests[1]));
    assert!(
        crashed.starts_with(
            "The MCP tool call failed: MCP server demo exited during the call (exit code 3)"
        ),
        "{crashed}"
    );
    assert!(crashed.contains("out of cheese"), "its stderr: {crashed}");
    let failed = text(&last_message(&requests[2]));
    assert!(
        failed.starts_with("The MCP tool reported an error:"),
        "{failed}"
    );
    assert!(failed.contains("this tool always fails"), "{failed}");
    // Started again on its next use.
    assert_eq!(text(&last_message(&requests[3])), "demo says still there?");

    let pairs = mcp_pairs(&session_events(dir.path()));
    let crash = answered(&pairs[0], "crash");
    assert!(
        crash.starts_with("{\"isError\": true, \"error\": \"MCP server demo exited"),
        "{crash}"
    );
    assert!(crash.ends_with("\"content\": []}"), "{crash}");
    assert_eq!(state(dir.path())["agent_state"], "finished");
}
