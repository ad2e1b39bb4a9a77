//! Live sandboxes (issue 20): exactly-once actions, conditional writes, streamed output and
//! attaching, named shells, processes and signals, terminals over WebSocket.

use std::time::Duration;

use client::{ClientError, ExecuteOptions, SandboxClient, TerminalOutput, TerminalSocket};
use protocol::action::{FileEditArgs, FileReadArgs, FileWriteArgs};
use protocol::api::{CreateShellRequest, CreateTerminalRequest, SignalSpec, StreamEvent};
use protocol::{Action, ActionKind};
use serde_json::json;

use crate::common::*;

fn typed(sb: &Sandbox) -> SandboxClient {
    SandboxClient::new(&sb.url, Some(KEY.to_owned())).unwrap()
}

/// Panics unless `answer` is the server's refusal with HTTP `status`.
#[track_caller]
fn assert_refused<T: std::fmt::Debug>(answer: Result<T, ClientError>, status: u16) {
    let err = answer.unwrap_err();
    assert!(
        matches!(err, ClientError::Http { status: got, .. } if got == status),
        "{err}"
    );
}

/// A retried request with the same key runs its command once, also when the first request's
/// client gave up before the answer: the retry waits for it (a counter file proves it).
#[tokio::test]
async fn a_retried_request_with_the_same_key_runs_its_command_once() {
    let sb = Sandbox::start().await;
    let counter = sb.ws.join("counter");
    let body = json!({"action": {"action": "run", "args": {
        "command": format!("echo ran >> {} && sleep 1 && echo done", counter.display()),
        "blocking": true}, "timeout": 30}});
    let send = |timeout: Duration| {
        sb.request(reqwest::Method::POST, "/execute_action")
            .header("Idempotency-Key", "job-1")
            .timeout(timeout)
            .json(&body)
    };
    // The first client gives up while the command runs; the command goes on.
    let first = send(Duration::from_millis(300)).send().await;
    assert!(first.is_err(), "{first:?}");
    let retry = send(Duration::from_secs(30)).send().await.unwrap();
    assert_eq!(retry.status(), 200);
    let obs: serde_json::Value = retry.json().await.unwrap();
    assert_output(&obs, "done");
    let again = testkit::json_answer(send(Duration::from_secs(30))).await;
    assert_eq!(again, obs, "a finished key replays its answer");
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "ran\n");

    // The typed client: the same key with another request is refused, a new key runs.
    let c = typed(&sb);
    let other = client::run_action("echo other", None);
    let err = c
        .execute_with(&other, &ExecuteOptions::idempotent("job-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Http { status: 422, detail, .. } if detail.contains("different request")),
        "{err}"
    );
    let run = c
        .execute_with(&other, &ExecuteOptions::idempotent("job-2"))
        .await
        .unwrap();
    assert_eq!(run.observation.content, "other");
    // A bad key is one clear 400.
    let (status, body) = testkit::status_and_text(
        sb.request(reqwest::Method::POST, "/execute_action")
            .header("Idempotency-Key", "x".repeat(300))
            .json(&body),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Idempotency-Key"), "{body}");
}

/// `read` answers with the file's content hash; a `write` or `edit` that names the hash it
/// read is refused with 412 when the file changed since (the loser of a race), and the file
/// keeps the winner's content.
#[tokio::test]
async fn a_conditional_write_that_lost_the_race_is_refused() {
    let sb = Sandbox::start().await;
    let c = typed(&sb);
    let path = format!("{}/shared.txt", sb.ws_str());
    std::fs::write(&path, "v1\n").unwrap();
    let read = |path: &str| Action::from(ActionKind::Read(FileReadArgs::new(path)));
    let seen = c
        .execute_with(&read(&path), &ExecuteOptions::default())
        .await
        .unwrap();
    let hash = seen.content_hash.expect("a read gives the content hash");
    assert!(hash.starts_with("sha256:") && hash.len() == 71, "{hash}");

    // Two writers read the same version; the first wins, the second is refused.
    let write =
        |content: &str| Action::from(ActionKind::Write(FileWriteArgs::new(path.clone(), content)));
    let won = c
        .execute_with(&write("winner"), &ExecuteOptions::if_match(&hash))
        .await
        .unwrap();
    assert_eq!(won.observation.content, "");
    let new_hash = won.content_hash.expect("a write gives the new hash");
    assert_ne!(new_hash, hash);
    let lost = c
        .execute_with(&write("loser"), &ExecuteOptions::if_match(&hash))
        .await
        .unwrap_err();
    match &lost {
        ClientError::Http { status, detail, .. } => {
            assert_eq!(*status, 412);
            assert!(detail.contains("changed since it was read"), "{detail}");
            assert!(detail.contains(&new_hash), "{detail}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "winner\n");

    // `edit` too; with the current hash it goes through and gives the next one.
    let mut edit = FileEditArgs::new(&path, "str_replace");
    edit.old_str = Some("winner".into());
    edit.new_str = Some("edited".into());
    let edit = Action::from(ActionKind::Edit(edit));
    assert_refused(
        c.execute_with(&edit, &ExecuteOptions::if_match(&hash))
            .await,
        412,
    );
    let done = c
        .execute_with(&edit, &ExecuteOptions::if_match(&new_hash))
        .await
        .unwrap();
    assert!(
        done.observation.content.contains("has been edited"),
        "{:?}",
        done.observation
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "edited\n");
    // A file that is gone fails the condition; a malformed hash is a 400.
    std::fs::remove_file(&path).unwrap();
    let err = c
        .execute_with(
            &write("again"),
            &ExecuteOptions::if_match(done.content_hash.unwrap()),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Http { status: 412, detail, .. } if detail.contains("no longer")),
        "{err}"
    );
    assert_refused(
        c.execute_with(&write("again"), &ExecuteOptions::if_match("md5:x"))
            .await,
        400,
    );
    // Without conditions nothing changes: the plain API answers as before.
    let obs = sb
        .act(json!({"action": "write", "args": {"path": path, "content": "plain"}}))
        .await;
    assert_eq!(obs["observation"], "write");
}

/// A 5-second command streamed arrives in at least 5 chunks as it is produced, and its final
/// observation is the one `/execute_action` answers for the same command (but for the name of
/// its full-output file).
#[tokio::test]
async fn a_streamed_command_arrives_in_chunks_and_ends_with_the_plain_observation() {
    let sb = Sandbox::start().await;
    let c = typed(&sb);
    let command = "for i in 1 2 3 4 5; do echo tick $i; sleep 1; done";
    let action = client::run_action(command, Some(30.0));
    let started = std::time::Instant::now();
    let mut events = c
        .execute_stream(&action, &ExecuteOptions::default())
        .await
        .unwrap();
    let mut chunks = Vec::new();
    let observation = loop {
        match events.next().await.unwrap().expect("a last line") {
            StreamEvent::Output { data, skipped } => {
                assert_eq!(skipped, 0);
                chunks.push((started.elapsed(), data));
            }
            StreamEvent::Observation { observation } => break *observation,
            other => panic!("{other:?}"),
        }
    };
    assert!(events.next().await.unwrap().is_none());
    assert!(chunks.len() >= 5, "{chunks:?}");
    // Live: the first tick long before the command's end.
    assert!(chunks[0].0 < Duration::from_secs(3), "{chunks:?}");
    let text: String = chunks.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(text, "tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n");
    let plain = c.execute(&action).await.unwrap();
    let unnamed = |o: &protocol::Observation| {
        let mut v = serde_json::to_value(o).unwrap();
        v["extras"]["metadata"]["suffix"].take();
        v["extras"]["full_output_path"].take();
        v
    };
    assert_eq!(unnamed(&observation), unnamed(&plain));
    assert_eq!(observation.content, plain.content);
    // The raw NDJSON: one JSON value per line, the observation's JSON as /execute_action's.
    let resp = sb
        .request(reqwest::Method::POST, "/execute_action/stream")
        .json(&json!({"action": {"action": "run", "args": {"command": "echo raw"}, "timeout": 30}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let body = resp.text().await.unwrap();
    let lines: Vec<serde_json::Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0], json!({"type": "output", "data": "raw\n"}));
    assert_eq!(lines.last().unwrap()["type"], "observation");
    assert_eq!(lines.last().unwrap()["observation"]["content"], "raw");
}

/// An IPython cell streams its prints as they come.
#[tokio::test]
async fn a_streamed_cell_arrives_in_chunks() {
    let sb = Sandbox::with_args(&["--python", crate::ipython::PYTHON]).await;
    let c = typed(&sb);
    let action: Action = serde_json::from_value(json!({"action": "run_ipython", "args": {
        "code": "import time\nfor i in range(3):\n    print('cell', i, flush=True)\n    time.sleep(0.5)"},
        "timeout": 60}))
    .unwrap();
    let mut chunks = Vec::new();
    let obs = c
        .execute_streamed(&action, &ExecuteOptions::default(), |d| {
            chunks.push(d.to_owned())
        })
        .await
        .unwrap();
    assert!(chunks.len() >= 3, "{chunks:?}");
    assert_eq!(chunks.concat(), "cell 0\ncell 1\ncell 2\n");
    assert!(
        obs.content.starts_with("cell 0\ncell 1\ncell 2"),
        "{}",
        obs.content
    );
}

/// Another connection attaches to a running command: it gets what was printed so far, the
/// rest as it comes and the end; with no command running, 409.
#[tokio::test]
async fn another_connection_attaches_to_a_running_command() {
    let sb = Sandbox::start().await;
    let c = typed(&sb);
    assert_refused(c.attach("default").await, 409);
    assert_refused(c.attach("nope").await, 404);
    let marker = sb.ws.join("go");
    let command = format!(
        "echo before; while [ ! -e {} ]; do sleep 0.1; done; echo after",
        marker.display()
    );
    let runner = {
        let c = typed(&sb);
        tokio::spawn(async move { c.run(&command, Some(60.0)).await.unwrap() })
    };
    // Attach once the command printed its first line.
    let mut events = loop {
        match c.attach("default").await {
            Ok(mut events) => match events.next().await.unwrap() {
                Some(StreamEvent::Output { data, .. }) => {
                    assert_eq!(data, "before\n");
                    break events;
                }
                other => panic!("{other:?}"),
            },
            Err(ClientError::Http { status: 409, .. }) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    std::fs::write(&marker, "").unwrap();
    assert_eq!(
        events.next().await.unwrap(),
        Some(StreamEvent::Output {
            data: "after\n".into(),
            skipped: 0
        })
    );
    assert_eq!(events.next().await.unwrap(), Some(StreamEvent::End));
    assert_eq!(runner.await.unwrap().content, "before\nafter");
}

/// Two named shells with different working directories run commands in parallel, each with
/// its own directory and environment; relative paths of file actions resolve in the shell
/// named; shells are listed and closed; the default shell cannot be closed.
#[tokio::test]
async fn two_shells_with_different_cwds_run_in_parallel() {
    let sb = Sandbox::start().await;
    let c = typed(&sb);
    std::fs::create_dir_all(sb.ws.join("a")).unwrap();
    std::fs::create_dir_all(sb.ws.join("b")).unwrap();
    let shell = |id: &str, cwd: &str, env: &[(&str, &str)]| CreateShellRequest {
        id: Some(id.into()),
        cwd: Some(cwd.into()),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    };
    let a = c
        .create_shell(&shell("a", "a", &[("WHO", "it's a")]))
        .await
        .unwrap();
    assert_eq!(a.cwd.as_deref(), Some(sb.ws.join("a").to_str().unwrap()));
    c.create_shell(&shell("b", "b", &[])).await.unwrap();
    assert_refused(c.create_shell(&shell("a", "b", &[])).await, 409);
    assert_refused(c.create_shell(&shell("bad/id", "b", &[])).await, 400);
    assert_refused(c.create_shell(&shell("c", "missing", &[])).await, 400);

    // Both run at once: each waits for the other's file, so neither could finish alone.
    let (fa, fb) = (sb.ws.join("a/ready"), sb.ws.join("b/ready"));
    let command = |mine: &std::path::Path, theirs: &std::path::Path| {
        client::run_action(
            &format!(
                "touch {}; while [ ! -e {} ]; do sleep 0.05; done; pwd; echo \"${{WHO:-nobody}}\"",
                mine.display(),
                theirs.display()
            ),
            Some(30.0),
        )
    };
    let (run_a, run_b) = (command(&fa, &fb), command(&fb, &fa));
    let (opts_a, opts_b) = (ExecuteOptions::in_shell("a"), ExecuteOptions::in_shell("b"));
    let (in_a, in_b) = tokio::join!(
        c.execute_with(&run_a, &opts_a),
        c.execute_with(&run_b, &opts_b),
    );
    let (in_a, in_b) = (in_a.unwrap().observation, in_b.unwrap().observation);
    assert_eq!(
        in_a.content,
        format!("{}\nit's a", sb.ws.join("a").display())
    );
    assert_eq!(
        in_b.content,
        format!("{}\nnobody", sb.ws.join("b").display())
    );
    // The default shell is where it was; a `cd` in one shell moves only that one.
    let obs = c
        .execute_with(
            &client::run_action("cd ..; cd b", None),
            &ExecuteOptions::in_shell("a"),
        )
        .await
        .unwrap();
    assert_eq!(obs.observation.content, "");
    let obs = c.run("pwd", None).await.unwrap();
    assert_eq!(obs.content, sb.ws_str());
    // Relative paths of file actions resolve in the named shell's directory.
    std::fs::write(sb.ws.join("b/note.txt"), "in b\n").unwrap();
    let read = Action::from(ActionKind::Read(FileReadArgs::new("note.txt")));
    let obs = c
        .execute_with(&read, &ExecuteOptions::in_shell("a"))
        .await
        .unwrap();
    assert_eq!(obs.observation.content, "in b\n");
    // Listed, then closed; an unknown shell is a 404.
    let ids: Vec<String> = c
        .shells()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["default", "a", "b"]);
    c.close_shell("a").await.unwrap();
    assert_refused(
        c.execute_with(
            &client::run_action("true", None),
            &ExecuteOptions::in_shell("a"),
        )
        .await,
        404,
    );
    assert_refused(c.close_shell("default").await, 409);
    assert_refused(c.close_shell("a").await, 404);
}

/// The pid a command printed as `PID=N` (among bash's job lines).
fn printed_pid(text: &str) -> u32 {
    text.lines()
        .find_map(|l| l.strip_prefix("PID=")?.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"))
}

/// Gone or a zombie: dead either way.
fn dead(pid: u32) -> bool {
    sandbox_common::ProcStat::read(pid).is_none_or(|s| s.is_zombie())
}

/// The process list shows the agent's process tree and the sandbox's own shell; a signal to
/// the tree reaches every member; a pid that is not the sandbox's is a 404, an unknown signal
/// a 400.
#[tokio::test]
async fn a_signal_reaches_a_whole_process_tree() {
    let sb = Sandbox::start().await;
    let c = typed(&sb);
    let obs = c
        .run("bash -c 'sleep 300 & sleep 301 & wait' & echo PID=$!", None)
        .await
        .unwrap();
    let parent = printed_pid(&obs.content);
    let mut children = Vec::new();
    eventually("both sleeps started", || {
        children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        children.len() == 2
    })
    .await;
    let list = c.processes().await.unwrap();
    let find = |pid: u32| list.iter().find(|p| p.pid == pid);
    let top = find(parent).expect("the tree's parent is listed");
    assert_eq!(top.command, "bash -c sleep 300 & sleep 301 & wait");
    assert!(!top.sandbox);
    assert!(top.memory_bytes > 0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - top.started_at).abs() < 60.0, "{top:?}");
    for child in &children {
        assert_eq!(find(*child).unwrap().ppid, parent);
    }
    assert!(
        list.iter().any(|p| p.sandbox && p.command.contains("bash")),
        "the default shell is listed as the sandbox's: {list:?}"
    );
    assert!(
        !list.iter().any(|p| p.pid == sb.pid()),
        "never sandboxd itself"
    );

    let mut signaled = c
        .signal(parent, SignalSpec::Name("term".into()), true)
        .await
        .unwrap();
    signaled.sort_unstable();
    let mut expected = vec![parent, children[0], children[1]];
    expected.sort_unstable();
    assert_eq!(signaled, expected);
    for pid in expected {
        eventually("the tree is gone", || dead(pid)).await;
    }
    // One process alone, by number.
    let obs = c.run("sleep 302 & echo PID=$!", None).await.unwrap();
    let lone = printed_pid(&obs.content);
    assert_eq!(
        c.signal(lone, SignalSpec::Number(9), false).await.unwrap(),
        [lone]
    );
    eventually("the sleep is gone", || dead(lone)).await;
    assert_refused(
        c.signal(1, SignalSpec::Name("TERM".into()), false).await,
        404,
    );
    assert_refused(
        c.signal(parent, SignalSpec::Name("SIGNOPE".into()), false)
            .await,
        400,
    );
}

/// Reads a terminal socket until its output so far contains `needle`; returns that output.
async fn read_until(socket: &mut TerminalSocket, needle: &str) -> String {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let next = tokio::time::timeout_at(deadline, socket.next())
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} in {:?}", String::from_utf8_lossy(&seen)));
        match next.unwrap() {
            Some(TerminalOutput::Data(bytes)) => seen.extend(bytes),
            Some(TerminalOutput::Event(event)) => panic!("{event:?} before {needle:?}"),
            None => panic!("closed before {needle:?}"),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// A terminal over WebSocket: full-screen output reaches two watchers, a resize is what
/// `stty size` says, a signal reaches the foreground program, and a client that detached and
/// attached again gets the scroll-back; the program's exit is the last message.
#[tokio::test]
async fn a_websocket_terminal_resizes_signals_and_keeps_its_scrollback() {
    let sb = Sandbox::start().await;
    let c = typed(&sb);
    let info = c
        .create_terminal(&CreateTerminalRequest {
            id: Some("t1".into()),
            command: Some(vec!["bash".into(), "--noprofile".into(), "--norc".into()]),
            cols: Some(80),
            rows: Some(24),
            ..CreateTerminalRequest::default()
        })
        .await
        .unwrap();
    assert_eq!((info.cols, info.rows, info.exit_code), (80, 24, None));
    let mut first = c.attach_terminal("t1").await.unwrap();
    let mut second = c.attach_terminal("t1").await.unwrap();
    // Full-screen output as vim draws it: the alternate screen, cleared, the cursor homed.
    first
        .input(b"printf '\\033[?1049h\\033[2J\\033[HFULL''SCREEN\\n'; stty size\n")
        .await
        .unwrap();
    let shown = read_until(&mut first, "24 80").await;
    assert!(
        shown.contains("\x1b[?1049h\x1b[2J\x1b[HFULLSCREEN"),
        "{shown:?}"
    );
    read_until(&mut second, "FULLSCREEN").await;

    first.resize(120, 40).await.unwrap();
    first.input(b"stty size\n").await.unwrap();
    read_until(&mut second, "40 120").await;
    assert_eq!(c.terminals().await.unwrap()[0].cols, 120);

    // A signal to the foreground program: `sleep` ends, the shell answers again.
    second.input(b"sleep 100\n").await.unwrap();
    let shell = info.pid;
    // Until the foreground group's leader has become `sleep`: before its exec the forked bash
    // still has the interactive shell's SIGINT handling, and a signal then is lost.
    eventually("sleep is the terminal's foreground job", || {
        sandbox_common::ProcStat::read(shell)
            .filter(|s| s.tpgid > 0 && s.tpgid.unsigned_abs() != shell)
            .and_then(|s| sandbox_common::ProcStat::read(s.tpgid.unsigned_abs()))
            .is_some_and(|leader| leader.comm == "sleep")
    })
    .await;
    second.signal(SignalSpec::Name("INT".into())).await.unwrap();
    second.input(b"echo slept-$?\n").await.unwrap();
    read_until(&mut first, "slept-130").await;

    // Detach both, reattach: the scroll-back has everything so far.
    first.close().await.unwrap();
    drop(second);
    let mut again = c.attach_terminal("t1").await.unwrap();
    let replay = read_until(&mut again, "slept-130").await;
    assert!(
        replay.contains("FULLSCREEN") && replay.contains("40 120"),
        "{replay:?}"
    );
    // A bad message is refused without closing the socket.
    again
        .send(&protocol::api::TerminalInput::Resize { cols: 0, rows: 0 })
        .await
        .unwrap();
    match again.next().await.unwrap() {
        Some(TerminalOutput::Event(protocol::api::TerminalEvent::Error { detail })) => {
            assert!(detail.contains("column"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    again.input(b"exit 3\n").await.unwrap();
    let end = loop {
        match again.next().await.unwrap() {
            Some(TerminalOutput::Data(_)) => {}
            Some(TerminalOutput::Event(event)) => break event,
            None => panic!("closed without an exit"),
        }
    };
    assert_eq!(end, protocol::api::TerminalEvent::Exit { code: 3 });
    assert_eq!(c.terminals().await.unwrap()[0].exit_code, Some(3));
    c.close_terminal("t1").await.unwrap();
    assert_refused(c.attach_terminal("t1").await, 404);
}

/// `sbx attach` with input from a pipe: a new terminal runs the program, the typed lines reach
/// it, its output is shown, `sbx` ends with its exit status and the terminal is closed.
#[tokio::test]
async fn sbx_attach_runs_a_terminal_to_its_end() {
    use std::io::Write;
    let sb = Sandbox::start().await;
    let mut child = crate::client::sbx()
        .args(["--url", &sb.url, "--key", KEY, "attach", "--"])
        .args(["bash", "--noprofile", "--norc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"echo hi-from-$((6*7))\nexit 4\n")
        .unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("hi-from-42"),
        "{shown:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(typed(&sb).terminals().await.unwrap().is_empty());
}
