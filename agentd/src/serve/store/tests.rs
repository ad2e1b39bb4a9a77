//! Unit tests of `serve/store.rs`.

use super::*;

#[test]
fn claims_round_trip_privately() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = ClaimStore::open(&dir.path().join("state")).unwrap();
    let claim = Claim {
        runtime_id: "rt-1".into(),
        session_id: "s".into(),
        owner: "o".into(),
        image: "i".into(),
        session_api_key: "k".into(),
        created_at: "t".into(),
        pending_configuration: None,
    };
    store.save(&claim).unwrap();
    assert_eq!(store.load_all().unwrap(), vec![claim]);
    let mode = std::fs::metadata(dir.path().join("state/rt-1.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    store.remove("rt-1").unwrap();
    store.remove("rt-1").unwrap();
    assert!(store.load_all().unwrap().is_empty());
}
