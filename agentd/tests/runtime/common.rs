//! Shared set-up: configurations, actions, and what `/proc` says about processes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentd::{LocalConfig, Runtime, RuntimeConfig, RuntimeKind, error_id};
use protocol::action::{CmdRunArgs, IPythonRunCellArgs};
use protocol::observation::ErrorExtras;
use protocol::{Action, ActionKind, Observation, ObservationKind, ToolCallMetadata};
use sandbox_common::ProcStat;

#[path = "../support/binaries.rs"]
mod binaries;

pub use binaries::{Cleanup, base_image};

/// The sandboxd the local runtime runs: `AGENTD_SANDBOXD_BIN` (as for the other test
/// binaries), else this workspace's debug build.
pub fn local_sandboxd() -> PathBuf {
    let path = testkit::sandboxd_binary("debug");
    assert!(
        path.is_file(),
        "{} is missing: cargo build -p sandboxd",
        path.display()
    );
    path
}

/// The Python with ipykernel (`scripts/setup` installs `python3-ipykernel`).
pub const PYTHON: &str = "/usr/bin/python3";

/// A local runtime's configuration, working in `workspace`.
pub fn local_config(workspace: &std::path::Path) -> RuntimeConfig {
    RuntimeConfig {
        kind: RuntimeKind::Local,
        workspace: Some(workspace.to_path_buf()),
        sandboxd_binary: Some(local_sandboxd()),
        local: LocalConfig {
            python: Some(PYTHON.into()),
            no_login_shell: true,
            ..LocalConfig::default()
        },
        ..RuntimeConfig::default()
    }
}

/// A started local runtime and its workspace.
pub async fn local() -> (Runtime, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let runtime = Runtime::start(&local_config(workspace.path()))
        .await
        .unwrap_or_else(|e| panic!("the local runtime did not start: {e}"));
    (runtime, workspace)
}

/// Tool-call metadata for action `id`.
pub fn metadata(id: i64) -> ToolCallMetadata {
    ToolCallMetadata {
        function_name: "execute_bash".to_string(),
        tool_call_id: format!("call_{id}"),
        model_response: serde_json::json!({"id": "resp"}),
        total_calls_in_response: 1,
    }
}

/// `kind` as action `id` from tool call `id`.
pub fn action(id: i64, kind: ActionKind) -> Action {
    let mut action = Action::from(kind);
    action.id = Some(id);
    action.tool_call_metadata = Some(metadata(id));
    action
}

/// A blocking command with a hard timeout.
pub fn run(id: i64, command: &str) -> Action {
    let mut args = CmdRunArgs::new(command);
    args.blocking = true;
    let mut action = action(id, ActionKind::Run(args));
    action.timeout = Some(60.0);
    action
}

/// An IPython cell.
pub fn cell(id: i64, code: &str) -> Action {
    action(
        id,
        ActionKind::RunIpython(IPythonRunCellArgs {
            include_extra: false,
            ..IPythonRunCellArgs::new(code)
        }),
    )
}

/// The error observation's id; panics on anything else.
pub fn error_id_of(obs: &Observation) -> &str {
    match &obs.kind {
        ObservationKind::Error(ErrorExtras { error_id }) => error_id,
        other => panic!("not an error observation: {other:?} {}", obs.content),
    }
}

/// Awaits `pending`, an action's answer, while `killer` kills the sandbox and says when: the
/// answer must come within `within` of the kill and say the sandbox died.
pub async fn answer_to_a_kill(
    pending: impl Future<Output = Observation>,
    killer: impl Future<Output = Instant>,
    within: Duration,
) -> Observation {
    let (obs, killed_at) = tokio::join!(pending, killer);
    let waited = killed_at.elapsed();
    assert!(waited < within, "answered after {waited:?}");
    assert_eq!(error_id_of(&obs), error_id::SANDBOX_DIED, "{}", obs.content);
    obs
}

/// Runs `command` and returns its output; it must succeed.
pub async fn sh(runtime: &Runtime, command: &str) -> String {
    let obs = runtime.execute(&run(1, command)).await;
    match &obs.kind {
        ObservationKind::Run(extras) => {
            assert_eq!(extras.metadata.exit_code, 0, "{command}: {}", obs.content)
        }
        other => panic!("{command}: {other:?} {}", obs.content),
    }
    obs.content.trim().to_string()
}

/// Whether `pid` is a live (not zombie) process.
pub fn live(pid: u32) -> bool {
    ProcStat::read(pid).is_some_and(|stat| !stat.is_zombie())
}

/// Live processes in process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| ProcStat::read(pid).is_some_and(|s| !s.is_zombie() && s.pgrp == pgid))
        .collect()
}

/// Children of `parent` named `name`.
pub fn children_named(parent: u32, name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| ProcStat::read(pid).is_some_and(|s| s.comm == name && s.ppid == parent))
        .collect()
}

/// The session id of `pid`.
pub fn session(pid: u32) -> Option<u32> {
    ProcStat::read(pid).map(|stat| stat.session)
}

/// Waits (bounded) until `cond` holds: for effects no event announces, like a process
/// appearing in `/proc`.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pid a job of the sandbox writes to `file`, once it is there (waits, bounded).
pub async fn pid_in(file: &std::path::Path, what: &str) -> u32 {
    let read = || {
        std::fs::read_to_string(file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    };
    eventually(&format!("{what} to start"), || read().is_some()).await;
    read().unwrap()
}
