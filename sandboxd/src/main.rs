//! The `sandboxd` binary: parse arguments, set up logging, run the daemon until SIGTERM/SIGINT.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Hidden mode: the subreaper parent of a local sandboxd (see `sandboxd::keep_if_requested`).
    if let Some(code) = sandboxd::keep_if_requested() {
        return code;
    }
    // Hidden mode used to start the shell as the sandbox user (see `sandboxd::exec_as_if_requested`).
    if let Some(error) = sandboxd::exec_as_if_requested() {
        eprintln!("sandboxd: {error}");
        return ExitCode::from(126);
    }
    // Hidden mode: the egress filtering proxy agentd runs per Docker engine.
    if std::env::args().nth(1).as_deref() == Some(sandboxd::EGRESS_PROXY_FLAG) {
        return egress_proxy();
    }
    // A separated sandboxd that re-executed itself (taking a configuration) starts as root again.
    if let Err(error) = sandboxd::regain_root() {
        eprintln!("sandboxd: {error}");
        return ExitCode::FAILURE;
    }
    let cli = sandboxd::Cli::parse();
    if let Some(parent) = cli.exit_with_parent {
        // The kernel sends SIGTERM when the parent dies; if it died before this line, we are
        // already someone else's child.
        if let Err(e) = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM) {
            eprintln!("sandboxd: cannot follow the parent's death: {e}");
            return ExitCode::FAILURE;
        }
        if nix::unistd::getppid().as_raw() != parent as i32 {
            eprintln!("sandboxd: parent {parent} is gone; not starting");
            return ExitCode::FAILURE;
        }
    }
    init_logging();
    let runtime = match start_runtime(
        tokio::runtime::Builder::new_multi_thread()
            // Blocking threads, once made, stay: see `reserve_blocking_threads`.
            .thread_keep_alive(BLOCKING_THREAD_KEEP_ALIVE),
    ) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    reserve_blocking_threads(&runtime);
    if cli.await_configuration {
        let waiting = serve_until_signal(runtime, |shutdown| {
            sandboxd::await_configuration(&cli, shutdown, |addr| {
                announce(format_args!("sandboxd awaiting configuration on {addr}"));
            })
        });
        return match waiting {
            Ok(Some(request)) => {
                let error = sandboxd::exec_configured(&request);
                eprintln!("sandboxd: cannot re-execute with the configuration: {error}");
                ExitCode::FAILURE
            }
            Ok(None) => ExitCode::SUCCESS,
            Err(e) => failed(&e, e.exit_code()),
        };
    }
    let result = serve_until_signal(runtime, |shutdown| {
        sandboxd::run(cli, shutdown, |addr| {
            // `http://IP:PORT` or `unix:PATH`.
            announce(format_args!("sandboxd listening on {addr}"));
        })
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            failed(&e, e.exit_code())
        }
    }
}

/// `sandboxd --egress-proxy ...`: serves until SIGTERM or SIGINT.
fn egress_proxy() -> ExitCode {
    let args = std::env::args()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, a)| a);
    let cli = sandboxd::EgressProxyCli::parse_from(args);
    init_logging();
    let runtime = match start_runtime(&mut tokio::runtime::Builder::new_multi_thread()) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let result = serve_until_signal(runtime, |shutdown| {
        sandboxd::run_egress_proxy(cli, shutdown, |addr| {
            announce(format_args!("sandboxd egress proxy listening on {addr}"));
        })
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failed(&e, 1),
    }
}

/// Logs to stderr, at `info` unless `RUST_LOG` says otherwise.
fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
}

/// Builds the async runtime `builder` describes (with every driver); a failure is said on
/// stderr and is the exit status.
fn start_runtime(
    builder: &mut tokio::runtime::Builder,
) -> Result<tokio::runtime::Runtime, ExitCode> {
    builder.enable_all().build().map_err(|e| {
        eprintln!("sandboxd: cannot start the async runtime: {e}");
        ExitCode::FAILURE
    })
}

/// What the serving futures are given: resolves on SIGTERM or SIGINT.
type Shutdown = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs `serve` on `runtime` until it ends (it is handed the shutdown signal, whose handlers
/// are installed first: a SIGTERM sent right after the line a mode prints must shut down
/// cleanly, and remove a Unix socket, not kill the process), then gives the runtime's tasks a
/// second to finish.
fn serve_until_signal<F: std::future::Future>(
    runtime: tokio::runtime::Runtime,
    serve: impl FnOnce(Shutdown) -> F,
) -> F::Output {
    let result = runtime.block_on(async {
        let shutdown = shutdown_signal();
        serve(shutdown).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}

/// Prints the one line on stdout that says where a mode listens.
fn announce(line: std::fmt::Arguments<'_>) {
    #[allow(
        clippy::print_stdout,
        reason = "the one line tests, scripts, agentd and the runtime API service read"
    )]
    {
        println!("{line}");
    }
}

/// Says `error` on stderr; `code` is the exit status.
fn failed(error: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("sandboxd: {error}");
    ExitCode::from(code)
}

/// Installs the SIGTERM and SIGINT handlers now (inside the runtime); the future resolves on
/// the first of them.
fn shutdown_signal() -> Shutdown {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    Box::pin(async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            std::future::pending::<()>().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// How long an idle blocking thread is kept: longer than any sandbox lives.
const BLOCKING_THREAD_KEEP_ALIVE: std::time::Duration =
    std::time::Duration::from_secs(30 * 24 * 3600);

/// Blocking threads made at start (file actions, transfers and `/proc` reads run on them).
const RESERVED_BLOCKING_THREADS: usize = 4;

/// Makes [`RESERVED_BLOCKING_THREADS`] blocking threads now, while threads can be made. The
/// agent's code shares the sandbox's pids limit with sandboxd: once a fork bomb has taken every
/// pid, no new thread can start, and tokio then queues blocking work on the threads it has
/// (it fails only when it has none). With these kept alive, file actions, `/alive` and
/// `POST /processes/kill_all` still answer under a fork bomb.
fn reserve_blocking_threads(runtime: &tokio::runtime::Runtime) {
    let started = std::sync::Arc::new(std::sync::Barrier::new(RESERVED_BLOCKING_THREADS + 1));
    for _ in 0..RESERVED_BLOCKING_THREADS {
        let started = started.clone();
        // Each waits until all have started, so that they are distinct threads.
        drop(runtime.spawn_blocking(move || {
            started.wait();
        }));
    }
    started.wait();
}
