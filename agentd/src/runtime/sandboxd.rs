//! sandboxd as every runtime knows it: the binary on this host that the local runtime runs and
//! the Docker runtime puts into images, and the directory a sandbox works in.

use std::path::PathBuf;

/// Where a sandbox's workspace is (a Docker sandbox's `workspace` is mounted there), and where
/// its shell starts; a runtime API sandbox is started with it as its working directory.
pub(crate) const WORKSPACE: &str = "/workspace";

/// The sandboxd binary that the local runtime runs and that goes into images:
/// `AGENTD_SANDBOXD_BIN`, else a `sandboxd` next to the running executable. In an image it must
/// run on the base image's libc: `images/build-sandboxd.sh` builds a static one.
pub(crate) fn default_sandboxd_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTD_SANDBOXD_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let sibling = exe.parent()?.join("sandboxd");
    sibling.is_file().then_some(sibling)
}
