//! The agentd CLI's subcommands, one module each (`main.rs` only parses and dispatches), and
//! what several of them share: the exit status of failures, the settings file, overriding a
//! setting, sizes, and the stop signals.

pub mod image;
pub mod run;
pub mod sandbox;
pub mod serve;

use std::future::Future;
use std::path::Path;

use agentd::FileConfig;

/// Exit status for failures (usage errors exit with 2, from clap).
pub const FAILURE: u8 = 1;

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
