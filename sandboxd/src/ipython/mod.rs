//! The IPython kernel behind `run_ipython` (docs/protocol.md §5): a real ipykernel spoken to over the
//! Jupyter wire protocol (ZeroMQ, from Rust), owned by one actor task.
//!
//! `actor` is the actor: it owns the kernel, runs one cell at a time, syncs the working
//! directory from bash, times cells out (interrupt, then restart if that fails) and restarts a
//! kernel that died; it runs under [`crate::supervise`], so an actor that fails is replaced
//! (and its kernel killed) and the next cell says that the state is lost. `kernel` starts,
//! talks to and kills one kernel process; `wire` decodes what the kernel sends; `cell` turns a
//! cell's messages into the observation's text.

mod actor;
mod cell;
mod kernel;
mod wire;

use std::path::PathBuf;
use std::time::Duration;

use protocol::Observation;
use protocol::action::IPythonRunCellArgs;
use tokio::sync::{mpsc, oneshot};

use crate::observations;
use crate::supervise::supervise;
use crate::user::RunAs;

/// Longest a kernel may take to start (the reference's `INIT_PLUGIN_TIMEOUT` default).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How kernels are started.
#[derive(Debug, Clone)]
pub(crate) struct IPythonConfig {
    /// The Python interpreter that runs `ipykernel` (`--python`, default `python3`).
    pub(crate) python: String,
    /// The user kernels run as (sandboxd runs as root).
    pub(crate) run_as: Option<RunAs>,
    /// Load OpenHands' agent skills into each new kernel (the `agent_skills` plugin).
    pub(crate) agent_skills: bool,
    /// Environment of kernels on top of sandboxd's own (a pre-started sandboxd's caller's).
    pub(crate) env: std::collections::BTreeMap<String, String>,
}

/// Why a kernel could not be started or used. Each becomes an `error` observation.
#[derive(Debug, thiserror::Error)]
enum KernelError {
    /// The interpreter cannot import ipykernel (no retry helps until it is installed).
    #[error(
        "IPython is not available: {python} cannot import ipykernel (install python3-ipykernel or pass --python)"
    )]
    NotInstalled {
        /// The interpreter asked for.
        python: String,
    },
    /// The interpreter could not be run at all (no retry helps: fix `--python`).
    #[error(
        "IPython is not available: cannot run {python}: {reason} (install python3-ipykernel or pass --python)"
    )]
    NoPython {
        /// The interpreter asked for.
        python: String,
        /// The OS error.
        reason: String,
    },
    /// The kernel exited while starting (a retry may help, e.g. after a port clash).
    #[error("the IPython kernel exited while starting ({status}): {stderr}")]
    Exited {
        /// How it exited.
        status: String,
        /// The end of what it printed on stderr.
        stderr: String,
    },
    /// The kernel did not answer within [`START_TIMEOUT`] (a retry may help on a loaded machine).
    #[error("the IPython kernel did not become ready within {} seconds", START_TIMEOUT.as_secs())]
    StartTimeout,
    /// Local set-up failed: private directory, connection file, ports (a retry rarely helps).
    #[error("cannot set up the IPython kernel: {0}")]
    Setup(String),
    /// The ZeroMQ connection failed (a retry with a new kernel may help).
    #[error("cannot talk to the IPython kernel: {0}")]
    Connection(#[from] jupyter_zmq_client::RuntimeError),
    /// The connection to a running kernel broke (a new kernel is started next time).
    #[error("lost the connection to the IPython kernel: {0}")]
    Lost(String),
}

/// One `run_ipython` as the actor needs it.
#[derive(Debug)]
struct CellRequest {
    args: IPythonRunCellArgs,
    timeout: Option<f64>,
    /// The shell's working directory when the action arrived.
    cwd: PathBuf,
    /// Where to hand the cell's live output.
    tap: Option<crate::feed::Tap>,
}

#[derive(Debug)]
enum Request {
    /// Start the kernel now (in the background) if it is not running.
    Boot { cwd: PathBuf },
    /// Run a cell and answer with its observation.
    Run {
        cell: CellRequest,
        reply: oneshot::Sender<Observation>,
    },
}

/// Handle on the kernel actor. Cells queue here and run one at a time; bash and file actions
/// never wait for them. Dropping the last handle stops the actor, which kills the kernel.
#[derive(Debug, Clone)]
pub(crate) struct IPython {
    tx: mpsc::Sender<Request>,
}

impl IPython {
    /// Starts the actor (not the kernel: see [`IPython::boot`]; the first cell starts it too).
    pub(crate) fn spawn(config: IPythonConfig) -> IPython {
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(supervise("ipython", rx, move |rx, failure| {
            Box::pin(actor::KernelActor::new(config.clone(), failure).serve(rx))
        }));
        IPython { tx }
    }

    /// Whether cells can be sent: the actor serves its queue (it starts kernels on demand).
    pub(crate) fn health(&self) -> Result<(), String> {
        if self.tx.is_closed() {
            Err("the IPython kernel manager has stopped".to_owned())
        } else {
            Ok(())
        }
    }

    /// Starts the kernel in the background, in `cwd`; a cell sent meanwhile waits for it.
    pub(crate) fn boot(&self, cwd: PathBuf) {
        if self.tx.try_send(Request::Boot { cwd }).is_err() {
            tracing::warn!("the IPython actor is not accepting work; kernel not pre-started");
        }
    }

    /// Runs one cell with the shell's current directory `cwd`.
    pub(crate) async fn run(
        &self,
        args: IPythonRunCellArgs,
        timeout: Option<f64>,
        cwd: PathBuf,
        tap: Option<crate::feed::Tap>,
    ) -> Observation {
        let (reply, answer) = oneshot::channel();
        let request = Request::Run {
            cell: CellRequest {
                args,
                timeout,
                cwd,
                tap,
            },
            reply,
        };
        if self.tx.send(request).await.is_err() {
            return observations::error("ERROR: the IPython kernel manager has stopped.");
        }
        answer.await.unwrap_or_else(|_| {
            tracing::error!("the IPython actor dropped a cell without answering");
            observations::error("ERROR: the IPython kernel manager stopped unexpectedly.")
        })
    }
}
