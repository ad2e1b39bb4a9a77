//! The persistent bash session (docs/protocol.md §4): one actor task owns the shell, its terminal
//! and the command in flight; requests reach it through a channel, so commands are serialised
//! per session while the rest of sandboxd (files, IPython, other sessions) runs freely.
//!
//! The actor runs under [`crate::supervise`]: if it fails, a new actor serves the same queue and
//! the next command starts a new shell, saying so in its observation's prefix. A shell that
//! exited is replaced the same way; one that lost its framing (`exec bash`) is replaced at once,
//! in the observation of the command that did it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use protocol::Observation;
use protocol::action::CmdRunArgs;
use protocol::observation::CmdOutputMetadata;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::framing::PromptState;
use super::observe::{self, CommandEnd, Current, TIMEOUT_HELP};
use super::shell::{Shell, ShellConfig, ShellError, ShellEvent, sleep_until};
use super::split::multiple_commands_error;
use crate::agent_procs;
use crate::feed::{Feed, FeedReader, Tap};
use crate::observations;
use crate::supervise::{Health, supervise};

/// Handle of a bash session; cheap to clone. The session dies with the last handle.
#[derive(Debug, Clone)]
pub(crate) struct BashShell {
    requests: mpsc::Sender<Request>,
    state: watch::Receiver<Option<PromptState>>,
    health: watch::Receiver<Health>,
    /// The live output of the last command started.
    live: watch::Receiver<Option<Arc<Feed>>>,
}

#[derive(Debug)]
struct Request {
    args: CmdRunArgs,
    timeout: Option<f64>,
    reply: oneshot::Sender<Observation>,
    /// Where to hand the live output of the command this request waits on.
    tap: Option<Tap>,
}

impl BashShell {
    /// Starts a shell in `cwd` and waits for its first prompt.
    pub(crate) async fn start(config: Arc<ShellConfig>, cwd: PathBuf) -> Result<Self, ShellError> {
        let shell = Shell::start(&config, &cwd).await?;
        let (state_tx, state) = watch::channel(shell.last_state().cloned());
        let (health_tx, health) = watch::channel(Health::Ready);
        let (requests, rx) = mpsc::channel(16);
        let (live_tx, live) = watch::channel(None);
        let mut first = Some(shell);
        tokio::spawn(supervise("bash", rx, move |requests, failure| {
            let actor = Actor {
                config: config.clone(),
                home: cwd.clone(),
                shell: first.take(),
                current: None,
                state_tx: state_tx.clone(),
                health: health_tx.clone(),
                live: live_tx.clone(),
                restart_note: failure.map(|why| {
                    format!(
                        "[The bash session failed ({why}) and a new one was started: {LOST_STATE}]"
                    )
                }),
            };
            Box::pin(actor.run(requests))
        }));
        Ok(BashShell {
            requests,
            state,
            health,
            live,
        })
    }

    /// Runs one `run` action. `timeout` is the action's hard timeout in seconds; `tap` gets the
    /// live output of the command the action waits on, from where it is when the wait begins.
    pub(crate) async fn run(
        &self,
        args: CmdRunArgs,
        timeout: Option<f64>,
        tap: Option<Tap>,
    ) -> Observation {
        let (reply, rx) = oneshot::channel();
        let hidden = args.hidden;
        let command = args.command.trim().to_owned();
        let request = Request {
            args,
            timeout,
            reply,
            tap,
        };
        if self.requests.send(request).await.is_err() {
            return failed_run(&command, hidden, "ERROR: the bash session has ended.");
        }
        rx.await.unwrap_or_else(|_| {
            failed_run(
                &command,
                hidden,
                "ERROR: the bash session failed while handling this command; a new session is started for the next command.",
            )
        })
    }

    /// A reader of the running command's output from the oldest line kept; `None` when no
    /// command runs.
    pub(crate) fn attach(&self) -> Option<FeedReader> {
        let live = self.live.borrow();
        let feed = live.as_ref().filter(|f| !f.is_closed())?;
        Some(feed.reader(0))
    }

    /// Whether a command runs.
    pub(crate) fn is_running(&self) -> bool {
        self.live.borrow().as_ref().is_some_and(|f| !f.is_closed())
    }

    /// The shell's working directory after its last command.
    pub(crate) fn cwd(&self) -> Option<PathBuf> {
        self.state
            .borrow()
            .as_ref()
            .map(|s| PathBuf::from(&s.working_dir))
    }

    /// Whether commands can run: the actor serves its queue and its last shell started.
    pub(crate) fn health(&self) -> Result<(), String> {
        if self.requests.is_closed() {
            return Err("the bash session has stopped".to_owned());
        }
        match &*self.health.borrow() {
            Health::Ready => Ok(()),
            Health::Failing(why) => Err(why.clone()),
        }
    }
}

/// What a new shell does not have of the old one.
const LOST_STATE: &str =
    "variables, functions, aliases and background jobs of the old session are gone.";

/// A `run` observation for a command that could not run at all (never an `error` observation,
/// which would crash the client for hidden commands).
fn failed_run(command: &str, hidden: bool, content: &str) -> Observation {
    observations::run(
        command,
        content.to_owned(),
        CmdOutputMetadata::default(),
        hidden,
        None,
    )
}

struct Actor {
    config: Arc<ShellConfig>,
    /// The session's first working directory: where a new shell starts when the last one's
    /// directory is gone.
    home: PathBuf,
    shell: Option<Shell>,
    current: Option<Current>,
    state_tx: watch::Sender<Option<PromptState>>,
    health: watch::Sender<Health>,
    live: watch::Sender<Option<Arc<Feed>>>,
    /// Why the last shell is gone, said in the prefix of the observation that starts the next.
    restart_note: Option<String>,
}

impl Actor {
    async fn run(mut self, requests: &mut mpsc::Receiver<Request>) {
        loop {
            // Requests first: a background job that prints without pause must not starve them.
            let request = match &mut self.shell {
                Some(shell) => tokio::select! {
                    biased;
                    request = requests.recv() => request,
                    event = shell.next() => {
                        self.on_shell_event(event).await;
                        continue;
                    }
                },
                None => requests.recv().await,
            };
            let Some(request) = request else { break };
            // What the shell already said (a command that finished while nobody was asking).
            let ready = self.shell.as_mut().map(Shell::ready).unwrap_or_default();
            for event in ready {
                self.on_shell_event(event).await;
            }
            let obs = self
                .handle(request.args, request.timeout, request.tap)
                .await;
            let _ = request.reply.send(obs);
        }
        // Dropping the shell kills its session.
    }

    /// Takes in one event of the shell; true when the command printed something.
    async fn on_shell_event(&mut self, event: ShellEvent) -> bool {
        let current = self.current.as_mut().filter(|c| c.is_running());
        match event {
            ShellEvent::Output(bytes) => match current {
                Some(cur) => {
                    cur.output.feed(&bytes);
                    return true;
                }
                None => tracing::debug!(bytes = bytes.len(), "output while idle"),
            },
            ShellEvent::Done(state) => {
                self.state_tx.send_replace(Some(state.clone()));
                if let Some(cur) = current {
                    cur.finish(state);
                }
            }
            ShellEvent::Closed(code) => {
                let last = self.shell.take().and_then(|s| s.last_state().cloned());
                self.restart_note = Some(format!(
                    "[The previous bash session ended (exit status {code}) and a new one was started: {LOST_STATE}]"
                ));
                if let Some(cur) = current {
                    let mut state = last.unwrap_or_else(|| PromptState {
                        exit_code: code,
                        pid: -1,
                        username: String::new(),
                        hostname: String::new(),
                        working_dir: self.home.to_string_lossy().into_owned(),
                        path: String::new(),
                    });
                    state.exit_code = code;
                    cur.finish(state);
                }
            }
            ShellEvent::Lost(why) => self.replace_shell(&why).await,
        }
        false
    }

    /// Replaces a shell whose framing is gone; the command in flight ends saying so.
    async fn replace_shell(&mut self, why: &str) {
        // Dropping the shell kills its session.
        self.shell = None;
        let note = match self.start_shell().await {
            Ok(dir) => format!(
                "\n[The command did not complete normally: {why}. That shell was killed and a new bash session was started in {}: {LOST_STATE}]",
                dir.display()
            ),
            Err(e) => format!(
                "\n[The command did not complete normally: {why}. That shell was killed; a new one could not be started ({e}) and will be tried again with the next command.]"
            ),
        };
        let state = self.state_tx.borrow().clone();
        if let Some(cur) = self.current.as_mut().filter(|c| c.is_running()) {
            cur.end_note = Some(note);
            cur.finish(state.unwrap_or_else(|| PromptState {
                exit_code: -1,
                pid: -1,
                username: String::new(),
                hostname: String::new(),
                working_dir: self.home.to_string_lossy().into_owned(),
                path: String::new(),
            }));
        }
    }

    /// Starts a shell in the last working directory (or the first one, when that is gone);
    /// returns where.
    async fn start_shell(&mut self) -> Result<PathBuf, ShellError> {
        let last = self
            .state_tx
            .borrow()
            .as_ref()
            .map(|s| PathBuf::from(&s.working_dir));
        let dir = last
            .filter(|d| d.is_dir())
            .unwrap_or_else(|| self.home.clone());
        match Shell::start(&self.config, &dir).await {
            Ok(shell) => {
                self.state_tx.send_replace(shell.last_state().cloned());
                self.health.send_replace(Health::Ready);
                self.shell = Some(shell);
                Ok(dir)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot start bash");
                self.health
                    .send_replace(Health::Failing(format!("bash cannot start: {e}")));
                Err(e)
            }
        }
    }

    async fn handle(
        &mut self,
        args: CmdRunArgs,
        timeout: Option<f64>,
        tap: Option<Tap>,
    ) -> Observation {
        let command = args.command.trim().to_owned();
        let hidden = args.hidden;
        let running = self.current.as_ref().is_some_and(Current::is_running);
        let finished_unseen = self.current.as_ref().is_some_and(|c| !c.is_running());

        // 1. Nothing to interact with.
        if !running && !finished_unseen {
            if command.is_empty() {
                return failed_run(
                    "",
                    hidden,
                    "ERROR: No previous running command to retrieve logs from.",
                );
            }
            // `C-c` at the prompt is the recovery from a runaway process tree (step 4).
            if args.is_input && special_key(&command) != Some('C') {
                return failed_run(
                    "",
                    hidden,
                    "ERROR: No previous running command to interact with.",
                );
            }
        }
        // 2. One statement at a time.
        if let Some(message) = multiple_commands_error(&command) {
            return observations::run_refused(&command, hidden, message);
        }
        // A command that ended while detached: show its end first.
        if finished_unseen && (command.is_empty() || args.is_input) {
            return self.observe(&command, hidden, CommandEnd::Completed, None);
        }
        // 3. Refuse a new command while one runs.
        if running && !args.is_input && !command.is_empty() {
            let suffix = format!(
                "\n[Your command \"{command}\" is NOT executed. The previous command is still running - You CANNOT send new commands until the previous command is completed. By setting `is_input` to `true`, you can interact with the current process: {TIMEOUT_HELP}]"
            );
            return self.observe(&command, hidden, CommandEnd::NoChange, Some(suffix));
        }
        let carried = if finished_unseen {
            let obs = self.observe("", true, CommandEnd::Completed, None);
            Some(obs.content).filter(|c| !c.is_empty())
        } else {
            None
        };

        let restarted = if self.shell.is_none() {
            if let Err(e) = self.start_shell().await {
                return failed_run(&command, hidden, &format!("ERROR: cannot start bash: {e}"));
            }
            self.restart_note.take()
        } else {
            None
        };
        let Some(shell) = &mut self.shell else {
            return failed_run(
                &command,
                hidden,
                "ERROR: the bash session is not available.",
            );
        };

        // 4. Send.
        let key = special_key(&command);
        // How many of the agent's processes `C-c` at the prompt killed.
        let mut killed = None;
        if let Some(key) = key {
            if !running && key != 'C' {
                return failed_run(
                    "",
                    hidden,
                    "ERROR: No previous running command to interact with.",
                );
            }
            if !running {
                killed = Some(agent_procs::kill_all(self.config.agent_processes));
                self.current = Some(Current::new(&self.config));
                shell.track_prompt();
            }
            if let Some(cur) = &mut self.current
                && matches!(key, 'C' | 'Z' | '\\')
            {
                // What the terminal would echo (ECHOCTL); our terminal does not echo.
                cur.output.feed(format!("^{key}").as_bytes());
            }
            shell.type_bytes(&[(key as u8) & 0x1f]);
        } else if args.is_input {
            if let Some(refusal) = overlong_line(&command, shell.line_limit()) {
                return failed_run(&command, hidden, &refusal);
            }
            shell.type_bytes(format!("{command}\n").as_bytes());
        } else if !command.is_empty() {
            self.current = Some(Current::new(&self.config));
            shell.run(args.command.trim_end_matches(['\n', '\r']));
        }
        if let Some(cur) = &self.current {
            // Published for attaching clients; handed to this request's stream.
            let live = cur.output.live();
            if !self
                .live
                .borrow()
                .as_ref()
                .is_some_and(|f| Arc::ptr_eq(f, live))
            {
                self.live.send_replace(Some(live.clone()));
            }
            if let Some(tap) = tap {
                let _ = tap.send(live.reader(live.end()));
            }
        }

        // 5. Wait.
        let outcome = self.wait(args.blocking, timeout).await;
        let key_suffix = match (
            &outcome,
            key,
            self.current.as_ref().and_then(|c| c.done.as_ref()),
        ) {
            (CommandEnd::Completed, Some(k), Some(state)) => Some(format!(
                "\n[The command completed with exit code {}. CTRL+{k} was sent.]",
                state.exit_code
            )),
            _ => None,
        };
        let mut obs = self.observe(&command, hidden, outcome, key_suffix);
        if let Some(carried) = carried {
            obs.content = if obs.content.is_empty() {
                carried
            } else {
                format!("{carried}\n{}", obs.content)
            };
        }
        if let Some(note) = restarted {
            observe::prepend_note(&mut obs, &note);
        }
        if let Some(killed) = killed.filter(|&n| n > 0) {
            let processes = if killed == 1 { "process" } else { "processes" };
            obs.content.push_str(&format!(
                "\n[C-c at the prompt killed {killed} {processes} the agent had started (background jobs included); the shell and the IPython kernel were kept.]"
            ));
        }
        obs
    }

    async fn wait(&mut self, blocking: bool, timeout: Option<f64>) -> CommandEnd {
        let start = Instant::now();
        let mut last_change = start;
        // Out-of-range timeouts are refused at the edge; a deadline that still cannot be
        // reached is no deadline, never an overflow.
        let hard = timeout.and_then(|t| start.checked_add(Duration::try_from_secs_f64(t).ok()?));
        loop {
            if self.current.as_ref().is_none_or(|c| !c.is_running()) {
                return CommandEnd::Completed;
            }
            // Checked here as well as by the timers below: output that never pauses keeps the
            // event branch ready, and the hard timeout must still end the wait.
            if let Some(deadline) = hard
                && Instant::now() >= deadline
            {
                return CommandEnd::HardTimeout(timeout.unwrap_or_default());
            }
            let Some(shell) = &mut self.shell else {
                return CommandEnd::Completed;
            };
            let no_change = (!blocking)
                .then(|| last_change.checked_add(self.config.no_change_timeout))
                .flatten();
            tokio::select! {
                biased;
                event = shell.next() => {
                    if self.on_shell_event(event).await {
                        last_change = Instant::now();
                    }
                }
                () = sleep_until(no_change) => return CommandEnd::NoChange,
                () = sleep_until(hard) => return CommandEnd::HardTimeout(timeout.unwrap_or_default()),
            }
        }
    }

    /// The observation of the current command for `outcome`; a completed command is forgotten.
    fn observe(
        &mut self,
        command: &str,
        hidden: bool,
        outcome: CommandEnd,
        suffix: Option<String>,
    ) -> Observation {
        let Some(cur) = &mut self.current else {
            return failed_run(command, hidden, "");
        };
        let obs = observe::observe(cur, &self.config, command, hidden, outcome, suffix);
        if matches!(outcome, CommandEnd::Completed) {
            self.current = None;
        }
        obs
    }
}

/// The refusal of `is_input` text with a line longer than `limit` bytes, which the terminal
/// would cut (issue 14.10a); `None` when every line fits or there is no limit.
fn overlong_line(text: &str, limit: Option<usize>) -> Option<String> {
    let limit = limit?;
    let longest = text.split('\n').map(str::len).max().unwrap_or_default();
    (longest > limit).then(|| {
        format!(
            "ERROR: The input was not sent: it has a line of {longest} bytes, and the program reads the terminal line by line, which passes at most {limit} bytes per line (it would cut the rest). Send it as several shorter lines, or write it to a file and have the program read that."
        )
    })
}

/// `C-x` (one character after `C-`) → the upper-cased key.
fn special_key(command: &str) -> Option<char> {
    let rest = command.strip_prefix("C-")?;
    let mut chars = rest.chars();
    let c = chars.next()?;
    (chars.next().is_none() && c.is_ascii() && !c.is_ascii_control())
        .then(|| c.to_ascii_uppercase())
}

#[cfg(test)]
mod tests;
