//! Unit tests of `files/denied.rs`.

use std::os::unix::fs::PermissionsExt;

use super::*;

#[test]
fn a_writable_place_needs_no_hint() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(hint(&dir.path().join("new/deeper/file.txt"), false), None);
}

#[test]
fn a_directory_the_user_may_not_write_is_named_with_its_owner_and_mode() {
    if Uid::effective().is_root() {
        // Root may write anything (CAP_DAC_OVERRIDE): the hint cannot be provoked.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let text = hint(&dir.path().join("calc.py"), false).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(text.contains("permission problem"), "{text}");
    assert!(text.contains("mode 0555"), "{text}");
}
