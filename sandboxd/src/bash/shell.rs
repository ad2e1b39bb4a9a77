//! One framed bash process: starts it on a PTY and frames it ([`super::script`]), types what
//! the actor asks for, and turns the terminal's bytes, markers and quiet spells into
//! [`ShellEvent`]s: output, the end of a command ([`super::completion`]), the loss of the
//! framing, the end of the shell.

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use sandbox_common::random_hex;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::completion::{Completion, Decision};
use super::framing::{Framer, PromptState, Segment};
use super::pty::{MAX_CANONICAL_LINE, Mode, Pty, PtyEvent, SpawnError, SpawnSpec};
use super::reader::{Look, Reader};
use super::script;
use crate::user::RunAs;

/// How long a new shell may take to show its first prompt (login profiles can be slow).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// What every shell of this daemon shares.
#[derive(Debug)]
pub(crate) struct ShellConfig {
    /// The user shells run as (`None`: sandboxd's own user).
    pub(crate) run_as: Option<RunAs>,
    /// Start login shells.
    pub(crate) login: bool,
    /// The no-output timeout of non-blocking commands.
    pub(crate) no_change_timeout: Duration,
    /// Directory of the full-output files.
    pub(crate) output_dir: PathBuf,
    /// Numbers the full-output files across all sessions.
    pub(crate) command_seq: AtomicU64,
    /// The bytes the full-output files may take together.
    pub(crate) spool_budget: super::SpoolBudget,
    /// Environment of new shells on top of sandboxd's own: the caller's, when a pre-started
    /// sandboxd was configured in place (see `crate::configure`).
    pub(crate) env: std::sync::RwLock<BTreeMap<String, String>>,
    /// Which processes `C-c` at the prompt kills (see `crate::agent_procs`).
    pub(crate) agent_processes: crate::agent_procs::Scope,
}

impl ShellConfig {
    /// How long a running command may be silent before sandboxd looks whether bash is back at
    /// its prompt without having said so: well within the no-change timeout, at most 1 s.
    fn quiet_spell(&self) -> Duration {
        (self.no_change_timeout / 2).clamp(Duration::from_millis(100), Duration::from_secs(1))
    }
}

/// Errors starting a shell.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The shell could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The shell started but never acknowledged its set-up; `output` is what it printed.
    #[error("bash did not become ready: {reason}; it printed: {output:?}")]
    NotReady {
        /// Why we gave up.
        reason: String,
        /// The shell's output until then.
        output: String,
    },
    /// The shell could not enter its working directory (missing, not a directory, no
    /// permission); no retry helps until it can.
    #[error("the working directory {dir} cannot be entered: {reason}")]
    WorkingDir {
        /// The directory asked for.
        dir: PathBuf,
        /// What is wrong with it, or what the shell said.
        reason: String,
    },
}

/// What a shell reports to its actor.
#[derive(Debug)]
pub(crate) enum ShellEvent {
    /// Output of the command in flight.
    Output(Vec<u8>),
    /// The command ended; bash is at its prompt in this state.
    Done(PromptState),
    /// The framing is gone for good, for this reason: the shell must be replaced.
    Lost(String),
    /// The shell exited with this status and its terminal closed.
    Closed(i64),
}

/// A live, framed shell.
#[derive(Debug)]
pub(crate) struct Shell {
    pty: Pty,
    events: mpsc::Receiver<PtyEvent>,
    framer: Framer,
    reader: Reader,
    /// The command in flight, until bash acknowledged its end.
    running: Option<Completion>,
    last_state: Option<PromptState>,
    exited: Option<i64>,
    closed: bool,
    /// What to report next.
    queue: VecDeque<ShellEvent>,
    /// Output is readline's echo of a line sandboxd typed, until bash starts that line.
    muted: bool,
    /// Last output or probe: the start of the current quiet spell.
    last_activity: Instant,
    quiet: Duration,
    look_again: Option<Instant>,
}

impl Shell {
    /// Starts a shell in `cwd` and waits until it acknowledged its set-up there.
    pub(crate) async fn start(config: &ShellConfig, cwd: &Path) -> Result<Shell, ShellError> {
        let env = config
            .env
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let spec = SpawnSpec {
            cwd,
            run_as: config.run_as.as_ref(),
            login: config.login,
            env: &env,
        };
        let (pty, events) = Pty::spawn(&spec)?;
        let mut shell = Shell {
            reader: Reader::new(pty.pid()),
            pty,
            events,
            framer: Framer::default(),
            running: Some(Completion::new(true)),
            last_state: None,
            exited: None,
            closed: false,
            queue: VecDeque::new(),
            muted: false,
            last_activity: Instant::now(),
            quiet: config.quiet_spell(),
            look_again: None,
        };
        shell.pty.write(script::init_line(cwd).as_bytes());
        let mut seen = Vec::new();
        let waited = tokio::time::timeout(STARTUP_TIMEOUT, async {
            loop {
                match shell.next().await {
                    ShellEvent::Output(bytes) => seen.extend_from_slice(&bytes),
                    ShellEvent::Done(state) => return Ok(state),
                    ShellEvent::Lost(why) => return Err(why),
                    ShellEvent::Closed(code) => {
                        return Err(format!("bash exited with status {code}"));
                    }
                }
            }
        })
        .await;
        let output = || String::from_utf8_lossy(&seen).trim().to_owned();
        let state = match waited {
            Ok(Ok(state)) => state,
            Ok(Err(reason)) => {
                return Err(ShellError::NotReady {
                    reason,
                    output: output(),
                });
            }
            Err(_) => {
                let reason = format!("no prompt within {} s", STARTUP_TIMEOUT.as_secs());
                return Err(ShellError::NotReady {
                    reason,
                    output: output(),
                });
            }
        };
        if !same_dir(Path::new(&state.working_dir), cwd) {
            let reason = match output() {
                said if !said.is_empty() => said,
                _ => format!("the shell is in {} instead", state.working_dir),
            };
            return Err(ShellError::WorkingDir {
                dir: cwd.to_path_buf(),
                reason,
            });
        }
        Ok(shell)
    }

    /// The state at the last acknowledged prompt.
    pub(crate) fn last_state(&self) -> Option<&PromptState> {
        self.last_state.as_ref()
    }

    /// Types `command` for bash to run, verbatim, and follows it until bash acknowledges it.
    pub(crate) fn run(&mut self, command: &str) {
        self.track(false);
        self.pty.set_mode(Mode::Prompt);
        self.pty.write(format!("{command}\n").as_bytes());
    }

    /// Follows the shell, at its prompt now, until it acknowledges a prompt again (after a key
    /// typed to it).
    pub(crate) fn track_prompt(&mut self) {
        self.track(true);
    }

    /// Types bytes into the terminal (input for the program in the foreground, control keys).
    pub(crate) fn type_bytes(&self, bytes: &[u8]) {
        self.pty.write(bytes);
    }

    /// The longest line the terminal would pass on whole now: `None` when the program in the
    /// foreground reads it raw (no limit).
    pub(crate) fn line_limit(&self) -> Option<usize> {
        self.pty.is_canonical().then_some(MAX_CANONICAL_LINE)
    }

    /// The next event; cancel-safe (nothing is lost when the future is dropped).
    pub(crate) async fn next(&mut self) -> ShellEvent {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return event;
            }
            if self.closed {
                return std::future::pending().await;
            }
            let timer = self.timer();
            tokio::select! {
                biased;
                event = self.events.recv() => self.on_pty(event),
                () = sleep_until(timer) => self.on_timer(),
            }
        }
    }

    /// Takes in the events already queued, without waiting, so that a request sees the latest
    /// state; returns what they made.
    pub(crate) fn ready(&mut self) -> Vec<ShellEvent> {
        while !self.closed {
            match self.events.try_recv() {
                Ok(event) => self.on_pty(Some(event)),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => self.on_pty(None),
            }
        }
        self.queue.drain(..).collect()
    }

    fn track(&mut self, at_prompt: bool) {
        self.running = Some(Completion::new(at_prompt));
        self.last_activity = Instant::now();
        self.look_again = None;
    }

    fn timer(&self) -> Option<Instant> {
        self.running.as_ref()?;
        let quiet = self.last_activity.checked_add(self.quiet);
        match (quiet, self.look_again) {
            (Some(q), Some(l)) => Some(q.min(l)),
            (q, l) => q.or(l),
        }
    }

    fn on_pty(&mut self, event: Option<PtyEvent>) {
        match event {
            Some(PtyEvent::Output(bytes)) => {
                for segment in self.framer.push(&bytes) {
                    self.on_segment(segment);
                }
            }
            Some(PtyEvent::Exited(code)) => {
                tracing::info!(code, "bash exited");
                self.exited = Some(code);
                // Let the reader drain what is left, then see the end of the terminal.
                self.pty.kill_session();
                self.pty.release_terminal();
            }
            Some(PtyEvent::Eof) | None => {
                self.closed = true;
                self.running = None;
                self.queue
                    .push_back(ShellEvent::Closed(self.exited.unwrap_or(-1)));
            }
        }
    }

    fn on_segment(&mut self, segment: Segment) {
        match segment {
            Segment::Output(bytes) => match &self.running {
                Some(c) if !c.probe_running() && !self.muted => {
                    self.last_activity = Instant::now();
                    self.queue.push_back(ShellEvent::Output(bytes));
                }
                Some(_) => tracing::debug!(bytes = bytes.len(), "output of a line sandboxd typed"),
                None => tracing::debug!(bytes = bytes.len(), "output while idle"),
            },
            Segment::Started => {
                self.muted = false;
                self.pty.set_mode(Mode::Program);
                if let Some(c) = &mut self.running {
                    c.on_started();
                }
            }
            Segment::Hint => {
                if let Some(c) = &mut self.running {
                    let decision = c.on_hint(self.reader.look());
                    self.apply(decision);
                }
            }
            Segment::EditingHint => {
                if let Some(c) = &mut self.running {
                    let decision = c.on_editing_hint();
                    self.apply(decision);
                }
            }
            Segment::Ack(nonce, state) => {
                if !self
                    .running
                    .as_ref()
                    .is_some_and(|c| c.acknowledged_by(&nonce))
                {
                    tracing::debug!("an acknowledgement that is not for a probe of ours");
                    return;
                }
                self.running = None;
                self.pty.set_mode(Mode::Prompt);
                self.last_state = Some(state.clone());
                self.queue.push_back(ShellEvent::Done(state));
            }
        }
    }

    fn on_timer(&mut self) {
        let now = Instant::now();
        let Some(completion) = &mut self.running else {
            return;
        };
        if self.look_again.is_some_and(|at| at <= now) {
            self.look_again = None;
            let decision = completion.on_look_again(self.reader.look());
            self.apply(decision);
            return;
        }
        // A quiet spell: is bash back at its prompt without a hint, or replaced?
        self.last_activity = now;
        let look = self.reader.look();
        if look == Look::Busy
            && let Some(program) = self.reader.replaced_by_shell()
        {
            self.lose(format!(
                "a command replaced bash by `{program}`, a shell that cannot report the end of commands"
            ));
            return;
        }
        let decision = completion.on_quiet(look);
        self.apply(decision);
    }

    fn apply(&mut self, decision: Decision) {
        tracing::trace!(?decision, "completion");
        match decision {
            Decision::Wait => {}
            Decision::LookAgain(delay) => self.look_again = Instant::now().checked_add(delay),
            Decision::Probe => {
                let nonce = nonce();
                self.pty.set_mode(Mode::Prompt);
                self.pty.write(script::probe_line(&nonce).as_bytes());
                self.last_activity = Instant::now();
                if let Some(c) = &mut self.running {
                    c.probe_sent(nonce);
                }
            }
            Decision::EditingOff => {
                self.pty.write(script::EDITING_OFF_LINE.as_bytes());
                self.muted = true;
                self.last_activity = Instant::now();
            }
            Decision::Replace(why) => self.lose(format!("bash {why}")),
        }
    }

    fn lose(&mut self, why: String) {
        tracing::warn!(%why, "the shell lost its framing");
        self.running = None;
        self.queue.push_back(ShellEvent::Lost(why));
    }
}

/// A probe's nonce: unguessable, used once.
fn nonce() -> String {
    random_hex(16).unwrap_or_else(|e| {
        tracing::error!(error = %e, "no random source: a probe nonce from the clock");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{:032x}", nanos ^ u128::from(std::process::id()))
    })
}

/// Whether two paths name the same directory (bash keeps symbolic links in `$PWD`).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Sleeps until `deadline`, or for ever.
pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
