//! sandboxd: the in-sandbox daemon that executes agent actions.
//!
//! Data path: `server` decodes an HTTP request into a `protocol::Action` and hands it to the
//! `executor::Executor`, the single owner of the sandbox's state, which dispatches it to
//! `bash` (the persistent PTY shell), `ipython` (the IPython kernel), `files` (read/write and
//! the `oh_aci` editor) or answers it directly; `transfer` serves uploads, downloads and
//! listings.
//!
//! The library exists for the `sandboxd` binary: [`run`] serves until a shutdown signal,
//! [`await_configuration`] and [`exec_configured`] are the pre-started mode,
//! [`exec_as_if_requested`] is the hidden privilege-dropping mode, [`keep_if_requested`] the
//! hidden keeper mode (a subreaper parent that kills whatever sandboxd leaves behind, for
//! agentd's local runtime), and [`run_egress_proxy`] the hidden egress filtering proxy mode
//! (`sandboxd --egress-proxy`) agentd runs per Docker engine for sandboxes whose policy names
//! domains. The error types are public
//! because [`RunError`] carries them; everything else is private to the crate.

mod agent_procs;
mod bash;
mod browser;
mod child;
mod config;
mod configure;
mod egress;
mod executor;
mod feed;
mod files;
mod ipython;
mod keeper;
mod listen;
mod mcp;
mod observations;
mod processes;
mod server;
mod shells;
mod supervise;
mod sysinfo;
mod terminals;
mod transfer;
mod user;

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use bash::{ShellError, SpawnError};
pub use config::Cli;
pub use egress::{EGRESS_PROXY_FLAG, EgressProxyCli, EgressProxyError, run_egress_proxy};
pub use executor::StartError;
pub use keeper::keep_if_requested;
pub use listen::ListenAddr;
pub use user::{UserError, exec_as_if_requested, regain_root};

use listen::Listener;

/// Why sandboxd stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad arguments or environment (no retry helps).
    #[error("{0}")]
    Config(String),
    /// The listening socket could not be bound (the port may be in use, or something else is in
    /// the way of the Unix socket; a retry may help).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Address asked for: `IP:PORT`, or `unix:PATH`.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The execution state could not be set up.
    #[error(transparent)]
    Start(#[from] executor::StartError),
    /// The user to run as is not usable.
    #[error(transparent)]
    User(#[from] user::UserError),
    /// The server failed while running.
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

impl RunError {
    /// Process exit code for this failure: 3 for bind errors, 1 otherwise (clap uses 2).
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Bind { .. } => 3,
            _ => 1,
        }
    }
}

/// Binds the listener described by `cli`, then serves until `shutdown` resolves.
/// `on_listening` receives the bound address once the daemon can execute actions.
pub async fn run(
    cli: Cli,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(ListenAddr),
) -> Result<(), RunError> {
    // Bind first: early clients queue in the backlog and are answered once bash is ready, so
    // `/alive` never says yes before actions can run.
    let listener = Listener::bind(&cli).await?;
    serve(cli, listener, shutdown, on_listening).await
}

/// Serves on an already bound `listener` until `shutdown` resolves; a Unix socket's file is
/// removed when this returns.
async fn serve(
    cli: Cli,
    listener: Listener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(ListenAddr),
) -> Result<(), RunError> {
    let executor = start_executor(&cli).await?;
    let app = server::router(executor, cli.session_api_key.clone(), limits(&cli));
    let local = listener.local_addr().map_err(RunError::Serve)?;
    tracing::info!(%local, "sandboxd ready");
    on_listening(local);
    listener.serve(app, cli.connection_limits(), shutdown).await;
    Ok(())
}

/// Starts the executor (the main shell) as `cli` says.
async fn start_executor(cli: &Cli) -> Result<executor::Executor, RunError> {
    let working_dir = std::path::absolute(&cli.working_dir)
        .map_err(|e| RunError::Config(format!("bad --working-dir: {e}")))?;
    if !working_dir.is_dir() {
        return Err(RunError::Config(format!(
            "--working-dir {} is not a directory",
            working_dir.display()
        )));
    }
    if !cli.await_configuration {
        browser_downloads(cli, &working_dir);
    }
    let run_as = user::resolve(&cli.username, cli.user_id)?;
    // From here on sandboxd acts with the user's rights and is out of the user's reach.
    if let Some(user) = &run_as {
        user::separate(user)?;
    }
    let agent_processes = match cli.agent_processes {
        config::AgentProcesses::Tree => agent_procs::Scope::Tree,
        config::AgentProcesses::User => agent_procs::Scope::Uid(
            run_as
                .as_ref()
                .map_or_else(|| nix::unistd::getuid().as_raw(), |u| u.uid),
        ),
    };
    let output_dir = cli
        .output_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("sandboxd-{}", std::process::id())));
    Ok(executor::Executor::start(executor::ExecutorConfig {
        working_dir,
        run_as,
        login_shell: !cli.no_login_shell,
        no_change_timeout: Duration::from_secs(cli.no_change_timeout),
        output_dir,
        output_budget: cli.output_budget,
        // A pre-started sandboxd starts its caller's plugins once configured.
        plugins: if cli.await_configuration {
            Vec::new()
        } else {
            cli.plugins.clone()
        },
        python: cli.python.clone(),
        agent_processes,
        browser: cli.browser_enabled(),
        chromium: cli.chromium.clone(),
    })
    .await?)
}

/// Reference compatibility (docs/protocol.md §10): the browser's download folder.
fn browser_downloads(cli: &Cli, working_dir: &std::path::Path) {
    if cli.browser_enabled() {
        let _ = std::fs::create_dir_all(working_dir.join(".downloads"));
    }
}

fn limits(cli: &Cli) -> server::Limits {
    server::Limits {
        max_body_bytes: cli.max_body_bytes,
        max_upload_bytes: cli.max_upload_bytes,
    }
}

/// Environment variables sandboxd drops before it re-executes itself with a configuration.
const CONFIGURE_ONLY_ENV: &[&str] = &["SANDBOXD_CONFIGURE_KEY"];

/// The pre-started mode (`--await-configuration`): binds the listener described by `cli`,
/// starts the main shell as `cli` says (what does not depend on the caller), and answers only
/// `POST /configure` until one valid configuration arrives. A configuration the waiting shell
/// and server can honour exactly is applied in place (see [`configure`]): the same listener
/// then serves the caller's actions until `shutdown` resolves (`Ok(None)`). Any other is
/// returned, once the shell is gone and the `/configure` answer sent, for the caller to
/// re-execute sandboxd with it ([`exec_configured`]). `shutdown` before any configuration:
/// `Ok(None)`. `on_waiting` receives the bound address.
pub async fn await_configuration(
    cli: &Cli,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_waiting: impl FnOnce(ListenAddr),
) -> Result<Option<protocol::api::ConfigureRequest>, RunError> {
    let key = cli
        .configure_key
        .clone()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| {
            RunError::Config(
                "--await-configuration needs a key (--configure-key or SANDBOXD_CONFIGURE_KEY)"
                    .to_string(),
            )
        })?;
    let listener = Listener::bind(cli).await?;
    let (configured, received) = tokio::sync::oneshot::channel();
    let waiting = server::configure_router(key, configured);
    let serving: Arc<OnceLock<axum::Router>> = Arc::default();
    let app = switch(waiting, serving.clone());
    let local = listener.local_addr().map_err(RunError::Serve)?;
    // What it waits as: port 0 became the port it listens on.
    let mut waiting_as = cli.clone();
    if let ListenAddr::Tcp(addr) = &local {
        waiting_as.port = addr.port();
    }
    let prestarted = {
        let cli = cli.clone();
        tokio::spawn(async move { start_executor(&cli).await })
    };
    let (restart, restarting) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        tokio::select! {
            () = shutdown => {}
            // Only a restart stops it early (the sender is dropped once configured in place).
            Ok(()) = restarting => {}
        }
    };
    let take = async {
        // No configuration before the server stopped: its sender is gone.
        let Ok((request, applied)) = received.await else {
            prestarted.abort();
            return None;
        };
        match take_in_place(&waiting_as, &request, prestarted).await {
            Ok(router) => {
                let _ = serving.set(router);
                tracing::info!("sandboxd ready: configured in place");
                let _ = applied.send(());
                None
            }
            Err(reason) => {
                tracing::info!(%reason, "restarting with the configuration");
                let _ = applied.send(());
                let _ = restart.send(());
                Some(request)
            }
        }
    };
    tracing::info!(%local, "sandboxd awaiting configuration");
    on_waiting(local);
    // Graceful: the `/configure` answer is sent before the listener closes.
    let ((), request) = tokio::join!(listener.serve(app, cli.connection_limits(), stop), take);
    Ok(request)
}

/// Takes a configuration in place: the router that serves the caller's actions, or why it
/// cannot be (the pre-started shell is then gone).
async fn take_in_place(
    waiting: &Cli,
    request: &protocol::api::ConfigureRequest,
    prestarted: tokio::task::JoinHandle<Result<executor::Executor, RunError>>,
) -> Result<axum::Router, String> {
    let refuse = |prestarted: tokio::task::JoinHandle<_>, reason: String| {
        prestarted.abort();
        Err(reason)
    };
    let configured = match configure::resolve(request) {
        Ok(configured) => configured,
        Err(e) => return refuse(prestarted, e.to_string()),
    };
    if let Some(reason) = configure::in_place_refusal(waiting, &configured, &request.env) {
        return refuse(prestarted, reason);
    }
    let mut executor = match prestarted.await {
        Ok(Ok(executor)) => executor,
        Ok(Err(e)) => return Err(format!("the pre-started shell failed: {e}")),
        Err(e) => return Err(format!("the pre-started shell failed: {e}")),
    };
    browser_downloads(&configured, executor.working_dir());
    executor
        .configure(
            &request.env,
            &configured.plugins,
            configured.browser_enabled(),
        )
        .await?;
    Ok(server::router(
        executor,
        configured.session_api_key.clone(),
        limits(&configured),
    ))
}

/// A router that answers with `waiting` until `serving` is set, then with it.
fn switch(waiting: axum::Router, serving: Arc<OnceLock<axum::Router>>) -> axum::Router {
    use tower::ServiceExt;
    axum::Router::new().fallback_service(tower::service_fn(
        move |request: axum::extract::Request| {
            let router = serving.get().unwrap_or(&waiting).clone();
            async move { router.oneshot(request).await }
        },
    ))
}

/// Replaces this process with sandboxd started with `request`'s arguments, and its environment
/// plus `request.env` (minus `SANDBOXD_CONFIGURE_KEY`, which only the pre-started mode needs).
/// Returns only if that fails.
pub fn exec_configured(request: &protocol::api::ConfigureRequest) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return e,
    };
    let mut command = std::process::Command::new(exe);
    command.args(&request.args);
    for name in CONFIGURE_ONLY_ENV {
        command.env_remove(name);
    }
    command.envs(&request.env);
    command.exec()
}
