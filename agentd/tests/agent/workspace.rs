//! A mounted workspace on the real Docker engine: the sandbox user takes the workspace owner's
//! uid and gid, so that what the agent writes (editor, bash, IPython) belongs on the host to
//! whoever owns the project; root only where the policy allows it; a run whose every action
//! was refused for lack of permission is not reported as finished.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;
use testkit::{FakeLlm, Reply};

use super::{run, stderr};

/// The model's answers: create calc.py, edit it, run it from bash into out.txt, write a file
/// from IPython, check who the user is, finish.
fn script() -> Vec<Reply> {
    vec![
        Reply::tool_calls([(
            "str_replace_editor",
            json!({"command": "create", "path": "/workspace/calc.py", "file_text": "print(1 + 1)\n"}),
        )]),
        Reply::tool_calls([(
            "str_replace_editor",
            json!({"command": "str_replace", "path": "/workspace/calc.py", "old_str": "1 + 1", "new_str": "2 + 3"}),
        )]),
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "python3 calc.py > out.txt && cat out.txt && mkdir -p made/by/bash"}),
        )]),
        Reply::tool_calls([(
            "execute_ipython_cell",
            json!({"code": "open('/workspace/from_ipython.txt', 'w').write('ok')"}),
        )]),
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "id -u; id -g; cd ~ && pwd"}),
        )]),
        Reply::finish("calc.py prints 5"),
    ]
}

/// A fresh workspace directory in `dir`, owned by `owner` (uid, gid).
fn workspace_owned_by(dir: &Path, owner: (u32, u32)) -> PathBuf {
    let workspace = dir.join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::os::unix::fs::chown(&workspace, Some(owner.0), Some(owner.1)).unwrap();
    workspace
}

/// `agentd run --runtime docker` of the CodeAct agent against `fake`, with `extra` arguments.
async fn run_in_docker(dir: &Path, workspace: &Path, fake: &FakeLlm, extra: &[&str]) -> Output {
    let mut args = vec!["--runtime", "docker"];
    args.extend(extra);
    run(dir, workspace, fake, "Write calc.py and run it.", "", &args).await
}

/// Runs the script in a Docker sandbox on a fresh workspace owned by `owner` (uid, gid) and
/// checks that every file the agent made belongs to `expected` on the host, and that the
/// shell's `id` and home say the same.
async fn agent_writes_as(owner: (u32, u32), expected: (u32, u32), extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_owned_by(dir.path(), owner);
    let fake = FakeLlm::start(script()).await;
    let out = run_in_docker(dir.path(), &workspace, &fake, extra).await;
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("actions failed"), "{log}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("calc.py")).unwrap(),
        "print(2 + 3)\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("out.txt")).unwrap(),
        "5\n"
    );
    for made in [
        "calc.py",
        "out.txt",
        "made/by/bash",
        "made",
        "from_ipython.txt",
    ] {
        let meta = std::fs::metadata(workspace.join(made)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), expected, "owner of {made}");
    }
    // The model saw the shell's own view of who it is.
    let requests = fake.requests();
    let last = requests.last().unwrap().to_string();
    let home = if expected.0 == 0 {
        "/root"
    } else {
        "/home/openhands"
    };
    let id = format!("{}\\n{}\\n{home}", expected.0, expected.1);
    assert!(last.contains(&id), "{id} not in {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_of_uid_1000_is_written_as_1000() {
    agent_writes_as((1000, 1000), (1000, 1000), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_of_an_unusual_uid_is_written_as_that_uid_and_gid() {
    agent_writes_as((4321, 4322), (4321, 4322), &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_workspace_is_written_as_root_where_the_policy_allows_it() {
    agent_writes_as((0, 0), (0, 0), &["--allow-root"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_workspace_is_refused_up_front_under_the_no_root_policy() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_owned_by(dir.path(), (0, 0));
    let fake = FakeLlm::start(script()).await;
    let out = run_in_docker(dir.path(), &workspace, &fake, &[]).await;
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{log}");
    assert!(log.contains("belongs to root"), "{log}");
    assert!(log.contains("--allow-root"), "{log}");
    assert!(log.contains("chown -R 1000:1000"), "{log}");
    // Nothing started: no call to the model, no session.
    assert!(fake.requests().is_empty());
    assert!(!dir.path().join("sessions").exists());

    // The same when the uid is asked for, and for a uid that could not write the workspace.
    let out = run_in_docker(dir.path(), &workspace, &fake, &["--sandbox-uid", "4321"]).await;
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{log}");
    assert!(log.contains("could not write the workspace"), "{log}");
    assert!(fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_every_action_was_denied_is_not_finished_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_owned_by(dir.path(), (1000, 1000));
    let fake = FakeLlm::start([
        Reply::tool_calls([(
            "str_replace_editor",
            json!({"command": "create", "path": "/etc/calc.py", "file_text": "print(5)\n"}),
        )]),
        Reply::tool_calls([(
            "str_replace_editor",
            json!({"command": "create", "path": "/usr/calc.py", "file_text": "print(5)\n"}),
        )]),
        Reply::finish("done"),
    ])
    .await;
    // No disk limit: with one, the root is read-only, and the writes fail for that first.
    let out = run_in_docker(dir.path(), &workspace, &fake, &["--disk", "none"]).await;
    let log = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(
        log.contains("2 of 2 actions failed, all for lack of permission"),
        "{log}"
    );
    assert!(log.contains("every action it ran failed"), "{log}");
    // The model was told whose file it is and that retrying will not help.
    let requests = fake.requests();
    let shown = requests[1].to_string();
    assert!(shown.contains("Permission denied"), "{shown}");
    assert!(shown.contains("retrying will not help"), "{shown}");
    assert!(
        shown.contains("the sandbox user (uid 1000, gid 1000) may not write the directory /etc"),
        "{shown}"
    );
    assert!(!Path::new("/etc/calc.py").exists());
}
