//! [`Daemon`]: a server process a test starts (sandboxd, `agentd serve`): in its own process
//! group, its address read from the line it prints once it listens, and SIGKILLed with its
//! whole group and reaped when dropped, so no test leaves a process behind.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// A running server process; see the module documentation.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    url: String,
    /// The exit status, once reaped: after that its pid may belong to another process, so
    /// nothing is signalled any more.
    exited: Option<ExitStatus>,
    /// Its standard output after the first line, kept open so that a later line does not fail
    /// with a broken pipe (and read by [`Daemon::next_line`]).
    stdout: Option<BufReader<ChildStdout>>,
}

impl Daemon {
    /// Spawns `command` in a process group of its own (stdin closed, stdout piped) and reads
    /// its first line, which must be `"{banner} {url}"` (`sandboxd listening on`,
    /// `agentd serve listening on`). Anything else is an `Err` with the line, the process
    /// killed: the caller adds what it knows (a log) to its panic.
    pub fn spawn(command: &mut Command, banner: &str) -> Result<Daemon, String> {
        command.stdin(Stdio::null()).stdout(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
        let mut line = String::new();
        let mut stdout = child.stdout.take().map(BufReader::new);
        if let Some(stdout) = &mut stdout {
            let _ = stdout.read_line(&mut line);
        }
        let url = line
            .trim()
            .strip_prefix(banner)
            .map(|url| url.trim().to_string());
        let mut daemon = Daemon {
            child,
            url: url.clone().unwrap_or_default(),
            exited: None,
            stdout,
        };
        match url {
            Some(_) => Ok(daemon),
            None => {
                daemon.kill();
                Err(format!("{banner:?} expected, got {line:?}"))
            }
        }
    }

    /// The address it printed.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next line it prints on standard output (waiting for it), without the line end;
    /// `None` at the end of its output.
    pub fn next_line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.stdout.as_mut()?.read_line(&mut line) {
            Ok(n) if n > 0 => Some(line.trim_end_matches(['\r', '\n']).to_string()),
            _ => None,
        }
    }

    /// Its pid (and process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM to the process (not its group) and waits up to `within` for its exit
    /// status; `None` if it did not exit by then.
    pub fn terminate(&mut self, within: Duration) -> Option<ExitStatus> {
        if self.exited.is_some() {
            return self.exited;
        }
        let _ = kill(self.nix_pid(), Signal::SIGTERM);
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.exited = Some(status);
                    return self.exited;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return None,
            }
        }
    }

    /// SIGKILLs the whole process group and reaps the process (nothing, once it was reaped).
    pub fn kill(&mut self) {
        if self.exited.is_some() {
            return;
        }
        // Not reaped yet, so its pid (the group's id) cannot have been reused.
        let _ = killpg(self.nix_pid(), Signal::SIGKILL);
        self.exited = self.child.wait().ok();
    }

    fn nix_pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}
