//! `agentd`: the host-side CLI. `agentd run` drives an agent in a sandbox, `agentd sandbox ...`
//! manages sandbox containers, `agentd image ...` makes sandbox images, `agentd serve` serves the
//! runtime API to other agent hosts.
#![allow(clippy::print_stdout, reason = "printing results is this binary's job")]

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentd::runtime::docker::image;
use agentd::runtime::docker::labels::Owner;
use agentd::runtime::docker::{
    DockerRuntime, GcPolicy, Limits, Network, Sandbox, SandboxConfig, SandboxUser, config,
};
use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use client::ObservationExt;

mod cli;

/// Exit status for failures (usage errors exit with 2, from clap).
const FAILURE: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "agentd",
    version,
    about = "The host side of the sandbox runtime"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent on a task in a sandbox, headless, with live progress.
    Run(Box<cli::run::RunArgs>),
    /// Create, list, use and remove sandbox containers.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Make sandbox images.
    #[command(subcommand)]
    Image(ImageCommand),
    /// Serve the runtime API (OpenHands' RemoteRuntime control plane) to other agent hosts.
    Serve(Box<cli::serve::ServeArgs>),
}

#[derive(Debug, Subcommand)]
enum SandboxCommand {
    /// Start a sandbox and print its URL and session API key.
    Up(UpArgs),
    /// List the sandboxes this runtime manages.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a command in a sandbox's bash session; exits with the command's exit code.
    Exec {
        /// Sandbox id (or prefix) or name.
        id: String,
        /// Hard timeout in seconds (default: the server's no-output timeout applies).
        #[arg(long)]
        timeout: Option<f64>,
        /// Print the observation as JSON.
        #[arg(long)]
        json: bool,
        /// The command line (joined with spaces).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Stop and remove sandboxes.
    Down {
        /// Sandbox ids (or prefixes) or names.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Remove orphaned sandboxes (their agentd died) and stopped ones.
    Gc {
        /// Remove every sandbox, detached ones included.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
struct UpArgs {
    /// Image to run: a sandbox image, or any base image with bash (sandboxd is added in a thin
    /// layer, built once and reused).
    #[arg(long, env = "AGENTD_IMAGE", default_value = config::DEFAULT_BASE_IMAGE)]
    image: String,
    #[command(flatten)]
    sandboxd: SandboxdArg,
    /// Host directory to mount read-write at /workspace; the sandbox user takes its owner's
    /// uid and gid.
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// The sandbox user's UID or UID:GID (default: the workspace's owner, else 1000).
    #[arg(long, env = "AGENTD_SANDBOX_UID", value_name = "UID[:GID]")]
    sandbox_uid: Option<SandboxUser>,
    /// Allow a sandbox that runs as root (a workspace owned by root, or --sandbox-uid 0).
    #[arg(long, env = "AGENTD_ALLOW_ROOT")]
    allow_root: bool,
    /// Network access: `bridge` (outbound allowed) or `none`.
    #[arg(long, default_value = "bridge", value_parser = parse_network)]
    network: Network,
    /// Mount the image read-only (with tmpfs at /tmp and the home directory).
    #[arg(long)]
    read_only: bool,
    /// Let the sandbox user use sudo (turns off no-new-privileges; adds capabilities).
    #[arg(long)]
    sudo: bool,
    /// Memory limit, e.g. 512m, 4g; `0` for none.
    #[arg(long, default_value = "4g", value_parser = parse_bytes)]
    memory: i64,
    /// CPU limit; `0` for none.
    #[arg(long, default_value_t = 2.0)]
    cpus: f64,
    /// Process limit; `0` for none.
    #[arg(long, default_value_t = 1024)]
    pids: i64,
    /// Environment for the sandbox, `KEY=VALUE` (repeatable).
    #[arg(long = "env", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// Container name.
    #[arg(long)]
    name: Option<String>,
    /// Do not start the IPython kernel at once (it then starts on the first cell).
    #[arg(long)]
    no_jupyter: bool,
    /// Seconds to wait for sandboxd to answer.
    #[arg(long, default_value_t = 60)]
    ready_timeout: u64,
    /// Stay in the foreground and remove the sandbox on Ctrl-C or SIGTERM; if agentd is killed
    /// instead, the sandbox is an orphan for `agentd sandbox gc`.
    #[arg(long)]
    attach: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct SandboxdArg {
    /// The sandboxd binary to put into images (default: AGENTD_SANDBOXD_BIN, else the
    /// `sandboxd` next to agentd). Build a portable one with images/build-sandboxd.sh.
    #[arg(long = "sandboxd", value_name = "PATH")]
    path: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum ImageCommand {
    /// Make a base image (any image with bash) a sandbox image; prints its tag.
    Build {
        /// The base image.
        #[arg(long, default_value = config::DEFAULT_BASE_IMAGE)]
        base: String,
        #[command(flatten)]
        sandboxd: SandboxdArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Import a root filesystem tarball as an image (like `docker import`); prints its id.
    Import {
        /// `repository:tag` of the new image.
        #[arg(long)]
        tag: String,
        /// The tarball; `-` for standard input.
        #[arg(default_value = "-")]
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "agentd=info,agentd::controller=warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("agentd: cannot start the async runtime: {e}");
            return ExitCode::from(FAILURE);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("agentd: {e:#}");
            ExitCode::from(FAILURE)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Run(args) => cli::run::run(*args).await,
        Command::Sandbox(command) => sandbox(&DockerRuntime::connect()?, command).await,
        Command::Image(command) => image_command(&DockerRuntime::connect()?, command).await,
        Command::Serve(args) => cli::serve::run(*args).await,
    }
}

async fn sandbox(docker: &DockerRuntime, command: SandboxCommand) -> anyhow::Result<u8> {
    match command {
        SandboxCommand::Up(args) => up(docker, args).await,
        SandboxCommand::Ls { json } => {
            let sandboxes = docker.list().await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&sandboxes)?);
            } else {
                println!(
                    "{:<14} {:<22} {:<9} {:<28} OWNER",
                    "ID", "NAME", "STATE", "URL"
                );
                for s in sandboxes {
                    let owner = match (s.owner_pid, s.orphaned) {
                        (None, _) => "detached".to_string(),
                        (Some(pid), false) => format!("pid {pid}"),
                        (Some(pid), true) => format!("pid {pid} (gone)"),
                    };
                    println!(
                        "{:<14} {:<22} {:<9} {:<28} {owner}",
                        &s.id[..s.id.len().min(12)],
                        s.name,
                        s.state.as_ref(),
                        s.url.unwrap_or_else(|| "-".to_string())
                    );
                }
            }
            Ok(0)
        }
        SandboxCommand::Exec {
            id,
            timeout,
            json,
            command,
        } => {
            let sandbox = docker.get(&id).await?;
            let obs = sandbox.client()?.run(&command.join(" "), timeout).await?;
            if json {
                println!("{}", serde_json::to_string(&obs)?);
            } else {
                let text = obs.display_text();
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
            Ok(obs.cli_status())
        }
        SandboxCommand::Down { ids } => {
            let mut status = 0;
            for id in ids {
                match docker.down(&id).await {
                    Ok(()) => println!("{id}"),
                    Err(e) => {
                        eprintln!("agentd: {e}");
                        status = FAILURE;
                    }
                }
            }
            Ok(status)
        }
        SandboxCommand::Gc { all, json } => {
            let removed = docker.gc(GcPolicy { all }).await?;
            if json {
                println!("{}", serde_json::json!({ "removed": removed }));
            } else {
                for id in &removed {
                    println!("removed {}", &id[..id.len().min(12)]);
                }
                eprintln!("{} sandbox(es) removed", removed.len());
            }
            Ok(0)
        }
    }
}

async fn up(docker: &DockerRuntime, args: UpArgs) -> anyhow::Result<u8> {
    let image = with_build_progress(args.json, async |progress| {
        let sandboxd = args.sandboxd.path.as_deref();
        image::sandbox_image_for(docker.docker(), &args.image, sandboxd, progress).await
    })
    .await?
    .tag;
    let positive = |v: i64| (v > 0).then_some(v);
    let config = SandboxConfig {
        image,
        workspace: args.workspace.map(|w| std::path::absolute(&w).unwrap_or(w)),
        user: args.sandbox_uid,
        allow_root: args.allow_root,
        env: args.env.into_iter().collect(),
        plugins: if args.no_jupyter {
            Vec::new()
        } else {
            vec!["jupyter".to_string()]
        },
        limits: Limits {
            memory_bytes: positive(args.memory),
            cpus: (args.cpus > 0.0).then_some(args.cpus),
            pids: positive(args.pids),
        },
        network: args.network,
        read_only_root: args.read_only,
        sudo: args.sudo,
        ready_timeout: Duration::from_secs(args.ready_timeout),
        name: args.name,
        ..SandboxConfig::default()
    };
    let owner = if args.attach {
        Some(Owner::current().context("cannot identify this process in /proc")?)
    } else {
        None
    };
    let sandbox = docker.up(&config, owner.as_ref()).await?;
    print_sandbox(&sandbox, args.json)?;
    if !args.attach {
        return Ok(0);
    }
    wait_for_stop_signal().await?;
    eprintln!("agentd: removing sandbox {}", sandbox.name);
    docker.down(&sandbox.id).await?;
    Ok(0)
}

fn print_sandbox(sandbox: &Sandbox, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(sandbox)?);
    } else {
        println!("id:   {}", sandbox.id);
        println!("name: {}", sandbox.name);
        println!("url:  {}", sandbox.url);
        println!("key:  {}", sandbox.session_api_key);
        println!(
            "try:  SANDBOX_URL={} SESSION_API_KEY={} sbx run 'echo hello'",
            sandbox.url, sandbox.session_api_key
        );
    }
    Ok(())
}

async fn wait_for_stop_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}

async fn image_command(docker: &DockerRuntime, command: ImageCommand) -> anyhow::Result<u8> {
    match command {
        ImageCommand::Build {
            base,
            sandboxd,
            json,
        } => {
            let sandboxd = image::sandboxd_binary(sandboxd.path.as_deref(), &base)?;
            let image = with_build_progress(json, async |progress| {
                image::ensure_sandbox_image(docker.docker(), &base, &sandboxd, progress).await
            })
            .await?;
            if json {
                println!("{}", serde_json::to_string(&image)?);
            } else {
                println!("{}", image.tag);
            }
            Ok(0)
        }
        ImageCommand::Import { tag, file } => {
            let reader: Box<dyn tokio::io::AsyncRead + Send + Unpin> = if file.as_os_str() == "-" {
                if std::io::stdin().is_terminal() {
                    bail!("refusing to read a tarball from a terminal; pass FILE or pipe one in");
                }
                Box::new(tokio::io::stdin())
            } else {
                Box::new(
                    tokio::fs::File::open(&file)
                        .await
                        .with_context(|| format!("cannot open {}", file.display()))?,
                )
            };
            let stream = tokio_util::io::ReaderStream::new(reader);
            let id = image::import_rootfs(docker.docker(), stream, &tag).await?;
            println!("{id}");
            Ok(0)
        }
    }
}

/// Runs `make` (which may build a sandbox image) with the build's progress shown: on a
/// terminal (unless `quiet`) a spinner that appears with the build's first line, else log lines.
async fn with_build_progress<T>(
    quiet: bool,
    make: impl AsyncFnOnce(&mut dyn FnMut(&str)) -> T,
) -> T {
    let spinner = !quiet && std::io::stderr().is_terminal();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let made = make(&mut |line: &str| {
        if !spinner {
            tracing::info!(target: "agentd::build", "{line}");
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        bar.set_message(line.to_string());
    })
    .await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    made
}

fn parse_network(s: &str) -> Result<Network, String> {
    match s {
        "bridge" => Ok(Network::Bridge),
        "none" => Ok(Network::None),
        _ => Err("expected `bridge` or `none`".to_string()),
    }
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or("expected KEY=VALUE")?;
    if k.is_empty() {
        return Err("empty variable name".to_string());
    }
    Ok((k.to_string(), v.to_string()))
}

pub(crate) fn parse_bytes(s: &str) -> Result<i64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let (digits, shift) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 10),
        Some(b'm') => (&lower[..lower.len() - 1], 20),
        Some(b'g') => (&lower[..lower.len() - 1], 30),
        _ => (lower.as_str(), 0),
    };
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 512m or 4g"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}
