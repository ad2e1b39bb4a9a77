//! One IPython kernel process and sandboxd's client end of its Jupyter connection: start-up
//! (private connection file, `PYTHON -m ipykernel_launcher` in its own process group as the
//! sandbox user, port polling, `kernel_info` handshake), one request at a time, SIGINT
//! interrupts, and killing and reaping the whole process group.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use jupyter_protocol::{ConnectionInfo, ExecuteRequest, JupyterMessage, KernelInfoRequest};
use jupyter_zmq_client::{
    Connection, create_client_iopub_connection, create_client_shell_connection_with_identity,
    peer_identity_for_session,
};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use sandbox_common::{RandomError, random_hex};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::KernelError;
use super::cell::CellOutput;
use super::wire::{self, Incoming};
use crate::child::{self, ChildSpec, Group};
use crate::user::RunAs;

/// How long to wait for the other half of a finished request (`execute_reply` on the shell
/// socket, `status: idle` on IOPub) once one of them arrived.
const COMPLETION_GRACE: Duration = Duration::from_secs(2);
/// Interval between port probes and `kernel_info` requests while the kernel boots.
const PORT_POLL: Duration = Duration::from_millis(5);
const KERNEL_INFO_RETRY: Duration = Duration::from_millis(100);
/// Bound on a send to the kernel's shell socket (it queues; this only guards a wedged socket).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How to start a kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelSpec<'a> {
    /// The Python interpreter (a path, or a name looked up on `PATH`).
    pub(crate) python: &'a str,
    /// Switch to this user first.
    pub(crate) run_as: Option<&'a RunAs>,
    /// Initial working directory.
    pub(crate) cwd: &'a Path,
    /// Environment on top of sandboxd's own.
    pub(crate) env: &'a std::collections::BTreeMap<String, String>,
}

/// How a request ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The kernel finished it (`execute_reply` and `status: idle` arrived).
    Done,
    /// The deadline passed first; the request may still be running.
    TimedOut,
    /// The kernel process exited (or its connection broke); the text says how.
    Died(String),
    /// The request never reached the kernel: it was gone already.
    NotSent(String),
}

/// A running kernel. Dropping it SIGKILLs its process group; a waiter task reaps it.
pub(crate) struct Kernel {
    group: Group,
    shell: Connection<zeromq::DealerSendHalf>,
    shell_rx: mpsc::Receiver<Incoming>,
    iopub_rx: mpsc::Receiver<Incoming>,
    readers: Vec<JoinHandle<()>>,
    /// Holds the connection file; removed with the kernel.
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("pid", &self.group.pid)
            .finish_non_exhaustive()
    }
}

impl Kernel {
    /// Starts a kernel and waits until it answers on both the shell and the IOPub sockets,
    /// at most until `deadline`.
    pub(crate) async fn start(
        spec: &KernelSpec<'_>,
        deadline: Instant,
    ) -> Result<Kernel, KernelError> {
        let dir = private_dir(spec.run_as)?;
        let no_randomness =
            |e: RandomError| KernelError::Setup(format!("no randomness for the HMAC key: {e}"));
        let key = random_hex(32).map_err(no_randomness)?;
        let session_id = random_hex(16).map_err(no_randomness)?;
        // Hold the ports until just before the kernel binds them.
        let listeners: Vec<std::net::TcpListener> = (0..5)
            .map(|_| std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
            .collect::<Result<_, _>>()
            .map_err(|e| KernelError::Setup(format!("cannot reserve ports: {e}")))?;
        let ports: Vec<u16> = listeners
            .iter()
            .map(|l| l.local_addr().map(|a| a.port()))
            .collect::<Result<_, _>>()
            .map_err(|e| KernelError::Setup(format!("cannot reserve ports: {e}")))?;
        let info = ConnectionInfo {
            ip: Ipv4Addr::LOCALHOST.to_string(),
            transport: jupyter_protocol::Transport::TCP,
            shell_port: ports[0],
            iopub_port: ports[1],
            stdin_port: ports[2],
            control_port: ports[3],
            hb_port: ports[4],
            key,
            signature_scheme: "hmac-sha256".to_owned(),
            kernel_name: None,
        };
        let file = dir.path().join("kernel.json");
        let json = serde_json::to_vec(&info)
            .map_err(|e| KernelError::Setup(format!("connection file: {e}")))?;
        write_private(&file, &json, spec.run_as)
            .map_err(|e| KernelError::Setup(format!("cannot write {}: {e}", file.display())))?;

        let file_arg = file.to_string_lossy().into_owned();
        // ipykernel exits when it is re-parented (sandboxd died without killing it).
        let mut env = spec.env.clone();
        env.insert("JPY_PARENT_PID".to_owned(), std::process::id().to_string());
        let child = ChildSpec {
            program: spec.python,
            args: &[
                "-m",
                "ipykernel_launcher",
                "-f",
                file_arg.as_str(),
                // No history database: cells are not stored (`store_history: false`), and
                // parallel kernels would contend for its lock.
                "--HistoryManager.enabled=False",
            ],
            run_as: spec.run_as,
            cwd: spec.cwd,
            env: &env,
            piped: false,
            what: "kernel",
        };
        drop(listeners);
        let child = child::spawn(&child).map_err(|e| KernelError::NoPython {
            python: spec.python.to_owned(),
            reason: e.to_string(),
        })?;
        let mut group = child.group;
        let failure = Failure {
            python: spec.python,
            stderr: child.stderr,
        };

        let (shell, shell_rx, iopub_rx, readers) =
            match connect(&info, &session_id, &mut group, deadline).await {
                Ok(connected) => connected,
                Err(e) => return Err(failure.explain(e, &mut group).await),
            };
        let mut kernel = Kernel {
            group,
            shell,
            shell_rx,
            iopub_rx,
            readers,
            _dir: dir,
        };
        if let Err(e) = kernel.handshake(deadline).await {
            return Err(failure.explain(e, &mut kernel.group).await);
        }
        Ok(kernel)
    }

    /// The kernel's process id (also its process group).
    pub(crate) fn pid(&self) -> i32 {
        self.group.pid
    }

    /// Repeats `kernel_info` until its `status` shows up on IOPub: the subscription is live
    /// from then on, so no output of the first cell can be lost.
    async fn handshake(&mut self, deadline: Instant) -> Result<(), KernelError> {
        let mut sent = Vec::new();
        loop {
            let request: JupyterMessage = KernelInfoRequest {}.into();
            sent.push(request.header.msg_id.clone());
            self.send(request).await?;
            let retry = (Instant::now() + KERNEL_INFO_RETRY).min(deadline);
            loop {
                tokio::select! {
                    msg = self.iopub_rx.recv() => match msg {
                        Some(msg) if sent.iter().any(|id| msg.is_child_of(id)) => return Ok(()),
                        Some(_) => {}
                        None => return Err(KernelError::Lost("IOPub socket closed".into())),
                    },
                    msg = self.shell_rx.recv() => if msg.is_none() {
                        return Err(KernelError::Lost("shell socket closed".into()));
                    },
                    status = self.group.exited() => return Err(KernelError::Exited {
                        status,
                        stderr: String::new(),
                    }),
                    () = tokio::time::sleep_until(retry) => break,
                }
            }
            if Instant::now() >= deadline {
                return Err(KernelError::StartTimeout);
            }
        }
    }

    /// Sends an `execute_request` and returns its `msg_id`.
    async fn execute(
        &mut self,
        code: &str,
        silent: bool,
        user_expressions: Option<HashMap<String, String>>,
    ) -> Result<String, KernelError> {
        let request: JupyterMessage = ExecuteRequest {
            code: code.to_owned(),
            silent,
            store_history: false,
            user_expressions,
            allow_stdin: false,
            // An error must not make ipykernel abort the requests that follow (our next cell).
            stop_on_error: false,
        }
        .into();
        let id = request.header.msg_id.clone();
        self.send(request).await?;
        Ok(id)
    }

    async fn send(&mut self, message: JupyterMessage) -> Result<(), KernelError> {
        tokio::select! {
            result = self.shell.send(message) => Ok(result?),
            status = self.group.exited() => {
                Err(KernelError::Lost(format!("the kernel exited ({status})")))
            }
            () = tokio::time::sleep(SEND_TIMEOUT) => {
                Err(KernelError::Lost("sending to its shell socket stalled".into()))
            }
        }
    }

    /// Sends an `execute_request` and waits for it as [`Kernel::wait`] does; returns its
    /// `msg_id` (empty when it could not be sent, which counts as the kernel dying).
    pub(crate) async fn request(
        &mut self,
        code: &str,
        silent: bool,
        user_expressions: Option<HashMap<String, String>>,
        deadline: Option<Instant>,
        out: &mut CellOutput,
    ) -> (String, Finish) {
        match self.execute(code, silent, user_expressions).await {
            Ok(id) => {
                let finish = self.wait(&id, deadline, out).await;
                (id, finish)
            }
            Err(e) => (String::new(), Finish::NotSent(e.to_string())),
        }
    }

    /// How the kernel process exited, if it has.
    pub(crate) fn exit_status(&self) -> Option<String> {
        self.group.exit_status()
    }

    /// Collects the outputs of request `id` into `out` until it finishes, the kernel dies or
    /// `deadline` passes. Messages of other requests are dropped.
    pub(crate) async fn wait(
        &mut self,
        id: &str,
        deadline: Option<Instant>,
        out: &mut CellOutput,
    ) -> Finish {
        let mut idle = false;
        let mut grace: Option<Instant> = None;
        loop {
            if idle && out.reply.is_some() {
                return Finish::Done;
            }
            let now = Instant::now();
            if grace.is_none() && (idle || out.reply.is_some()) {
                grace = Some(now + COMPLETION_GRACE);
            }
            // Checked here too: under a flood of output the message branches are always ready
            // and the timer branches below would never be polled.
            if deadline.is_some_and(|d| now >= d) {
                return Finish::TimedOut;
            }
            if grace.is_some_and(|g| now >= g) {
                tracing::warn!(
                    idle,
                    "kernel request ended without both its reply and idle status"
                );
                return Finish::Done;
            }
            tokio::select! {
                biased;
                msg = self.iopub_rx.recv() => match msg {
                    Some(msg) if msg.is_child_of(id) => {
                        if msg.is_idle() {
                            idle = true;
                        } else {
                            out.absorb(&msg.msg_type, &msg.content);
                        }
                    }
                    Some(_) => {}
                    None => return self.broken("IOPub").await,
                },
                msg = self.shell_rx.recv() => match msg {
                    Some(msg) if msg.is_child_of(id) && msg.msg_type == "execute_reply" => {
                        out.reply = Some(msg.content);
                    }
                    Some(_) => {}
                    None => return self.broken("shell").await,
                },
                status = self.group.exited() => return Finish::Died(status),
                () = sleep_until(deadline) => return Finish::TimedOut,
                () = sleep_until(grace) => {
                    tracing::warn!(idle, replied = out.reply.is_some(), "kernel request ended without both its reply and idle status");
                    return Finish::Done;
                }
            }
        }
    }

    /// A socket closed: the kernel normally exited (the socket noticed first); else the
    /// connection itself broke.
    async fn broken(&mut self, socket: &str) -> Finish {
        match tokio::time::timeout(Duration::from_secs(1), self.group.exited()).await {
            Ok(status) => Finish::Died(status),
            Err(_) => Finish::Died(format!("its {socket} connection broke")),
        }
    }

    /// Whether the process runs and both sockets are open, as far as sandboxd has noticed.
    pub(crate) fn is_alive(&self) -> bool {
        self.exit_status().is_none() && !self.shell_rx.is_closed() && !self.iopub_rx.is_closed()
    }

    /// Interrupts the running cell: SIGINT to the kernel's process group, as `jupyter_client`
    /// does. An idle ipykernel ignores SIGINT, so a late interrupt does no harm.
    pub(crate) fn interrupt(&self) {
        if let Err(e) = killpg(Pid::from_raw(self.group.pid), Signal::SIGINT) {
            tracing::warn!(pid = self.group.pid, error = %e, "cannot interrupt the kernel");
        }
    }

    /// Resolves when the kernel process has exited, with a description of how.
    pub(crate) async fn exited(&mut self) -> String {
        self.group.exited().await
    }

    /// Kills the kernel's process group and waits (bounded) until it has been reaped.
    pub(crate) async fn kill(mut self) {
        self.group.kill();
        if tokio::time::timeout(Duration::from_secs(5), self.group.exited())
            .await
            .is_err()
        {
            tracing::warn!(pid = self.group.pid, "killed kernel not reaped within 5 s");
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // The group goes with `self.group`; the readers own the sockets.
        for reader in &self.readers {
            reader.abort();
        }
    }
}

type Connected = (
    Connection<zeromq::DealerSendHalf>,
    mpsc::Receiver<Incoming>,
    mpsc::Receiver<Incoming>,
    Vec<JoinHandle<()>>,
);

/// Polls until the kernel's shell and IOPub ports accept connections (the pure-Rust ZeroMQ
/// client backs off for long on refused connections), then connects to them.
async fn connect(
    info: &ConnectionInfo,
    session_id: &str,
    group: &mut Group,
    deadline: Instant,
) -> Result<Connected, KernelError> {
    for port in [info.shell_port, info.iopub_port] {
        loop {
            if let Some(status) = group.exit_status() {
                return Err(KernelError::Exited {
                    status,
                    stderr: String::new(),
                });
            }
            if tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
                .await
                .is_ok()
            {
                break;
            }
            if Instant::now() >= deadline {
                return Err(KernelError::StartTimeout);
            }
            tokio::time::sleep(PORT_POLL).await;
        }
    }
    let connect = async {
        let iopub = create_client_iopub_connection(info, "", session_id).await?;
        let identity = peer_identity_for_session(session_id)?;
        let shell =
            create_client_shell_connection_with_identity(info, session_id, identity).await?;
        Ok::<_, jupyter_zmq_client::RuntimeError>((iopub, shell))
    };
    let (iopub, shell) = tokio::time::timeout_at(deadline, connect)
        .await
        .map_err(|_| KernelError::StartTimeout)??;
    let (shell_send, shell_recv) = shell.split();
    let (shell_tx, shell_rx) = mpsc::channel(wire::QUEUE);
    let (iopub_tx, iopub_rx) = mpsc::channel(wire::QUEUE);
    let readers = vec![
        wire::spawn_reader(shell_recv, "shell", shell_tx),
        wire::spawn_reader(iopub, "iopub", iopub_tx),
    ];
    Ok((shell_send, shell_rx, iopub_rx, readers))
}

/// What explains a failed start: the interpreter asked for and the kernel's stderr.
struct Failure<'a> {
    python: &'a str,
    stderr: child::Stderr,
}

impl Failure<'_> {
    /// Kills the kernel's group and turns `error` into the error to report, using what the
    /// kernel printed on stderr.
    async fn explain(mut self, error: KernelError, group: &mut Group) -> KernelError {
        let status = group.kill_and_reap(Duration::from_secs(5)).await;
        let stderr = self.stderr.finished().await;
        let python = self.python.to_owned();
        match error {
            KernelError::Exited { .. } if stderr.contains("No module named") => {
                KernelError::NotInstalled { python }
            }
            KernelError::Exited { .. } => {
                match stderr
                    .lines()
                    .find_map(|l| l.strip_prefix("sandboxd: exec "))
                {
                    // The privilege-dropping wrapper could not exec the interpreter.
                    Some(reason) => KernelError::NoPython {
                        python,
                        reason: reason.to_owned(),
                    },
                    None => KernelError::Exited { status, stderr },
                }
            }
            other => other,
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// A fresh 0700 directory for the connection file, owned by the kernel's user (ipykernel
/// rewrites and removes the file).
fn private_dir(run_as: Option<&RunAs>) -> Result<tempfile::TempDir, KernelError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("sandboxd-kernel-")
        .tempdir()
        .map_err(|e| KernelError::Setup(format!("cannot create a private directory: {e}")))?;
    let setup = || -> std::io::Result<()> {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        if let Some(user) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(user.uid), Some(user.gid))?;
        }
        Ok(())
    };
    setup()
        .map_err(|e| KernelError::Setup(format!("cannot prepare {}: {e}", dir.path().display())))?;
    Ok(dir)
}

fn write_private(path: &Path, bytes: &[u8], run_as: Option<&RunAs>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    if let Some(user) = run_as {
        std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))?;
    }
    Ok(())
}

/// Parses the `text/plain` of a user expression that evaluated to `str.encode().hex()`:
/// `'2f7573'` → `/us`.
pub(crate) fn decode_hex_repr(reply: &Value, name: &str) -> Option<String> {
    let text = reply
        .get("user_expressions")?
        .get(name)?
        .get("data")?
        .get("text/plain")?
        .as_str()?;
    let hex = text.trim().trim_matches('\'');
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests;
