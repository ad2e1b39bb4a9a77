//! `agentd run` end to end: the real binary, real sandboxes (local processes and Docker
//! containers), scripted and replayed agents, the session directory on disk.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use protocol::{Event, EventSource, ObservationKind};
use sandbox_common::ProcStat;
use serde_json::{Value, json};

fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The agentd binary with a private sessions directory and a Python that has ipykernel.
fn agentd(sessions: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
    let sandboxd = testkit::sandboxd_binary("debug");
    command
        .env("AGENTD_SESSIONS_DIR", sessions)
        .env("AGENTD_SANDBOXD_BIN", sandboxd)
        .env("SANDBOXD_PYTHON", "/usr/bin/python3")
        .env_remove("AGENTD_RUNTIME")
        .env_remove("AGENTD_CONFIG");
    command
}

/// `parent/name`, created.
fn new_dir(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    dir
}

/// Asserts that a run exited with 0, showing its stderr if not.
fn assert_exited_0(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A script file of agent actions.
fn script(dir: &Path, actions: &Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, serde_json::to_vec(actions).unwrap()).unwrap();
    path
}

/// `agentd run` of the script `actions` on a task, working in `dir`, sessions in
/// `dir/sessions`, with `extra` arguments.
fn scripted_run(dir: &Path, actions: &Value, extra: &[&str]) -> Command {
    let mut command = agentd(&dir.join("sessions"));
    command
        .args(["run", "--task", "t"])
        .args(extra)
        .arg("--script")
        .arg(script(dir, actions))
        .arg("--workspace")
        .arg(dir);
    command
}

/// Runs the script `actions` with `extra` arguments in a new directory; the run must exit with
/// 1 and end in `error`, its last error containing `reason`.
fn assert_scripted_run_fails_with(actions: Vec<Value>, extra: &[&str], reason: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = scripted_run(dir.path(), &Value::Array(actions), extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let error = final_error(&dir.path().join("sessions"));
    assert!(error.contains(reason), "{error}");
}

/// The last error of the one session in `sessions`, which must have ended in `error`.
fn final_error(sessions: &Path) -> String {
    let (id, _) = session_events(sessions);
    let state = state(sessions, &id);
    assert_eq!(state["agent_state"], "error");
    state["last_error"].as_str().unwrap().to_string()
}

/// The events of the one session in `sessions`.
fn session_events(sessions: &Path) -> (String, Vec<Event>) {
    let dir = std::fs::read_dir(sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let text = std::fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
    let events = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (dir.file_name().to_string_lossy().into_owned(), events)
}

fn state(sessions: &Path, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(sessions.join(id).join("state.json")).unwrap()).unwrap()
}

/// Every id once, in order; every runnable agent action answered exactly once.
fn assert_consistent(events: &[Event]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.id(), Some(i as i64), "ids must be contiguous");
    }
    let mut answers: HashMap<i64, usize> = HashMap::new();
    for e in events {
        if let (Event::Observation(_), Some(cause)) = (e, e.cause()) {
            *answers.entry(cause).or_default() += 1;
        }
    }
    for e in events {
        if let Event::Action(a) = e {
            let runnable = a.kind.is_runnable();
            if a.source == Some(EventSource::Agent) && runnable {
                assert_eq!(answers.get(&a.id.unwrap()), Some(&1), "action {:?}", a.id);
            }
        }
    }
}

/// The events of a resumed run that exited with `out`: its history, `before`, kept as it was,
/// and every runnable action answered once.
fn resumed(out: &std::process::Output, sessions: &Path, before: &[Event]) -> Vec<Event> {
    assert_exited_0(out);
    let (_, events) = session_events(sessions);
    assert_eq!(&events[..before.len()], before, "history was rewritten");
    assert_consistent(&events);
    events
}

const TASK_ACTIONS: &str = r#"[
  {"action": "run", "args": {"command": "echo hello > greeting.txt && cat greeting.txt"}},
  {"action": "run_ipython", "args": {"code": "print(open('greeting.txt').read().upper())"}},
  {"action": "edit", "args": {"path": "/WS/greeting.txt", "command": "str_replace", "old_str": "hello", "new_str": "hello, world"}},
  {"action": "read", "args": {"path": "greeting.txt"}},
  {"action": "run", "args": {"command": "wc -c < greeting.txt; false"}},
  {"action": "finish", "args": {"final_thought": "done"}}
]"#;

/// Runs the task script on `runtime` and returns the trajectory path.
fn record(runtime: &str, dir: &Path, workspace: &Path, extra: &[&str]) -> PathBuf {
    let actions: Value =
        serde_json::from_str(&TASK_ACTIONS.replace("/WS", &workspace.display().to_string()))
            .unwrap();
    let trajectory = dir.join(format!("{runtime}.json"));
    let out = agentd(&dir.join("sessions"))
        .args(["run", "--task", "greet", "--runtime", runtime, "--json"])
        .arg("--script")
        .arg(script(dir, &actions))
        .arg("--workspace")
        .arg(workspace)
        .arg("--save-trajectory")
        .arg(&trajectory)
        .args(extra)
        .output()
        .unwrap();
    assert_exited_0(&out);
    // --json: one event per line, the same the log holds.
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(
        printed
            .lines()
            .all(|l| serde_json::from_str::<Event>(l).is_ok())
    );
    trajectory
}

/// `agentd run --replay trajectory` on `runtime` in `workspace`, sessions in `sessions`:
/// its exit status and stderr.
fn replay(
    sessions: &Path,
    runtime: &str,
    trajectory: &Path,
    workspace: &Path,
) -> (Option<i32>, String) {
    let out = agentd(sessions)
        .args(["run", "--runtime", runtime, "--replay"])
        .arg(trajectory)
        .arg("--workspace")
        .arg(workspace)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_run_records_a_trajectory_that_replays_identically() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = new_dir(dir.path(), "ws");
    let trajectory = record("local", dir.path(), &workspace, &[]);
    let events = agentd::trajectories::load(&trajectory).unwrap();
    assert_consistent(&events);
    let ipython = events
        .iter()
        .find_map(|e| match e {
            Event::Observation(o) if matches!(o.kind, ObservationKind::RunIpython(_)) => {
                Some(o.content.clone())
            }
            _ => None,
        })
        .expect("an IPython observation");
    assert!(ipython.contains("HELLO"), "{ipython}");

    // Replayed in a fresh workspace: the same observations, exit status 0.
    let again = new_dir(dir.path(), "ws2");
    std::fs::write(
        &trajectory,
        std::fs::read_to_string(&trajectory).unwrap().replace(
            &workspace.display().to_string(),
            &again.display().to_string(),
        ),
    )
    .unwrap();
    let (status, stderr) = replay(&dir.path().join("sessions2"), "local", &trajectory, &again);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("replay matches the recording"), "{stderr}");

    // A recording that saw something else: reported, exit status 3.
    let third = new_dir(dir.path(), "ws3");
    let text = std::fs::read_to_string(&trajectory)
        .unwrap()
        .replace(&again.display().to_string(), &third.display().to_string())
        .replacen("\"content\": \"hello\"", "\"content\": \"bonjour\"", 1);
    std::fs::write(&trajectory, text).unwrap();
    let (status, stderr) = replay(&dir.path().join("sessions3"), "local", &trajectory, &third);
    assert_eq!(status, Some(3), "{stderr}");
    assert!(
        stderr.contains("recorded: run (exit 0): bonjour"),
        "{stderr}"
    );
}

#[test]
fn a_trajectory_replays_the_same_on_docker_as_on_local() {
    let dir = tempfile::tempdir().unwrap();
    let local_ws = new_dir(dir.path(), "local");
    let recorded = record("local", dir.path(), &local_ws, &[]);
    // The docker sandbox mounts its workspace at /workspace: point the recording there.
    let text = std::fs::read_to_string(&recorded)
        .unwrap()
        .replace(&local_ws.display().to_string(), "/workspace");
    std::fs::write(&recorded, text).unwrap();
    let docker_ws = new_dir(dir.path(), "docker");
    std::os::unix::fs::chown(&docker_ws, Some(1000), Some(1000)).unwrap();
    let (status, stderr) = replay(
        &dir.path().join("sessions-docker"),
        "docker",
        &recorded,
        &docker_ws,
    );
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("replay matches the recording"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(docker_ws.join("greeting.txt")).unwrap(),
        "hello, world\n"
    );
}

/// Spawns a run in `dir` whose second command runs for a minute, and returns it while that
/// command runs, so a test can act meanwhile.
fn spawn_sleeper(dir: &Path) -> Child {
    let actions = json!([
        {"action": "run", "args": {"command": "echo ready"}},
        {"action": "run", "args": {"command": "sleep 60"}},
        {"action": "finish", "args": {}}
    ]);
    let command = scripted_run(dir, &actions, &["--json"]);
    // message, running, recall, its answer, run, observation, run(sleep) printed: sleep is
    // executing.
    spawn_until(command, 7)
}

/// Spawns a run and returns it once `lines` events were printed.
fn spawn_until(mut command: Command, lines: usize) -> Child {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..lines {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the run ended early"
        );
    }
    // Keep draining so the run never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    child
}

/// The sandboxd processes whose parent is `pid`.
fn children(pid: u32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = u32::try_from(child).ok().and_then(ProcStat::read);
        if stat.is_some_and(|stat| stat.ppid == pid) {
            found.push(child);
        }
    }
    found
}

#[test]
fn a_run_killed_with_sigkill_resumes_with_nothing_lost_or_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let steps = 12;
    let actions: Vec<Value> = (0..steps)
        .map(|i| json!({"action": "run", "args": {"command": format!("sleep 0.2; echo step {i} >> log.txt; echo {i}")}}))
        .collect();
    let script = script(dir.path(), &Value::Array(actions));
    let mut command = agentd(&sessions);
    command
        .args(["run", "--task", "count", "--json", "--session", "killed"])
        .arg("--script")
        .arg(&script)
        .arg("--workspace")
        .arg(dir.path());
    // user message, running, recall and its answer, then action/observation pairs: kill in
    // the middle of the run.
    let mut child = spawn_until(command, 4 + 2 * 4 + 1);
    let orphans = children(child.id());
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (_, before) = session_events(&sessions);
    assert!(
        before.len() < 4 + 2 * steps + 2,
        "the run was not interrupted"
    );

    let out = agentd(&sessions)
        .args(["run", "--resume", "killed", "--json"])
        .arg("--script")
        .arg(&script)
        .arg("--workspace")
        .arg(dir.path())
        .output()
        .unwrap();
    let events = resumed(&out, &sessions, &before);
    let runs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Action(a) if a.source == Some(EventSource::Agent) => match &a.kind {
                protocol::ActionKind::Run(r) => Some(r.command.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), steps, "each scripted step exactly once");
    let state = state(&sessions, "killed");
    assert_eq!(state["agent_state"], "finished");
    assert_eq!(state["resume_count"], 1);
    // The killed agentd's sandboxd followed it (it exits when its parent dies).
    for pid in orphans {
        let running = u32::try_from(pid)
            .ok()
            .and_then(ProcStat::read)
            .is_some_and(|stat| !stat.is_zombie());
        assert!(!running, "sandboxd {pid} outlived its agentd");
    }
}

#[test]
fn the_iteration_limit_stops_the_run_in_the_error_state() {
    let actions: Vec<Value> = (0..5)
        .map(|i| json!({"action": "run", "args": {"command": format!("echo {i}")}}))
        .collect();
    assert_scripted_run_fails_with(
        actions,
        &["--max-iterations", "2"],
        "Agent reached maximum iteration. Current iteration: 2, max iteration: 2",
    );
}

#[test]
fn a_looping_agent_is_stopped_as_stuck() {
    let actions: Vec<Value> = (0..8)
        .map(|_| json!({"action": "run", "args": {"command": "ls /nonexistent"}}))
        .collect();
    assert_scripted_run_fails_with(actions, &[], "stuck in a loop");
}

#[test]
fn a_sandbox_killed_mid_action_ends_the_run_with_an_error_observation() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut child = spawn_sleeper(dir.path());
    for pid in children(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    let (id, events) = session_events(&sessions);
    assert_consistent(&events);
    let sleep_id = events
        .iter()
        .find_map(|e| match e {
            Event::Action(a) => match &a.kind {
                protocol::ActionKind::Run(r) if r.command == "sleep 60" => a.id,
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    let answer = events
        .iter()
        .find_map(|e| match e {
            Event::Observation(o) if o.cause == Some(sleep_id) => Some(o),
            _ => None,
        })
        .expect("the interrupted action is answered");
    assert!(
        matches!(answer.kind, ObservationKind::Error(_)),
        "{answer:?}"
    );
    let state = state(&sessions, &id);
    assert_eq!(state["agent_state"], "error");
    assert!(
        state["last_error"]
            .as_str()
            .unwrap()
            .contains("sandbox died"),
        "{state}"
    );
}

#[test]
fn the_shipped_example_replays_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = agentd(&dir.path().join("sessions"))
        .args(["run", "--runtime", "local", "--replay"])
        .arg(workspace_dir().join("examples/hello-world/trajectory.json"))
        .arg("--workspace")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("replay matches the recording"), "{stderr}");
    assert!(dir.path().join("hello.py").is_file());
}

#[test]
fn sigterm_stops_a_run_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut child = spawn_sleeper(dir.path());
    let sandboxd = children(child.id());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(1));
    let (id, events) = session_events(&sessions);
    assert_consistent(&events);
    assert_eq!(state(&sessions, &id)["agent_state"], "stopped");
    for pid in sandboxd {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "sandboxd {pid} was not closed"
        );
    }
}

#[test]
fn a_command_line_that_cannot_work_exits_with_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = agentd(dir.path())
        .args(["run", "--task", "t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no agent"));
    let out = agentd(dir.path())
        .args(["run", "--resume", "nope", "--script"])
        .arg(script(dir.path(), &json!([])))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session nope to resume"));
}

/// The pids of processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let running = ProcStat::read(pid).is_some_and(|stat| !stat.is_zombie());
            (running && String::from_utf8_lossy(&cmdline).contains(needle)).then_some(pid)
        })
        .collect()
}

#[test]
fn a_run_of_mcp_calls_killed_with_sigkill_resumes_with_one_observation_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let steps: u32 = 8;
    let actions: Vec<Value> = (0..steps)
        .map(|i| json!({"action": "call_tool_mcp", "args": {"name": "slow", "arguments": {"seconds": 0.2 + f64::from(i) / 1000.0}}}))
        .collect();
    let script = script(dir.path(), &Value::Array(actions));
    // A server name no other test uses: its processes are found by it.
    let server = testkit::stdio_server("resumed-after-kill");
    let stdio = format!(
        "{}={} {} {}",
        server.name, server.command, server.args[0], server.args[1]
    );
    let run = |extra: &[&str]| {
        let mut command = agentd(&sessions);
        command
            .args(["run", "--json", "--mcp-stdio", &stdio])
            .args(extra)
            .arg("--script")
            .arg(&script)
            .arg("--workspace")
            .arg(dir.path());
        command
    };
    let mut child = spawn_until(
        run(&["--task", "slow calls", "--session", "mcp-killed"]),
        2 + 2 * 3 + 1,
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (_, before) = session_events(&sessions);
    assert!(
        before.len() < 2 + 2 * steps as usize + 2,
        "the run was not interrupted"
    );

    let out = run(&["--resume", "mcp-killed"]).output().unwrap();
    let events = resumed(&out, &sessions, &before);
    let calls: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Action(a) => match &a.kind {
                protocol::ActionKind::Mcp(m) => Some(m.arguments["seconds"].to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        calls.len(),
        steps as usize,
        "each scripted call exactly once: {calls:?}"
    );
    let answers = events
        .iter()
        .filter(|e| matches!(e, Event::Observation(o) if matches!(o.kind, protocol::ObservationKind::Mcp(_)) && o.content.contains("done")))
        .count();
    assert_eq!(answers, steps as usize);
    // Both sandboxes' servers are gone: killed with their sandboxd.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !processes_with("resumed-after-kill").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "MCP servers outlived their sandbox: {:?}",
            processes_with("resumed-after-kill")
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_running_commands_output_is_shown_live() {
    let dir = tempfile::tempdir().unwrap();
    let actions = json!([
        {"action": "run", "args": {"command": "echo tick-1; sleep 3; echo tick-2"}}
    ]);
    let mut child = scripted_run(dir.path(), &actions, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first_tick = None;
    let mut lines = Vec::new();
    for line in stderr.lines() {
        let line = line.unwrap();
        if line.contains("tick-1") && first_tick.is_none() {
            first_tick = Some(std::time::Instant::now());
        }
        lines.push(line);
    }
    let status = child.wait().unwrap();
    let ended = std::time::Instant::now();
    assert!(status.success(), "{lines:#?}");
    let first_tick = first_tick.unwrap_or_else(|| panic!("no live output: {lines:#?}"));
    // tick-1 was shown while the command still slept its 3 s, not with the observation.
    assert!(
        ended.duration_since(first_tick) >= std::time::Duration::from_secs(2),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l.contains("tick-2")), "{lines:#?}");
}
