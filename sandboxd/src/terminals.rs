//! Terminals: a program (an interactive bash by default) on a pseudo-terminal of its own, as
//! the sandbox user, that any number of clients watch and type into over WebSocket
//! (`server::terminal`). Its output is kept in a bounded scroll-back ([`SCROLLBACK`]), so a
//! client that detaches and attaches again sees what it missed. A terminal lives until its
//! program ends and it is closed, or until sandboxd ends: dropping it kills its session.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use protocol::api::{CreateTerminalRequest, TerminalInfo};
use tokio::sync::watch;

use crate::bash::{exit_code, kill_session};
use crate::feed::{Feed, FeedReader};
use crate::shells::{check_env_name, check_id};
use crate::user::{RunAs, wrap_command};

/// Bytes of output each terminal keeps for clients that attach later.
pub(crate) const SCROLLBACK: usize = 256 * 1024;
/// Terminals a sandbox may have at once.
pub(crate) const MAX_TERMINALS: usize = 16;

/// Why a terminal was not made, found or changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TerminalError {
    /// The request is wrong (no retry helps).
    #[error("{0}")]
    Invalid(String),
    /// It conflicts with the terminals there are.
    #[error("{0}")]
    Conflict(String),
    /// No terminal has this id.
    #[error("no terminal {0:?}")]
    Unknown(String),
    /// The program did not start.
    #[error("the terminal did not start: {0}")]
    Start(String),
}

/// How terminals start.
#[derive(Debug, Clone)]
pub(crate) struct TerminalConfig {
    /// The sandbox user.
    pub(crate) run_as: Option<RunAs>,
    /// The sandbox's working directory.
    pub(crate) working_dir: PathBuf,
}

/// Every terminal of the sandbox.
#[derive(Debug)]
pub(crate) struct Terminals {
    config: TerminalConfig,
    all: Mutex<BTreeMap<String, Arc<Terminal>>>,
}

/// One terminal.
pub(crate) struct Terminal {
    id: String,
    command: Vec<String>,
    pid: i32,
    master: Mutex<Box<dyn MasterPty + Send>>,
    input: Mutex<Box<dyn Write + Send>>,
    size: Mutex<(u16, u16)>,
    output: Arc<Feed>,
    exit: watch::Receiver<Option<i64>>,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("id", &self.id)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Terminals {
    /// No terminals yet.
    pub(crate) fn new(config: TerminalConfig) -> Self {
        Terminals {
            config,
            all: Mutex::default(),
        }
    }

    /// Starts a terminal as `request` says. Blocking (forks).
    pub(crate) fn create(
        &self,
        request: CreateTerminalRequest,
        env: &BTreeMap<String, String>,
    ) -> Result<TerminalInfo, TerminalError> {
        let invalid = |e: crate::shells::ShellRefusal| TerminalError::Invalid(e.to_string());
        let id = match request.id {
            Some(id) => check_id(&id).map(|()| id).map_err(invalid)?,
            None => sandbox_common::random_hex(4)
                .map(|hex| format!("term-{hex}"))
                .map_err(|e| TerminalError::Start(e.to_string()))?,
        };
        for name in request.env.keys() {
            check_env_name(name).map_err(invalid)?;
        }
        {
            let all = lock(&self.all);
            if all.contains_key(&id) {
                return Err(TerminalError::Conflict(format!("terminal {id:?} exists")));
            }
            if all.len() >= MAX_TERMINALS {
                return Err(TerminalError::Conflict(format!(
                    "a sandbox has at most {MAX_TERMINALS} terminals; close one first"
                )));
            }
        }
        let command = match request.command {
            Some(command) if command.is_empty() => {
                return Err(TerminalError::Invalid("the command is empty".to_owned()));
            }
            Some(command) => command,
            None => vec!["bash".to_owned(), "-l".to_owned()],
        };
        let cwd = match &request.cwd {
            Some(dir) => self.config.working_dir.join(dir),
            None => self.config.working_dir.clone(),
        };
        if !cwd.is_dir() {
            return Err(TerminalError::Invalid(format!(
                "the working directory {} is not a directory",
                cwd.display()
            )));
        }
        let size = (request.cols.unwrap_or(80), request.rows.unwrap_or(24));
        if size.0 == 0 || size.1 == 0 {
            return Err(TerminalError::Invalid(
                "a terminal has at least one column and row".into(),
            ));
        }
        let mut vars = env.clone();
        vars.extend(request.env);
        let terminal = Terminal::spawn(&self.config, id.clone(), command, &cwd, &vars, size)?;
        let info = terminal.info();
        let mut all = lock(&self.all);
        if all.contains_key(&id) {
            return Err(TerminalError::Conflict(format!("terminal {id:?} exists")));
        }
        all.insert(id, Arc::new(terminal));
        Ok(info)
    }

    /// The terminal `id`.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Terminal>, TerminalError> {
        lock(&self.all)
            .get(id)
            .cloned()
            .ok_or_else(|| TerminalError::Unknown(id.to_owned()))
    }

    /// Every terminal.
    pub(crate) fn list(&self) -> Vec<TerminalInfo> {
        lock(&self.all).values().map(|t| t.info()).collect()
    }

    /// Closes a terminal: its program and everything on its terminal are killed once the last
    /// client leaves.
    pub(crate) fn close(&self, id: &str) -> Result<(), TerminalError> {
        lock(&self.all)
            .remove(id)
            .map(drop)
            .ok_or_else(|| TerminalError::Unknown(id.to_owned()))
    }
}

impl Terminal {
    fn spawn(
        config: &TerminalConfig,
        id: String,
        command: Vec<String>,
        cwd: &std::path::Path,
        env: &BTreeMap<String, String>,
        (cols, rows): (u16, u16),
    ) -> Result<Terminal, TerminalError> {
        let start = |e: &dyn std::fmt::Display| TerminalError::Start(e.to_string());
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| start(&e))?;
        let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
        let mut cmd = match &config.run_as {
            Some(user) => {
                let mut cmd = CommandBuilder::from_argv(wrap_command(user, &command[0], &args));
                cmd.env("HOME", &user.home);
                cmd.env("USER", &user.name);
                cmd.env("LOGNAME", &user.name);
                if let Some(tty) = pair.master.tty_name() {
                    // Programs that reopen their terminal by name need to own it.
                    let _ = std::os::unix::fs::chown(&tty, Some(user.uid), Some(user.gid));
                }
                cmd
            }
            None => {
                let mut cmd = CommandBuilder::new(&command[0]);
                cmd.args(&args);
                cmd
            }
        };
        cmd.cwd(cwd);
        cmd.env_remove("SANDBOXD_CONFIGURE_KEY");
        cmd.env_remove("SESSION_API_KEY");
        cmd.env("TERM", "xterm-256color");
        for (name, value) in env {
            cmd.env(name, value);
        }
        let mut child = pair.slave.spawn_command(cmd).map_err(|e| start(&e))?;
        drop(pair.slave);
        let pid = child
            .process_id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| TerminalError::Start("the program has no pid".to_owned()))?;
        let mut reader = pair.master.try_clone_reader().map_err(|e| start(&e))?;
        let input = pair.master.take_writer().map_err(|e| start(&e))?;
        let output = Feed::new(SCROLLBACK);
        let (exit_tx, exit) = watch::channel(None);
        let feed = output.clone();
        std::thread::Builder::new()
            .name(format!("term-read-{pid}"))
            .spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = reader.read(&mut buf) {
                    feed.push(&buf[..n]);
                }
                feed.close();
            })
            .map_err(|e| start(&e))?;
        std::thread::Builder::new()
            .name(format!("term-wait-{pid}"))
            .spawn(move || {
                exit_tx.send_replace(Some(exit_code(child.wait())));
            })
            .map_err(|e| start(&e))?;
        Ok(Terminal {
            id,
            command,
            pid,
            master: Mutex::new(pair.master),
            input: Mutex::new(input),
            size: Mutex::new((cols, rows)),
            output,
            exit,
        })
    }

    /// What `GET /terminals` says of it.
    pub(crate) fn info(&self) -> TerminalInfo {
        let (cols, rows) = *lock(&self.size);
        TerminalInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            pid: self.pid.unsigned_abs(),
            cols,
            rows,
            exit_code: *self.exit.borrow(),
        }
    }

    /// A reader of its output from the oldest byte kept.
    pub(crate) fn watch(&self) -> FeedReader {
        self.output.reader(0)
    }

    /// Types `bytes`. Blocking only as long as the terminal's buffer is full.
    pub(crate) fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut input = lock(&self.input);
        input.write_all(bytes)?;
        input.flush()
    }

    /// Resizes it (the program gets `SIGWINCH`).
    pub(crate) fn resize(&self, cols: u16, rows: u16) -> Result<(), TerminalError> {
        if cols == 0 || rows == 0 {
            return Err(TerminalError::Invalid(
                "a terminal has at least one column and row".into(),
            ));
        }
        lock(&self.master)
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| TerminalError::Invalid(format!("cannot resize: {e}")))?;
        *lock(&self.size) = (cols, rows);
        Ok(())
    }

    /// Sends `signal` to its foreground process group (the program's own when it cannot be
    /// told).
    pub(crate) fn signal(&self, signal: Signal) {
        let group = lock(&self.master)
            .process_group_leader()
            .filter(|g| *g > 0)
            .unwrap_or(self.pid);
        let _ = killpg(Pid::from_raw(group), signal);
    }

    /// Its exit status, waiting for it once its output ended.
    pub(crate) async fn exit_code(&self) -> i64 {
        let mut exit = self.exit.clone();
        let code = exit.wait_for(Option::is_some).await.ok().and_then(|c| *c);
        code.unwrap_or(-1)
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        kill_session(self.pid);
    }
}
