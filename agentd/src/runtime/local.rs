//! The local runtime: sandboxd as a child process of agentd, on this host, as the current user
//! (as root, the shell stays root: `--username root`).
//!
//! sandboxd runs under its keeper (`sandboxd --internal-keeper`, a child subreaper: every
//! process of the sandbox that loses its parent is adopted by it, whatever it did to its
//! session, group or environment, and killed when sandboxd ends, even by SIGKILL). The keeper
//! leads its own process group, sandboxd in it, with a random session key and a marker variable
//! (`AGENTD_SANDBOX=<random>`) in their environment, which everything sandboxd starts inherits:
//! its shells and kernels live in sessions and groups of their own, so the group alone does not
//! find them. A waiter thread waits for the keeper to exit *without reaping it* (`waitid` with
//! `WNOWAIT`: the unreaped leader keeps its pid, and so its group id, from being reused), kills
//! its group and every process carrying the marker, reports the death on the runtime's watch
//! channel, waits (bounded) until those processes are gone, and only then reaps the keeper.
//! The keeper ends as sandboxd ended (the same signal or exit code), so the death reported is
//! sandboxd's.
//!
//! Stopping (on close and on drop alike) sends SIGTERM, so that sandboxd ends its shells and
//! kernels and removes their files, and after a grace period SIGKILLs the group; it returns when
//! everything is dead and reaped, or after a bound.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use sandbox_common::{ProcStat, random_hex};
use tokio::sync::{oneshot, watch};

use super::death::{SandboxDeath, record_death};
use super::sandboxd::default_sandboxd_binary;
use super::{RuntimeConfig, RuntimeError};

/// The variable that marks every process of one local sandbox.
const MARKER_VAR: &str = "AGENTD_SANDBOX";
/// What sandboxd prints on stdout once it can execute actions.
const LISTENING: &str = "sandboxd listening on ";
/// How long sandboxd gets to stop cleanly after SIGTERM.
const GRACE: Duration = Duration::from_secs(3);
/// How long killed processes get to disappear.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long stderr may stay open after sandboxd exited (a grandchild may hold it).
const STDERR_DRAIN: Duration = Duration::from_millis(300);
/// sandboxd's last stderr lines kept for error messages, and their longest length.
const STDERR_LINES: usize = 40;
const STDERR_LINE_BYTES: u64 = 2000;
/// Environment that would change how sandboxd listens or whom it runs as.
const CLEARED_ENV: [&str; 5] = [
    "SANDBOXD_UNIX_SOCKET",
    "SANDBOXD_HOST",
    "SANDBOXD_WORKING_DIR",
    "SANDBOXD_OUTPUT_DIR",
    "RUNTIME_USERNAME",
];

/// A running local sandboxd. Dropping it stops it (see the module documentation).
#[derive(Debug)]
pub(super) struct LocalSandbox {
    process: Arc<Process>,
    /// Where sandboxd keeps full command outputs; ours, removed when it stops.
    output_dir: PathBuf,
    stopped: bool,
}

/// What [`start`] returns: the sandbox, where it listens and its key.
#[derive(Debug)]
pub(super) struct Started {
    pub(crate) sandbox: LocalSandbox,
    pub(crate) url: String,
    pub(crate) session_api_key: String,
}

/// Starts sandboxd and waits until it listens. On failure nothing is left running.
pub(super) async fn start(
    config: &RuntimeConfig,
    death: &watch::Sender<Option<SandboxDeath>>,
) -> Result<Started, RuntimeError> {
    let binary = config
        .sandboxd_binary
        .clone()
        .or_else(default_sandboxd_binary)
        .ok_or(RuntimeError::NoSandboxd)?;
    let workspace = workspace(config)?;
    let key = random_hex(32).map_err(|e| RuntimeError::Entropy(e.to_string()))?;
    let marker = random_hex(8).map_err(|e| RuntimeError::Entropy(e.to_string()))?;
    let output_dir = private_dir(&format!("agentd-sandboxd-{marker}"))?;

    let mut cmd = Command::new(&binary);
    cmd.arg(sandbox_common::modes::KEEPER)
        .arg("0")
        .arg("--working-dir")
        .arg(&workspace)
        .arg("--output-dir")
        .arg(&output_dir)
        .args(["--host", "127.0.0.1"]);
    if !config.local.browser {
        cmd.arg("--no-enable-browser");
    }
    if nix::unistd::geteuid().is_root() {
        // sandboxd switches users only as root; without this it would look for `openhands`.
        cmd.args(["--username", "root"]);
    }
    if let Some(python) = &config.local.python {
        cmd.arg("--python").arg(python);
    }
    if config.local.no_login_shell {
        cmd.arg("--no-login-shell");
    }
    if !config.local.plugins.is_empty() {
        cmd.arg("--plugins").args(&config.local.plugins);
    }
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd.envs(&config.local.env)
        .env("SESSION_API_KEY", &key)
        .env(MARKER_VAR, &marker)
        // Nothing outlives agentd, even when it is SIGKILLed.
        .env("SANDBOXD_PARENT_PID", std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(source) => {
            let _ = std::fs::remove_dir_all(&output_dir);
            return Err(RuntimeError::Spawn { binary, source });
        }
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let process = Arc::new(Process::new(child, &marker));
    // From here on, dropping `sandbox` stops sandboxd.
    let mut sandbox = LocalSandbox {
        process: Arc::clone(&process),
        output_dir,
        stopped: false,
    };
    let (first_line, first_line_rx) = oneshot::channel();
    let threads = spawn_threads(&process, stdout, stderr, first_line, death.clone());
    if let Err(source) = threads {
        // Without a waiter nobody reaps it: do it here.
        process.kill_all();
        process.reap();
        sandbox.stop_now();
        return Err(RuntimeError::Spawn { binary, source });
    }

    let waited = Instant::now();
    let mut dead = death.subscribe();
    let line = tokio::select! {
        line = first_line_rx => line.ok(),
        () = tokio::time::sleep(config.startup_timeout) => {
            let output = process.stderr.text();
            if let Err(e) = sandbox.stop().await {
                tracing::warn!(error = %e, "could not stop sandboxd after its start timed out");
            }
            return Err(RuntimeError::StartTimeout {
                url: binary.display().to_string(),
                waited: waited.elapsed(),
                reason: "sandboxd did not say that it listens".to_string(),
                output,
            });
        }
    };
    let url = match line.as_deref().and_then(|l| l.strip_prefix(LISTENING)) {
        Some(url) => url.trim().to_string(),
        None => {
            // Its stdout ended (it exited) or it said something else.
            let reason = match line {
                Some(line) => format!("its first line was {line:?}, not \"{LISTENING}URL\""),
                None => {
                    let died = tokio::time::timeout(KILL_WAIT, dead.wait_for(Option::is_some))
                        .await
                        .ok()
                        .and_then(|d| d.ok().and_then(|d| d.clone()));
                    match died {
                        Some(death) => death.summary,
                        None => "it closed its stdout without saying where it listens".to_string(),
                    }
                }
            };
            if let Err(e) = sandbox.stop().await {
                tracing::warn!(error = %e, "could not stop sandboxd after it failed to start");
            }
            return Err(RuntimeError::NotStarted {
                reason,
                output: process.stderr.text(),
            });
        }
    };
    Ok(Started {
        sandbox,
        url,
        session_api_key: key,
    })
}

impl LocalSandbox {
    /// The keeper's pid, sandboxd's parent (also the process group id of both).
    pub(crate) fn pid(&self) -> u32 {
        self.process.pid
    }

    /// sandboxd's last stderr lines.
    pub(crate) fn output(&self) -> String {
        self.process.stderr.text()
    }

    /// Stops sandboxd and everything it started, and waits until they are gone (bounded).
    pub(crate) async fn stop(&mut self) -> Result<(), RuntimeError> {
        if self.stopped {
            return Ok(());
        }
        let process = Arc::clone(&self.process);
        let output_dir = self.output_dir.clone();
        self.stopped = true;
        match tokio::task::spawn_blocking(move || stop(&process, &output_dir)).await {
            Ok(result) => result,
            // The blocking task panicked or was cancelled (runtime shutdown): do it here.
            Err(_) => stop(&self.process, &self.output_dir),
        }
    }

    /// [`Self::stop`] for synchronous callers (drop, failure paths before the async part).
    fn stop_now(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if let Err(e) = stop(&self.process, &self.output_dir) {
            tracing::warn!(error = %e, "could not stop the local sandbox");
        }
    }
}

impl Drop for LocalSandbox {
    fn drop(&mut self) {
        // Blocks for at most GRACE + KILL_WAIT: nothing of the sandbox may outlive its owner.
        self.stop_now();
    }
}

/// SIGTERM, grace period, SIGKILL to the group, and the bounded wait for the reap.
fn stop(process: &Process, output_dir: &Path) -> Result<(), RuntimeError> {
    {
        let mut state = process.lock();
        state.closing = true;
        if state.status.is_none() {
            let _ = kill(process.pgid, Signal::SIGTERM);
        }
    }
    let mut result = Ok(());
    if !process.wait_reaped(GRACE) {
        tracing::debug!(
            pid = process.pid,
            "sandboxd ignored SIGTERM; killing its group"
        );
        process.kill_all();
        if !process.wait_reaped(KILL_WAIT) {
            result = Err(RuntimeError::Stuck { pid: process.pid });
        }
    }
    match std::fs::remove_dir_all(output_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(dir = %output_dir.display(), error = %e, "cannot remove sandboxd's output directory")
        }
    }
    result
}

/// The workspace: configured or the current directory, absolute, and a directory.
fn workspace(config: &RuntimeConfig) -> Result<PathBuf, RuntimeError> {
    let dir = match &config.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|source| RuntimeError::Io {
            what: "cannot read the current directory",
            path: PathBuf::from("."),
            source,
        })?,
    };
    let dir = std::path::absolute(&dir).map_err(|source| RuntimeError::Io {
        what: "bad workspace",
        path: dir.clone(),
        source,
    })?;
    if !dir.is_dir() {
        return Err(RuntimeError::Config(format!(
            "the workspace {} is not a directory",
            dir.display()
        )));
    }
    Ok(dir)
}

/// A fresh 0700 directory under the temp directory.
fn private_dir(name: &str) -> Result<PathBuf, RuntimeError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(name);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|source| RuntimeError::Io {
            what: "cannot create sandboxd's output directory",
            path: dir.clone(),
            source,
        })?;
    Ok(dir)
}

/// The stdout reader, the stderr reader and the waiter.
fn spawn_threads(
    process: &Arc<Process>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    first_line: oneshot::Sender<String>,
    death: watch::Sender<Option<SandboxDeath>>,
) -> std::io::Result<()> {
    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(f)
            .map(drop)
    };
    // The waiter first: it is the one that must exist for sandboxd to be reaped.
    let waiter = Arc::clone(process);
    spawn(
        "sandboxd-waiter",
        Box::new(move || watch_exit(&waiter, &death)),
    )?;
    if let Some(stdout) = stdout {
        spawn(
            "sandboxd-stdout",
            Box::new(move || read_stdout(stdout, first_line)),
        )?;
    }
    if let Some(stderr) = stderr {
        let tail = Arc::clone(process);
        spawn(
            "sandboxd-stderr",
            Box::new(move || read_stderr(stderr, &tail.stderr)),
        )?;
    } else {
        process.stderr.finish();
    }
    Ok(())
}

/// Sends the first line, then discards the rest (nothing else should come, but a full pipe
/// would block sandboxd).
fn read_stdout(stdout: ChildStdout, first_line: oneshot::Sender<String>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let _ = (&mut reader).take(4096).read_until(b'\n', &mut line);
    if line.is_empty() {
        // Its stdout ended: dropping the sender says so.
        return;
    }
    let _ = first_line.send(String::from_utf8_lossy(&line).trim_end().to_string());
    let _ = std::io::copy(&mut reader, &mut std::io::sink());
}

/// Keeps the last lines of stderr (logged at debug level as well).
fn read_stderr(stderr: ChildStderr, tail: &OutputTail) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(STDERR_LINE_BYTES)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                tracing::debug!(target: "agentd::sandboxd", "{text}");
                tail.push(text);
            }
        }
    }
    tail.finish();
}

/// Waits for sandboxd to exit, kills what is left, reports the death, reaps.
fn watch_exit(process: &Process, death: &watch::Sender<Option<SandboxDeath>>) {
    let status = loop {
        match waitid(
            Id::Pid(process.pgid),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
        ) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    let summary = match status {
        Ok(WaitStatus::Exited(_, code)) => format!("sandboxd exited with status {code}"),
        Ok(WaitStatus::Signaled(_, signal, _)) => format!("sandboxd was killed by {signal}"),
        Ok(other) => format!("sandboxd stopped ({other:?})"),
        Err(e) => format!("sandboxd could not be waited for ({e})"),
    };
    // Its shells and kernels go with it, at once.
    process.kill_all();
    process.stderr.wait_finished(STDERR_DRAIN);
    let closing = process.lock().closing;
    if !closing {
        tracing::warn!(pid = process.pid, "{summary}");
    }
    let summary = if closing {
        format!("the sandbox was closed ({summary})")
    } else {
        summary
    };
    record_death(death, summary, process.stderr.text());
    process.reap();
}

/// The sandboxd process and the state its waiter and its owner share.
#[derive(Debug)]
struct Process {
    pid: u32,
    /// Its pid as a process group id (it leads its own group).
    pgid: Pid,
    /// `AGENTD_SANDBOX=<marker>` as it appears in `/proc/PID/environ`.
    marker_entry: Vec<u8>,
    state: Mutex<ProcessState>,
    reaped: Condvar,
    stderr: OutputTail,
}

#[derive(Debug)]
struct ProcessState {
    /// Until reaped; reaping is the only use.
    child: Option<Child>,
    status: Option<ExitStatus>,
    /// We asked it to stop: its exit is no surprise.
    closing: bool,
}

impl Process {
    fn new(child: Child, marker: &str) -> Process {
        let pid = child.id();
        Process {
            pid,
            pgid: Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
            marker_entry: format!("{MARKER_VAR}={marker}").into_bytes(),
            state: Mutex::new(ProcessState {
                child: Some(child),
                status: None,
                closing: false,
            }),
            reaped: Condvar::new(),
            stderr: OutputTail::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ProcessState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// SIGKILLs sandboxd's group and every process of the sandbox, unless sandboxd has been
    /// reaped (its group id could then belong to someone else).
    fn kill_all(&self) {
        let state = self.lock();
        if state.status.is_some() {
            return;
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
        for pid in self.members() {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }

    /// Waits (bounded) until every other process of the sandbox is gone, killing stragglers
    /// (a fork racing the first kill), then reaps sandboxd, which has exited or been killed.
    fn reap(&self) {
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            let members = self.members();
            if members.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(pids = ?members, "processes of the local sandbox survived SIGKILL");
                break;
            }
            self.kill_all();
            // No event tells when a killed process is gone; poll briefly.
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut state = self.lock();
        if state.status.is_some() {
            return;
        }
        let Some(child) = state.child.as_mut() else {
            return;
        };
        // It has exited (or been SIGKILLed): this returns at once.
        match child.wait() {
            Ok(status) => state.status = Some(status),
            Err(e) => {
                tracing::warn!(pid = self.pid, error = %e, "cannot reap sandboxd");
                return;
            }
        }
        state.child = None;
        drop(state);
        self.reaped.notify_all();
    }

    /// Waits until sandboxd has been reaped, at most `timeout`; says whether it was.
    fn wait_reaped(&self, timeout: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .reaped
            .wait_timeout_while(state, timeout, |s| s.status.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        state.status.is_some()
    }

    /// Live (non-zombie) processes of the sandbox other than sandboxd: in its group, or with
    /// the marker in their environment. Only meaningful while sandboxd is unreaped.
    fn members(&self) -> Vec<Pid> {
        let me = std::process::id();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != me && pid != self.pid)
            .filter(|&pid| {
                let Some(stat) = ProcStat::read(pid) else {
                    return false;
                };
                !stat.is_zombie()
                    && (stat.pgrp == self.pid
                        || std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                            env.split(|&b| b == 0).any(|kv| kv == self.marker_entry)
                        }))
            })
            .filter_map(|pid| i32::try_from(pid).ok().map(Pid::from_raw))
            .collect()
    }
}

/// The last lines of sandboxd's stderr.
#[derive(Debug, Default)]
struct OutputTail {
    state: Mutex<TailState>,
    finished: Condvar,
}

#[derive(Debug, Default)]
struct TailState {
    lines: VecDeque<String>,
    eof: bool,
}

impl OutputTail {
    fn lock(&self) -> MutexGuard<'_, TailState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, line: String) {
        let mut state = self.lock();
        if state.lines.len() == STDERR_LINES {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
    }

    fn finish(&self) {
        self.lock().eof = true;
        self.finished.notify_all();
    }

    fn wait_finished(&self, timeout: Duration) {
        let state = self.lock();
        let _ = self
            .finished
            .wait_timeout_while(state, timeout, |s| !s.eof)
            .unwrap_or_else(PoisonError::into_inner);
    }

    fn text(&self) -> String {
        let state = self.lock();
        let mut text = String::new();
        for line in &state.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}
