//! The agentd CLI's subcommands, one module each (`main.rs` only parses and dispatches), and
//! what several of them share: the exit statuses of failures, the settings file, overriding a
//! setting, sizes, the servers' listener, and the stop signals.

mod image;
mod input;
mod run;
mod sandbox;
mod serve;
mod server;
mod settings;

pub use image::{ImageCommand, run as run_image};
pub use run::{RunArgs, run as run_agent};
pub use sandbox::{SandboxCommand, run as run_sandbox};
pub use serve::{ServeArgs, run as run_serve};
pub use server::{ServerArgs, run as run_server};

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;

use agentd::FileConfig;

/// Exit status for failures (usage errors exit with 2, from clap).
pub const FAILURE: u8 = 1;
/// Exit status of a command line that cannot work (as clap's).
const USAGE: u8 = 2;
/// Exit status of a server whose address cannot be bound.
const CANNOT_BIND: u8 = 3;

/// The settings file at `path`, or the defaults without one.
pub fn settings(path: Option<&Path>) -> anyhow::Result<FileConfig> {
    Ok(match path {
        Some(path) => FileConfig::load(path)?,
        None => FileConfig::default(),
    })
}

/// Replaces `setting` with `value`, if there is one (a flag, else the settings file, wins over
/// the default).
pub fn set<T>(setting: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *setting = value;
    }
}

/// A size like `512m` or `4g`, in bytes.
pub fn parse_bytes(s: &str) -> Result<i64, String> {
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

/// `--disk` / `[docker] disk`: a sandbox's disk limit, a size like `10g`, or `none` for no
/// limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSize(pub Option<u64>);

impl std::str::FromStr for DiskSize {
    type Err = String;

    fn from_str(s: &str) -> Result<DiskSize, String> {
        if s.trim().eq_ignore_ascii_case("none") {
            return Ok(DiskSize(None));
        }
        match parse_bytes(s)? {
            n if n > 0 => Ok(DiskSize(Some(n as u64))),
            _ => Err(format!(
                "{s:?} is not a disk size: give one like 10g, or `none` for no limit"
            )),
        }
    }
}

impl DiskSize {
    /// The flag, else `[docker] disk`, else `None` (the default stays).
    pub fn from_flag_or_file(
        flag: Option<DiskSize>,
        file: Option<&str>,
    ) -> anyhow::Result<Option<DiskSize>> {
        match (flag, file) {
            (Some(disk), _) => Ok(Some(disk)),
            (None, Some(text)) => text
                .parse()
                .map(Some)
                .map_err(|e| anyhow::anyhow!("[docker] disk: {e}")),
            (None, None) => Ok(None),
        }
    }
}

/// A server's first line on stdout once it answers, which scripts and tests wait for:
/// `{name} listening on URL`, or `{"listening": "URL"}` with `json`.
#[allow(clippy::print_stdout, reason = "the line is the servers' interface")]
pub fn print_listening(name: &str, url: &str, json: bool) {
    if json {
        println!("{}", serde_json::json!({ "listening": url }));
    } else {
        println!("{name} listening on {url}");
    }
}

/// A listener on `addr` for the server `name`; when the address cannot be bound, says so on
/// stderr and gives the exit status [`CANNOT_BIND`].
pub async fn listen(name: &str, addr: SocketAddr) -> Result<tokio::net::TcpListener, u8> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        eprintln!("{name}: cannot listen on {addr}: {e}");
        CANNOT_BIND
    })
}

/// SIGTERM or SIGINT (Ctrl-C), handlers installed now.
pub fn stop_signal() -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
