//! The account the shell runs as, and the privilege drop that gets it there.
//!
//! When sandboxd runs as root and is asked for another user (`--username openhands`), the shell is
//! started through sandboxd's own binary in a hidden mode (`--internal-exec-as UID GID NAME --
//! PROGRAM ARGS...`) that sets the groups, gid and uid and then execs the program. This keeps
//! privilege handling in Rust, needs nothing from the image (no `su`, no sudoers edits) and works
//! with `portable-pty`, which cannot set a uid itself.
//!
//! Users and groups come from `/etc/passwd` and `/etc/group`, parsed here, never from NSS
//! (`getpwnam`, `initgroups`): the sandboxd put into images is a static glibc binary, and NSS in
//! a static binary needs the shared NSS modules of the glibc it was linked with at run time.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use nix::unistd::{Gid, Uid};

/// The first argument that selects the hidden exec-as mode.
const EXEC_AS_FLAG: &str = "--internal-exec-as";

/// The password database. Read directly, not through `getpwnam`: that goes through NSS, which a
/// statically linked sandboxd (the one put into images) cannot rely on.
const PASSWD_FILE: &str = "/etc/passwd";

/// The group database, read directly for the same reason (instead of `initgroups`).
const GROUP_FILE: &str = "/etc/group";

/// A user to run the shell (and later the kernel) as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunAs {
    /// Login name.
    pub(crate) name: String,
    /// Numeric user id.
    pub(crate) uid: u32,
    /// Primary group id.
    pub(crate) gid: u32,
    /// Home directory.
    pub(crate) home: PathBuf,
    /// Login shell from the password database.
    shell: PathBuf,
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
    Lookup(String, std::io::Error),
    /// sandboxd could not take the user's rights for its own work (see [`separate`]).
    #[error("cannot act as user {name:?}: {reason}")]
    Separate {
        /// The user's name.
        name: String,
        /// What failed.
        reason: String,
    },
}

/// Which user the shell must switch to, if any.
///
/// Only root can switch; when sandboxd is not root it runs everything as itself (local use).
/// Root asked for root needs no switch either.
pub(crate) fn resolve(username: &str, user_id: u32) -> Result<Option<RunAs>, UserError> {
    // The real uid: a sandboxd already separated from its user (see `separate`) is still root.
    if !Uid::current().is_root() {
        return Ok(None);
    }
    let user = lookup(Path::new(PASSWD_FILE), username, user_id)?;
    if user.uid == 0 {
        return Ok(None);
    }
    Ok(Some(user))
}

/// Finds `username` in the password file at `passwd`.
fn lookup(passwd: &Path, username: &str, user_id: u32) -> Result<RunAs, UserError> {
    let data = std::fs::read(passwd).map_err(|e| {
        UserError::Lookup(
            username.to_owned(),
            std::io::Error::new(e.kind(), format!("{}: {e}", passwd.display())),
        )
    })?;
    // No fallback by uid: on a shared host, uid 1000 may be somebody else entirely.
    find_user(&data, username).ok_or_else(|| UserError::Missing {
        name: username.to_owned(),
        uid: user_id,
    })
}

/// The first entry named `name` in passwd(5) data, as `getpwnam` with the `files` service
/// finds it.
fn find_user(passwd: &[u8], name: &str) -> Option<RunAs> {
    records::<7>(passwd)
        .filter(|[entry_name, ..]| *entry_name == name.as_bytes())
        .find_map(parse_passwd_entry)
}

/// One passwd(5) entry: `name:password:uid:gid:gecos:home:shell`; `None` when the name is not
/// UTF-8 or an id is not a number.
fn parse_passwd_entry(
    [name, _password, uid, gid, _gecos, home, shell]: [&[u8]; 7],
) -> Option<RunAs> {
    Some(RunAs {
        name: std::str::from_utf8(name).ok()?.to_owned(),
        uid: parse_id(uid)?,
        gid: parse_id(gid)?,
        home: PathBuf::from(OsString::from_vec(home.to_vec())),
        shell: PathBuf::from(OsString::from_vec(shell.to_vec())),
    })
}

/// The groups `initgroups(name, gid)` would set, from group(5) data (`name:password:gid:members`):
/// `gid` first, then every group that lists `name` as a member, without duplicates.
fn supplementary_groups(group: &[u8], name: &str, gid: u32) -> Vec<u32> {
    let mut groups = vec![gid];
    for [_name, _password, group_id, members] in records::<4>(group) {
        let Some(group_id) = parse_id(group_id) else {
            continue;
        };
        let member = members
            .split(|&b| b == b',')
            .any(|m| m.trim_ascii() == name.as_bytes());
        if member && !groups.contains(&group_id) {
            groups.push(group_id);
        }
    }
    groups
}

/// The records of a passwd(5) or group(5) file, split at `:`. Blank lines, `#` comments, NIS
/// compat entries (`+`/`-`), empty names and lines without exactly `N` fields are skipped.
fn records<const N: usize>(data: &[u8]) -> impl Iterator<Item = [&[u8]; N]> {
    data.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line).trim_ascii_start();
        if matches!(line.first(), None | Some(b'#' | b'+' | b'-' | b':')) {
            return None;
        }
        let fields: Vec<&[u8]> = line.split(|&b| b == b':').collect();
        fields.try_into().ok()
    })
}

/// A decimal uid or gid; `None` for anything else (empty, signs, spaces, overflow).
fn parse_id(field: &[u8]) -> Option<u32> {
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// Supplementary groups of `name` from the group file; a missing file means no extra groups
/// (as `initgroups` does).
fn read_groups(group_file: &Path, name: &str, gid: u32) -> Result<Vec<u32>, String> {
    match std::fs::read(group_file) {
        Ok(data) => Ok(supplementary_groups(&data, name, gid)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![gid]),
        Err(e) => Err(format!("reading {}: {e}", group_file.display())),
    }
}

/// Separates sandboxd from the user it serves, keeping root only to start that user's processes.
///
/// sandboxd (started as root) takes the user's uid and groups as its *effective* ids, so every
/// file it reads or writes for an action is checked against the user's rights and new files
/// belong to the user; the *real* and *saved* ids stay root. That makes sandboxd a process the
/// user's code cannot touch: the kernel lets a process signal another only when its uid matches
/// the target's real or saved uid (`kill -9 -1` by the user passes sandboxd by), ptrace needs all
/// three to match, and the credential change makes sandboxd non-dumpable, so its `/proc` files
/// (its environment with the session key, its memory) belong to root. sandboxd can still signal
/// the user's processes and read their `/proc/PID/syscall` (its effective and filesystem uid are
/// theirs), and it starts them through [`wrap_command`], whose exec-as mode takes root back
/// ([`regain_root`]) before switching all ids to the user. Capabilities: the permitted set stays
/// (the real uid is 0) and the effective set is emptied (the effective uid is not).
///
/// The user can still reach sandboxd's rights through anything that makes them root (the
/// `sudo` a sandbox may allow): such a sandbox trusts its user with root.
pub(crate) fn separate(user: &RunAs) -> Result<(), UserError> {
    let fail = |reason: String| UserError::Separate {
        name: user.name.clone(),
        reason,
    };
    let groups: Vec<Gid> = read_groups(Path::new(GROUP_FILE), &user.name, user.gid)
        .map_err(fail)?
        .into_iter()
        .map(Gid::from_raw)
        .collect();
    let root_uid = Uid::from_raw(0);
    let root_gid = Gid::from_raw(0);
    // Groups first: setgroups needs CAP_SETGID, which the effective uid change below clears.
    nix::unistd::setgroups(&groups).map_err(|e| fail(format!("setgroups: {e}")))?;
    nix::unistd::setresgid(root_gid, Gid::from_raw(user.gid), root_gid)
        .map_err(|e| fail(format!("setresgid: {e}")))?;
    nix::unistd::setresuid(root_uid, Uid::from_raw(user.uid), root_uid)
        .map_err(|e| fail(format!("setresuid: {e}")))?;
    // The kernel already did this on the uid change (unless the host's fs.suid_dumpable says
    // otherwise); say it explicitly.
    nix::sys::prctl::set_dumpable(false).map_err(|e| fail(format!("PR_SET_DUMPABLE: {e}")))?;
    Ok(())
}

/// Takes root back when the real uid is root but the effective one is not: in a process that
/// [`separate`] left that way and that then re-executed itself (exec-as mode, a pre-started
/// sandboxd taking its configuration). Allowed without privilege: the effective and saved ids
/// may always be set to the real ones.
pub fn regain_root() -> Result<(), String> {
    if !Uid::current().is_root() || Uid::effective().is_root() {
        return Ok(());
    }
    let (root_uid, root_gid) = (Uid::from_raw(0), Gid::from_raw(0));
    nix::unistd::setresuid(root_uid, root_uid, root_uid)
        .map_err(|e| format!("taking root back (setresuid): {e}"))?;
    nix::unistd::setresgid(root_gid, root_gid, root_gid)
        .map_err(|e| format!("taking root back (setresgid): {e}"))
}

/// Empties the capability bounding set when no-new-privileges is on (as in agentd's
/// containers), so that the user's processes hold no capability in any set, not even one they
/// could never use. Without no-new-privileges the set is kept: a setuid `sudo` the sandbox
/// allows needs it. Dropping needs CAP_SETPCAP; a process that lacks it keeps the set (it
/// cannot use it either: no-new-privileges already stops every way of gaining one).
fn drop_bounding_set_under_no_new_privs() -> Result<(), String> {
    if !nix::sys::prctl::get_no_new_privs().unwrap_or(false)
        || !caps::has_cap(None, caps::CapSet::Effective, caps::Capability::CAP_SETPCAP)
            .unwrap_or(false)
    {
        return Ok(());
    }
    let bounding = caps::read(None, caps::CapSet::Bounding)
        .map_err(|e| format!("reading the capability bounding set: {e}"))?;
    for cap in bounding {
        caps::drop(None, caps::CapSet::Bounding, cap)
            .map_err(|e| format!("dropping {cap} from the bounding set: {e}"))?;
    }
    Ok(())
}

/// The program and arguments that run `program args...` as `user`.
pub(crate) fn wrap_command(user: &RunAs, program: &str, args: &[&str]) -> Vec<OsString> {
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
    regain_root()?;
    let uid = Uid::from_raw(uid.parse().map_err(|e| format!("bad uid {uid:?}: {e}"))?);
    let gid = Gid::from_raw(gid.parse().map_err(|e| format!("bad gid {gid:?}: {e}"))?);
    let groups: Vec<Gid> = read_groups(Path::new(GROUP_FILE), name, gid.as_raw())?
        .into_iter()
        .map(Gid::from_raw)
        .collect();
    drop_bounding_set_under_no_new_privs()?;
    nix::unistd::setgroups(&groups).map_err(|e| format!("setgroups: {e}"))?;
    nix::unistd::setgid(gid).map_err(|e| format!("setgid: {e}"))?;
    nix::unistd::setuid(uid).map_err(|e| format!("setuid: {e}"))?;
    let cprogram = CString::new(program.as_str()).map_err(|e| e.to_string())?;
    let mut cargs = vec![cprogram.clone()];
    for arg in rest {
        cargs.push(CString::new(arg.as_str()).map_err(|e| e.to_string())?);
    }
    nix::unistd::execvp(&cprogram, &cargs).map_err(|e| format!("exec {program}: {e}"))
}

#[cfg(test)]
mod tests;
