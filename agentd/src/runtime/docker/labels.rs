//! The labels that mark our containers and networks, and the owner process they record, so that
//! the sandboxes of an agentd that died can be found and removed (`agentd sandbox gc`).

use std::collections::HashMap;

use sandbox_common::ProcStat;

/// Every label of ours starts with this.
pub(crate) const PREFIX: &str = "dev.sandboxd.";
/// Present (value `true`) on everything this runtime creates.
pub(crate) const MANAGED: &str = "dev.sandboxd.managed";
/// The process that owns a sandbox (`PID:START:BOOT_ID`); absent for detached sandboxes,
/// which live until `agentd sandbox down`.
pub(crate) const OWNER: &str = "dev.sandboxd.owner";
/// The host directory holding sandboxd's socket, for a sandbox without network access.
pub(crate) const SOCKET_DIR: &str = "dev.sandboxd.socket-dir";
/// On a sandbox with network: the bridge interface of its own network (also the network's
/// name), whose firewall rules go with it.
pub(crate) const BRIDGE: &str = "dev.sandboxd.bridge";
/// Labels of `agentd serve`'s sandboxes start with this; unlike other labels under [`PREFIX`],
/// callers may set them through `SandboxConfig::labels`.
pub(crate) const SERVE_PREFIX: &str = "dev.sandboxd.serve.";
/// On `agentd serve`'s sandboxes: the name of the service that owns them.
pub(crate) const SERVE_NAME: &str = "dev.sandboxd.serve.name";
/// On `agentd serve`'s sandboxes: the runtime id (also the container name).
pub(crate) const SERVE_RUNTIME_ID: &str = "dev.sandboxd.serve.runtime-id";
/// On `agentd serve`'s warm sandboxes: the policy they were made with (sudo, app ports); a
/// restarted service adopts only those made with its own.
pub(crate) const SERVE_PROFILE: &str = "dev.sandboxd.serve.profile";
/// On `agentd serve`'s swarm services: the sandbox image (the pool it belongs to).
pub(crate) const SERVE_IMAGE: &str = "dev.sandboxd.serve.image";
/// On every sandbox: how its disk is limited, as `agentd sandbox up` reported it.
pub(crate) const DISK_LIMIT: &str = "dev.sandboxd.disk-limit";
/// On the short-lived containers made to probe the engine or copy an image's content (never
/// started; `gc` removes those an agentd left behind).
pub(crate) const SCRATCH: &str = "dev.sandboxd.scratch";
/// On the egress proxy's container (value `true`; it is not [`MANAGED`]: no sandbox).
pub(crate) const EGRESS_PROXY: &str = "dev.sandboxd.egress-proxy";
/// On sandbox images: the sandboxd version inside.
pub(crate) const SANDBOXD_VERSION: &str = "dev.sandboxd.version";
/// On sandbox images whose sandbox user was renumbered: its `uid:gid`.
pub(crate) const SANDBOX_USER: &str = "dev.sandboxd.user";
/// On sandbox images: the base image they were built from.
pub(crate) const BASE_IMAGE: &str = "dev.sandboxd.base";

/// The `label=` filter that selects everything we manage.
pub(crate) fn managed_filter() -> HashMap<String, Vec<String>> {
    HashMap::from([("label".to_string(), vec![format!("{MANAGED}=true")])])
}

/// A process, identified so that a recycled pid or a reboot is not mistaken for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat`, field 22).
    start: u64,
    boot_id: String,
}

impl Owner {
    /// This process. `None` where `/proc` cannot tell (the sandbox is then detached).
    pub fn current() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner {
            pid,
            start: ProcStat::read(pid)?.start_time,
            boot_id: boot_id()?,
        })
    }

    /// Parses the [`OWNER`] label.
    pub(crate) fn parse(label: &str) -> Option<Owner> {
        let mut parts = label.splitn(3, ':');
        Some(Owner {
            pid: parts.next()?.parse().ok()?,
            start: parts.next()?.parse().ok()?,
            boot_id: parts.next()?.to_string(),
        })
    }

    /// The [`OWNER`] label's value.
    pub(crate) fn label(&self) -> String {
        format!("{}:{}:{}", self.pid, self.start, self.boot_id)
    }

    /// The owner's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the owner still runs: same boot, and its pid still has the same start time.
    pub(crate) fn is_alive(&self) -> bool {
        boot_id().as_deref() == Some(self.boot_id.as_str())
            && ProcStat::read(self.pid).map(|stat| stat.start_time) == Some(self.start)
    }
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests;
