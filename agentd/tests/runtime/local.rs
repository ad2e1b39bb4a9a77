//! The local runtime: sandboxd as a child process, its actions, and that nothing of it
//! survives its runtime (closed, dropped, or killed).

use std::time::{Duration, Instant};

use agentd::{Runtime, RuntimeError, RuntimeKind, error_id};
use protocol::action::{ConfirmationState, FileReadArgs, FileWriteArgs, ThinkArgs};
use protocol::{ActionKind, ObservationKind};
use sandbox_common::ProcStat;

use crate::common::{
    action, answer_to_a_kill, cell, children_named, error_id_of, eventually, group_members, live,
    local, local_config, metadata, pid_in, run, session, sh,
};

#[tokio::test]
async fn runs_commands_files_and_cells_and_close_kills_everything() {
    let (runtime, workspace) = local().await;
    assert_eq!(runtime.kind(), RuntimeKind::Local);
    assert!(
        runtime.url().starts_with("http://127.0.0.1:"),
        "{}",
        runtime.url()
    );
    assert!(runtime.is_alive());
    runtime.health().await.unwrap();

    let obs = runtime.execute(&run(7, "echo hi")).await;
    let ObservationKind::Run(extras) = &obs.kind else {
        panic!("not a run observation: {obs:?}");
    };
    assert_eq!(extras.metadata.exit_code, 0);
    assert_eq!(obs.content.trim(), "hi");
    assert_eq!(obs.cause, Some(7));
    assert_eq!(obs.tool_call_metadata, Some(metadata(7)));
    assert_eq!(obs.source, None);
    assert_eq!(obs.id, None);

    // The shell starts in the workspace; files land there.
    let cwd = sh(&runtime, "pwd").await;
    assert_eq!(
        std::path::Path::new(&cwd).canonicalize().unwrap(),
        workspace.path().canonicalize().unwrap()
    );
    let path = workspace.path().join("notes.txt").display().to_string();
    let obs = runtime
        .execute(&action(
            8,
            ActionKind::Write(FileWriteArgs::new(&path, "line one\nline two\n")),
        ))
        .await;
    assert!(matches!(obs.kind, ObservationKind::Write(_)), "{obs:?}");
    assert_eq!(obs.cause, Some(8));
    let on_disk = std::fs::read_to_string(workspace.path().join("notes.txt")).unwrap();
    assert!(on_disk.starts_with("line one\nline two\n"), "{on_disk:?}");
    let obs = runtime
        .execute(&action(9, ActionKind::Read(FileReadArgs::new(&path))))
        .await;
    assert!(matches!(obs.kind, ObservationKind::Read(_)), "{obs:?}");
    // The reference's default read ends with an extra newline.
    assert!(obs.content.starts_with("line one\nline two\n"), "{obs:?}");
    assert_eq!(obs.tool_call_metadata, Some(metadata(9)));

    let obs = runtime.execute(&cell(10, "print(6 * 7)")).await;
    assert!(
        matches!(obs.kind, ObservationKind::RunIpython(_)),
        "{obs:?}"
    );
    assert_eq!(obs.content.trim(), "42");
    assert_eq!(obs.cause, Some(10));

    let pid = runtime.pid().unwrap();
    let bash: u32 = sh(&runtime, "echo $$").await.parse().unwrap();
    assert!(live(pid) && live(bash));
    runtime.close().await.unwrap();
    assert!(!live(pid), "sandboxd survived close");
    assert_eq!(
        group_members(pid),
        Vec::<u32>::new(),
        "its group survived close"
    );
    assert!(!live(bash), "its shell survived close");
}

/// Nothing may leak when the owner returns early or panics: dropping the runtime kills sandboxd,
/// its shell, and what the shell started in a session of its own.
#[tokio::test]
async fn dropping_without_close_kills_everything() {
    let (runtime, workspace) = local().await;
    let pid = runtime.pid().unwrap();
    let bash: u32 = sh(&runtime, "echo $$").await.parse().unwrap();
    // A daemon: its own session, not a child of the shell.
    sh(
        &runtime,
        "setsid -f sh -c 'echo $$ > escaped.pid.tmp && mv escaped.pid.tmp escaped.pid; exec sleep 1000' > /dev/null 2>&1",
    )
    .await;
    let escaped = pid_in(&workspace.path().join("escaped.pid"), "the daemon").await;
    assert!(live(escaped));
    assert_eq!(session(escaped), Some(escaped));
    drop(runtime);
    assert!(!live(pid), "sandboxd survived the drop");
    assert_eq!(group_members(pid), Vec::<u32>::new());
    assert!(!live(bash), "the shell survived the drop");
    assert!(
        !live(escaped),
        "a process in its own session survived the drop"
    );
}

/// A sandbox killed while a command runs: the pending action is answered at once (not at its
/// 60 s timeout), and so is every later one.
#[tokio::test]
async fn a_sandbox_killed_mid_action_answers_with_an_error_at_once() {
    let (runtime, _workspace) = local().await;
    let pid = runtime.pid().unwrap();
    let bash: u32 = sh(&runtime, "echo $$").await.parse().unwrap();

    let sleep = run(21, "sleep 30");
    let pending = runtime.execute(&sleep);
    let killer = async {
        eventually("sleep to start", || {
            !children_named(bash, "sleep").is_empty()
        })
        .await;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        Instant::now()
    };
    let obs = answer_to_a_kill(pending, killer, Duration::from_secs(3)).await;
    assert!(obs.content.contains("The sandbox died"), "{}", obs.content);
    assert!(obs.content.contains("SIGKILL"), "{}", obs.content);
    assert_eq!(obs.cause, Some(21));
    assert_eq!(obs.tool_call_metadata, Some(metadata(21)));

    assert!(!runtime.is_alive());
    let death = runtime.died().await;
    assert!(death.summary.contains("killed by SIGKILL"), "{death}");
    assert!(matches!(runtime.health().await, Err(RuntimeError::Died(_))));
    let started = Instant::now();
    let obs = runtime.execute(&run(22, "echo again")).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(error_id_of(&obs), error_id::SANDBOX_DIED);
    assert_eq!(obs.cause, Some(22));

    // Its shell went with it.
    eventually("the shell to die", || !live(bash)).await;
    runtime.close().await.unwrap();
}

#[tokio::test]
async fn actions_a_sandbox_does_not_run_get_an_error_observation() {
    let (runtime, workspace) = local().await;
    let think = action(
        31,
        ActionKind::Think(ThinkArgs {
            thought: "hmm".to_string(),
        }),
    );
    assert!(!think.kind.is_runnable());
    let obs = runtime.execute(&think).await;
    assert_eq!(error_id_of(&obs), error_id::NOT_RUNNABLE);
    assert!(obs.content.contains("`think`"), "{}", obs.content);
    assert_eq!(obs.cause, Some(31));
    assert_eq!(obs.tool_call_metadata, Some(metadata(31)));

    // Browsing is runnable and answered by sandboxd itself.
    let browse = action(
        32,
        ActionKind::Browse(protocol::action::BrowseUrlArgs {
            url: "https://example.com".to_string(),
            ..Default::default()
        }),
    );
    assert!(browse.kind.is_runnable());
    let obs = runtime.execute(&browse).await;
    assert_eq!(error_id_of(&obs), "");
    assert!(obs.content.contains("Browser"), "{}", obs.content);
    assert_eq!(obs.cause, Some(32));

    // A rejected command is not run.
    let marker = workspace.path().join("ran");
    let mut rejected = run(33, &format!("touch {}", marker.display()));
    if let ActionKind::Run(args) = &mut rejected.kind {
        args.confirmation_state = ConfirmationState::Rejected;
    }
    let obs = runtime.execute(&rejected).await;
    assert!(
        matches!(obs.kind, ObservationKind::UserRejected(_)),
        "{obs:?}"
    );
    assert!(!marker.exists());
    runtime.close().await.unwrap();
}

#[tokio::test]
async fn a_sandboxd_that_exits_at_once_is_reported_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("sandboxd");
    std::fs::write(&fake, "#!/bin/sh\necho 'boom: no can do' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut config = local_config(dir.path());
    config.sandboxd_binary = Some(fake);
    let err = Runtime::start(&config).await.unwrap_err();
    assert!(matches!(err, RuntimeError::NotStarted { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(text.contains("boom: no can do"), "{text}");

    config.sandboxd_binary = Some(dir.path().join("missing"));
    let err = Runtime::start(&config).await.unwrap_err();
    assert!(matches!(err, RuntimeError::Spawn { .. }), "{err}");
}

#[tokio::test]
async fn a_missing_workspace_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = local_config(&dir.path().join("nope"));
    let err = Runtime::start(&config).await.unwrap_err();
    assert!(matches!(err, RuntimeError::Config(_)), "{err}");
    assert!(err.to_string().contains("not a directory"), "{err}");
}

/// Starts, in the sandbox, the ways a process can leave sandboxd's tree, its session, its group
/// and its marker variable: a `nohup` job, a `setsid -f` job with an empty environment, a
/// double fork with an empty environment, and an IPython `Popen` in a new session with an empty
/// environment. Each is a `sleep` of a duration no other test uses; returns their pids.
async fn start_escapees(runtime: &Runtime, workspace: &std::path::Path, tag: u32) -> Vec<u32> {
    let pid_of = |name: &str| workspace.join(format!("{name}.pid"));
    let commands = [
        (
            "nohup",
            format!("nohup sh -c 'echo $$ > nohup.pid; exec sleep {tag}.1' > /dev/null 2>&1 &"),
        ),
        (
            "setsid",
            format!(
                "env -i setsid -f /bin/sh -c 'echo $$ > setsid.pid; exec sleep {tag}.2' > /dev/null 2>&1"
            ),
        ),
        (
            "double",
            format!(
                "env -i /bin/sh -c '(/bin/sh -c \"echo \\$\\$ > double.pid; exec sleep {tag}.3\" &)' > /dev/null 2>&1"
            ),
        ),
    ];
    for (_, command) in &commands {
        sh(runtime, command).await;
    }
    let obs = runtime
        .execute(&cell(
            2,
            &format!(
                "import subprocess\np = subprocess.Popen(['sleep', '{tag}.4'], start_new_session=True, env={{}})\nopen('popen.pid', 'w').write(str(p.pid))"
            ),
        ))
        .await;
    assert!(
        matches!(obs.kind, ObservationKind::RunIpython(_)),
        "{obs:?}"
    );
    let mut pids = Vec::new();
    for name in ["nohup", "setsid", "double", "popen"] {
        let pid = pid_in(&pid_of(name), &format!("the {name} job")).await;
        assert!(live(pid), "the {name} job is not running");
        pids.push(pid);
    }
    pids
}

/// Issue 14.10e: jobs that emptied their environment and left sandboxd's session and tree
/// (`env -i setsid -f`, a double fork, `Popen(start_new_session=True, env={})`) survived a
/// SIGKILL of a local sandboxd. Its keeper adopts them and kills them when sandboxd dies.
#[tokio::test]
async fn nothing_the_sandbox_started_survives_a_sigkill_of_sandboxd() {
    let (runtime, workspace) = local().await;
    let keeper = runtime.pid().unwrap();
    let sandboxd = children_named(keeper, "sandboxd");
    assert_eq!(sandboxd.len(), 1, "sandboxd runs under its keeper");
    let escapees = start_escapees(&runtime, workspace.path(), 7311).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sandboxd[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let death = runtime.died().await;
    assert!(death.summary.contains("killed by SIGKILL"), "{death}");
    for pid in escapees {
        eventually("the escaped job to die", || !live(pid)).await;
    }
    assert!(!live(keeper), "the keeper outlived sandboxd");
    runtime.close().await.unwrap();
}

/// While sandboxd lives, the processes that left its tree are the keeper's: they keep running,
/// and once they end they are reaped, not left as zombies.
#[tokio::test]
async fn escaped_jobs_run_on_and_are_reaped_when_they_end() {
    let (runtime, workspace) = local().await;
    let keeper = runtime.pid().unwrap();
    sh(
        &runtime,
        "mkfifo short.fifo; env -i setsid -f /bin/sh -c 'echo $$ > short.pid; read line < short.fifo' > /dev/null 2>&1",
    )
    .await;
    let pid = pid_in(&workspace.path().join("short.pid"), "the job").await;
    assert_eq!(ProcStat::read(pid).map(|s| s.ppid), Some(keeper));
    // Let it end; it must disappear from /proc altogether (reaped).
    sh(&runtime, "echo go > short.fifo").await;
    eventually("the job to be reaped", || ProcStat::read(pid).is_none()).await;
    assert!(runtime.is_alive());
    runtime.close().await.unwrap();
}

/// One local sandbox's death takes only its own escaped jobs: another sandbox's go on until
/// that sandbox is closed.
#[tokio::test]
async fn one_sandboxs_death_spares_another_sandboxs_jobs() {
    let (doomed, doomed_ws) = local().await;
    let (other, other_ws) = local().await;
    let doomed_jobs = start_escapees(&doomed, doomed_ws.path(), 7312).await;
    let other_jobs = start_escapees(&other, other_ws.path(), 7313).await;
    let sandboxd = children_named(doomed.pid().unwrap(), "sandboxd");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sandboxd[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    doomed.died().await;
    for pid in doomed_jobs {
        eventually("the doomed sandbox's job to die", || !live(pid)).await;
    }
    for &pid in &other_jobs {
        assert!(live(pid), "another sandbox's job died with its neighbour");
    }
    other.close().await.unwrap();
    for pid in other_jobs {
        assert!(!live(pid), "a job survived its sandbox's close");
    }
    doomed.close().await.unwrap();
}
