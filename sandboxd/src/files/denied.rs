//! What to tell the model when a `write` or `edit` failed because the sandbox user may not write
//! the file: the reference's error text alone (`[Errno 13] Permission denied: '/workspace/x'`)
//! leads models to retry the same call; naming the user, the owner and the mode lets them act
//! (write elsewhere, fix the permissions, or tell the user).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::errno::Errno;
use nix::unistd::{AccessFlags, Gid, Uid, eaccess};

/// The errnos of the messages [`super::pycompat::os_error_message`] writes for a write that was
/// not allowed: EPERM, EACCES, EROFS.
const DENIED: [&str; 3] = ["[Errno 1] ", "[Errno 13] ", "[Errno 30] "];

/// `message` of a failed write to `path`, with a paragraph added when it failed because this
/// process may not write the file (or the nearest existing directory above it).
pub(super) fn explain(message: String, path: &Path) -> String {
    if !DENIED.iter().any(|errno| message.contains(errno)) {
        return message;
    }
    let read_only = message.contains("[Errno 30] ");
    match hint(path, read_only) {
        Some(hint) => message + &hint,
        None => message,
    }
}

/// The paragraph for [`explain`]; `None` when the place is writable after all. `read_only`:
/// the write failed with EROFS, which is then the reason given, whatever the permissions.
fn hint(path: &Path, read_only: bool) -> Option<String> {
    let target = std::iter::successors(Some(path), |p| p.parent())
        .find(|p| std::fs::symlink_metadata(p).is_ok())?;
    let meta = std::fs::metadata(target).ok()?;
    let wanted = if meta.is_dir() {
        AccessFlags::W_OK | AccessFlags::X_OK
    } else {
        AccessFlags::W_OK
    };
    let what = if meta.is_dir() { "directory" } else { "file" };
    let uid = Uid::effective();
    let gid = Gid::effective();
    // With the effective ids, which file actions use: a sandboxd separated from its user
    // keeps root as its real uid (see `crate::user::separate`), which `access` would check.
    let access = match eaccess(target, wanted) {
        Err(Errno::EACCES | Errno::EPERM | Errno::EROFS) if read_only => Err(Errno::EROFS),
        other => other,
    };
    match access {
        Ok(()) => None,
        Err(Errno::EROFS) => Some(format!(
            "\n\nThe {what} {} is on a read-only file system: nothing can be written there. Write under the workspace or /tmp instead.",
            target.display()
        )),
        Err(Errno::EACCES | Errno::EPERM) => Some(format!(
            "\n\nThis is a permission problem, and retrying will not help: the sandbox user (uid {uid}, gid {gid}) may not write the {what} {}, which belongs to uid {}, gid {} with mode {:04o}. Write somewhere the sandbox user owns (the workspace, /tmp or the home directory), change the permissions if you are allowed to (e.g. with sudo), or tell the user.",
            target.display(),
            meta.uid(),
            meta.gid(),
            meta.mode() & 0o7777,
        )),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests;
