//! Interactive `agentd run` on a terminal's protocol, through pipes: the task and the replies
//! are typed lines (a line ending with `\` goes on), confirmations are `y`/`n`, `/exit` leaves.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use testkit::{FakeLlm, Reply};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::{agentd, dir_with_workspace, session_events, state, user_messages};

const PATIENCE: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_types_the_task_confirms_replies_on_two_lines_and_leaves_with_exit() {
    let (dir, workspace) = dir_with_workspace();
    let fake = FakeLlm::start([
        Reply::tool_calls([("execute_bash", json!({"command": "echo hi > hi.txt"}))]),
        Reply::text("Done. What should the greeting say?"),
        Reply::text("Anything else?"),
    ])
    .await;
    let mut child = agentd(dir.path(), &workspace, &fake, "", &["--confirm"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // The agent's messages and actions are shown on stdout.
    let shown = tokio::spawn(async move {
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        text
    });
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut prompted = async |prompt: &str| loop {
        let line = tokio::time::timeout(PATIENCE, stderr.next_line())
            .await
            .unwrap_or_else(|_| panic!("no {prompt:?} prompt"))
            .unwrap()
            .unwrap_or_else(|| panic!("stderr ended before the {prompt:?} prompt"));
        if line.contains(prompt) {
            return;
        }
    };
    let mut typed = async |text: &str| {
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    };

    prompted("what should the agent do?").await;
    typed("Write a greeting \\\ninto hi.txt\n").await;
    prompted("run the action above? [y/n]").await;
    typed("maybe\n").await;
    prompted("answer y (run it) or n (reject it)").await;
    typed("y\n").await;
    prompted("your reply").await;
    typed("Hello, \\\nworld\n").await;
    prompted("your reply").await;
    typed("/exit\n").await;
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "leaving with /exit is a normal end");
    let shown = shown.await.unwrap();
    assert!(
        shown.contains("Done. What should the greeting say?"),
        "{shown}"
    );
    assert!(shown.contains("awaiting confirmation"), "{shown}");

    assert_eq!(
        std::fs::read_to_string(workspace.join("hi.txt")).unwrap(),
        "hi\n"
    );
    assert_eq!(
        user_messages(&session_events(dir.path())),
        ["Write a greeting \ninto hi.txt", "Hello, \nworld"]
    );
    // The model saw the two-line reply as the user's message.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let last = requests[2]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(super::text(last).contains("Hello, \nworld"), "{last}");
    assert_eq!(state(dir.path())["agent_state"], "stopped");
}
