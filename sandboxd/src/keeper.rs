//! The hidden `--internal-keeper` mode: a small parent that outlives sandboxd, so that nothing
//! sandboxd started outlives sandboxd.
//!
//! Started as `sandboxd --internal-keeper ARGS...` (agentd's local runtime does this), the
//! process becomes a child subreaper (prctl(2) `PR_SET_CHILD_SUBREAPER`) and starts the real
//! sandboxd with `ARGS` as its only child. Every process of the sandbox that loses its parent
//! (`setsid -f`, `nohup ... &` of a shell that exited, a daemon that double-forked, a kernel's
//! children) is adopted by the keeper instead of by init, whatever it did to its session, group
//! or environment. The keeper reaps them as they exit; when sandboxd itself exits — stopped, or
//! SIGKILLed — it kills every process it holds (their children are adopted in turn, until none
//! is left), reaps them, and ends with sandboxd's own status (the same signal, or exit code).
//!
//! SIGTERM, SIGINT and SIGHUP sent to the keeper go to sandboxd, which stops cleanly. With
//! `SANDBOXD_PARENT_PID` (sandboxd's `--exit-with-parent`) the keeper follows that parent's
//! death (SIGTERM, passed on) and gives sandboxd its own pid as the parent to follow.
//!
//! Inside a container none of this is needed: PID 1 (Docker's init) reaps orphans, and the
//! agent's code cannot signal sandboxd there.

use std::ffi::OsString;
use std::process::ExitCode;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use sandbox_common::ProcStat;
use sandbox_common::modes::KEEPER;

/// The variable that names the process sandboxd follows (`--exit-with-parent`).
const PARENT_VAR: &str = "SANDBOXD_PARENT_PID";

/// Runs the keeper if the first argument asks for it: returns the exit code to end with, or
/// `None` when this is not the keeper mode.
pub fn keep_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let _program = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(KEEPER)) {
        return None;
    }
    Some(match keep(args.collect()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("sandboxd keeper: {error}");
            ExitCode::FAILURE
        }
    })
}

/// Why the keeper could not start sandboxd.
#[derive(Debug, thiserror::Error)]
enum KeeperError {
    #[error("cannot become a child subreaper: {0}")]
    Subreaper(Errno),
    #[error("cannot follow the parent's death: {0}")]
    ParentDeath(Errno),
    #[error("parent {0} is gone; not starting")]
    ParentGone(i32),
    #[error("{PARENT_VAR} is not a pid: {0:?}")]
    BadParent(String),
    #[error("cannot find its own executable: {0}")]
    Executable(std::io::Error),
    #[error("cannot start sandboxd: {0}")]
    Spawn(std::io::Error),
    #[error("cannot block signals: {0}")]
    Signals(Errno),
}

/// The signals the keeper waits for: its children's ends and the requests to stop.
fn waited_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        set.add(signal);
    }
    set
}

fn keep(args: Vec<OsString>) -> Result<ExitCode, KeeperError> {
    nix::sys::prctl::set_child_subreaper(true).map_err(KeeperError::Subreaper)?;
    if let Ok(parent) = std::env::var(PARENT_VAR) {
        let parent: i32 = parent
            .trim()
            .parse()
            .map_err(|_| KeeperError::BadParent(parent.clone()))?;
        nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(KeeperError::ParentDeath)?;
        if nix::unistd::getppid().as_raw() != parent {
            return Err(KeeperError::ParentGone(parent));
        }
    }
    let exe = std::env::current_exe().map_err(KeeperError::Executable)?;
    // The child must start with no signal blocked (the mask survives exec), so they are
    // blocked only once it runs. A stop request in between ends the keeper; its owner then
    // kills the process group, sandboxd with it, before anything could have escaped.
    let child = std::process::Command::new(exe)
        .args(args)
        .env(PARENT_VAR, std::process::id().to_string())
        .spawn()
        .map_err(KeeperError::Spawn)?;
    let sandboxd = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    // Reaping is done here, by pid, not through `child`.
    drop(child);
    let waited = waited_signals();
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&waited), None).map_err(KeeperError::Signals)?;

    let status = wait_for(sandboxd, &waited);
    kill_the_rest();
    Ok(end_like(status))
}

/// Reaps adopted processes and passes stop requests on, until sandboxd has exited.
fn wait_for(sandboxd: Pid, waited: &SigSet) -> WaitStatus {
    loop {
        // A child may have ended before its signal was blocked: look first, then wait.
        if let Some(status) = reap_ready(sandboxd) {
            return status;
        }
        match waited.wait() {
            Ok(Signal::SIGCHLD) | Err(_) => {}
            Ok(stop) => {
                let _ = kill(sandboxd, stop);
            }
        }
    }
}

/// Reaps every child that has ended; returns sandboxd's status if it is among them.
fn reap_ready(sandboxd: Pid) -> Option<WaitStatus> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return None,
            Ok(status) if status.pid() == Some(sandboxd) => return Some(status),
            Ok(_) => {}
            Err(Errno::EINTR) => {}
            // ECHILD: sandboxd is gone without a status we saw; nothing to wait for.
            Err(_) => return Some(WaitStatus::Exited(sandboxd, 1)),
        }
    }
}

/// SIGKILLs every process the keeper holds and reaps it, until it has no child left. A killed
/// process's own children are adopted by the keeper, and killed in the next round.
fn kill_the_rest() {
    let me = std::process::id();
    loop {
        for pid in children_of(me) {
            let _ = kill(pid, Signal::SIGKILL);
        }
        if let Err(Errno::ECHILD) = waitpid(None, None) {
            return;
        }
    }
}

/// The live children of `parent`, from `/proc`.
fn children_of(parent: u32) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            ProcStat::read(pid).is_some_and(|stat| stat.ppid == parent && !stat.is_zombie())
        })
        .filter_map(|pid| i32::try_from(pid).ok().map(Pid::from_raw))
        .collect()
}

/// Ends the keeper as sandboxd ended: by the same signal, or with the same exit code.
fn end_like(status: WaitStatus) -> ExitCode {
    match status {
        WaitStatus::Exited(_, code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        WaitStatus::Signaled(_, signal, _) => {
            // No handler was installed, so the default action applies once it is unblocked.
            let _ = nix::sys::signal::raise(signal);
            let mut only = SigSet::empty();
            only.add(signal);
            let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
            ExitCode::from(128u8.saturating_add(signal as u8))
        }
        _ => ExitCode::FAILURE,
    }
}
