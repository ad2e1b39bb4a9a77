//! The kernel actor: owns the kernel and runs cells one at a time (docs/protocol.md §5). It starts the
//! kernel on demand, moves it to the shell's directory before a cell, times cells out
//! (interrupt; restart if the cell ignores it) and replaces a kernel that died, saying once in
//! an observation that the previous kernel's state is gone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use protocol::Observation;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::cell::{self, CellOutput};
use super::kernel::{self, Finish, Kernel, KernelSpec};
use super::{CellRequest, IPythonConfig, KernelError, Request, START_TIMEOUT};
use crate::bash::python_float;
use crate::feed::{Feed, OUTPUT_CAPACITY};
use crate::observations;

/// How long an interrupted cell gets to stop before the next SIGINT; after
/// [`INTERRUPTS`] of them the kernel is replaced.
const INTERRUPT_WAIT: Duration = Duration::from_secs(1);
const INTERRUPTS: usize = 3;
/// Extra tries when a new kernel could not bind its ports (another process took one).
const PORT_CLASH_RETRIES: usize = 2;

const AGENT_SKILLS: &str = "from openhands.runtime.plugins.agent_skills.agentskills import *";

/// State of the actor; see the module documentation.
#[derive(Debug)]
pub(super) struct KernelActor {
    config: IPythonConfig,
    kernel: Option<Kernel>,
    /// Directory the kernel was started in or last moved to.
    kernel_cwd: PathBuf,
    /// `sys.executable` of the current (or last) kernel.
    executable: String,
    /// Said at the top of the next cell's output: an earlier kernel and its state were lost.
    lost: Option<String>,
}

impl KernelActor {
    /// A new actor; `failure` is why its predecessor ended, if it failed (then its kernel and
    /// the kernel's state are gone, which the next cell says).
    pub(super) fn new(config: IPythonConfig, failure: Option<String>) -> KernelActor {
        KernelActor {
            executable: config.python.clone(),
            config,
            kernel: None,
            kernel_cwd: PathBuf::new(),
            lost: failure.map(|why| {
                format!(
                    "[The IPython kernel manager failed ({why}) and was restarted with a new kernel: variables, imports and other state from earlier cells are lost.]"
                )
            }),
        }
    }

    /// Serves requests until every handle is gone, then kills the kernel.
    pub(super) async fn serve(mut self, rx: &mut mpsc::Receiver<Request>) {
        loop {
            tokio::select! {
                request = rx.recv() => match request {
                    Some(request) => self.handle(request).await,
                    None => break,
                },
                status = exited(&mut self.kernel) => self.died_idle(&status),
            }
        }
        if let Some(kernel) = self.kernel.take() {
            kernel.kill().await;
        }
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::Boot { cwd } => {
                if let Err(e) = self.ensure(&cwd).await {
                    tracing::warn!(error = %e, "IPython kernel not started in the background");
                }
            }
            Request::Run { cell, reply } => {
                if reply.is_closed() {
                    tracing::debug!("skipping a cell whose client has gone");
                    return;
                }
                let (observation, unfinished) = self.run(cell).await;
                let _ = reply.send(observation);
                if let Some(id) = unfinished {
                    self.settle(&id).await;
                }
            }
        }
    }

    fn died_idle(&mut self, status: &str) {
        tracing::warn!(%status, "the IPython kernel died between cells");
        self.kernel = None;
        self.lost = Some(format!(
            "[The IPython kernel died ({status}) and was restarted: variables, imports and other state from earlier cells are lost.]"
        ));
    }

    /// Starts a kernel in `cwd` unless one is running, and prepares it: `%colors nocolor`,
    /// its `sys.executable`, and the agent skills when asked for.
    async fn ensure(&mut self, cwd: &Path) -> Result<(), KernelError> {
        if let Some(kernel) = self.kernel.as_ref()
            && !kernel.is_alive()
        {
            let status = kernel
                .exit_status()
                .unwrap_or_else(|| "its connection broke".to_owned());
            self.died_idle(&status);
        }
        if self.kernel.is_some() {
            return Ok(());
        }
        let started = Instant::now();
        let deadline = started + START_TIMEOUT;
        // The shell may sit in a directory that is gone; the kernel cannot start there.
        let cwd = if cwd.is_dir() { cwd } else { Path::new("/") };
        let spec = KernelSpec {
            python: &self.config.python,
            run_as: self.config.run_as.as_ref(),
            cwd,
            env: &self.config.env,
        };
        let mut clashes = 0;
        let mut kernel = loop {
            match Kernel::start(&spec, deadline).await {
                Ok(kernel) => break kernel,
                Err(KernelError::Exited { stderr, .. })
                    if clashes < PORT_CLASH_RETRIES
                        && stderr.contains("Address already in use") =>
                {
                    clashes += 1;
                    tracing::warn!("the kernel's port was taken meanwhile; starting another");
                }
                Err(e) => return Err(e),
            }
        };
        let mut out = CellOutput::default();
        let expressions = HashMap::from([(
            "exe".to_owned(),
            "__import__('sys').executable.encode().hex()".to_owned(),
        )]);
        let (_, finish) = kernel
            .request(
                "%colors nocolor",
                true,
                Some(expressions),
                Some(deadline),
                &mut out,
            )
            .await;
        match finish {
            Finish::Done => {}
            Finish::TimedOut => return Err(KernelError::StartTimeout),
            Finish::Died(status) | Finish::NotSent(status) => {
                return Err(KernelError::Exited {
                    status,
                    stderr: String::new(),
                });
            }
        }
        let executable = out
            .reply
            .as_ref()
            .and_then(|reply| kernel::decode_hex_repr(reply, "exe"))
            .unwrap_or_else(|| self.config.python.clone());
        if self.config.agent_skills {
            let mut out = CellOutput::default();
            let (_, finish) = kernel
                .request(AGENT_SKILLS, true, None, Some(deadline), &mut out)
                .await;
            let status = out.reply.as_ref().and_then(|r| r.get("status")?.as_str());
            if finish != Finish::Done || status != Some("ok") {
                tracing::info!(
                    "agent skills not loaded into the kernel (openhands not importable)"
                );
            }
        }
        tracing::info!(
            pid = kernel.pid(),
            python = %executable,
            ms = started.elapsed().as_millis(),
            "IPython kernel ready"
        );
        self.executable = executable;
        self.kernel_cwd = cwd.to_path_buf();
        self.kernel = Some(kernel);
        Ok(())
    }

    /// Runs one cell. Returns its observation and, when it timed out, the request to settle
    /// after answering.
    async fn run(&mut self, cell: CellRequest) -> (Observation, Option<String>) {
        let CellRequest {
            args,
            timeout,
            cwd,
            tap,
        } = cell;
        // The timeout counts from the first try to run the cell, not from the kernel's start.
        let mut deadline: Option<Option<Instant>> = None;
        let cwd_text = cwd.to_string_lossy().into_owned();
        let mut out = CellOutput::default();
        if let Some(tap) = tap {
            let live = Feed::new(OUTPUT_CAPACITY);
            let _ = tap.send(live.reader(0));
            out.live = Some(live);
        }
        let mut retried = false;
        let (id, finish) = loop {
            if let Err(e) = self.ensure(&cwd).await {
                tracing::warn!(error = %e, "cannot start the IPython kernel");
                return (observations::error(e.to_string()), None);
            }
            let Some(kernel) = self.kernel.as_mut() else {
                return (
                    observations::error("ERROR: the IPython kernel is not running."),
                    None,
                );
            };
            let deadline = *deadline.get_or_insert_with(|| {
                timeout.and_then(|t| {
                    Duration::try_from_secs_f64(t)
                        .ok()
                        .and_then(|d| Instant::now().checked_add(d))
                })
            });
            let (id, finish) = run_in(
                kernel,
                &mut self.kernel_cwd,
                &cwd,
                &args.code,
                deadline,
                &mut out,
            )
            .await;
            match finish {
                // The kernel was gone before the cell reached it: a new one runs the cell.
                Finish::NotSent(status) if !retried => {
                    self.died_idle(&status);
                    retried = true;
                }
                finish => break (id, finish),
            }
        };
        if let Some(live) = &out.live {
            live.close();
        }
        let note = self.lost.take();
        let mut unfinished = None;
        let (text, images) = match finish {
            Finish::Done => out.render(),
            Finish::TimedOut => {
                if let Some(kernel) = &self.kernel {
                    kernel.interrupt();
                }
                unfinished = Some(id);
                let t = timeout.map_or_else(String::new, python_float);
                (format!("[Execution timed out ({t} seconds).]"), None)
            }
            Finish::Died(status) | Finish::NotSent(status) => {
                tracing::warn!(%status, "the IPython kernel died while running a cell");
                self.kernel = None;
                let (text, images) = out.render();
                let mut text = if out.has_text() {
                    format!("{}\n", cell::py_rstrip(&text))
                } else {
                    String::new()
                };
                text.push_str(&format!(
                    "[The IPython kernel died while running this cell ({status}). It will be restarted for the next cell; variables, imports and other state from earlier cells are lost.]"
                ));
                (text, images)
            }
        };
        let text = match note {
            Some(note) => format!("{note}\n{text}"),
            None => text,
        };
        let content = cell::final_content(&text, args.include_extra, &cwd_text, &self.executable);
        (
            observations::ipython(&args.code, content, images),
            unfinished,
        )
    }

    /// Waits for an interrupted request to end, interrupting again; replaces the kernel when
    /// the request keeps running.
    async fn settle(&mut self, id: &str) {
        let Some(kernel) = self.kernel.as_mut() else {
            return;
        };
        let mut discarded = CellOutput::default();
        for _ in 0..INTERRUPTS {
            let until = Instant::now() + INTERRUPT_WAIT;
            match kernel.wait(id, Some(until), &mut discarded).await {
                Finish::Done => return,
                Finish::Died(status) | Finish::NotSent(status) => {
                    self.died_idle(&status);
                    return;
                }
                Finish::TimedOut => kernel.interrupt(),
            }
        }
        tracing::warn!("a timed-out cell ignored its interrupts; replacing the kernel");
        if let Some(kernel) = self.kernel.take() {
            kernel.kill().await;
        }
        self.lost = Some(
            "[The IPython kernel did not stop after a timed-out cell was interrupted and was restarted: variables, imports and other state from earlier cells are lost.]"
                .to_owned(),
        );
    }
}

/// Moves `kernel` to the shell's directory `cwd` if bash moved since the last cell, then runs
/// `code`. Returns the id of the last request sent and how it ended.
async fn run_in(
    kernel: &mut Kernel,
    kernel_cwd: &mut PathBuf,
    cwd: &Path,
    code: &str,
    deadline: Option<Instant>,
    out: &mut CellOutput,
) -> (String, Finish) {
    if cwd != kernel_cwd.as_path() {
        // A JSON string is a valid Python string literal.
        let literal = serde_json::to_string(&cwd.to_string_lossy()).unwrap_or_default();
        let sync = format!("import os; os.chdir({literal})");
        let (id, finish) = kernel
            .request(&sync, true, None, deadline, &mut CellOutput::default())
            .await;
        if finish != Finish::Done {
            return (id, finish);
        }
        // Also when the directory is gone: bash moved, the kernel follows where it can.
        *kernel_cwd = cwd.to_path_buf();
    }
    kernel.request(code, false, None, deadline, out).await
}

/// Resolves when the running kernel exits; never when there is none.
async fn exited(kernel: &mut Option<Kernel>) -> String {
    match kernel {
        Some(kernel) => kernel.exited().await,
        None => std::future::pending().await,
    }
}
