//! `agentd sandbox up|ls|exec|down|gc`: sandbox containers by hand — start one (making its
//! image a sandbox image first if needed), list them, run a command in one, remove them, and
//! remove orphaned or stopped ones.

use std::path::PathBuf;
use std::time::Duration;

use agentd::docker::Owner;
use std::str::FromStr;

use agentd::docker::{
    DockerHost, Egress, GcPolicy, Limits, Network, SandboxConfig, SandboxContainer, SandboxUser,
};
use anyhow::Context;
use clap::{Args, Subcommand};
use client::ObservationExt;

use super::image::{SandboxdArg, with_build_progress};
use super::{DiskSize, FAILURE, parse_bytes, stop_signal};

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Start a sandbox and print its URL and session API key.
    Up(Box<UpArgs>),
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
pub struct UpArgs {
    /// Image to run: a sandbox image, or any base image with bash (sandboxd is added in a thin
    /// layer, built once and reused).
    #[arg(long, env = "AGENTD_IMAGE", default_value = agentd::docker::DEFAULT_BASE_IMAGE)]
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
    /// Network access: `bridge` (a network of the sandbox's own, kept from the host, other
    /// sandboxes and the cloud metadata address by the host's firewall; needs root) or `none`.
    #[arg(long, default_value = "bridge", value_parser = parse_network)]
    network: Network,
    /// Where a `bridge` sandbox may connect beyond the host: `all`, `none`, or a
    /// comma-separated list of IPv4 addresses and CIDR blocks and of domains
    /// (`*.example.com`: subdomains only), each with an optional TCP port
    /// (`10.0.0.0/8,192.0.2.7:443,pypi.org:443,*.pythonhosted.org:443`). Domains are matched
    /// on the TLS server name or HTTP Host by the engine's egress proxy.
    #[arg(long, env = "AGENTD_EGRESS", default_value = "all", value_parser = Egress::from_str)]
    egress: Egress,
    /// Pin a name to an IPv4 address, `NAME=IP` (repeatable): the sandbox's /etc/hosts has it
    /// and the egress proxy connects the name there instead of asking DNS.
    #[arg(long = "egress-host", value_name = "NAME=IP", value_parser = parse_pin)]
    egress_hosts: Vec<(String, std::net::Ipv4Addr)>,
    /// A TCP port of the host a `bridge` sandbox may connect to (repeatable; default none).
    #[arg(long = "allow-host-port", value_name = "PORT")]
    host_ports: Vec<u16>,
    /// Mount the image read-only (with tmpfs at /tmp and the home directory).
    #[arg(long)]
    read_only: bool,
    /// The most the sandbox may write, e.g. 512m, 10g; `none` for no limit. Enforced by the
    /// storage driver's quota, or else by a disk of the sandbox's own with a read-only root;
    /// `up` says which.
    #[arg(long, env = "AGENTD_DISK", default_value = "10g")]
    disk: DiskSize,
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

pub async fn run(command: SandboxCommand) -> anyhow::Result<u8> {
    let docker = DockerHost::connect()?;
    match command {
        SandboxCommand::Up(args) => up(&docker, *args).await,
        SandboxCommand::Ls { json } => ls(&docker, json).await,
        SandboxCommand::Exec {
            id,
            timeout,
            json,
            command,
        } => exec(&docker, &id, timeout, json, &command).await,
        SandboxCommand::Down { ids } => down(&docker, ids).await,
        SandboxCommand::Gc { all, json } => gc(&docker, all, json).await,
    }
}

async fn up(docker: &DockerHost, args: UpArgs) -> anyhow::Result<u8> {
    let image = with_build_progress(args.json, async |progress| {
        let sandboxd = args.sandboxd.path.as_deref();
        agentd::docker::sandbox_image_for(docker.docker(), &args.image, sandboxd, progress).await
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
        egress: args.egress,
        host_ports: args.host_ports,
        egress_hosts: args.egress_hosts.into_iter().collect(),
        read_only_root: args.read_only,
        disk_bytes: args.disk.0,
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
    stop_signal()?.await;
    eprintln!("agentd: removing sandbox {}", sandbox.name);
    docker.down(&sandbox.id).await?;
    Ok(0)
}

fn print_sandbox(sandbox: &SandboxContainer, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(sandbox)?);
    } else {
        println!("id:   {}", sandbox.id);
        println!("name: {}", sandbox.name);
        println!("url:  {}", sandbox.url);
        println!("key:  {}", sandbox.session_api_key);
        println!("disk: {}", sandbox.disk);
        println!(
            "try:  SANDBOX_URL={} SESSION_API_KEY={} sbx run 'echo hello'",
            sandbox.url, sandbox.session_api_key
        );
    }
    Ok(())
}

async fn ls(docker: &DockerHost, json: bool) -> anyhow::Result<u8> {
    let sandboxes = docker.list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&sandboxes)?);
        return Ok(0);
    }
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
    Ok(0)
}

async fn exec(
    docker: &DockerHost,
    id: &str,
    timeout: Option<f64>,
    json: bool,
    command: &[String],
) -> anyhow::Result<u8> {
    let sandbox = docker.get(id).await?;
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

async fn down(docker: &DockerHost, ids: Vec<String>) -> anyhow::Result<u8> {
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

async fn gc(docker: &DockerHost, all: bool, json: bool) -> anyhow::Result<u8> {
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

fn parse_network(s: &str) -> Result<Network, String> {
    match s {
        "bridge" => Ok(Network::Bridge),
        "none" => Ok(Network::None),
        _ => Err("expected `bridge` or `none`".to_string()),
    }
}

fn parse_pin(s: &str) -> Result<(String, std::net::Ipv4Addr), String> {
    let (name, addr) = s.split_once('=').ok_or("expected NAME=IP")?;
    let name = sandbox_common::normalize_host(name)?;
    let addr = addr
        .parse()
        .map_err(|_| format!("{addr:?} is not an IPv4 address"))?;
    Ok((name, addr))
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or("expected KEY=VALUE")?;
    if k.is_empty() {
        return Err("empty variable name".to_string());
    }
    Ok((k.to_string(), v.to_string()))
}
