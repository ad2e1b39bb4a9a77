//! Unit tests of `runtime/docker/setup.rs`: a bridge being set up cannot be claimed by a
//! sweep, and its lock file goes with the setup.

use super::*;

#[test]
fn a_bridge_being_set_up_is_not_claimed_by_a_sweep_until_it_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let setup = SetupLock::acquire_in(dir.path(), "sbx-0123456789").unwrap();
    assert!(dir.path().join("sbx-0123456789").exists());
    assert!(claim_in(dir.path(), "sbx-0123456789").is_none());
    // Other bridges are not affected.
    assert!(claim_in(dir.path(), "sbx-9876543210").is_some());
    drop(setup);
    assert!(!dir.path().join("sbx-0123456789").exists());
    assert!(claim_in(dir.path(), "sbx-0123456789").is_some());
}

#[test]
fn a_sweep_removes_the_lock_file_of_a_maker_that_died() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbx-cccccccccc");
    // What a killed maker leaves: the file, no lock.
    std::fs::write(&path, b"").unwrap();
    let claim = claim_in(dir.path(), "sbx-cccccccccc").unwrap();
    assert!(path.exists(), "removed before the sweep was done");
    drop(claim);
    assert!(!path.exists());
}

#[test]
fn a_maker_whose_file_a_sweep_removed_locks_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbx-dddddddddd");
    // The maker has opened the file when a sweep claims it...
    std::fs::write(&path, b"").unwrap();
    let claim = claim_in(dir.path(), "sbx-dddddddddd").unwrap();
    let (sent, got) = std::sync::mpsc::channel();
    let maker_dir = dir.path().to_path_buf();
    let maker = std::thread::spawn(move || {
        let lock = SetupLock::acquire_in(&maker_dir, "sbx-dddddddddd").unwrap();
        sent.send(()).unwrap();
        lock
    });
    // ...and removes it when done; the maker then holds the file the path names.
    drop(claim);
    got.recv().unwrap();
    let lock = maker.join().unwrap();
    assert!(path.exists());
    assert!(claim_in(dir.path(), "sbx-dddddddddd").is_none());
    drop(lock);
    assert!(!path.exists());
}

#[test]
fn a_sweep_that_opened_the_lock_before_the_setup_ended_claims_it_after() {
    let dir = tempfile::tempdir().unwrap();
    let setup = SetupLock::acquire_in(dir.path(), "sbx-aaaaaaaaaa").unwrap();
    // What a sweep holds between opening the file and locking it.
    let early = File::open(dir.path().join("sbx-aaaaaaaaaa")).unwrap();
    drop(setup);
    assert!(Flock::lock(early, FlockArg::LockExclusiveNonblock).is_ok());
}

#[test]
fn the_maker_waits_for_a_sweep_that_holds_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sbx-bbbbbbbbbb"), b"").unwrap();
    let claim = claim_in(dir.path(), "sbx-bbbbbbbbbb").unwrap();
    let (sent, got) = std::sync::mpsc::channel();
    let path = dir.path().to_path_buf();
    let maker = std::thread::spawn(move || {
        let lock = SetupLock::acquire_in(&path, "sbx-bbbbbbbbbb").unwrap();
        sent.send(()).unwrap();
        drop(lock);
    });
    assert!(
        got.recv_timeout(std::time::Duration::from_millis(200))
            .is_err(),
        "the maker did not wait for the sweep's claim"
    );
    drop(claim);
    got.recv().unwrap();
    maker.join().unwrap();
}
