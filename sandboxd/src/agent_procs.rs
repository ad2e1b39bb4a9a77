//! The processes the agent started, and killing them all: the recovery from a runaway process
//! tree (a fork bomb filling the pids limit, forgotten servers, background jobs), for `C-c` at
//! the prompt and `POST /processes/kill_all`.
//!
//! sandboxd's direct children are its own: the main shell, `is_static` shells and the IPython
//! kernel. They are spared (the shell keeps its directory and variables, the kernel its state);
//! everything below them, and with [`Scope::Uid`] every other process of the sandbox user, is
//! killed. Killing is done in passes from this process, without forking (a fork bomb has taken
//! every free pid): each pass stops every target (a stopped process cannot fork), and when a
//! pass finds no target it has not stopped yet, every stopped target is killed.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sandbox_common::ProcStat;

/// Which processes count as the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// sandboxd's descendants below its direct children. A job that left the tree (a double
    /// fork: `setsid -f`, a daemon) is reparented to init and no longer found: the scope of a
    /// sandboxd that shares its uid with other programs (local use).
    Tree,
    /// Every process whose real uid is this one, except sandboxd's direct children: for a
    /// sandbox whose user runs nothing but the agent's code (a container), where jobs that
    /// left the tree are found too.
    Uid(u32),
}

/// Longest time one [`kill_all`] spends stopping and killing.
const KILL_BUDGET: Duration = Duration::from_secs(5);

/// One process as the scan sees it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: u32,
    ppid: u32,
    start_time: u64,
}

/// Stops and kills every process of the agent's in `scope` (see the module doc); returns how
/// many were killed. Blocking (reads `/proc`), quick: a few milliseconds per thousand processes.
pub(crate) fn kill_all(scope: Scope) -> usize {
    let me = std::process::id();
    let deadline = Instant::now() + KILL_BUDGET;
    // Identified by pid and start time, so that a pid reused after a kill is not counted twice.
    let mut stopped: BTreeSet<(u32, u64)> = BTreeSet::new();
    loop {
        let targets = targets(&scan(scope), me, scope);
        let new: Vec<&Proc> = targets
            .iter()
            .filter(|p| !stopped.contains(&(p.pid, p.start_time)))
            .collect();
        if new.is_empty() || Instant::now() >= deadline {
            break;
        }
        for p in new {
            signal(p.pid, Signal::SIGSTOP);
            stopped.insert((p.pid, p.start_time));
        }
    }
    for &(pid, _) in &stopped {
        signal(pid, Signal::SIGKILL);
    }
    // Whatever appeared between the last scan and the kills (a fork that raced the stop).
    while Instant::now() < deadline {
        let left = targets(&scan(scope), me, scope);
        if left.is_empty() {
            break;
        }
        for p in &left {
            signal(p.pid, Signal::SIGKILL);
            stopped.insert((p.pid, p.start_time));
        }
    }
    stopped.len()
}

/// Sends `signal` to `pid`, ignoring a process that is already gone.
fn signal(pid: u32, signal: Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// The processes of the scope: for [`Scope::Uid`] those of the uid, for [`Scope::Tree`] all
/// (the tree is cut out by [`targets`]). Zombies are left out: they are dead already.
fn scan(scope: Scope) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        if let Scope::Uid(uid) = scope
            && real_uid(pid)? != uid
        {
            return None;
        }
        let stat = ProcStat::read(pid)?;
        (!stat.is_zombie()).then_some(Proc {
            pid,
            ppid: stat.ppid,
            start_time: stat.start_time,
        })
    })
    .collect()
}

/// The real uid of `pid` (the first field of `Uid:` in `/proc/PID/status`).
pub(crate) fn real_uid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))?
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Which of `procs` to kill: never `me` nor `me`'s direct children; with [`Scope::Tree`] only
/// the descendants of `me`'s children.
fn targets(procs: &[Proc], me: u32, scope: Scope) -> Vec<Proc> {
    let spared = |p: &Proc| p.pid == me || p.ppid == me;
    match scope {
        Scope::Uid(_) => procs.iter().filter(|p| !spared(p)).copied().collect(),
        Scope::Tree => {
            let mut children: HashMap<u32, Vec<Proc>> = HashMap::new();
            for p in procs {
                children.entry(p.ppid).or_default().push(*p);
            }
            let mut found = Vec::new();
            let mut frontier: Vec<u32> = children
                .get(&me)
                .map(|c| c.iter().map(|p| p.pid).collect())
                .unwrap_or_default();
            while let Some(parent) = frontier.pop() {
                for child in children.get(&parent).into_iter().flatten() {
                    if !spared(child) {
                        found.push(*child);
                        frontier.push(child.pid);
                    }
                }
            }
            found
        }
    }
}

/// The sandbox's processes in `scope` with whether each is sandboxd's own (a shell or the
/// kernel: its direct children, `true`) or the agent's (what [`kill_all`] kills, `false`);
/// never sandboxd itself.
pub(crate) fn sandbox_processes(scope: Scope) -> Vec<(u32, bool)> {
    let me = std::process::id();
    let procs = scan(scope);
    let mut found: Vec<(u32, bool)> = procs
        .iter()
        .filter(|p| p.ppid == me)
        .map(|p| (p.pid, true))
        .collect();
    found.extend(targets(&procs, me, scope).iter().map(|p| (p.pid, false)));
    found
}

/// Every living descendant of `pid`, parents before their children.
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for p in scan(Scope::Tree) {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            if child != pid && !found.contains(&child) {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
