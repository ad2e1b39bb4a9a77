//! The claim on what a sandbox is being set up with, so that `gc` (of this or another agentd
//! of the engine) leaves it alone.
//!
//! Between the moment a sandbox's network and firewall rules are made and the moment its
//! container is started on that network, the network is used by no container: to a sweep it
//! looks exactly like the network of a sandbox that went away. Removing its rules then would
//! start the sandbox without isolation (fail open). Likewise the socket directory of a sandbox
//! without network exists before its container does, and removing it would fail the `up`. So
//! the agentd making a sandbox holds an exclusive `flock` from before the first of these is
//! made until the container has started (or everything is removed again), and a sweep takes
//! the same lock, without waiting, before it removes anything: a held lock means "being made,
//! skip". What is locked:
//!
//! - for a bridge, the file `SETUP_DIR/BRIDGE` (removed with the lock);
//! - for a socket directory, the directory itself (its socket's home afterwards).
//!
//! Bridge and sandbox names are unique, so the only contention is a sweep's, for an instant.
//! The sweep decides from what it sees *after* taking the lock (see
//! [`DockerHost::sweep_networks`](super::DockerHost) and `gc`): a rule it listed earlier was
//! installed under the maker's lock, and once that lock is released the container is running,
//! which a fresh look sees.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// Where the bridges' lock files live (beside the egress policies; root's, as the firewall
/// is).
pub(crate) const SETUP_DIR: &str = "/run/sandboxd/setup";

/// What a sweep does with a lock's path once it has claimed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnClaim {
    /// A lock file: a leftover of a maker that died (a live one removes its own); it goes
    /// with the claim.
    Remove,
    /// The thing itself (a socket directory): the sweep decides.
    Keep,
}

/// The maker's claim: held until dropped, when a bridge's lock file goes too.
#[derive(Debug)]
pub(crate) struct SetupLock {
    path: PathBuf,
    remove: bool,
    _lock: Flock<File>,
}

impl SetupLock {
    /// Claims `bridge` for setting up, waiting for a sweep that holds it (for an instant).
    pub(crate) async fn bridge(bridge: &str) -> io::Result<Self> {
        let bridge = bridge.to_string();
        off_thread(move || Self::bridge_in(Path::new(SETUP_DIR), &bridge)).await
    }

    fn bridge_in(dir: &Path, bridge: &str) -> io::Result<Self> {
        private_dir(dir)?;
        Self::lock_fresh(&dir.join(bridge), true, open_lock_file)
    }

    /// Makes `root/name`, a sandbox's socket directory, and claims it for setting up: `root`
    /// is this user's alone (0700); the directory is new and writable by the sandbox user, who
    /// creates the socket in it. The directory stays after the claim.
    pub(crate) async fn socket_dir(root: &Path, name: &str) -> io::Result<Self> {
        let dir = root.join(name);
        let root = root.to_path_buf();
        off_thread(move || {
            private_dir(&root)?;
            Self::socket_dir_in(&dir)
        })
        .await
    }

    fn socket_dir_in(dir: &Path) -> io::Result<Self> {
        Self::lock_fresh(dir, false, |dir| {
            std::fs::DirBuilder::new().mode(0o777).create(dir)?;
            // The umask may have taken bits away.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
            File::open(dir)
        })
    }

    /// Opens `path` with `open` and locks it, until the locked file is the one `path` names: a
    /// sweep may claim it between the open and the lock and remove it, and then ours is no
    /// one's.
    fn lock_fresh(
        path: &Path,
        remove: bool,
        open: impl Fn(&Path) -> io::Result<File>,
    ) -> io::Result<Self> {
        loop {
            let lock = Flock::lock(open(path)?, FlockArg::LockExclusive)
                .map_err(|(_, errno)| io::Error::from(errno))?;
            let locked = lock.metadata()?;
            match std::fs::metadata(path) {
                Ok(named) if named.ino() == locked.ino() && named.dev() == locked.dev() => {
                    return Ok(Self {
                        path: path.to_path_buf(),
                        remove,
                        _lock: lock,
                    });
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for SetupLock {
    fn drop(&mut self) {
        // Unlinked while still locked: a sweep that opened the file before sees it unlocked
        // afterwards, one that opens it after finds none; either way the setup is over.
        if self.remove {
            remove_lock_file(&self.path);
        }
    }
}

/// Runs blocking file work (an `flock` may wait) off the async threads.
async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}

/// Makes `dir` (and its parents) if missing, for this user alone.
fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Opens (making it if missing) the lock file `path`, for this user alone.
fn open_lock_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

fn remove_lock_file(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove a setup lock");
    }
}

/// A sweep's claim: while it is held, no agentd is setting up what it names.
#[derive(Debug)]
pub(crate) struct SweepClaim {
    lock: Option<(PathBuf, Flock<File>)>,
    on_claim: OnClaim,
}

impl Drop for SweepClaim {
    fn drop(&mut self) {
        // Removed while still locked: a maker that opened it meanwhile finds that its file is
        // no longer the one named and makes a new one (`SetupLock::lock_fresh`).
        if let (Some((path, _)), OnClaim::Remove) = (&self.lock, self.on_claim) {
            remove_lock_file(path);
        }
    }
}

/// The lock file of `bridge`.
pub(crate) fn bridge_lock(bridge: &str) -> PathBuf {
    Path::new(SETUP_DIR).join(bridge)
}

/// Claims `path` for a sweep if nobody is setting it up; `None` if someone is (or if that
/// cannot be told: then the sweep leaves it alone, which is the safe side). A path that does
/// not exist is claimed: a maker makes it before anything else.
pub(crate) fn claim_for_sweep(path: &Path, on_claim: OnClaim) -> Option<SweepClaim> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Some(SweepClaim {
                lock: None,
                on_claim,
            });
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read a setup lock; leaving it alone");
            return None;
        }
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Some(SweepClaim {
            lock: Some((path.to_path_buf(), lock)),
            on_claim,
        }),
        Err((_, Errno::EWOULDBLOCK)) => None,
        Err((_, errno)) => {
            tracing::warn!(path = %path.display(), error = %errno, "cannot lock a setup lock; leaving it alone");
            None
        }
    }
}

/// The turn of one sweep of what `dir` holds (bridges' lock files, or socket directories),
/// waited for: sweeps take turns, so that once `gc` returns, what another `gc` had claimed
/// meanwhile is dealt with too. Only the order hangs on it (each thing is claimed on its
/// own), so where it cannot be had the sweep goes on without it.
pub(crate) async fn sweep_turn(dir: &Path) -> Option<Flock<File>> {
    let path = dir.join(SWEEP_TURN);
    let dir = dir.to_path_buf();
    let shown = path.clone();
    let turn = off_thread(move || {
        private_dir(&dir)?;
        Flock::lock(open_lock_file(&path)?, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io::Error::from(errno))
    })
    .await;
    turn.inspect_err(|e| {
        tracing::debug!(path = %shown.display(), error = %e, "sweeping without waiting for other sweeps");
    })
    .ok()
}

/// The file sweeps take turns on, in the directory they sweep (no sandbox or bridge name
/// starts with a dot).
pub(crate) const SWEEP_TURN: &str = ".sweep";

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

#[cfg(test)]
mod tests;
