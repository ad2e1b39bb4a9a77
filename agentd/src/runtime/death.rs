//! How a sandbox died ([`SandboxDeath`]) and the one way a death is recorded on a runtime's
//! watch channel ([`record_death`]). Below the three modules that need it: the local waiter
//! thread and the container watcher record deaths, and [`Runtime`](super::Runtime) answers
//! with them.

use std::fmt;

use tokio::sync::watch;

/// How a sandbox died.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxDeath {
    /// One line for the agent and the user: `sandboxd was killed by SIGKILL`, `the container
    /// exited with status 137 (out of memory)`.
    pub summary: String,
    /// The sandbox's last output (sandboxd's stderr, the container's log), for people.
    pub(crate) detail: String,
}

impl fmt::Display for SandboxDeath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)?;
        let detail = self.detail.trim_end();
        if !detail.is_empty() {
            write!(f, "\n--- last output ---\n{detail}")?;
        }
        Ok(())
    }
}

/// Records a death unless one is recorded already; says whether this one was.
pub(super) fn record_death(
    death: &watch::Sender<Option<SandboxDeath>>,
    summary: String,
    detail: String,
) -> bool {
    death.send_if_modified(|current| {
        if current.is_some() {
            return false;
        }
        *current = Some(SandboxDeath { summary, detail });
        true
    })
}

#[cfg(test)]
mod tests;
