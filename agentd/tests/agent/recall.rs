//! Recall end to end: microagents and the workspace context, read from the workspace in the
//! sandbox, as `recall` observations on the stream and as messages in the model's requests;
//! the setup script and the pre-commit hook; secrets masked on every path out; the message of a
//! run resumed after an error.

use std::path::Path;

use protocol::{Action, ActionKind, Event, EventSource, Observation, ObservationKind};
use serde_json::{Value, json};
use testkit::{FakeLlm, Reply};

use super::{
    dir_with_workspace, run, run_scripted, run_with_env, session_dir, session_events, state,
    stderr, succeeded, text, user_messages, write_files,
};

/// The headless run's automatic reply (OpenHands' `auto_continue_response`).
const AUTO_CONTINUE: &str = "Please continue on whatever approach you think is suitable.\nIf you think you have solved the task, please finish the interaction.\nIMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN RESPONSE.\n";

/// A new directory with a workspace, `ws`, holding `files` (a path in it, its text).
fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write_files(&ws, files);
    (dir, ws)
}

/// The `recall` actions and observations of a session, in order.
fn recalls(events: &[Event]) -> (Vec<&Action>, Vec<&Observation>) {
    let (mut actions, mut observations) = (Vec::new(), Vec::new());
    for event in events {
        match event {
            Event::Action(a) if matches!(a.kind, ActionKind::Recall(_)) => actions.push(a),
            Event::Observation(o) if matches!(o.kind, ObservationKind::Recall(_)) => {
                observations.push(o);
            }
            _ => {}
        }
    }
    (actions, observations)
}

fn today() -> String {
    // The date the run started, as the test sees it (a run across midnight would differ).
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

const REPO_MD: &str = "Run `make check` before you finish.\n";
const AGENTS_MD: &str = "Indent with four spaces.\n";
const PERSIST_MD: &str =
    "---\nname: persist\ntriggers:\n- suitable\n---\n\nKeep going until the tests pass.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_with_microagents_gets_the_references_recall_observations() {
    let (dir, ws) = workspace_with(&[
        (".openhands/microagents/repo.md", REPO_MD),
        (".openhands/microagents/persist.md", PERSIST_MD),
        (".openhands/microagents/README.md", "Not a microagent."),
        (
            ".openhands/microagents/broken.md",
            "---\ntriggers: [unclosed\n---\nnever shown",
        ),
        ("AGENTS.md", AGENTS_MD),
        (
            ".openhands/setup.sh",
            "echo ran >> setup-ran.txt\nexport SETUP_DONE=yes\n",
        ),
    ]);
    let fake = FakeLlm::start([
        // No tool call: the agent waits, the headless run replies (a later user message that
        // triggers `persist`), twice.
        Reply::text("Which test?"),
        Reply::text("Still unsure."),
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "echo \"setup:$SETUP_DONE\""}),
        )]),
        Reply::finish("done"),
    ])
    .await;
    let out = succeeded(run(dir.path(), &ws, &fake, "Fix the build.", "", &[]).await);

    // The malformed file is reported with its name and skipped; the run goes on.
    let err = stderr(&out);
    assert!(
        err.contains("broken.md") && err.contains("not valid YAML"),
        "{err}"
    );
    // setup.sh ran once, sourced in the agent's shell.
    assert_eq!(
        std::fs::read_to_string(ws.join("setup-ran.txt")).unwrap(),
        "ran\n"
    );

    let events = session_events(dir.path());
    let (actions, observations) = recalls(&events);
    let kinds: Vec<(&str, &str)> = actions
        .iter()
        .map(|a| match &a.kind {
            ActionKind::Recall(r) => (r.recall_type.as_str(), r.query.as_str()),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("workspace_context", "Fix the build."),
            ("knowledge", AUTO_CONTINUE),
            ("knowledge", AUTO_CONTINUE)
        ]
    );
    assert!(actions.iter().all(|a| a.source == Some(EventSource::User)));
    assert_eq!(
        actions[0].message.as_deref(),
        Some("Retrieving content for: Fix the build.")
    );
    // Exactly the reference's observations: the workspace context (repository instructions:
    // AGENTS.md, then repo.md; runtime information), then the knowledge, each time it fires.
    assert_eq!(observations.len(), 3);
    let ws_path = ws.display().to_string();
    let first = serde_json::to_value(observations[0]).unwrap();
    assert_eq!(first["source"], "environment");
    assert_eq!(first["cause"], json!(actions[0].id));
    assert_eq!(first["message"], "Added workspace context");
    assert_eq!(first["content"], "Added workspace context");
    assert_eq!(
        first["extras"],
        json!({
            "recall_type": "workspace_context",
            "repo_name": "", "repo_directory": "", "repo_branch": "",
            "repo_instructions": "Indent with four spaces.\n\n\nRun `make check` before you finish.",
            "runtime_hosts": {},
            "additional_agent_instructions": "",
            "date": today(),
            "custom_secrets_descriptions": {},
            "conversation_instructions": "",
            "working_dir": ws_path,
            "microagent_knowledge": []
        })
    );
    let persist = json!([{"name": "persist", "trigger": "suitable", "content": "Keep going until the tests pass."}]);
    for (observation, action) in observations[1..].iter().zip(&actions[1..]) {
        let json = serde_json::to_value(observation).unwrap();
        assert_eq!(json["cause"], json!(action.id));
        assert_eq!(json["message"], "Added microagent knowledge");
        assert_eq!(json["content"], "Retrieved knowledge from microagents");
        assert_eq!(json["extras"]["recall_type"], "knowledge");
        assert_eq!(json["extras"]["microagent_knowledge"], persist);
    }
    // The setup script's run is recorded (hidden, from the environment) with its answer.
    let setup = super::actions(&events)
        .find(
            |a| matches!(&a.kind, ActionKind::Run(r) if r.command.contains(".openhands/setup.sh")),
        )
        .unwrap();
    assert_eq!(setup.source, Some(EventSource::Environment));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Observation(o) if o.cause == setup.id))
    );

    // The model's requests: the workspace context right after the task, the knowledge after
    // the reply that triggered it, and once only, though it fired twice.
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    let messages = |i: usize| requests[i]["messages"].as_array().unwrap().clone();
    let first = messages(0);
    assert_eq!(first.len(), 3, "{first:#?}");
    assert_eq!(text(&first[1]), "Fix the build.");
    assert_eq!(
        text(&first[2]),
        format!(
            "\n\n<REPOSITORY_INSTRUCTIONS>\nIndent with four spaces.\n\n\nRun `make check` before you finish.\n</REPOSITORY_INSTRUCTIONS>\n\n<RUNTIME_INFORMATION>\n\nThe current working directory is {ws_path}\n\n\n\n\n\nToday's date is {} (UTC).\n\n</RUNTIME_INFORMATION>",
            today()
        )
    );
    let extra_info = "\n\n<EXTRA_INFO>\nThe following information has been included based on a keyword match for \"suitable\".\nIt may or may not be relevant to the user's request.\n\nKeep going until the tests pass.\n</EXTRA_INFO>";
    let second = messages(1);
    let roles: Vec<&str> = second.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "user", "assistant", "user", "user"]
    );
    assert_eq!(text(&second[4]), AUTO_CONTINUE);
    assert_eq!(text(&second[5]), extra_info);
    let last = messages(3);
    let shown = last
        .iter()
        .filter(|m| text(m).contains("<EXTRA_INFO>"))
        .count();
    assert_eq!(shown, 1, "{last:#?}");
    // The hidden setup run is not shown to the model; its effect is.
    assert!(!last.iter().any(|m| text(m).contains("setup.sh")));
    assert!(
        last.iter().any(|m| text(m).contains("setup:yes")),
        "{last:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_printed_by_a_command_never_appears_in_clear() {
    const VALUE: &str = "s3cr3t-v4lue-42";
    // A malformed microagent whose file name is the secret: agentd's log line about it must
    // mask it.
    let (dir, ws) = workspace_with(&[(
        &format!(".openhands/microagents/{VALUE}.md"),
        "---\n- x\n---\n",
    )]);
    let dumps = dir.path().join("dumps");
    let logs = dir.path().join("logs");
    let trajectory = dir.path().join("trajectory.json");
    let fake = FakeLlm::start([
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "echo \"value=$MY_SECRET\"; echo \"$MY_SECRET\" | rev"}),
        )]),
        Reply::tool_calls([(
            "execute_ipython_cell",
            json!({"code": "import os\nprint('py=' + os.environ['MY_SECRET'])"}),
        )]),
        Reply::finish("done"),
    ])
    .await;
    let out = run_with_env(
        dir.path(),
        &ws,
        &fake,
        "Print the secret.",
        &format!(
            "log_completions_folder = {:?}\n",
            logs.display().to_string()
        ),
        &[
            "--secret",
            "MY_SECRET=the test secret",
            "--dump-requests",
            dumps.to_str().unwrap(),
            "--save-trajectory",
            trajectory.to_str().unwrap(),
        ],
        &[("MY_SECRET", VALUE), ("RUST_LOG", "agentd=debug")],
    )
    .await;
    let out = succeeded(out);

    // The sandbox had the value (reversed, it is no longer the secret).
    let events = session_events(dir.path());
    let outputs: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Observation(o)
                if matches!(
                    o.kind,
                    ObservationKind::Run(_) | ObservationKind::RunIpython(_)
                ) && o.tool_call_metadata.is_some() =>
            {
                Some(o.content.as_str())
            }
            _ => None,
        })
        .collect();
    let reversed: String = VALUE.chars().rev().collect();
    assert!(outputs[0].contains("value=<secret_hidden>"), "{outputs:?}");
    assert!(outputs[0].contains(&reversed), "{outputs:?}");
    assert!(outputs[1].contains("py=<secret_hidden>"), "{outputs:?}");

    // Described by name only.
    let requests = fake.requests();
    let context = text(&requests[0]["messages"][2]);
    assert!(
        context.contains("<CUSTOM_SECRETS>\nYou have access to the following environment variables\n\n* **$MY_SECRET**: the test secret\n"),
        "{context}"
    );
    // Nowhere in clear: events, state, trajectory, request dumps, completion logs, the next
    // requests, agentd's own log lines.
    let session = session_dir(dir.path());
    let mut files = vec![
        session.join("events.jsonl"),
        session.join("state.json"),
        trajectory.clone(),
    ];
    files.extend(testkit::sorted_paths(&dumps));
    files.extend(testkit::sorted_paths(&logs));
    assert_eq!(files.len(), 3 + 3 + 3, "{files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains(VALUE), "{}: {text}", file.display());
    }
    for request in &requests[1..] {
        let text = request.to_string();
        assert!(!text.contains(VALUE), "{text}");
        assert!(text.contains("value=<secret_hidden>"), "{text}");
    }
    let err = stderr(&out);
    assert!(!err.contains(VALUE), "{err}");
    assert!(err.contains("<secret_hidden>.md"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(VALUE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_microagent_gets_its_inputs_or_fails_a_headless_run_that_lacks_them() {
    let (dir, ws) = workspace_with(&[(
        ".openhands/microagents/deploy.md",
        "---\nname: deploy\ninputs:\n  - name: TARGET\n    description: where to deploy\n---\nDeploy the site to ${TARGET}.\n",
    )]);
    // Without the input: no model call, the run ends in error saying what is missing.
    let fake = FakeLlm::start([]).await;
    let out = run(dir.path(), &ws, &fake, "/deploy please", "", &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(fake.requests().is_empty());
    let saved = state(dir.path());
    assert_eq!(saved["agent_state"], "error");
    let error = saved["last_error"].as_str().unwrap();
    assert!(
        error.contains("/deploy needs inputs")
            && error.contains("TARGET (where to deploy)")
            && error.contains("--input"),
        "{error}"
    );

    // With it: the model sees the microagent with its input filled in.
    let dir = tempfile::tempdir().unwrap();
    let fake = run_scripted(
        dir.path(),
        &ws,
        [Reply::finish("ok")],
        "/deploy please",
        "",
        &["--input", "TARGET=staging"],
    )
    .await;
    let context = text(&fake.requests()[0]["messages"][2]);
    assert!(
        context.contains("keyword match for \"/deploy\".\nIt may or may not be relevant to the user's request.\n\nDeploy the site to staging.\n</EXTRA_INFO>"),
        "{context}"
    );
}

/// `git` in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_is_cloned_set_up_and_gets_its_pre_commit_hook() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    write_files(
        &source,
        &[
            ("AGENTS.md", "Commit small changes.\n"),
            (".openhands/setup.sh", "echo set-up >> ../setup-log.txt\n"),
            (
                ".openhands/pre-commit.sh",
                "echo checked >> .pre-commit-ran\n",
            ),
        ],
    );
    git(&source, &["init", "-q"]);
    git(&source, &["add", "-A"]);
    git(&source, &["commit", "-qm", "initial"]);
    let origin = dir.path().join("team/tool.git");
    std::fs::create_dir_all(origin.parent().unwrap()).unwrap();
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            source.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    let url = format!("file://{}", origin.display());

    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let fake = FakeLlm::start([
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "pwd && echo x > new.txt && git add new.txt && git -c user.name=a -c user.email=a@a commit -qm change && git log --oneline | wc -l"}),
        )]),
        Reply::finish("done"),
    ])
    .await;
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    succeeded(run(&run_dir, &ws, &fake, "Add new.txt.", "", &["--repo", &url]).await);

    let clone = ws.join("tool");
    assert!(clone.join(".git").is_dir());
    // setup.sh ran once, in the repository; the hook ran on the agent's commit.
    assert_eq!(
        std::fs::read_to_string(ws.join("setup-log.txt")).unwrap(),
        "set-up\n"
    );
    assert_eq!(
        std::fs::read_to_string(clone.join(".pre-commit-ran")).unwrap(),
        "checked\n"
    );
    let hook = std::fs::read_to_string(clone.join(".git/hooks/pre-commit")).unwrap();
    assert!(
        hook.contains("# This hook was installed by OpenHands"),
        "{hook}"
    );

    // The agent started in the repository, on a work branch, and was told so.
    let requests = fake.requests();
    let result = text(
        &requests[1]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone(),
    );
    assert!(result.contains(&clone.display().to_string()), "{result}");
    let context = text(&requests[0]["messages"][2]);
    let prefix = "\n\n<REPOSITORY_INFO>\nAt the user's request, repository team/tool has been cloned to tool in the current working directory.\nThe repository has been checked out to branch \"openhands-workspace-";
    assert!(context.starts_with(prefix), "{context}");
    assert!(
        context.contains(
            "<REPOSITORY_INSTRUCTIONS>\nCommit small changes.\n\n</REPOSITORY_INSTRUCTIONS>"
        ),
        "{context}"
    );
    let events = session_events(&run_dir);
    let (_, observations) = recalls(&events);
    let extras = &serde_json::to_value(observations[0]).unwrap()["extras"];
    assert_eq!(extras["repo_name"], "team/tool");
    assert_eq!(extras["repo_directory"], "tool");
    assert!(
        extras["repo_branch"]
            .as_str()
            .unwrap()
            .starts_with("openhands-workspace-")
    );
    assert_eq!(extras["working_dir"], json!(ws.display().to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_after_an_error_starts_with_the_references_message() {
    let (dir, ws) = dir_with_workspace();
    // The model answers 400: the run fails.
    let failing = FakeLlm::start([Reply::error(400, "bad request")]).await;
    let out = run(dir.path(), &ws, &failing, "Do it.", "", &[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(state(dir.path())["agent_state"], "error");
    let session = session_dir(dir.path())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    let fake = run_scripted(
        dir.path(),
        &ws,
        [Reply::finish("ok")],
        "ignored",
        "",
        &["--resume", &session],
    )
    .await;
    let back = "Let's get back on track. If you experienced errors before, do NOT resume your task. Ask me about it.";
    let events = session_events(dir.path());
    assert_eq!(user_messages(&events), ["Do it.", back]);
    let (actions, _) = recalls(&events);
    let types: Vec<Value> = actions
        .iter()
        .map(|a| serde_json::to_value(a).unwrap()["args"]["recall_type"].clone())
        .collect();
    assert_eq!(types, [json!("workspace_context"), json!("knowledge")]);
    let request = &fake.requests()[0];
    let last_user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(text(&last_user).trim_start(), back);
}
