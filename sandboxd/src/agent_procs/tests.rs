//! Unit tests of `agent_procs.rs`: which processes count as the agent's.

use super::*;

fn proc(pid: u32, ppid: u32) -> Proc {
    Proc {
        pid,
        ppid,
        start_time: 0,
    }
}

/// sandboxd (10) with a shell (11) and a kernel (12); a job (13) of the shell with a child (14);
/// an orphan of the agent's reparented to init (20); init (1).
fn table() -> Vec<Proc> {
    vec![
        proc(1, 0),
        proc(10, 1),
        proc(11, 10),
        proc(12, 10),
        proc(13, 11),
        proc(14, 13),
        proc(20, 1),
    ]
}

fn pids(procs: Vec<Proc>) -> BTreeSet<u32> {
    procs.into_iter().map(|p| p.pid).collect()
}

#[test]
fn the_tree_scope_spares_sandboxd_and_its_children_and_finds_their_descendants() {
    assert_eq!(
        pids(targets(&table(), 10, Scope::Tree)),
        BTreeSet::from([13, 14])
    );
}

#[test]
fn the_uid_scope_also_finds_processes_that_left_the_tree() {
    // The scan has already kept only the uid's processes: here all but init.
    let of_uid: Vec<Proc> = table().into_iter().filter(|p| p.pid != 1).collect();
    assert_eq!(
        pids(targets(&of_uid, 10, Scope::Uid(1000))),
        BTreeSet::from([13, 14, 20])
    );
}
