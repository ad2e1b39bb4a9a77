//! The fields of `/proc/PID/stat` that agentd, sandboxd and their tests read (proc(5)).

/// A process's `/proc/PID/stat`, the fields we use. proc(5) numbers the fields from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// The command name (field 2) without its parentheses. It may itself contain spaces and
    /// parentheses, which is why the fields after it are found from the last `)`.
    pub comm: String,
    /// The state letter (field 3): `R`, `S`, `D`, `T`, `Z` (zombie), ...
    pub state: char,
    /// The parent's pid (field 4).
    pub ppid: u32,
    /// The process group id (field 5).
    pub pgrp: u32,
    /// The session id (field 6).
    pub session: u32,
    /// CPU time in user mode, in clock ticks (field 14).
    pub utime: u64,
    /// CPU time in kernel mode, in clock ticks (field 15).
    pub stime: u64,
    /// When the process started, in clock ticks after boot (field 22): with the pid, it tells a
    /// process from a later one that got the same pid.
    pub start_time: u64,
}

impl ProcStat {
    /// Reads `/proc/PID/stat`. `None` when the process does not exist (any more), the file is
    /// not UTF-8, or it does not have the fields.
    pub fn read(pid: u32) -> Option<ProcStat> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Reads `/proc/self/stat`, this process's.
    pub fn read_self() -> Option<ProcStat> {
        Self::parse(&std::fs::read_to_string("/proc/self/stat").ok()?)
    }

    /// Parses the text of a `/proc/PID/stat` file. The command name is what lies between the
    /// first `(` and the last `)`; the other fields follow the last `)`.
    pub fn parse(stat: &str) -> Option<ProcStat> {
        let (head, rest) = stat.rsplit_once(')')?;
        let (_pid, comm) = head.split_once('(')?;
        // Fields 3, 4, ... (index 0 is field 3).
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        // Fields 7 to 13: tty_nr, tpgid, flags, minflt, cminflt, majflt, cmajflt.
        let utime = fields.nth(7)?.parse().ok()?;
        let stime = fields.next()?.parse().ok()?;
        // Fields 16 to 21: cutime, cstime, priority, nice, num_threads, itrealvalue.
        let start_time = fields.nth(6)?.parse().ok()?;
        Some(ProcStat {
            comm: comm.to_owned(),
            state,
            ppid,
            pgrp,
            session,
            utime,
            stime,
            start_time,
        })
    }

    /// Whether the process has exited and waits to be reaped (state `Z`).
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as the kernel writes it for `sleep`; fields whose value does not matter hold
    /// their own number (field 14, `utime`, is 14).
    const LINE: &str = "4242 (sleep) S 4000 4100 4200 34816 4242 4194304 10 11 12 13 \
                        14 15 16 17 20 0 1 0 22 8392704 224 18446744073709551615 1 1 0 0 0 0 \
                        0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn fields_are_counted_after_the_command_name() {
        assert_eq!(
            ProcStat::parse(LINE),
            Some(ProcStat {
                comm: "sleep".to_owned(),
                state: 'S',
                ppid: 4000,
                pgrp: 4100,
                session: 4200,
                utime: 14,
                stime: 15,
                start_time: 22,
            })
        );
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_is_split_at_its_last_parenthesis() {
        let line = LINE.replace("(sleep)", "(a) Z 1 2 (b c))");
        let stat = ProcStat::parse(&line).unwrap();
        assert_eq!(stat.comm, "a) Z 1 2 (b c)");
        assert_eq!((stat.state, stat.ppid, stat.start_time), ('S', 4000, 22));
        assert!(!stat.is_zombie());
    }

    #[test]
    fn zombies_are_told() {
        let stat = ProcStat::parse(&LINE.replace(") S ", ") Z ")).unwrap();
        assert!(stat.is_zombie());
    }

    #[test]
    fn truncated_or_garbled_lines_are_none() {
        assert_eq!(ProcStat::parse(""), None);
        assert_eq!(ProcStat::parse("4242 (sleep S 4000"), None);
        assert_eq!(ProcStat::parse("4242 (sleep) S 4000 4100"), None);
        assert_eq!(ProcStat::parse(&LINE.replace(" 4000 ", " x ")), None);
    }

    #[test]
    fn this_process_reads_the_same_by_pid_and_as_self() {
        let me = ProcStat::read_self().expect("/proc is readable");
        assert_eq!(
            ProcStat::read(std::process::id()).map(|s| s.start_time),
            Some(me.start_time)
        );
        assert_eq!(ProcStat::read(u32::MAX), None);
    }
}
