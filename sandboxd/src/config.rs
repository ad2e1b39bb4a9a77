//! Command line and environment: the reference's start command plus sandboxd's own flags.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;

/// sandboxd: runs agent actions (bash on a PTY, IPython, files, an editor) inside a sandbox and
/// serves them over HTTP in OpenHands' wire format.
///
/// Accepts the reference server's arguments
/// (`PORT --working-dir DIR [--plugins ...] [--username U] [--user-id N] [--no-enable-browser]`),
/// so it can replace `openhands.runtime.action_execution_server` unchanged.
#[derive(Debug, Clone, Parser)]
#[command(name = "sandboxd", version, about, long_about = None, args_override_self = true)]
pub struct Cli {
    /// TCP port to listen on; 0 picks a free port (printed on stdout). Required but ignored
    /// with --unix-socket.
    pub(crate) port: u16,

    /// Initial working directory of the shell and of relative file paths.
    #[arg(long, env = "SANDBOXD_WORKING_DIR", default_value = ".")]
    pub(crate) working_dir: PathBuf,

    /// Plugins to start: `jupyter`, `agent_skills`, `vscode` (accepted; see README).
    #[arg(long, num_args = 0.., value_name = "PLUGIN")]
    pub(crate) plugins: Vec<String>,

    /// Exit (gracefully, as on SIGTERM) when the process with this pid, our parent, dies, even
    /// by SIGKILL; a host that spawns sandboxd as a child sets it so nothing outlives it.
    #[arg(long, env = "SANDBOXD_PARENT_PID", value_name = "PID")]
    pub exit_with_parent: Option<u32>,

    /// Python interpreter for the IPython kernel; it must be able to import ipykernel
    /// (default: `python3` on PATH).
    #[arg(long, env = "SANDBOXD_PYTHON", value_name = "PATH")]
    pub(crate) python: Option<PathBuf>,

    /// Chromium for `browse` and `browse_interactive`, started on first use (default:
    /// `chromium` on PATH).
    #[arg(long, env = "SANDBOXD_CHROMIUM", value_name = "PATH")]
    pub(crate) chromium: Option<PathBuf>,

    /// User to run the shell as when sandboxd runs as root.
    #[arg(long, env = "RUNTIME_USERNAME", default_value = "openhands")]
    pub(crate) username: String,

    /// Uid of that user (used when the name is unknown).
    #[arg(long, default_value_t = 1000)]
    pub(crate) user_id: u32,

    /// Serve `browse` and `browse_interactive` with Chromium (the default); its downloads go to
    /// `WORKING_DIR/.downloads`, created at start as OpenHands' test-suite expects.
    #[arg(long, overrides_with = "no_enable_browser")]
    enable_browser: bool,

    /// No browser: browser actions answer "Browser functionality is not supported or
    /// disabled.", and `WORKING_DIR/.downloads` is not created.
    #[arg(long)]
    no_enable_browser: bool,

    /// Accepted and ignored (reference compatibility).
    #[arg(long, num_args = 0.., value_name = "ENV", hide = true)]
    browsergym_eval_env: Vec<String>,

    /// Address to listen on: 127.0.0.1 for local use, 0.0.0.0 inside a container. Ignored with
    /// --unix-socket.
    #[arg(long, env = "SANDBOXD_HOST", default_value = "127.0.0.1")]
    pub(crate) host: IpAddr,

    /// Serve on this Unix domain socket instead of TCP (PORT and --host are then ignored);
    /// stdout then says `sandboxd listening on unix:PATH`, with PATH made absolute.
    ///
    /// The parent directory is created when missing. A stale socket at PATH is replaced; any
    /// other kind of file there, or a socket still in use, is an error (exit code 3). The socket
    /// is made mode 0666 (clients still need the session API key; the directory's permissions
    /// decide who can reach it) and removed on clean shutdown.
    #[arg(long, env = "SANDBOXD_UNIX_SOCKET", value_name = "PATH")]
    pub(crate) unix_socket: Option<PathBuf>,

    /// Key clients must send as `X-Session-API-Key`; unset means no authentication.
    #[arg(long, env = "SESSION_API_KEY", hide_env_values = true)]
    pub(crate) session_api_key: Option<String>,

    /// Seconds without output after which a non-blocking command returns (it keeps running);
    /// at most 2592000 (30 days).
    #[arg(
        long,
        env = "NO_CHANGE_TIMEOUT_SECONDS",
        default_value_t = 10,
        value_name = "NO_CHANGE_TIMEOUT_SECONDS",
        value_parser = clap::value_parser!(u64).range(..=sandbox_common::MAX_TIMEOUT_SECONDS)
    )]
    pub(crate) no_change_timeout: u64,

    /// Directory for the files that keep every command's complete output
    /// (default: a `sandboxd-PID` directory under the system temp dir).
    #[arg(long, env = "SANDBOXD_OUTPUT_DIR")]
    pub(crate) output_dir: Option<PathBuf>,

    /// Bytes the full-output files may take together in the output directory: past it the
    /// oldest ended commands' files are emptied (each says so), and a file that still cannot
    /// grow stops, its observations saying so (default 256 MiB).
    #[arg(long, env = "SANDBOXD_OUTPUT_BUDGET", default_value_t = 256 * 1024 * 1024,
          value_parser = clap::value_parser!(u64).range(4096..))]
    pub(crate) output_budget: u64,

    /// Start bash without reading profile and rc files (faster; default is a login shell).
    #[arg(long, env = "SANDBOXD_NO_LOGIN_SHELL")]
    pub(crate) no_login_shell: bool,

    /// Which processes count as the agent's, for `C-c` at the prompt and
    /// `POST /processes/kill_all`: `tree`, sandboxd's descendants below its own children (the
    /// shells and the kernel, which are kept), missing jobs that double-forked out of the tree;
    /// or `user`, every process of the shell's user except those children, for a sandbox whose
    /// user runs nothing but the agent's code (agentd's containers).
    #[arg(long, env = "SANDBOXD_AGENT_PROCESSES", value_enum, default_value_t = AgentProcesses::Tree)]
    pub(crate) agent_processes: AgentProcesses,

    /// Largest accepted JSON request body, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    pub(crate) max_body_bytes: usize,

    /// Largest accepted upload, in bytes.
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    pub(crate) max_upload_bytes: usize,

    /// Connections served at once; more wait in the kernel's backlog until one closes.
    #[arg(long, env = "SANDBOXD_MAX_CONNECTIONS", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub(crate) max_connections: u32,

    /// Of those, connections that have not yet sent a request with the session key (the
    /// smallest budget: when a new one needs the room, the oldest is closed).
    #[arg(long, env = "SANDBOXD_MAX_UNAUTHENTICATED_CONNECTIONS", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub(crate) max_unauthenticated_connections: u32,

    /// Seconds a request's head (request line and headers) may take to arrive whole; a
    /// connection that says nothing is closed after as long.
    #[arg(long, env = "SANDBOXD_HEADER_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub(crate) header_timeout: u64,

    /// Seconds an authenticated connection may stay open with no request in flight (one that
    /// has not authenticated: 15 s at most).
    #[arg(long, env = "SANDBOXD_IDLE_TIMEOUT", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) idle_timeout: u64,

    /// Pre-started mode (a runtime API service's warm pool): bind the listener, answer only one
    /// `POST /configure` (authenticated with --configure-key as `X-Session-API-Key`; `/alive`
    /// answers 503 meanwhile), then re-execute sandboxd with the arguments and environment it
    /// carries. stdout says `sandboxd awaiting configuration on ADDR` once it listens.
    #[arg(long, hide = true)]
    pub await_configuration: bool,

    /// The key `POST /configure` must carry (required with --await-configuration).
    #[arg(
        long,
        env = "SANDBOXD_CONFIGURE_KEY",
        hide = true,
        hide_env_values = true
    )]
    pub(crate) configure_key: Option<String>,
}

/// `--agent-processes`: how sandboxd finds the processes the agent started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AgentProcesses {
    /// sandboxd's descendants.
    Tree,
    /// Every process of the shell's user.
    User,
}

/// The settings a started sandboxd cannot change: a configuration that differs in one of them
/// restarts it (see `crate::configure`).
#[derive(Debug, PartialEq)]
pub(crate) struct Settings<'a> {
    port: u16,
    host: IpAddr,
    unix_socket: Option<&'a PathBuf>,
    working_dir: Option<PathBuf>,
    username: &'a str,
    user_id: u32,
    login_shell: bool,
    no_change_timeout: u64,
    output_dir: Option<&'a PathBuf>,
    output_budget: u64,
    python: Option<&'a PathBuf>,
    chromium: Option<&'a PathBuf>,
    max_body_bytes: usize,
    max_upload_bytes: usize,
    connections: http_guard::Limits,
    exit_with_parent: Option<u32>,
    agent_processes: AgentProcesses,
}

impl Cli {
    /// What cannot change once sandboxd runs.
    pub(crate) fn settings(&self) -> Settings<'_> {
        Settings {
            port: self.port,
            host: self.host,
            unix_socket: self.unix_socket.as_ref(),
            working_dir: std::path::absolute(&self.working_dir).ok(),
            username: &self.username,
            user_id: self.user_id,
            login_shell: !self.no_login_shell,
            no_change_timeout: self.no_change_timeout,
            output_dir: self.output_dir.as_ref(),
            output_budget: self.output_budget,
            python: self.python.as_ref(),
            chromium: self.chromium.as_ref(),
            max_body_bytes: self.max_body_bytes,
            max_upload_bytes: self.max_upload_bytes,
            connections: self.connection_limits(),
            exit_with_parent: self.exit_with_parent,
            agent_processes: self.agent_processes,
        }
    }

    /// What one HTTP connection may hold, and for how long (see `http_guard`).
    pub(crate) fn connection_limits(&self) -> http_guard::Limits {
        let idle = std::time::Duration::from_secs(self.idle_timeout);
        http_guard::Limits {
            max_connections: self.max_connections as usize,
            max_unauthenticated: self.max_unauthenticated_connections as usize,
            header_read_timeout: std::time::Duration::from_secs(self.header_timeout),
            idle_timeout: idle,
            unauthenticated_idle_timeout: idle.min(std::time::Duration::from_secs(15)),
            ..http_guard::Limits::default()
        }
    }

    /// Whether the reference's browser flag is on.
    pub(crate) fn browser_enabled(&self) -> bool {
        !self.no_enable_browser
    }

    /// Checks the environment variables a configuration sets that this parser reads, as the
    /// re-executed sandboxd will (clap reads only this process's own environment).
    pub(crate) fn check_env(env: &BTreeMap<String, String>) -> Result<(), clap::Error> {
        if let Some(seconds) = env.get("NO_CHANGE_TIMEOUT_SECONDS") {
            Cli::try_parse_from(["sandboxd", "0", "--no-change-timeout", seconds])?;
        }
        Ok(())
    }
}
