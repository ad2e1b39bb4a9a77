//! The account the shell runs as, and the privilege drop that gets it there.
//!
//! When sandboxd runs as root and is asked for another user (`--username openhands`), the shell is
//! started through sandboxd's own binary in a hidden mode (`--internal-exec-as UID GID NAME --
//! PROGRAM ARGS...`) that sets the groups, gid and uid and then execs the program. This keeps
//! privilege handling in Rust, needs nothing from the image (no `su`, no sudoers edits) and works
//! with `portable-pty`, which cannot set a uid itself.

use std::ffi::{CString, OsString};
use std::path::PathBuf;

use nix::unistd::{Gid, Uid, User};

/// The first argument that selects the hidden exec-as mode.
pub const EXEC_AS_FLAG: &str = "--internal-exec-as";

/// A user to run the shell (and later the kernel) as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// Login name.
    pub name: String,
    /// Numeric user id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Home directory.
    pub home: PathBuf,
    /// Login shell from the password database.
    pub shell: PathBuf,
}

/// Errors resolving the shell user.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// The user does not exist and sandboxd will not create it (no retry helps: fix the image).
    #[error(
        "user {name:?} (uid {uid}) does not exist; the sandbox image must provide it, or pass --username root to keep root"
    )]
    Missing {
        /// Requested name.
        name: String,
        /// Requested uid.
        uid: u32,
    },
    /// The password database could not be read (no retry helps).
    #[error("cannot look up user {0:?}: {1}")]
    Lookup(String, nix::Error),
}

/// Which user the shell must switch to, if any.
///
/// Only root can switch; when sandboxd is not root it runs everything as itself (local use).
/// Root asked for root needs no switch either.
pub fn resolve(username: &str, user_id: u32) -> Result<Option<RunAs>, UserError> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    let user = match User::from_name(username) {
        Ok(Some(user)) => user,
        // No fallback by uid: on a shared host, uid 1000 may be somebody else entirely.
        Ok(None) => {
            return Err(UserError::Missing {
                name: username.to_owned(),
                uid: user_id,
            });
        }
        Err(e) => return Err(UserError::Lookup(username.to_owned(), e)),
    };
    if user.uid.is_root() {
        return Ok(None);
    }
    Ok(Some(RunAs {
        name: user.name,
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        home: user.dir,
        shell: user.shell,
    }))
}

/// The program and arguments that run `program args...` as `user`.
pub fn wrap_command(user: &RunAs, program: &str, args: &[&str]) -> Vec<OsString> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"));
    let mut argv: Vec<OsString> = vec![
        exe.into_os_string(),
        EXEC_AS_FLAG.into(),
        user.uid.to_string().into(),
        user.gid.to_string().into(),
        user.name.clone().into(),
        "--".into(),
        program.into(),
    ];
    argv.extend(args.iter().map(OsString::from));
    argv
}

/// If this process was started in exec-as mode, drop privileges and exec the program; returns
/// only on failure (with the reason), or `None` when not in that mode.
pub fn exec_as_if_requested() -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(EXEC_AS_FLAG) {
        return None;
    }
    Some(match exec_as(&args[2..]) {
        Ok(never) => match never {},
        Err(e) => e,
    })
}

fn exec_as(args: &[String]) -> Result<std::convert::Infallible, String> {
    let [uid, gid, name, dashdash, program, rest @ ..] = args else {
        return Err(format!(
            "usage: {EXEC_AS_FLAG} UID GID NAME -- PROGRAM [ARGS...]"
        ));
    };
    if dashdash != "--" {
        return Err(format!("expected -- after the user name, got {dashdash:?}"));
    }
    let uid = Uid::from_raw(uid.parse().map_err(|e| format!("bad uid {uid:?}: {e}"))?);
    let gid = Gid::from_raw(gid.parse().map_err(|e| format!("bad gid {gid:?}: {e}"))?);
    let cname = CString::new(name.as_str()).map_err(|e| e.to_string())?;
    nix::unistd::initgroups(&cname, gid).map_err(|e| format!("initgroups: {e}"))?;
    nix::unistd::setgid(gid).map_err(|e| format!("setgid: {e}"))?;
    nix::unistd::setuid(uid).map_err(|e| format!("setuid: {e}"))?;
    let cprogram = CString::new(program.as_str()).map_err(|e| e.to_string())?;
    let mut cargs = vec![cprogram.clone()];
    for arg in rest {
        cargs.push(CString::new(arg.as_str()).map_err(|e| e.to_string())?);
    }
    nix::unistd::execvp(&cprogram, &cargs).map_err(|e| format!("exec {program}: {e}"))
}
