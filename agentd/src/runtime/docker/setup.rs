//! The claim on a sandbox network while it is being set up, so that `gc` (of this or another
//! agentd of the engine) leaves it alone.
//!
//! Between the moment a sandbox's network and firewall rules are made and the moment its
//! container is started on that network, the network is used by no container: to a sweep it
//! looks exactly like the network of a sandbox that went away. Removing its rules then would
//! start the sandbox without isolation (fail open). So the agentd making a sandbox holds an
//! exclusive `flock` on `SETUP_DIR/BRIDGE` from before the first rule until the container
//! has started (or everything is removed again), and a sweep takes the same lock, without
//! waiting, before it removes anything of a bridge: a held lock means "being made, skip".
//! Bridge names are random per sandbox, so the only contention is the sweep's.
//!
//! The sweep decides from what it sees *after* taking the lock (see
//! [`DockerHost::sweep_networks`](super::DockerHost)): a rule it listed earlier was installed
//! under the maker's lock, and once that lock is released the container is running on the
//! network, which a fresh look sees as in use.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use super::DockerError;

/// Where the lock files live (beside the egress policies; root's, as the firewall is).
pub(crate) const SETUP_DIR: &str = "/run/sandboxd/setup";

fn lock_path(dir: &Path, bridge: &str) -> PathBuf {
    dir.join(bridge)
}

/// The maker's claim on `bridge`: held until dropped, when the lock file goes too.
#[derive(Debug)]
pub(crate) struct SetupLock {
    path: PathBuf,
    _lock: Flock<File>,
}

impl SetupLock {
    /// Claims `bridge` for setting up, waiting for a sweep that holds it (for an instant).
    pub(crate) fn acquire(bridge: &str) -> Result<Self, DockerError> {
        Self::acquire_in(Path::new(SETUP_DIR), bridge)
    }

    fn acquire_in(dir: &Path, bridge: &str) -> Result<Self, DockerError> {
        let error = |path: &Path, source: std::io::Error| DockerError::SetupLock {
            path: path.to_path_buf(),
            source,
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| error(dir, e))?;
        let path = lock_path(dir, bridge);
        loop {
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(|e| error(&path, e))?;
            let lock = Flock::lock(file, FlockArg::LockExclusive)
                .map_err(|(_, errno)| error(&path, errno.into()))?;
            // A sweep may have claimed the file between our open and our lock and removed it
            // (it removes the lock files it claims): then ours is no one's, and we start over.
            let locked = lock.metadata().map_err(|e| error(&path, e))?;
            match std::fs::metadata(&path) {
                Ok(named) if named.ino() == locked.ino() && named.dev() == locked.dev() => {
                    return Ok(Self { path, _lock: lock });
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(error(&path, e)),
            }
        }
    }
}

impl Drop for SetupLock {
    fn drop(&mut self) {
        // Unlinked while still locked: a sweep that opened the file before sees it unlocked
        // afterwards, one that opens it after finds none; either way the setup is over.
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot remove a setup lock");
        }
    }
}

/// A sweep's claim on a bridge: while it is held, no agentd is setting the bridge up. The
/// lock file, if any, is a leftover of a maker that died (a live one removes its own) and goes
/// with the claim.
#[derive(Debug)]
pub(crate) struct SweepClaim {
    lock: Option<(PathBuf, Flock<File>)>,
}

impl Drop for SweepClaim {
    fn drop(&mut self) {
        // Removed while still locked: a maker that opened it meanwhile finds that its file is
        // no longer the one named and makes a new one (`SetupLock::acquire`).
        if let Some((path, _)) = &self.lock
            && let Err(e) = std::fs::remove_file(path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove a setup lock");
        }
    }
}

/// The bridges that have a lock file: being set up, or left by a maker that died.
pub(crate) fn locked_bridges() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(SETUP_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(super::network::BRIDGE_PREFIX))
        .collect()
}

/// Claims `bridge` for a sweep if nobody is setting it up; `None` if someone is (or if that
/// cannot be told: then the sweep leaves the bridge alone, which is the safe side).
pub(crate) fn claim_for_sweep(bridge: &str) -> Option<SweepClaim> {
    claim_in(Path::new(SETUP_DIR), bridge)
}

fn claim_in(dir: &Path, bridge: &str) -> Option<SweepClaim> {
    let path = lock_path(dir, bridge);
    let file = match OpenOptions::new().read(true).open(&path) {
        Ok(file) => file,
        // No lock file: not being set up (the maker makes it before anything else).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Some(SweepClaim { lock: None });
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read a setup lock; leaving the bridge alone");
            return None;
        }
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Some(SweepClaim {
            lock: Some((path, lock)),
        }),
        Err((_, Errno::EWOULDBLOCK)) => None,
        Err((_, errno)) => {
            tracing::warn!(path = %path.display(), error = %errno, "cannot lock a setup lock; leaving the bridge alone");
            None
        }
    }
}

#[cfg(test)]
mod tests;
