//! Who the sandbox user is. A bind-mounted workspace belongs to somebody on the host; the
//! sandbox user takes that uid and gid, so that what the agent writes belongs to the project's
//! owner and what the owner has the agent can change. Root is a policy decision: a workspace
//! owned by root (or a request for root) is refused unless the operator allows root sandboxes,
//! and a sandbox that could not write its workspace is never started.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The sandbox user every sandbox image has (see `images/`).
pub(crate) const SANDBOX_USER: &str = "openhands";
/// Its uid and gid as the image is built.
pub(crate) const SANDBOX_UID: u32 = 1000;

/// The user the sandbox's shell, kernel and file actions run as. `uid` 0 is root; any other uid
/// is the image's sandbox user (`openhands`) renumbered to `uid:gid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SandboxUser {
    /// User id.
    pub(crate) uid: u32,
    /// Primary group id.
    pub(crate) gid: u32,
}

impl Default for SandboxUser {
    /// The image's sandbox user as built (uid and gid 1000).
    fn default() -> SandboxUser {
        SandboxUser {
            uid: SANDBOX_UID,
            gid: SANDBOX_UID,
        }
    }
}

impl SandboxUser {
    /// Root.
    pub(crate) const ROOT: SandboxUser = SandboxUser { uid: 0, gid: 0 };

    /// Whether this is root.
    pub(crate) fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether the image's sandbox user must be renumbered for it (see
    /// [`super::image::ensure_user_image`]).
    pub(crate) fn needs_renumbering(&self) -> bool {
        !self.is_root() && *self != SandboxUser::default()
    }

    /// The login name inside the sandbox.
    pub(crate) fn name(&self) -> &'static str {
        if self.is_root() { "root" } else { SANDBOX_USER }
    }

    /// The home directory inside the sandbox.
    pub(crate) fn home(&self) -> String {
        if self.is_root() {
            "/root".to_string()
        } else {
            format!("/home/{SANDBOX_USER}")
        }
    }
}

impl std::fmt::Display for SandboxUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.uid, self.gid)
    }
}

impl std::str::FromStr for SandboxUser {
    type Err = String;

    /// `UID` (the gid is then the uid) or `UID:GID`, decimal.
    fn from_str(s: &str) -> Result<SandboxUser, String> {
        let number = |part: &str| {
            part.parse::<u32>()
                .map_err(|_| format!("{s:?} is not UID or UID:GID (decimal numbers)"))
        };
        match s.split_once(':') {
            Some((uid, gid)) => Ok(SandboxUser {
                uid: number(uid)?,
                gid: number(gid)?,
            }),
            None => {
                let uid = number(s)?;
                Ok(SandboxUser { uid, gid: uid })
            }
        }
    }
}

/// Where the policy that allows root sandboxes is set, named in refusals.
pub(crate) const ALLOW_ROOT_HINT: &str =
    "--allow-root, AGENTD_ALLOW_ROOT=1, or allow_root = true in [docker] (agentd serve: [serve])";

/// Why a sandbox user cannot be chosen. None of these is helped by retrying.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// The workspace belongs to root and root sandboxes are not allowed.
    #[error(
        "the workspace {path} belongs to root (uid 0), and sandboxes do not run as root unless the operator allows it: \
         the sandbox user takes the workspace owner's uid, so that what the agent writes belongs to the project's owner. \
         Give the directory to a user (e.g. `chown -R 1000:1000 {path}`; the sandbox then runs as that uid), \
         or allow root sandboxes ({ALLOW_ROOT_HINT})"
    )]
    RootWorkspace {
        /// The workspace.
        path: PathBuf,
    },
    /// Root was asked for and root sandboxes are not allowed.
    #[error(
        "a sandbox as root (uid 0) was asked for, and root sandboxes are not allowed by this host's policy; \
         ask for another uid, or allow root sandboxes ({ALLOW_ROOT_HINT})"
    )]
    RootRequested,
    /// The chosen user could not write the workspace.
    #[error(
        "the sandbox user (uid {uid}, gid {gid}) could not write the workspace {path} \
         (owner {owner_uid}:{owner_gid}, mode {mode:04o}); choose the workspace owner's uid \
         (the default: leave out --sandbox-uid) or change the directory's owner or mode"
    )]
    WorkspaceNotWritable {
        /// The workspace.
        path: PathBuf,
        /// The chosen uid.
        uid: u32,
        /// The chosen gid.
        gid: u32,
        /// The directory's owner.
        owner_uid: u32,
        /// The directory's group.
        owner_gid: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// The workspace is missing or not a directory (Docker would create a root-owned one).
    #[error("the workspace {path} is not a directory: {reason}")]
    BadWorkspace {
        /// The workspace.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The sandbox user for a sandbox that mounts `workspace`: `requested` when given, else the
/// workspace's owner, else the image's sandbox user. Root only with `allow_root`; a user that
/// could not write the workspace is refused.
pub fn choose(
    workspace: Option<&Path>,
    requested: Option<SandboxUser>,
    allow_root: bool,
) -> Result<SandboxUser, UserError> {
    let meta = match workspace {
        Some(path) => Some(
            std::fs::metadata(path)
                .map_err(|e| UserError::BadWorkspace {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })
                .and_then(|meta| {
                    if meta.is_dir() {
                        Ok(meta)
                    } else {
                        Err(UserError::BadWorkspace {
                            path: path.to_path_buf(),
                            reason: "it is a file".to_string(),
                        })
                    }
                })?,
        ),
        None => None,
    };
    let user = match (requested, &meta) {
        (Some(user), _) => user,
        (None, Some(meta)) => SandboxUser {
            uid: meta.uid(),
            gid: meta.gid(),
        },
        (None, None) => SandboxUser::default(),
    };
    if user.is_root() && !allow_root {
        return Err(match (requested, workspace) {
            (None, Some(path)) => UserError::RootWorkspace {
                path: path.to_path_buf(),
            },
            _ => UserError::RootRequested,
        });
    }
    if let (Some(path), Some(meta)) = (workspace, &meta)
        && !user.is_root()
        && !can_write(user, meta)
    {
        return Err(UserError::WorkspaceNotWritable {
            path: path.to_path_buf(),
            uid: user.uid,
            gid: user.gid,
            owner_uid: meta.uid(),
            owner_gid: meta.gid(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(user)
}

/// Whether `user` may create files in a directory with this owner and mode (write and search
/// permission by the class that applies; ACLs are not consulted).
fn can_write(user: SandboxUser, meta: &std::fs::Metadata) -> bool {
    let mode = meta.mode();
    let bits = if meta.uid() == user.uid {
        mode >> 6
    } else if meta.gid() == user.gid {
        mode >> 3
    } else {
        mode
    };
    bits & 0o3 == 0o3
}

#[cfg(test)]
mod tests;
