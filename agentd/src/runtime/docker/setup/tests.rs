//! Unit tests of `runtime/docker/setup.rs`: what is being set up cannot be claimed by a
//! sweep, a bridge's lock file goes with its setup or with a sweep's claim, and a maker whose
//! file a sweep removed locks a new one.

use super::*;

/// A sweep's claim on the lock file of `bridge` in `dir`.
fn claim_bridge(dir: &Path, bridge: &str) -> Option<SweepClaim> {
    claim_for_sweep(&dir.join(bridge), OnClaim::Remove)
}

#[test]
fn a_bridge_being_set_up_is_not_claimed_by_a_sweep_until_it_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let setup = SetupLock::bridge_in(dir.path(), "sbx-0123456789").unwrap();
    assert!(dir.path().join("sbx-0123456789").exists());
    assert!(claim_bridge(dir.path(), "sbx-0123456789").is_none());
    // Other bridges are not affected.
    assert!(claim_bridge(dir.path(), "sbx-9876543210").is_some());
    drop(setup);
    assert!(!dir.path().join("sbx-0123456789").exists());
    assert!(claim_bridge(dir.path(), "sbx-0123456789").is_some());
}

#[test]
fn a_sweep_that_opened_the_lock_before_the_setup_ended_claims_it_after() {
    let dir = tempfile::tempdir().unwrap();
    let setup = SetupLock::bridge_in(dir.path(), "sbx-aaaaaaaaaa").unwrap();
    // What a sweep holds between opening the file and locking it.
    let early = File::open(dir.path().join("sbx-aaaaaaaaaa")).unwrap();
    drop(setup);
    assert!(Flock::lock(early, FlockArg::LockExclusiveNonblock).is_ok());
}

#[test]
fn a_sweep_removes_the_lock_file_of_a_maker_that_died() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbx-cccccccccc");
    // What a killed maker leaves: the file, no lock.
    std::fs::write(&path, b"").unwrap();
    let claim = claim_bridge(dir.path(), "sbx-cccccccccc").unwrap();
    assert!(path.exists(), "removed before the sweep was done");
    drop(claim);
    assert!(!path.exists());
}

/// The maker blocks on the sweep's claim with the old file open; the claim's end removes that
/// file, so the maker must find that out and lock a new one.
#[test]
fn a_maker_whose_file_a_sweep_removed_locks_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sbx-bbbbbbbbbb");
    std::fs::write(&path, b"").unwrap();
    let claim = claim_bridge(dir.path(), "sbx-bbbbbbbbbb").unwrap();
    let (sent, got) = std::sync::mpsc::channel();
    let maker_dir = dir.path().to_path_buf();
    let maker = std::thread::spawn(move || {
        let lock = SetupLock::bridge_in(&maker_dir, "sbx-bbbbbbbbbb").unwrap();
        sent.send(()).unwrap();
        lock
    });
    assert!(
        got.recv_timeout(std::time::Duration::from_millis(200))
            .is_err(),
        "the maker did not wait for the sweep's claim"
    );
    drop(claim);
    got.recv().unwrap();
    let lock = maker.join().unwrap();
    assert!(path.exists(), "the maker holds a file nobody can find");
    assert!(claim_bridge(dir.path(), "sbx-bbbbbbbbbb").is_none());
    drop(lock);
    assert!(!path.exists());
}

#[test]
fn a_socket_directory_being_set_up_is_not_claimed_and_stays_after() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sandbox-0123");
    let setup = SetupLock::socket_dir_in(&dir).unwrap();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o777);
    assert!(claim_for_sweep(&dir, OnClaim::Keep).is_none());
    drop(setup);
    let claim = claim_for_sweep(&dir, OnClaim::Keep).expect("claimed once set up");
    drop(claim);
    assert!(dir.is_dir(), "a sweep's claim removed a socket directory");
    // A name in use is refused, not shared.
    assert!(SetupLock::socket_dir_in(&dir).is_err());
}
