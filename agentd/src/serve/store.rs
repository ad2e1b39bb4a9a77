//! Which session owns which sandbox, on disk: one 0600 JSON file per claimed sandbox in a 0700
//! directory, so that a restarted service finds its sessions (and their keys) again.
//!
//! Container labels cannot hold this: a warm sandbox is created before anyone claims it, and
//! Docker cannot change a container's labels afterwards. The labels name the service and the
//! runtime id; these files add the session, its owner and its session API key, and, only until
//! sandboxd has taken it, the configuration it is to start with (the caller's environment may
//! hold secrets, so it does not stay on disk longer than that).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A claimed sandbox, as kept on disk (this module's own format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Claim {
    /// The runtime id (= container name).
    pub(crate) runtime_id: String,
    /// The caller's session id.
    pub(crate) session_id: String,
    /// Fingerprint of the API key that started it.
    pub(crate) owner: String,
    /// The image the caller asked for.
    pub(crate) image: String,
    /// The data plane's key.
    pub(crate) session_api_key: String,
    /// RFC 3339 start time.
    pub(crate) created_at: String,
    /// The configuration sent to the waiting sandboxd, kept until it took it: a service killed
    /// in between sends it again when it restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pending_configuration: Option<protocol::api::ConfigureRequest>,
}

/// Errors of the state directory. Retrying helps only once the disk problem is fixed.
#[derive(Debug, thiserror::Error)]
#[error("state directory {}: {source}", .path.display())]
pub struct ClaimStoreError {
    /// The file or directory.
    pub(crate) path: PathBuf,
    /// Why.
    pub(crate) source: std::io::Error,
}

/// The directory of claims.
#[derive(Debug, Clone)]
pub(crate) struct ClaimStore {
    dir: PathBuf,
}

impl ClaimStore {
    /// Opens (creating, 0700) `dir`.
    pub(crate) fn open(dir: &Path) -> Result<ClaimStore, ClaimStoreError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let io = |source| ClaimStoreError {
            path: dir.to_path_buf(),
            source,
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
        Ok(ClaimStore {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, runtime_id: &str) -> PathBuf {
        self.dir.join(format!("{runtime_id}.json"))
    }

    /// Writes a claim atomically (a 0600 temporary file renamed over the old one).
    pub fn save(&self, claim: &Claim) -> Result<(), ClaimStoreError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path(&claim.runtime_id);
        let tmp = self.dir.join(format!(".{}.tmp", claim.runtime_id));
        let io = |source| ClaimStoreError {
            path: path.clone(),
            source,
        };
        let json = serde_json::to_vec_pretty(claim).map_err(|e| io(e.into()))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io)?;
        file.write_all(&json).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    /// Forgets a claim (no error if there is none).
    pub(crate) fn remove(&self, runtime_id: &str) -> Result<(), ClaimStoreError> {
        let path = self.path(runtime_id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(ClaimStoreError { path, source }),
        }
    }

    /// Every claim; unreadable files are logged and skipped.
    pub(crate) fn load_all(&self) -> Result<Vec<Claim>, ClaimStoreError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| ClaimStoreError {
            path: self.dir.clone(),
            source,
        })?;
        let mut claims = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Claim>(&b).map_err(|e| e.to_string()))
            {
                Ok(claim) => claims.push(claim),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "skipping an unreadable claim")
                }
            }
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests;
