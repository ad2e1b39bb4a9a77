//! The CodeAct agent end to end: the real `agentd run` binary, a real local sandbox, and a fake
//! OpenAI-compatible server (the only fake: the model) that serves scripted answers and records
//! every request, so the tests can check what the model was shown.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::path::Path;
use std::process::Output;

use agentd::trajectories as trajectory;
use protocol::{Action, ActionKind, Event, EventSource, Observation, ObservationKind};
use serde_json::{Value, json};
use testkit::{FakeLlm, Reply};

/// The `[llm]` settings of every run: native tool calling (the fake model's name is in no
/// list), and fast retries (the defaults wait 8 s and more, so a test whose script runs out
/// would take minutes to fail).
const TEST_LLM: &str = "[llm]\ntool_calling = \"native\"\nretry_min_wait = 0.01\nretry_max_wait = 0.05\nnum_retries = 3\n";

/// `agentd run` of the CodeAct agent on `task` against `fake`, working in `workspace`, sessions
/// in `dir/sessions`, with `config` as its settings file and `extra` arguments.
async fn run(
    dir: &Path,
    workspace: &Path,
    fake: &FakeLlm,
    task: &str,
    config: &str,
    extra: &[&str],
) -> Output {
    run_with_env(dir, workspace, fake, task, config, extra, &[]).await
}

/// [`run`] against a fake model that answers with `replies`; the run must succeed. The fake,
/// whose requests the test reads.
async fn run_scripted(
    dir: &Path,
    workspace: &Path,
    replies: impl IntoIterator<Item = Reply>,
    task: &str,
    config: &str,
    extra: &[&str],
) -> FakeLlm {
    let fake = FakeLlm::start(replies).await;
    succeeded(run(dir, workspace, &fake, task, config, extra).await);
    fake
}

/// [`run`] with `env` added to agentd's environment.
async fn run_with_env(
    dir: &Path,
    workspace: &Path,
    fake: &FakeLlm,
    task: &str,
    config: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut args = vec!["--task", task];
    args.extend_from_slice(extra);
    agentd(dir, workspace, fake, config, &args)
        .envs(env.iter().copied())
        .output()
        .await
        .unwrap()
}

/// `agentd run` of the CodeAct agent against `fake` with `args`, working in `workspace`,
/// sessions in `dir/sessions`, with `config` as its settings file; killed when dropped.
fn agentd(
    dir: &Path,
    workspace: &Path,
    fake: &FakeLlm,
    config: &str,
    args: &[&str],
) -> tokio::process::Command {
    let config_path = dir.join("agentd.toml");
    let config = format!("{TEST_LLM}{config}");
    std::fs::write(&config_path, config).unwrap();
    let sandboxd = testkit::sandboxd_binary("debug");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentd"));
    command
        .args(["run", "--model", "fake-model", "--api-key", "k"])
        .args(args)
        .arg("--base-url")
        .arg(fake.base_url())
        .arg("--workspace")
        .arg(workspace)
        .arg("--config")
        .arg(&config_path)
        .env("AGENTD_SESSIONS_DIR", dir.join("sessions"))
        .env("AGENTD_SANDBOXD_BIN", sandboxd)
        .env("SANDBOXD_PYTHON", "/usr/bin/python3")
        .env_remove("AGENTD_RUNTIME")
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_CONFIRM")
        .env_remove("AGENTD_SECURITY_ANALYZER")
        .env_remove("LLM_MODEL")
        .env_remove("LLM_BASE_URL")
        .env_remove("LLM_API_KEY")
        .env_remove("AGENTD_REPO")
        .env_remove("AGENTD_REPO_DIR")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITLAB_TOKEN")
        .env_remove("BITBUCKET_TOKEN")
        .kill_on_drop(true);
    command
}

/// The output of a run, which must have succeeded.
fn succeeded(out: Output) -> Output {
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The directory of the one session in `dir/sessions`.
fn session_dir(dir: &Path) -> std::path::PathBuf {
    std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// The events of the one session in `dir/sessions`.
fn session_events(dir: &Path) -> Vec<Event> {
    std::fs::read_to_string(session_dir(dir).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn state(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(session_dir(dir).join("state.json")).unwrap()).unwrap()
}

/// A new directory with an empty workspace, `ws`, in it.
fn dir_with_workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    (dir, workspace)
}

/// Writes each of `files` (a path under `root`, its text), making its directories.
fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// The actions among `events`, in order.
fn actions(events: &[Event]) -> impl DoubleEndedIterator<Item = &Action> {
    events.iter().filter_map(|e| match e {
        Event::Action(a) => Some(a),
        _ => None,
    })
}

/// The observations among `events`, in order.
fn observations(events: &[Event]) -> impl Iterator<Item = &Observation> {
    events.iter().filter_map(|e| match e {
        Event::Observation(o) => Some(o),
        _ => None,
    })
}

/// The observations among `events` that answer the action `id`.
fn answers(events: &[Event], id: i64) -> Vec<&Observation> {
    observations(events)
        .filter(|o| o.cause == Some(id))
        .collect()
}

/// The messages the user sent, in order.
fn user_messages(events: &[Event]) -> Vec<&str> {
    actions(events)
        .filter(|a| a.source == Some(EventSource::User))
        .filter_map(|a| match &a.kind {
            ActionKind::Message(m) => Some(m.content.as_str()),
            _ => None,
        })
        .collect()
}

/// The contents of the `error` observations among `events`, in order.
fn error_contents(events: &[Event]) -> Vec<&str> {
    observations(events)
        .filter(|o| matches!(o.kind, ObservationKind::Error(_)))
        .map(|o| o.content.as_str())
        .collect()
}

/// The system message of a session (its first action).
fn system_message(events: &[Event]) -> &protocol::action::SystemMessageArgs {
    actions(events)
        .find_map(|a| match &a.kind {
            ActionKind::System(s) => Some(s),
            _ => None,
        })
        .unwrap()
}

/// The delegation of a session: its `delegate` action, and the `delegate` observation that
/// answers it with the delegate's outputs.
fn delegation(
    events: &[Event],
) -> (
    &Action,
    &Observation,
    &protocol::observation::DelegateExtras,
) {
    let delegate = actions(events)
        .find(|a| matches!(a.kind, ActionKind::Delegate(_)))
        .unwrap();
    let answer = answers(events, delegate.id.unwrap())[0];
    let ObservationKind::Delegate(extras) = &answer.kind else {
        panic!("{answer:?}")
    };
    (delegate, answer, extras)
}

/// The CodeAct agent's call that hands `task` to `agent`.
fn delegate_to(agent: &str, task: &str) -> Reply {
    Reply::tool_calls([("delegate_to_agent", json!({"agent": agent, "task": task}))])
}

/// Checks the state of a run that delegated: finished, back at the top level, after
/// `iterations` steps counted once across the agents.
fn assert_finished_after_delegating(dir: &Path, iterations: u64) {
    let state = state(dir);
    assert_eq!(state["agent_state"], "finished");
    assert_eq!(state["iteration"], iterations);
    assert_eq!(state["delegate_level"], 0);
}

/// The names of the tools of a recorded request.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The texts of the `tool` messages of a recorded request (the results of the calls), in
/// order.
fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(text)
        .collect()
}

/// The roles of a recorded request's messages, in order.
fn roles(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

/// The text of a message (plain, or its text parts joined).
fn text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A prompted-mode answer: thought text, then one call in the reference's text format.
fn prompted_call(thought: &str, name: &str, params: &[(&str, &str)]) -> Reply {
    let mut text = format!("{thought}\n\n<function={name}>\n");
    for (param, value) in params {
        text.push_str(&format!("<parameter={param}>{value}</parameter>\n"));
    }
    text.push_str("</function>");
    Reply::text(text)
}

/// No trailing newline: prompted mode strips parameter values, as the reference does.
const PROGRAM: &str = "print('hello from the agent')";

mod browsing;
mod confirmation;
mod delegation;
mod interactive;
mod loc;
mod mcp;
mod recall;
mod router;
mod tasks;
mod workspace;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_and_prompted_sessions_create_a_file_run_it_and_finish_with_the_same_events() {
    let (dir, workspace) = dir_with_workspace();
    let file = workspace.join("hello.py");
    let path = file.display().to_string();

    // Native tool calling.
    let native = FakeLlm::start([
        Reply::tool_calls([(
            "str_replace_editor",
            json!({"command": "create", "path": path, "file_text": PROGRAM, "security_risk": "LOW"}),
        )]),
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "python3 hello.py", "security_risk": "LOW"}),
        )]),
        Reply::finish("hello.py prints its greeting"),
    ])
    .await;
    let native_dir = dir.path().join("native");
    std::fs::create_dir(&native_dir).unwrap();
    let dumps = native_dir.join("requests");
    succeeded(
        run(
            &native_dir,
            &workspace,
            &native,
            "Write hello.py and run it.",
            "",
            &[
                "--tool-calling",
                "native",
                "--dump-requests",
                dumps.to_str().unwrap(),
            ],
        )
        .await,
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), PROGRAM);
    let native_events = session_events(&native_dir);

    // The last request shows every call paired with its result, as role=tool, after the task
    // and the workspace context (the recall of the first message).
    let requests = native.requests();
    assert_eq!(requests.len(), 3);
    let last = &requests[2];
    assert_eq!(
        roles(last),
        [
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool"
        ]
    );
    assert_eq!(last["model"], "fake-model");
    let tools: Vec<&str> = last["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "execute_bash",
            "execute_ipython_cell",
            "str_replace_editor",
            "think",
            "finish"
        ]
    );
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(text(&messages[1]), "Write hello.py and run it.");
    assert!(
        text(&messages[2]).starts_with("\n\n<RUNTIME_INFORMATION>"),
        "{last}"
    );
    for (call, result) in [(3, 4), (5, 6)] {
        let id = &messages[call]["tool_calls"][0]["id"];
        assert_eq!(&messages[result]["tool_call_id"], id);
    }
    assert!(
        text(&messages[4]).contains("File created successfully"),
        "{last}"
    );
    assert!(
        text(&messages[6]).contains("hello from the agent"),
        "{last}"
    );
    assert!(text(&messages[6]).contains("exit code 0"), "{last}");
    // --dump-requests wrote each request as sent.
    let dumped = testkit::sorted_paths(&dumps);
    assert_eq!(dumped.len(), 3);
    let dumped_last = testkit::read_json(&dumped[2]);
    assert_eq!(&dumped_last, last);

    // The same session with prompted tool calling.
    std::fs::remove_file(&file).unwrap();
    let prompted = FakeLlm::start([
        prompted_call(
            "I will write the program.",
            "str_replace_editor",
            &[
                ("command", "create"),
                ("path", &path),
                ("file_text", PROGRAM),
                ("security_risk", "LOW"),
            ],
        ),
        prompted_call(
            "Now run it.",
            "execute_bash",
            &[("command", "python3 hello.py"), ("security_risk", "LOW")],
        ),
        prompted_call(
            "Done.",
            "finish",
            &[("message", "hello.py prints its greeting")],
        ),
    ])
    .await;
    let prompted_dir = dir.path().join("prompted");
    std::fs::create_dir(&prompted_dir).unwrap();
    succeeded(
        run(
            &prompted_dir,
            &workspace,
            &prompted,
            "Write hello.py and run it.",
            "",
            &["--tool-calling", "prompted"],
        )
        .await,
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), PROGRAM);
    let prompted_events = session_events(&prompted_dir);

    // No tools in the request; they are in the system prompt, and results are user messages.
    let requests = prompted.requests();
    let last = &requests[2];
    assert!(last.get("tools").is_none(), "{last}");
    assert!(
        last["stop"]
            .as_array()
            .unwrap()
            .contains(&json!("</function"))
    );
    let messages = last["messages"].as_array().unwrap();
    assert!(text(&messages[0]).contains("<function="), "{last}");
    assert!(roles(last).iter().all(|r| r != "tool"), "{last}");
    let results: Vec<String> = messages
        .iter()
        .map(text)
        .filter(|t| t.starts_with("EXECUTION RESULT of ["))
        .collect();
    assert_eq!(results.len(), 2, "{last}");
    assert!(results[0].starts_with("EXECUTION RESULT of [str_replace_editor]:"));
    assert!(results[1].contains("hello from the agent"));

    // Both modes produce the same events: actions, observations, the final state.
    let differences = trajectory::compare(&native_events, &prompted_events);
    assert!(differences.is_empty(), "{differences:?}");
    let kinds =
        |events: &[Event]| -> Vec<&'static str> { events.iter().map(Event::type_name).collect() };
    assert_eq!(kinds(&native_events), kinds(&prompted_events));
    assert!(
        matches!(&native_events[0], Event::Action(a) if matches!(a.kind, ActionKind::System(_)))
    );
    for events in [&native_events, &prompted_events] {
        let thoughts_and_metadata = events.iter().filter_map(|e| match e {
            Event::Action(a) if a.source == Some(EventSource::Agent) => a
                .tool_call_metadata
                .as_ref()
                .map(|m| m.function_name.clone()),
            _ => None,
        });
        assert_eq!(
            thoughts_and_metadata.collect::<Vec<_>>(),
            ["str_replace_editor", "execute_bash", "finish"]
        );
    }
    assert_eq!(state(&native_dir)["agent_state"], "finished");
    assert_eq!(state(&prompted_dir)["agent_state"], "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_calls_in_one_answer_run_in_order_and_their_results_follow_the_one_assistant_message()
 {
    let dir = tempfile::tempdir().unwrap();
    let fake = run_scripted(
        dir.path(),
        dir.path(),
        [
            Reply::tool_calls([
                ("execute_bash", json!({"command": "echo first"})),
                ("think", json!({"thought": "both should print"})),
                ("execute_bash", json!({"command": "echo second"})),
            ]),
            Reply::finish("ok"),
        ],
        "echo twice",
        "",
        &[],
    )
    .await;

    let requests = fake.requests();
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(
        roles(&requests[1]),
        [
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "tool",
            "tool"
        ]
    );
    let calls = messages[3]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    for (i, call) in calls.iter().enumerate() {
        assert_eq!(messages[4 + i]["tool_call_id"], call["id"]);
    }
    assert!(text(&messages[4]).contains("first"));
    assert_eq!(text(&messages[5]), "Your thought has been logged.");
    assert!(text(&messages[6]).contains("second"));

    // One metrics record for the one call: on the first action only.
    let events = session_events(dir.path());
    let with_metrics = events
        .iter()
        .filter(|e| matches!(e, Event::Action(a) if a.llm_metrics.is_some()))
        .count();
    assert_eq!(with_metrics, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_call_is_retried_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start([
        Reply::error(429, "Rate limit reached; try again").retry_after("0"),
        Reply::finish("ok"),
    ])
    .await;
    let out = succeeded(run(dir.path(), dir.path(), &fake, "finish", "", &[]).await);
    assert_eq!(fake.requests().len(), 2);
    let err = stderr(&out);
    assert!(err.contains("RateLimitError"), "{err}");
    assert!(err.contains("attempt 1/4"), "{err}");
    assert_eq!(state(dir.path())["agent_state"], "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_tool_calls_are_shown_to_the_model_which_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let fake = run_scripted(
        dir.path(),
        dir.path(),
        [
            // Native: arguments that are not JSON, then an unknown tool.
            Reply::tool_calls_raw([("execute_bash", "{\"command\": \"ls")]),
            Reply::tool_calls([("rm_everything", json!({}))]),
            Reply::tool_calls([("execute_bash", json!({"command": "echo recovered"}))]),
            Reply::finish("ok"),
        ],
        "recover",
        "",
        &[],
    )
    .await;

    let events = session_events(dir.path());
    let errors = error_contents(&events);
    assert_eq!(errors.len(), 2, "{errors:?}");
    // The model saw each error before its next answer.
    let requests = fake.requests();
    let last_user = |request: &Value| {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(text)
            .unwrap()
    };
    assert!(
        last_user(&requests[1]).contains("execute_bash"),
        "{}",
        requests[1]
    );
    assert!(
        last_user(&requests[2]).contains("rm_everything"),
        "{}",
        requests[2]
    );
    assert_eq!(state(dir.path())["agent_state"], "finished");

    // Prompted: a call with a parameter the tool does not have.
    let dir = tempfile::tempdir().unwrap();
    run_scripted(
        dir.path(),
        dir.path(),
        [
            prompted_call("", "execute_bash", &[("cmd", "ls")]),
            prompted_call(
                "",
                "execute_bash",
                &[("command", "echo recovered"), ("security_risk", "LOW")],
            ),
            prompted_call("", "finish", &[("message", "ok")]),
        ],
        "recover",
        "",
        &["--tool-calling", "prompted"],
    )
    .await;
    let events = session_events(dir.path());
    assert!(events.iter().any(|e| matches!(e,
        Event::Observation(o) if matches!(o.kind, ObservationKind::Error(_)) && o.content.contains("cmd"))));
    assert!(events.iter().any(|e| matches!(e,
        Event::Observation(o) if o.content.contains("recovered"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_limit_counts_the_costs_of_the_reported_tokens() {
    let dir = tempfile::tempdir().unwrap();
    // 1,000 prompt tokens at $0.001 and 10 completion tokens at $0.01: $1.10 a call.
    let step = || {
        Reply::tool_calls([("execute_bash", json!({"command": "echo step"}))]).with_usage(1000, 10)
    };
    let fake = FakeLlm::start([step(), step(), step(), step()]).await;
    let config =
        "[llm.prices.fake-model]\ninput_cost_per_token = 0.001\noutput_cost_per_token = 0.01\n";
    let out = run(
        dir.path(),
        dir.path(),
        &fake,
        "spend",
        config,
        &["--max-budget", "2"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Two calls spent $2.20; the third step is refused before calling the model.
    assert_eq!(fake.requests().len(), 2);
    let state = state(dir.path());
    assert_eq!(state["agent_state"], "error");
    let error = state["last_error"].as_str().unwrap();
    assert!(error.contains("maximum budget"), "{error}");
    let spent = state["budget"]["spent"].as_f64().unwrap();
    assert!((spent - 2.2).abs() < 1e-9, "{spent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_summarizing_condenser_records_a_summary_and_the_model_then_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    // The agent runs echo commands; a request without tools is the condenser's.
    let fake = FakeLlm::with_fn(|request, _| {
        if request.get("tools").is_none() {
            return Reply::text("SUMMARY: the agent echoed numbers 1 to 5.");
        }
        let steps = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        let summarized = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| text(m).contains("SUMMARY: the agent echoed"));
        if summarized && steps >= 2 {
            Reply::finish("ok")
        } else {
            Reply::tool_calls([("execute_bash", json!({"command": format!("echo {steps}")}))])
        }
    })
    .await;
    let config = "[condenser]\ntype = \"llm\"\nkeep_first = 2\nmax_size = 10\n";
    succeeded(run(dir.path(), dir.path(), &fake, "count", config, &[]).await);

    let events = session_events(dir.path());
    let condensation = actions(&events)
        .find_map(|a| match &a.kind {
            ActionKind::Condensation(c) => Some(c),
            _ => None,
        })
        .expect("a condensation is recorded");
    assert!(condensation.summary.as_deref().unwrap().contains("SUMMARY"));
    // The summarising request got the forgotten events; the next agent request is shorter
    // than the one before the condensation, and still pairs every call with its result.
    let requests = fake.requests();
    let summarising = requests
        .iter()
        .position(|r| r.get("tools").is_none())
        .unwrap();
    assert!(summarising > 0);
    let before = requests[summarising - 1]["messages"]
        .as_array()
        .unwrap()
        .len();
    let after = &requests[summarising + 1];
    assert!(
        after["messages"].as_array().unwrap().len() < before,
        "{after}"
    );
    let messages = after["messages"].as_array().unwrap();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "tool" {
            let id = &m["tool_call_id"];
            assert!(
                messages[..i].iter().any(|p| p["tool_calls"]
                    .as_array()
                    .is_some_and(|calls| calls.iter().any(|c| &c["id"] == id))),
                "tool result {id} without its call: {after}"
            );
        }
    }
    assert_eq!(state(dir.path())["agent_state"], "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_over_the_context_window_is_condensed_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let echo =
        |n: u32| Reply::tool_calls([("execute_bash", json!({"command": format!("echo {n}")}))]);
    let fake = FakeLlm::start([
        echo(1),
        echo(2),
        echo(3),
        echo(4),
        Reply::error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        ),
        Reply::finish("ok"),
    ])
    .await;
    let config = "[condenser]\ntype = \"recent\"\nkeep_first = 2\nmax_events = 100\n";
    succeeded(run(dir.path(), dir.path(), &fake, "count", config, &[]).await);

    let types: Vec<&str> = session_events(dir.path())
        .iter()
        .map(Event::type_name)
        .collect();
    let request = types.iter().position(|t| *t == "condensation_request");
    let condensation = types.iter().position(|t| *t == "condensation");
    assert!(request.is_some() && condensation > request, "{types:?}");
    // The context error was not retried; the prompt after the condensation is shorter.
    let requests = fake.requests();
    assert_eq!(requests.len(), 6);
    let len = |r: &Value| r["messages"].as_array().unwrap().len();
    assert!(len(&requests[5]) < len(&requests[4]), "{}", requests[5]);
    assert_eq!(state(dir.path())["agent_state"], "finished");
}
