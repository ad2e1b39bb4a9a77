//! `agentd`: the host-side CLI. `agentd run` drives an agent in a sandbox, `agentd sandbox ...`
//! manages sandbox containers, `agentd image ...` makes sandbox images, `agentd serve` serves the
//! runtime API to other agent hosts, `agentd server` serves conversations (agents as a service). This file parses the command line and dispatches to the
//! subcommand's module under `cli/`.
#![allow(clippy::print_stdout, reason = "printing results is this binary's job")]

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

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
    Run(Box<cli::RunArgs>),
    /// Create, list, use and remove sandbox containers.
    #[command(subcommand)]
    Sandbox(cli::SandboxCommand),
    /// Make sandbox images.
    #[command(subcommand)]
    Image(cli::ImageCommand),
    /// Serve the runtime API (OpenHands' RemoteRuntime control plane) to other agent hosts.
    Serve(Box<cli::ServeArgs>),
    /// Serve conversations: agents as a service, with a REST API, live events and a web page.
    Server(Box<cli::ServerArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Log lines go to stderr with the run's secret values masked, once they are known.
    let log_mask = agentd::LogMask::default();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "agentd=info,agentd::controller=warn".into()),
        )
        .with_writer(log_mask.clone())
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("agentd: cannot start the async runtime: {e}");
            return ExitCode::from(cli::FAILURE);
        }
    };
    match runtime.block_on(run(cli, log_mask.clone())) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("agentd: {}", log_mask.mask(&format!("{e:#}")));
            ExitCode::from(cli::FAILURE)
        }
    }
}

async fn run(cli: Cli, log_mask: agentd::LogMask) -> anyhow::Result<u8> {
    match cli.command {
        Command::Run(args) => cli::run_agent(*args, &log_mask).await,
        Command::Sandbox(command) => cli::run_sandbox(command).await,
        Command::Image(command) => cli::run_image(command).await,
        Command::Serve(args) => cli::run_serve(*args).await,
        Command::Server(args) => cli::run_server(*args).await,
    }
}
