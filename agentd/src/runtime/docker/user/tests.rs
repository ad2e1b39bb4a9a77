//! Unit tests of `runtime/docker/user.rs`.

use std::os::unix::fs::PermissionsExt;

use super::*;

#[test]
fn users_parse_from_uid_or_uid_and_gid() {
    assert_eq!(
        "4321".parse::<SandboxUser>(),
        Ok(SandboxUser {
            uid: 4321,
            gid: 4321
        })
    );
    assert_eq!(
        "4321:100".parse::<SandboxUser>(),
        Ok(SandboxUser {
            uid: 4321,
            gid: 100
        })
    );
    assert!("root".parse::<SandboxUser>().is_err());
    assert!("1:".parse::<SandboxUser>().is_err());
    assert!("-1".parse::<SandboxUser>().is_err());
}

#[test]
fn the_user_follows_the_workspace_owner() {
    let dir = tempfile::tempdir().unwrap();
    let meta = std::fs::metadata(dir.path()).unwrap();
    let owner = SandboxUser {
        uid: meta.uid(),
        gid: meta.gid(),
    };
    let chosen = choose(Some(dir.path()), None, true).unwrap();
    assert_eq!(chosen, owner);
    assert_eq!(choose(None, None, false).unwrap(), SandboxUser::default());
}

#[test]
fn root_needs_the_policy() {
    let requested = choose(None, Some(SandboxUser::ROOT), false).unwrap_err();
    assert!(matches!(requested, UserError::RootRequested));
    assert!(requested.to_string().contains("--allow-root"));
    assert_eq!(
        choose(None, Some(SandboxUser::ROOT), true).unwrap(),
        SandboxUser::ROOT
    );
}

#[test]
fn a_root_owned_workspace_is_refused_with_what_to_do() {
    // Tests run as root in CI; elsewhere there is no root-owned directory to make.
    let dir = tempfile::tempdir().unwrap();
    if std::fs::metadata(dir.path()).unwrap().uid() != 0 {
        return;
    }
    let refused = choose(Some(dir.path()), None, false).unwrap_err();
    let message = refused.to_string();
    assert!(matches!(refused, UserError::RootWorkspace { .. }));
    assert!(message.contains("chown -R 1000:1000"), "{message}");
    assert!(message.contains("--allow-root"), "{message}");
}

#[test]
fn a_user_that_could_not_write_the_workspace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let meta = std::fs::metadata(dir.path()).unwrap();
    let stranger = SandboxUser {
        uid: meta.uid() + 4321,
        gid: meta.gid() + 4321,
    };
    let refused = choose(Some(dir.path()), Some(stranger), false).unwrap_err();
    assert!(
        matches!(refused, UserError::WorkspaceNotWritable { mode: 0o755, .. }),
        "{refused}"
    );
    // World-writable (like /tmp) is fine for anyone.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(
        choose(Some(dir.path()), Some(stranger), false).unwrap(),
        stranger
    );
}

#[test]
fn a_missing_workspace_is_refused_not_created_by_docker() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(matches!(
        choose(Some(&missing), None, true),
        Err(UserError::BadWorkspace { .. })
    ));
}
