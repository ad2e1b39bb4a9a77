//! One shell process on a pseudo-terminal: spawning it (as the sandbox user), switching the
//! terminal between "prompt" and "program" modes, and killing everything it started.
//!
//! Output is read by a dedicated thread and input written by another, both talking to the
//! session actor through channels, so a program that stops reading its input can never block
//! the daemon, and no read ever polls.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices};
use nix::unistd::Pid;
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use sandbox_common::ProcStat;
use tokio::sync::mpsc;

use crate::user::{RunAs, wrap_command};

/// What the I/O threads report to the session actor.
#[derive(Debug)]
pub(crate) enum PtyEvent {
    /// Bytes from the terminal.
    Output(Vec<u8>),
    /// The shell process exited with this status (128 + signal when killed).
    Exited(i64),
    /// The terminal closed: every output byte has been delivered.
    Eof,
}

/// How to start the shell.
#[derive(Debug, Clone)]
pub(crate) struct SpawnSpec<'a> {
    /// Initial working directory.
    pub(crate) cwd: &'a Path,
    /// Switch to this user first.
    pub(crate) run_as: Option<&'a RunAs>,
    /// Start a login shell (reads the profile files) rather than a bare one.
    pub(crate) login: bool,
    /// Environment on top of sandboxd's own (a pre-started sandboxd's caller's).
    pub(crate) env: &'a BTreeMap<String, String>,
}

/// Errors starting a shell; retrying rarely helps (missing bash, no PTYs left).
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The PTY could not be opened or the process not started.
    #[error("cannot start bash on a pseudo-terminal: {0}")]
    Spawn(String),
    /// The terminal could not be configured.
    #[error("cannot configure the terminal: {0}")]
    Termios(#[from] nix::Error),
    /// I/O setting up the terminal.
    #[error("terminal I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// The longest line, newline excluded, that a terminal in canonical mode passes on whole: the
/// kernel's line buffer holds 4096 bytes, newline included, and drops what does not fit.
pub(crate) const MAX_CANONICAL_LINE: usize = 4095;

/// A running shell on a PTY. Dropping it kills the shell's whole session and reaps it.
#[derive(Debug)]
pub(crate) struct Pty {
    pid: i32,
    /// Our own handle on the terminal's slave side, used for termios changes.
    slave: Option<File>,
    input: std::sync::mpsc::Sender<Vec<u8>>,
}

/// Terminal size: wide and tall so that lines do not wrap, as the reference's tmux pane.
const SIZE: PtySize = PtySize {
    rows: 1000,
    cols: 1000,
    pixel_width: 0,
    pixel_height: 0,
};

impl Pty {
    /// Starts bash; output and exit are reported on the returned channel.
    pub(crate) fn spawn(
        spec: &SpawnSpec<'_>,
    ) -> Result<(Pty, mpsc::Receiver<PtyEvent>), SpawnError> {
        let pair = native_pty_system()
            .openpty(SIZE)
            .map_err(|e| SpawnError::Spawn(e.to_string()))?;
        let mut bash_args = vec!["--noediting", "-i"];
        if spec.login {
            bash_args.insert(0, "--login");
        } else {
            bash_args.splice(0..0, ["--noprofile", "--norc"]);
        }
        let mut cmd = match spec.run_as {
            Some(user) => {
                let argv = wrap_command(user, "bash", &bash_args);
                let mut cmd = CommandBuilder::from_argv(argv);
                cmd.env("HOME", &user.home);
                cmd.env("USER", &user.name);
                cmd.env("LOGNAME", &user.name);
                cmd
            }
            None => {
                let mut cmd = CommandBuilder::new("bash");
                cmd.args(&bash_args);
                cmd
            }
        };
        cmd.cwd(spec.cwd);
        // The pre-started mode's key is sandboxd's only.
        cmd.env_remove("SANDBOXD_CONFIGURE_KEY");
        for (name, value) in spec.env {
            cmd.env(name, value);
        }
        cmd.env("SHELL", "/bin/bash");
        if std::env::var_os("TERM").is_none() && !spec.env.contains_key("TERM") {
            cmd.env("TERM", "xterm-256color");
        }
        let tty_path = pair
            .master
            .tty_name()
            .ok_or_else(|| SpawnError::Spawn("the PTY has no slave path".into()))?;
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_NOCTTY)
            .open(&tty_path)?;
        set_mode(&slave, Mode::Prompt)?;
        if let Some(user) = spec.run_as {
            // Programs that reopen their terminal by name (`tty`, prompts) need to own it.
            std::os::unix::fs::chown(&tty_path, Some(user.uid), Some(user.gid))?;
        }
        let mut child = pair
            .slave
            .spawn_command(cmd)
            .map_err(|e| SpawnError::Spawn(e.to_string()))?;
        drop(pair.slave);
        let pid = child
            .process_id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| SpawnError::Spawn("the shell has no pid".into()))?;

        let (events_tx, events_rx) = mpsc::channel(64);
        let mut reader = pair
            .master
            .try_clone_reader()
            .map_err(|e| SpawnError::Spawn(e.to_string()))?;
        let mut writer = pair
            .master
            .take_writer()
            .map_err(|e| SpawnError::Spawn(e.to_string()))?;
        let master = pair.master;

        let out_tx = events_tx.clone();
        std::thread::Builder::new()
            .name(format!("pty-read-{pid}"))
            .spawn(move || {
                // The master must live as long as we read from it.
                let _master = master;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if out_tx
                                .blocking_send(PtyEvent::Output(buf[..n].to_vec()))
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                }
                let _ = out_tx.blocking_send(PtyEvent::Eof);
            })?;

        std::thread::Builder::new()
            .name(format!("pty-wait-{pid}"))
            .spawn(move || {
                let status = exit_code(child.wait());
                let _ = events_tx.blocking_send(PtyEvent::Exited(status));
            })?;

        let (input, input_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name(format!("pty-write-{pid}"))
            .spawn(move || {
                for bytes in input_rx {
                    if writer
                        .write_all(&bytes)
                        .and_then(|()| writer.flush())
                        .is_err()
                    {
                        break;
                    }
                }
            })?;

        Ok((
            Pty {
                pid,
                slave: Some(slave),
                input,
            },
            events_rx,
        ))
    }

    /// Queues bytes for the terminal's input; never blocks.
    pub(crate) fn write(&self, bytes: &[u8]) {
        let _ = self.input.send(bytes.to_vec());
    }

    /// Switches the terminal mode (see [`Mode`]).
    pub(crate) fn set_mode(&self, mode: Mode) {
        if let Some(slave) = &self.slave
            && let Err(e) = set_mode(slave, mode)
        {
            tracing::warn!(error = %e, "cannot switch terminal mode");
        }
    }

    /// Whether the terminal is in canonical mode now (the program in the foreground reads it
    /// line by line, and lines longer than [`MAX_CANONICAL_LINE`] would be cut). A program may
    /// have switched it to raw mode itself.
    pub(crate) fn is_canonical(&self) -> bool {
        self.slave
            .as_ref()
            .and_then(|slave| termios::tcgetattr(slave).ok())
            .is_some_and(|t| t.local_flags.contains(LocalFlags::ICANON))
    }

    /// The shell's process id.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Closes our handle on the terminal so that the reader sees the end once the shell's
    /// processes are gone.
    pub(crate) fn release_terminal(&mut self) {
        self.slave = None;
    }

    /// Kills every process of the shell's session (background jobs included).
    pub(crate) fn kill_session(&self) {
        kill_session(self.pid);
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        self.kill_session();
        self.release_terminal();
        // The wait thread reaps the shell.
    }
}

/// The two terminal modes the session uses. Echo is always off: the observation must never
/// contain the typed command or input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Bash is reading a command: non-canonical, so a command line of any length reaches bash
    /// intact (canonical mode would cut lines at 4095 bytes).
    Prompt,
    /// A program runs: canonical with signals, as on a normal terminal (line input, `C-d` = EOF).
    Program,
}

fn set_mode(slave: &File, mode: Mode) -> nix::Result<()> {
    let mut t = termios::tcgetattr(slave)?;
    t.local_flags
        .remove(LocalFlags::ECHO | LocalFlags::ECHOE | LocalFlags::ECHOK | LocalFlags::ECHONL);
    t.local_flags.insert(LocalFlags::ISIG);
    match mode {
        Mode::Prompt => {
            t.local_flags.remove(LocalFlags::ICANON);
            t.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
            t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        }
        Mode::Program => t.local_flags.insert(LocalFlags::ICANON),
    }
    termios::tcsetattr(slave, SetArg::TCSANOW, &t)
}

/// The exit code of a program on a PTY, from waiting for it: its own; 137 (128 + SIGKILL, the
/// signal its session is ended with) when any signal killed it; −1 when it could not be waited
/// for.
pub(crate) fn exit_code(waited: std::io::Result<portable_pty::ExitStatus>) -> i64 {
    match waited {
        Ok(status) => match status.signal() {
            Some(_) => 128 + 9,
            None => i64::from(status.exit_code()),
        },
        Err(_) => -1,
    }
}

/// SIGKILLs every process whose session id is `sid`, then the group, then the leader.
pub(crate) fn kill_session(sid: i32) {
    for pid in session_members(sid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let _ = killpg(Pid::from_raw(sid), Signal::SIGKILL);
    let _ = kill(Pid::from_raw(sid), Signal::SIGKILL);
}

fn session_members(sid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let session = ProcStat::read(u32::try_from(pid).ok()?)?.session;
        (i32::try_from(session) == Ok(sid)).then_some(pid)
    })
    .collect()
}
