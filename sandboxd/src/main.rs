//! The `sandboxd` binary: parse arguments, set up logging, run the daemon until SIGTERM/SIGINT.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Hidden mode used to start the shell as the sandbox user (see `sandboxd::user`).
    if let Some(error) = sandboxd::user::exec_as_if_requested() {
        eprintln!("sandboxd: {error}");
        return ExitCode::from(126);
    }
    let cli = sandboxd::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sandboxd: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(sandboxd::run(cli, shutdown_signal(), |addr| {
        #[allow(clippy::print_stdout, reason = "the one line tests and scripts read")]
        {
            println!("sandboxd listening on http://{addr}");
        }
    }));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("sandboxd: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
