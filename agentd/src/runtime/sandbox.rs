//! [`Runtime`]: one sandbox, however it is provided, and the one place where runnable actions
//! become observations. Every failure, including a sandbox that died, is answered with an
//! `error` observation, so the agent's event stream always gets an answer for each action.
//!
//! **Tool-call metadata stays on the host.** An agent action carries `tool_call_metadata`
//! (the call's id and the model's whole response) and `llm_metrics`; sandboxd needs neither to
//! run it. [`Runtime::execute`] sends sandboxd the action without them, and stamps the
//! observation with the kept action's `tool_call_metadata` (and `cause`), whatever the answer
//! was: sandboxd's own observation, or an error made here. That is the one place the
//! observation of a runnable action gets its metadata in agentd. (sandboxd still echoes the
//! metadata it is sent, for other clients of the wire protocol; agentd sends it none, so a
//! request does not grow with the model's response.)
//!
//! `call_tool_mcp` is runnable too, but never sent: the runtime calls the MCP tool itself
//! through its [`McpHub`] (stdio servers run in the sandbox, behind its MCP proxy), and its
//! `mcp` observation is stamped here like every other.
//!
//! A sandbox's death is a value on a watch channel: the local waiter thread or the container
//! watcher puts it there the moment sandboxd exits, and every pending [`Runtime::execute`]
//! selects on it, so a dead sandbox answers at once instead of at the HTTP deadline.

use std::time::Duration;

use client::{ClientError, SandboxClient};
use protocol::action::ConfirmationState;
use protocol::observation::{EmptyExtras, ErrorExtras};
use protocol::{Action, ActionKind, Observation, ObservationKind};
use tokio::sync::watch;

use super::container::ContainerBackend;
use super::death::SandboxDeath;
use super::local::LocalSandbox;
use super::{RuntimeConfig, RuntimeError, RuntimeKind, error_id, local, remote};
use crate::events::answer_to;
use crate::mcp::{Endpoint, McpFailure, McpHub, McpSettings, McpTransport};

/// What messages call the sandbox's stdio MCP servers, behind its proxy.
const SANDBOX_MCP: &str = "the sandbox's stdio MCP servers";

/// How long a failed request waits for the death notice before calling the sandbox merely
/// unreachable (the connection usually breaks a moment before the exit is seen).
const CONFIRM_DEATH: Duration = Duration::from_secs(2);

/// A sandbox that runs actions. Start it with [`Runtime::start`], end it with
/// [`Runtime::close`]; dropping it also ends what it started (blocking briefly).
#[derive(Debug)]
pub struct Runtime {
    kind: RuntimeKind,
    url: String,
    client: SandboxClient,
    backend: StartedSandbox,
    death: watch::Sender<Option<SandboxDeath>>,
    /// Seconds given to actions without a timeout.
    default_timeout: Option<f64>,
    /// The MCP servers `call_tool_mcp` actions call (none until [`Runtime::connect_mcp`]).
    mcp: McpHub,
    /// See [`RuntimeConfig::on_output`](super::RuntimeConfig::on_output).
    on_output: Option<super::OutputListener>,
}

/// What the runtime started, and owns.
#[derive(Debug)]
enum StartedSandbox {
    Local(LocalSandbox),
    Docker(Box<ContainerBackend>),
    Remote,
    RemoteApi(remote::ApiSandbox),
}

impl Runtime {
    /// Brings the sandbox up (starts sandboxd, or a container, or finds the remote one) and
    /// waits until it answers `/alive`; for a remote sandbox, also checks the key. On failure
    /// nothing it started is left behind.
    pub async fn start(config: &RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let (death, _) = watch::channel(None);
        let (backend, url, key) = match config.kind {
            RuntimeKind::Local => {
                let started = local::start(config, &death).await?;
                (
                    StartedSandbox::Local(started.sandbox),
                    started.url,
                    Some(started.session_api_key),
                )
            }
            RuntimeKind::Docker => {
                let container = super::container::start(config, &death).await?;
                let url = container.sandbox.url.clone();
                let key = container.sandbox.session_api_key.clone();
                (StartedSandbox::Docker(Box::new(container)), url, Some(key))
            }
            RuntimeKind::Remote => match &config.remote_api {
                Some(api) => {
                    let (sandbox, url, key) = remote::start_via_api(config, api).await?;
                    (StartedSandbox::RemoteApi(sandbox), url, key)
                }
                None => {
                    let (url, key) = remote::target(config)?;
                    (StartedSandbox::Remote, url, key)
                }
            },
        };
        let client = match SandboxClient::new(&url, key) {
            Ok(client) => client,
            Err(e) => {
                if let Err(close) = close_backend(backend).await {
                    tracing::warn!(error = %close, "could not stop a sandbox we cannot talk to");
                }
                return Err(e.into());
            }
        };
        let runtime = Runtime {
            kind: config.kind,
            url,
            client,
            backend,
            death,
            default_timeout: config.default_action_timeout.map(|t| t.as_secs_f64()),
            mcp: McpHub::default(),
            on_output: config.on_output.clone(),
        };
        if let Err(e) = runtime.wait_ready(config.startup_timeout).await {
            if let Err(close) = runtime.close().await {
                tracing::warn!(error = %close, "could not stop a sandbox that did not become ready");
            }
            return Err(e);
        }
        Ok(runtime)
    }

    async fn wait_ready(&self, timeout: Duration) -> Result<(), RuntimeError> {
        let started = tokio::time::Instant::now();
        let alive = tokio::select! {
            biased;
            death = self.died() => return Err(RuntimeError::Died(death)),
            alive = self.client.wait_until_alive(timeout) => alive,
        };
        if let Err(e) = alive {
            return Err(RuntimeError::StartTimeout {
                url: self.url.clone(),
                waited: started.elapsed(),
                reason: e.to_string(),
                output: self.output().await,
            });
        }
        if matches!(
            self.backend,
            StartedSandbox::Remote | StartedSandbox::RemoteApi(_)
        ) {
            remote::check_key(&self.client, &self.url).await?;
        }
        Ok(())
    }

    /// sandboxd's base URL (`http://127.0.0.1:PORT`, or `unix:/path.sock` for a Docker sandbox
    /// without network).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Which runtime this is.
    pub fn kind(&self) -> RuntimeKind {
        self.kind
    }

    /// The sandbox's client, for what is not an action (uploads, downloads, listings).
    pub fn client(&self) -> &SandboxClient {
        &self.client
    }

    /// The pid of the local runtime's sandboxd keeper, sandboxd's parent (also the process
    /// group id of both).
    pub fn pid(&self) -> Option<u32> {
        match &self.backend {
            StartedSandbox::Local(local) => Some(local.pid()),
            _ => None,
        }
    }

    /// The id of the Docker runtime's container.
    pub fn container_id(&self) -> Option<&str> {
        match &self.backend {
            StartedSandbox::Docker(container) => Some(&container.sandbox.id),
            _ => None,
        }
    }

    /// The web hosts that reach the sandbox's app ports (URL → the port an app listens on in
    /// the sandbox): a Docker sandbox's published app ports; none for the others.
    pub fn web_hosts(&self) -> std::collections::BTreeMap<String, u16> {
        match &self.backend {
            StartedSandbox::Docker(container) => container
                .sandbox
                .app_ports
                .iter()
                .map(|(inside, host)| (format!("http://localhost:{host}"), *inside))
                .collect(),
            StartedSandbox::Local(_) | StartedSandbox::Remote | StartedSandbox::RemoteApi(_) => {
                Default::default()
            }
        }
    }

    /// Whether the sandbox is not known to be dead. A remote sandbox is never known to be dead
    /// (it may come back); use [`Runtime::health`] to ask it.
    pub fn is_alive(&self) -> bool {
        self.death.borrow().is_none()
    }

    /// How the sandbox died, if it did.
    pub(crate) fn death(&self) -> Option<SandboxDeath> {
        self.death.borrow().clone()
    }

    /// Resolves when the sandbox dies (at once if it has); never, for a sandbox that lives.
    /// For a controller that wants to stop as soon as its sandbox is gone.
    pub async fn died(&self) -> SandboxDeath {
        let mut death = self.death.subscribe();
        if let Ok(current) = death.wait_for(Option::is_some).await
            && let Some(death) = current.clone()
        {
            return death;
        }
        // The sender lives in `self`: unreachable, but never claim a death that did not happen.
        std::future::pending().await
    }

    /// Asks the sandbox whether it is alive (`/alive`): `Err(Died)` when it died,
    /// `Err(Unreachable)` when it does not answer.
    pub async fn health(&self) -> Result<(), RuntimeError> {
        if let Some(death) = self.death() {
            return Err(RuntimeError::Died(death));
        }
        match self.client.alive().await {
            Ok(()) => Ok(()),
            Err(source) => match self.confirm_death().await {
                Some(death) => Err(RuntimeError::Died(death)),
                None => Err(RuntimeError::Unreachable {
                    url: self.url.clone(),
                    source,
                }),
            },
        }
    }

    /// Connects to the MCP servers of `settings`: the stdio ones are posted to the sandbox's
    /// `/update_mcp_server` (sorted by name, as the reference posts them) and reached through
    /// its MCP proxy; the SSE and streamable-HTTP ones directly. Returns the servers left out
    /// (they did not start, did not answer in time, or could not list their tools); the run
    /// goes on without them. Their tools are [`Runtime::mcp_tools`]; `call_tool_mcp` actions
    /// call them.
    pub async fn connect_mcp(&mut self, settings: &McpSettings) -> Vec<McpFailure> {
        let mut failures = Vec::new();
        let mut endpoints = Endpoint::remote(settings);
        if !settings.stdio_servers.is_empty() {
            match self.sandbox_mcp(settings).await {
                Ok((endpoint, errors)) => {
                    endpoints.push(endpoint);
                    failures.extend(errors);
                }
                Err(reason) => failures.push(McpFailure {
                    server: SANDBOX_MCP.to_owned(),
                    reason,
                }),
            }
        }
        let (hub, more) = McpHub::connect(endpoints).await;
        failures.extend(more);
        self.mcp = hub;
        failures
    }

    /// Posts the stdio servers to the sandbox: its proxy's endpoint, and the servers that did
    /// not start (their paragraphs of `router_error_log`).
    async fn sandbox_mcp(
        &self,
        settings: &McpSettings,
    ) -> Result<(Endpoint, Vec<McpFailure>), String> {
        let mut servers = settings.stdio_servers.clone();
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        let answer = self
            .client
            .update_mcp_servers(&servers)
            .await
            .map_err(|e| format!("the sandbox did not take them: {e}"))?;
        let errors = answer
            .router_error_log
            .split("\n\n")
            .filter(|paragraph| !paragraph.trim().is_empty())
            .map(|paragraph| McpFailure {
                server: SANDBOX_MCP.to_owned(),
                reason: paragraph.to_owned(),
            })
            .collect();
        let (url, headers) = self
            .client
            .mcp_proxy()
            .map_err(|e| format!("no proxy URL: {e}"))?;
        let endpoint = Endpoint {
            label: SANDBOX_MCP.to_owned(),
            url: url.to_string(),
            transport: McpTransport::StreamableHttp,
            http: self.client.http_client().clone(),
            headers,
            // Longer than the proxy's own deadline, so that its answer (which names the
            // server and what it printed) arrives first.
            call_timeout: sandbox_common::MCP_REQUEST_TIMEOUT + Duration::from_secs(5),
        };
        Ok((endpoint, errors))
    }

    /// The tools of the MCP servers [`Runtime::connect_mcp`] connected to.
    pub fn mcp_tools(&self) -> Vec<protocol::llm::Tool> {
        self.mcp.tools()
    }

    /// Runs `action` in the sandbox. Never fails: a non-runnable action, a sandbox that
    /// refuses, times out, cannot be reached or died (before or during the action) each give an
    /// `error` observation saying so (its `error_id` is one of [`error_id`]). The observation's
    /// `cause` is `action.id` and its `tool_call_metadata` the action's, set here (sandboxd is
    /// not sent the metadata: see the module documentation); `id` and `source` are left for the
    /// event stream to set.
    ///
    /// As OpenHands does, an action without a timeout gets the configured default, a rejected
    /// one a `user_rejected` observation, and one awaiting confirmation a `null` observation
    /// (the controller does not normally send either).
    pub async fn execute(&self, action: &Action) -> Observation {
        let mut observation = self.run(action).await;
        observation.id = None;
        observation.source = None;
        answer_to(observation, action)
    }

    async fn run(&self, action: &Action) -> Observation {
        if !action.kind.is_runnable() {
            return error(
                error_id::NOT_RUNNABLE,
                format!(
                    "The action `{}` does not run in a sandbox.",
                    action.kind.action_type().as_str()
                ),
            );
        }
        match action.confirmation_state() {
            ConfirmationState::Confirmed => {}
            ConfirmationState::Rejected => {
                return observation(
                    ObservationKind::UserRejected(EmptyExtras {}),
                    "Action has been rejected by the user! Waiting for further user input."
                        .to_string(),
                );
            }
            ConfirmationState::AwaitingConfirmation => {
                return observation(ObservationKind::Null(EmptyExtras {}), String::new());
            }
        }
        if let Some(death) = self.death() {
            return died(&death);
        }
        // A runnable action that sandboxd does not run is an MCP tool call: the host calls it
        // itself (stdio servers through the sandbox's proxy).
        if !action.kind.action_type().runs_in_sandbox()
            && let ActionKind::Mcp(args) = &action.kind
        {
            return tokio::select! {
                biased;
                death = self.died() => died(&death),
                observation = self.mcp.call(args) => observation,
            };
        }
        let request = request(action, self.default_timeout);
        let result = tokio::select! {
            biased;
            death = self.died() => return died(&death),
            result = self.send(&request) => result,
        };
        match result {
            Ok(observation) => observation,
            Err(e) => self.failed(&request, e).await,
        }
    }

    /// Sends `request`; a command or cell with an output listener goes to the stream endpoint,
    /// which answers the same observation (a sandbox without that endpoint, 404, gets the
    /// request plainly).
    async fn send(&self, request: &Action) -> Result<Observation, ClientError> {
        let streams = matches!(request.kind, ActionKind::Run(_) | ActionKind::RunIpython(_));
        let Some(listener) = self.on_output.as_ref().filter(|_| streams) else {
            return self.client.execute(request).await;
        };
        let options = client::ExecuteOptions::default();
        match self
            .client
            .execute_streamed(request, &options, |chunk| (listener.0)(chunk))
            .await
        {
            Err(ClientError::Http { status: 404, .. }) => self.client.execute(request).await,
            result => result,
        }
    }

    /// The observation for a request that failed.
    async fn failed(&self, action: &Action, e: ClientError) -> Observation {
        match e {
            ClientError::Connection { .. } => match self.confirm_death().await {
                Some(death) => died(&death),
                None => error(
                    error_id::UNREACHABLE,
                    format!(
                        "The sandbox could not be reached ({e}); the action may or may not have run."
                    ),
                ),
            },
            ClientError::Timeout { .. } => match self.death() {
                Some(death) => died(&death),
                None => error(
                    error_id::TIMEOUT,
                    format!(
                        "Runtime failed to return execute_action before the requested timeout of {}s",
                        action.timeout.unwrap_or_default()
                    ),
                ),
            },
            ClientError::Http { status, detail, .. } => error(
                error_id::REFUSED,
                format!("The sandbox refused the action (HTTP {status}): {detail}"),
            ),
            other => error(
                error_id::REFUSED,
                format!("The action could not be run in the sandbox: {other}"),
            ),
        }
    }

    /// After a broken connection: the death, if the sandbox died (waiting briefly for the
    /// notice, or asking the engine).
    async fn confirm_death(&self) -> Option<SandboxDeath> {
        if let Some(death) = self.death() {
            return Some(death);
        }
        match &self.backend {
            StartedSandbox::Local(_) => tokio::time::timeout(CONFIRM_DEATH, self.died()).await.ok(),
            StartedSandbox::Docker(container) => {
                match tokio::time::timeout(CONFIRM_DEATH, self.died()).await {
                    Ok(death) => Some(death),
                    Err(_) => container.check(&self.death).await,
                }
            }
            StartedSandbox::Remote | StartedSandbox::RemoteApi(_) => None,
        }
    }

    /// The sandbox's last output, for error messages.
    async fn output(&self) -> String {
        match &self.backend {
            StartedSandbox::Local(local) => local.output(),
            StartedSandbox::Docker(container) => container.output().await,
            StartedSandbox::Remote | StartedSandbox::RemoteApi(_) => String::new(),
        }
    }

    /// Stops and removes what [`Runtime::start`] started: the local sandboxd and everything it
    /// runs (when this returns they are dead and reaped), or the container, or (unless kept) the
    /// runtime API service's sandbox. Nothing for a remote sandbox given by URL.
    pub async fn close(self) -> Result<(), RuntimeError> {
        close_backend(self.backend).await
    }
}

async fn close_backend(backend: StartedSandbox) -> Result<(), RuntimeError> {
    match backend {
        StartedSandbox::Local(mut local) => local.stop().await,
        StartedSandbox::Docker(container) => (*container).close().await,
        StartedSandbox::Remote => Ok(()),
        StartedSandbox::RemoteApi(sandbox) => sandbox.close().await,
    }
}

/// What sandboxd is sent for `action`: the action without its host-side records
/// (`tool_call_metadata`, `llm_metrics`), with `default_timeout` when it has no timeout.
fn request(action: &Action, default_timeout: Option<f64>) -> Action {
    Action {
        id: action.id,
        timestamp: action.timestamp.clone(),
        source: action.source,
        message: action.message.clone(),
        cause: action.cause,
        kind: action.kind.clone(),
        tool_call_metadata: None,
        llm_metrics: None,
        timeout: action.timeout.or(default_timeout),
        confirmation_state: None,
    }
}

fn observation(kind: ObservationKind, content: String) -> Observation {
    Observation {
        message: content.clone(),
        ..Observation::new(kind, content)
    }
}

fn error(id: &str, content: String) -> Observation {
    observation(
        ObservationKind::Error(ErrorExtras {
            error_id: id.to_string(),
        }),
        content,
    )
}

fn died(death: &SandboxDeath) -> Observation {
    error(
        error_id::SANDBOX_DIED,
        format!(
            "The sandbox died ({}). The action did not complete, and the sandbox cannot run further actions.",
            death.summary
        ),
    )
}

#[cfg(test)]
mod tests;
