//! One stdio MCP server in the sandbox: its program (started through `crate::child`: the
//! sandbox user, its own process group, its stderr kept) and sandboxd's MCP client on its
//! stdin and stdout. Started on first use (or by `/update_mcp_server`), kept running and
//! connected between calls, and started again on the next use after it exited. Every request
//! has [`MCP_REQUEST_TIMEOUT`]; a server that exits during a call fails that call with its exit
//! status and the end of its stderr.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use protocol::api::McpStdioServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use sandbox_common::{MCP_REQUEST_TIMEOUT, mcp_timeout_message};

use crate::child::{self, ChildSpec, ExitWatch};
use crate::user::RunAs;

/// How long a killed server may take to be reaped before sandboxd stops waiting.
const REAP_WAIT: Duration = Duration::from_secs(5);
/// How long after its connection closed a server's exit may take to be seen.
const EXIT_AFTER_CLOSE: Duration = Duration::from_secs(2);

/// Where and as whom the servers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    /// The sandbox user.
    pub(crate) run_as: Option<RunAs>,
    /// The sandbox's working directory.
    pub(crate) cwd: PathBuf,
    /// The sandbox's environment (a configured sandboxd's caller's), under each server's own.
    pub(crate) env: BTreeMap<String, String>,
}

/// One server; see the module documentation.
#[derive(Debug)]
pub(crate) struct StdioServer {
    spec: McpStdioServer,
    launch: Launch,
    /// The running program and its client; `None` before the first start and after an exit.
    running: tokio::sync::Mutex<Option<Running>>,
}

/// A started server. Dropping it ends the client and SIGKILLs the program's group.
#[derive(Debug)]
struct Running {
    client: RunningService<RoleClient, ()>,
    group: child::Group,
    stderr: child::Stderr,
}

impl Running {
    fn is_alive(&self) -> bool {
        self.group.exit_status().is_none() && !self.client.is_transport_closed()
    }
}

impl StdioServer {
    pub(crate) fn new(spec: McpStdioServer, launch: Launch) -> StdioServer {
        StdioServer {
            spec,
            launch,
            running: tokio::sync::Mutex::new(None),
        }
    }

    /// Its settings.
    pub(crate) fn spec(&self) -> &McpStdioServer {
        &self.spec
    }

    /// Where and as whom it runs.
    pub(crate) fn launch(&self) -> &Launch {
        &self.launch
    }

    /// Starts it unless it runs; `Err` says why it did not start, with its stderr.
    pub(crate) async fn ensure_started(&self) -> Result<(), String> {
        self.peer().await.map(drop)
    }

    /// Its tools.
    pub(crate) async fn list_tools(&self) -> Result<Vec<Tool>, String> {
        let (peer, mut exit, pid) = self.peer().await?;
        let listed = tokio::select! {
            listed = tokio::time::timeout(MCP_REQUEST_TIMEOUT, peer.list_all_tools()) => listed,
            status = exit.exited() => {
                return Err(self.exited_during("listing its tools", &status, pid).await);
            }
        };
        match listed {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(self
                .failed("listing its tools", e, exit, pid)
                .await
                .unwrap_or_else(|e| {
                    format!(
                        "MCP server {} could not list its tools: {e}",
                        self.spec.name
                    )
                })),
            Err(_) => Err(mcp_timeout_message(MCP_REQUEST_TIMEOUT)),
        }
    }

    /// Calls its tool `tool`. `Ok` is the server's answer (a tool error included); `Err` is
    /// why there was none: it did not start, it exited during the call, it did not answer in
    /// time, or it answered with a protocol error.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, String> {
        let (peer, mut exit, pid) = self.peer().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let called = tokio::select! {
            called = tokio::time::timeout(MCP_REQUEST_TIMEOUT, peer.call_tool(params)) => called,
            status = exit.exited() => return Err(self.exited_during("the call", &status, pid).await),
        };
        match called {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(self
                .failed("the call", e, exit, pid)
                .await
                .unwrap_or_else(|e| e.to_string())),
            Err(_) => Err(mcp_timeout_message(MCP_REQUEST_TIMEOUT)),
        }
    }

    /// The client of the running server (started first if it is not running), where its exit
    /// is told, and its pid.
    async fn peer(&self) -> Result<(Peer<RoleClient>, ExitWatch, i32), String> {
        let mut running = self.running.lock().await;
        if let Some(current) = running.as_mut()
            && !current.is_alive()
        {
            let status = current.group.kill_and_reap(REAP_WAIT).await;
            let stderr = current.stderr.finished().await;
            tracing::info!(server = %self.spec.name, %status, %stderr, "MCP server had exited; starting it again");
            *running = None;
        }
        if running.is_none() {
            *running = Some(self.start().await?);
        }
        match running.as_ref() {
            Some(current) => Ok((
                current.client.peer().clone(),
                current.group.exit_watch(),
                current.group.pid,
            )),
            None => Err(format!("MCP server {} is not running", self.spec.name)),
        }
    }

    /// Starts the program and initializes the MCP session with it, within
    /// [`MCP_REQUEST_TIMEOUT`].
    async fn start(&self) -> Result<Running, String> {
        let name = &self.spec.name;
        let mut env = self.launch.env.clone();
        env.extend(self.spec.env.clone());
        let args: Vec<&str> = self.spec.args.iter().map(String::as_str).collect();
        let what = format!("MCP server {name}");
        let spec = ChildSpec {
            program: &self.spec.command,
            args: &args,
            run_as: self.launch.run_as.as_ref(),
            cwd: &self.launch.cwd,
            env: &env,
            piped: true,
            what: &what,
        };
        let started = child::spawn(&spec).map_err(|e| {
            format!(
                "MCP server {name} did not start: cannot run {}: {e}",
                self.spec.command
            )
        })?;
        let child::Child {
            mut group,
            stdin,
            stdout,
            mut stderr,
        } = started;
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(format!("MCP server {name} did not start: it has no pipes"));
        };
        let mut exit = group.exit_watch();
        let connect = tokio::time::timeout(MCP_REQUEST_TIMEOUT, ().serve((stdout, stdin)));
        let failure = tokio::select! {
            connected = connect => match connected {
                Ok(Ok(client)) => {
                    tracing::info!(server = %name, pid = group.pid, "MCP server started");
                    return Ok(Running { client, group, stderr });
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => mcp_timeout_message(MCP_REQUEST_TIMEOUT),
            },
            status = exit.exited() => format!("it exited ({status})"),
        };
        group.kill_and_reap(REAP_WAIT).await;
        Err(with_stderr(
            format!("MCP server {name} did not start: {failure}"),
            &stderr.finished().await,
        ))
    }

    /// A request that failed with `error`: when the connection closed because the server is
    /// exiting (its pipe closes a moment before its exit is seen), the text that says so;
    /// else `error` itself.
    async fn failed(
        &self,
        what: &str,
        error: ServiceError,
        mut exit: ExitWatch,
        pid: i32,
    ) -> Result<String, ServiceError> {
        if !matches!(error, ServiceError::TransportClosed) {
            return Err(error);
        }
        match tokio::time::timeout(EXIT_AFTER_CLOSE, exit.exited()).await {
            Ok(status) => Ok(self.exited_during(what, &status, pid).await),
            Err(_) => Err(error),
        }
    }

    /// The error of a request the server (process `pid`) did not answer because it exited;
    /// the server is forgotten, to be started again on the next use.
    async fn exited_during(&self, what: &str, status: &str, pid: i32) -> String {
        let mut running = self.running.lock().await;
        let gone = running.take_if(|current| current.group.pid == pid);
        let stderr = match gone {
            Some(mut gone) => gone.stderr.finished().await,
            None => String::new(),
        };
        with_stderr(
            format!(
                "MCP server {} exited during {what} ({status}); it will be started again on \
                 its next use",
                self.spec.name
            ),
            &stderr,
        )
    }
}

/// `text`, then the server's stderr when it said anything.
fn with_stderr(text: String, stderr: &str) -> String {
    if stderr.is_empty() {
        format!("{text}.")
    } else {
        format!("{text}. Its stderr ended with:\n{stderr}")
    }
}
