//! A program sandboxd starts for the sandbox (the IPython kernel, a stdio MCP server): as the
//! sandbox user (through `user::wrap_command`), in its own process group, with the caller's
//! environment on top of sandboxd's, its stderr logged and its last bytes kept for error
//! messages, and its exit described. A waiter task reaps it and sweeps its group when it exits;
//! dropping its [`Group`] SIGKILLs the group while it runs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::user::{RunAs, wrap_command};

/// Stderr kept for error messages.
const STDERR_TAIL: usize = 4096;

/// How to start a program.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildSpec<'a> {
    /// The program (a path, or a name looked up on `PATH`).
    pub(crate) program: &'a str,
    /// Its arguments.
    pub(crate) args: &'a [&'a str],
    /// Switch to this user first.
    pub(crate) run_as: Option<&'a RunAs>,
    /// Initial working directory.
    pub(crate) cwd: &'a Path,
    /// Environment on top of sandboxd's own.
    pub(crate) env: &'a BTreeMap<String, String>,
    /// What it reads and writes: its stdin and stdout piped to sandboxd, or both closed.
    pub(crate) piped: bool,
    /// What its log lines are tagged with (`kernel`, `mcp server fetch`).
    pub(crate) what: &'a str,
}

/// A started program: its group, its pipes (when asked for), its stderr.
#[derive(Debug)]
pub(crate) struct Child {
    pub(crate) group: Group,
    pub(crate) stdin: Option<tokio::process::ChildStdin>,
    pub(crate) stdout: Option<tokio::process::ChildStdout>,
    pub(crate) stderr: Stderr,
}

/// Starts `spec`'s program. `Err` is the OS's reason it could not be (no such program).
pub(crate) fn spawn(spec: &ChildSpec<'_>) -> std::io::Result<Child> {
    let argv: Vec<OsString> = match spec.run_as {
        Some(user) => wrap_command(user, spec.program, spec.args),
        None => std::iter::once(OsString::from(spec.program))
            .chain(spec.args.iter().map(OsString::from))
            .collect(),
    };
    let pipe = || {
        if spec.piped {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(spec.cwd)
        .env_remove("SANDBOXD_CONFIGURE_KEY")
        .envs(spec.env)
        .stdin(pipe())
        .stdout(pipe())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(user) = spec.run_as {
        cmd.env("HOME", &user.home)
            .env("USER", &user.name)
            .env("LOGNAME", &user.name);
    }
    let mut child = cmd.spawn()?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| std::io::Error::other("the process has no pid"))?;
    tracing::debug!(
        pid,
        what = spec.what,
        program = spec.program,
        "process started"
    );
    let tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let done = child
        .stderr
        .take()
        .map(|stderr| read_stderr(stderr, pid, spec.what.to_owned(), tail.clone()));
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let (exit_tx, exit) = watch::channel(None);
    let what = spec.what.to_owned();
    tokio::spawn(async move {
        let text = match child.wait().await {
            Ok(status) => describe_exit(status),
            Err(e) => format!("lost track of it: {e}"),
        };
        // Whatever it left behind in its group goes with it.
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        tracing::debug!(pid, what, status = %text, "process exited");
        let _ = exit_tx.send(Some(text));
    });
    Ok(Child {
        group: Group {
            pid,
            exit: ExitWatch(exit),
        },
        stdin,
        stdout,
        stderr: Stderr { tail, done },
    })
}

/// A program's process group, SIGKILLed on drop unless it has already exited (the waiter task
/// then swept the group itself).
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) pid: i32,
    exit: ExitWatch,
}

impl Group {
    /// SIGKILLs the group, unless the program has exited.
    pub(crate) fn kill(&self) {
        if self.exit.status().is_none() {
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
        }
    }

    /// How the program exited, if it has.
    pub(crate) fn exit_status(&self) -> Option<String> {
        self.exit.status()
    }

    /// Resolves when the program has exited, with a description of how.
    pub(crate) async fn exited(&mut self) -> String {
        self.exit.exited().await
    }

    /// What tells of the program's exit without holding the group.
    pub(crate) fn exit_watch(&self) -> ExitWatch {
        self.exit.clone()
    }

    /// Kills the group and waits (at most `within`) until the program was reaped; how it
    /// exited, or `""` when that did not happen in time.
    pub(crate) async fn kill_and_reap(&mut self, within: Duration) -> String {
        self.kill();
        tokio::time::timeout(within, self.exited())
            .await
            .unwrap_or_default()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where a program's exit is told (the waiter task tells it).
#[derive(Debug, Clone)]
pub(crate) struct ExitWatch(watch::Receiver<Option<String>>);

impl ExitWatch {
    /// How the program exited, if it has.
    pub(crate) fn status(&self) -> Option<String> {
        self.0.borrow().clone()
    }

    /// Resolves when the program has exited, with a description of how.
    pub(crate) async fn exited(&mut self) -> String {
        let status = self
            .0
            .wait_for(Option::is_some)
            .await
            .map(|status| status.clone().unwrap_or_default());
        match status {
            Ok(status) => status,
            // The waiter is gone (runtime shutting down): nothing will ever be reported.
            Err(_) => std::future::pending().await,
        }
    }
}

/// The last bytes a program wrote to its stderr.
#[derive(Debug)]
pub(crate) struct Stderr {
    tail: Arc<Mutex<Vec<u8>>>,
    done: Option<JoinHandle<()>>,
}

impl Stderr {
    /// What is kept so far, trimmed.
    pub(crate) fn text(&self) -> String {
        self.tail
            .lock()
            .map(|t| String::from_utf8_lossy(&t).trim().to_owned())
            .unwrap_or_default()
    }

    /// What is kept once the pipe closed (at most a second after the program exited:
    /// grandchildren may hold it open), trimmed.
    pub(crate) async fn finished(&mut self) -> String {
        if let Some(done) = self.done.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), done).await;
        }
        self.text()
    }
}

/// Logs the program's stderr and keeps its last [`STDERR_TAIL`] bytes.
fn read_stderr(
    mut stderr: tokio::process::ChildStderr,
    pid: i32,
    what: String,
    tail: Arc<Mutex<Vec<u8>>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let chunk = &buf[..n];
                    tracing::debug!(
                        pid,
                        "{what} stderr: {}",
                        String::from_utf8_lossy(chunk).trim_end()
                    );
                    if let Ok(mut t) = tail.lock() {
                        t.extend_from_slice(chunk);
                        let excess = t.len().saturating_sub(STDERR_TAIL);
                        t.drain(..excess);
                    }
                }
            }
        }
    })
}

/// How a process ended, for people: `exit code 1`, `killed by SIGSEGV`.
fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => match Signal::try_from(signal) {
            Ok(Signal::SIGKILL) => "killed by SIGKILL, possibly out of memory".to_owned(),
            Ok(s) => format!("killed by {s}"),
            Err(_) => format!("killed by signal {signal}"),
        },
        (None, None) => "stopped".to_owned(),
    }
}
