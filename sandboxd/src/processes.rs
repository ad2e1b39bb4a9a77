//! The sandbox's processes for `GET /processes` and signals for
//! `POST /processes/{pid}/signal`: what [`crate::agent_procs`] counts as the sandbox's (its
//! shells and kernel, and everything the agent started), never sandboxd itself.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, SysconfVar, sysconf};
use protocol::api::{ProcessInfo, SignalSpec};
use sandbox_common::ProcStat;

use crate::agent_procs::{self, Scope};

/// Why a signal was not sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SignalError {
    /// Not a signal this system knows (no retry helps).
    #[error("unknown signal {0}")]
    UnknownSignal(String),
    /// The pid is not one of the sandbox's processes (gone, or never was).
    #[error("process {0} is not one of the sandbox's processes")]
    NotFound(u32),
}

/// The signal a request names.
pub(crate) fn parse_signal(spec: &SignalSpec) -> Result<Signal, SignalError> {
    match spec {
        SignalSpec::Number(n) => {
            Signal::try_from(*n).map_err(|_| SignalError::UnknownSignal(n.to_string()))
        }
        SignalSpec::Name(name) => {
            let upper = name.trim().to_ascii_uppercase();
            let full = if upper.starts_with("SIG") {
                upper
            } else {
                format!("SIG{upper}")
            };
            Signal::from_str(&full).map_err(|_| SignalError::UnknownSignal(format!("{name:?}")))
        }
    }
}

/// The sandbox's processes in `scope`, its own shells and kernel first. Blocking (reads `/proc`).
pub(crate) fn list(scope: Scope) -> Vec<ProcessInfo> {
    let clock = Clock::now();
    agent_procs::sandbox_processes(scope)
        .into_iter()
        .filter_map(|(pid, sandbox)| info(pid, sandbox, &clock))
        .collect()
}

/// Sends `signal` to `pid`, one of the sandbox's processes, and with `tree` to all its
/// descendants: those are first stopped (so that none forks away meanwhile), then signalled,
/// then continued. Returns who got it.
pub(crate) fn signal(
    scope: Scope,
    pid: u32,
    signal: Signal,
    tree: bool,
) -> Result<Vec<u32>, SignalError> {
    let ours = agent_procs::sandbox_processes(scope)
        .iter()
        .any(|(p, _)| *p == pid);
    if !ours {
        return Err(SignalError::NotFound(pid));
    }
    if !tree {
        send(pid, signal);
        return Ok(vec![pid]);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut stopped: BTreeSet<u32> = BTreeSet::new();
    loop {
        let mut family = agent_procs::descendants(pid);
        family.insert(0, pid);
        let new: Vec<u32> = family
            .into_iter()
            .filter(|p| !stopped.contains(p))
            .collect();
        if new.is_empty() || Instant::now() >= deadline {
            break;
        }
        for p in new {
            send(p, Signal::SIGSTOP);
            stopped.insert(p);
        }
    }
    let mut signaled: Vec<u32> = stopped.into_iter().collect();
    signaled.retain(|p| ProcStat::read(*p).is_some_and(|s| !s.is_zombie()));
    for &p in &signaled {
        send(p, signal);
    }
    if signal != Signal::SIGSTOP {
        for &p in &signaled {
            send(p, Signal::SIGCONT);
        }
    }
    Ok(signaled)
}

fn send(pid: u32, signal: Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// What turns `/proc` figures into seconds and bytes.
struct Clock {
    ticks: f64,
    page: u64,
    boot: f64,
    now: f64,
}

impl Clock {
    fn now() -> Clock {
        let sys = |var| sysconf(var).ok().flatten();
        let boot = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("btime "))
                    .and_then(|t| t.trim().parse::<f64>().ok())
            })
            .unwrap_or_default();
        Clock {
            ticks: sys(SysconfVar::CLK_TCK).map_or(100.0, |t| t as f64),
            page: sys(SysconfVar::PAGE_SIZE).map_or(4096, |p| p.unsigned_abs()),
            boot,
            now: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        }
    }
}

fn info(pid: u32, sandbox: bool, clock: &Clock) -> Option<ProcessInfo> {
    let stat = ProcStat::read(pid)?;
    let uid = agent_procs::real_uid(pid)?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let command = if args.is_empty() {
        format!("[{}]", stat.comm)
    } else {
        args.join(" ")
    };
    let rss_pages: u64 = std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_ascii_whitespace().nth(1)?.parse().ok())
        .unwrap_or_default();
    let started_at = clock.boot + stat.start_time as f64 / clock.ticks;
    let alive = (clock.now - started_at).max(1.0 / clock.ticks);
    let cpu = (stat.utime + stat.stime) as f64 / clock.ticks;
    Some(ProcessInfo {
        pid,
        ppid: stat.ppid,
        pgid: stat.pgrp,
        uid,
        command,
        cpu_percent: (cpu / alive * 1000.0).round() / 10.0,
        memory_bytes: rss_pages * clock.page,
        started_at,
        sandbox,
    })
}
