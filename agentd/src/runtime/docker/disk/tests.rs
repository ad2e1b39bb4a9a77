//! Unit tests of `runtime/docker/disk.rs`: which paths go on a sandbox's own disk, where, and
//! how the limit is reported.

use super::*;

#[test]
fn the_writable_paths_are_the_home_var_tmp_an_unmounted_workspace_and_the_images_own() {
    assert_eq!(
        writable_paths("/home/openhands", true, Some("/opt/venv")),
        ["/home/openhands", "/opt/venv", "/var/tmp"]
    );
    assert_eq!(
        writable_paths("/home/openhands", false, None),
        ["/home/openhands", "/var/tmp", "/workspace"]
    );
    // Repeated, relative, root and dotted paths in the label are not taken.
    assert_eq!(
        writable_paths(
            "/root",
            true,
            Some("/var/tmp  opt/x / /a/../etc /srv/./x /srv/data")
        ),
        ["/root", "/srv/data", "/var/tmp"]
    );
}

#[test]
fn each_path_has_its_own_directory_on_the_disk() {
    assert_eq!(slot("/opt/venv"), "opt_venv");
    assert_eq!(slot("/home/openhands"), "home_openhands");
    assert_eq!(
        binds(Path::new("/d/s1"), &["/var/tmp".to_string()]),
        ["/d/s1/var_tmp:/var/tmp:rw"]
    );
}

#[test]
fn the_report_says_how_the_disk_is_limited_and_what_is_not() {
    assert_eq!(
        DiskLimit::StorageQuota { bytes: 10 << 30 }.to_string(),
        "10 GiB (the storage driver's quota)"
    );
    let own = DiskLimit::OwnDisk {
        bytes: 512 << 20,
        paths: vec!["/home/openhands".to_string(), "/var/tmp".to_string()],
        read_only_root: true,
        why: "the fuse-overlayfs storage driver: --storage-opt is not supported".to_string(),
    };
    assert_eq!(
        own.to_string(),
        "512 MiB of its own for /home/openhands, /var/tmp; the root file system is read-only \
         (no storage quota: the fuse-overlayfs storage driver: --storage-opt is not supported)"
    );
    let DiskLimit::OwnDisk {
        bytes, paths, why, ..
    } = own
    else {
        unreachable!()
    };
    let sudo = DiskLimit::OwnDisk {
        bytes,
        paths,
        read_only_root: false,
        why,
    };
    assert!(sudo.to_string().contains("NOT limited"), "{sudo}");
    assert_eq!(
        DiskLimit::Unlimited.to_string(),
        "not limited (asked for no limit)"
    );
}

#[test]
fn a_sparse_copy_has_the_same_bytes_and_keeps_the_holes() {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let (from, to) = (dir.path().join("t.img"), dir.path().join("copy.img"));
    let mut file = std::fs::File::create(&from).unwrap();
    file.set_len(64 << 20).unwrap();
    file.write_all(b"superblock").unwrap();
    file.seek(SeekFrom::Start(40 << 20)).unwrap();
    file.write_all(&[7; 10_000]).unwrap();
    // A last extent that runs to the end of the file.
    file.seek(SeekFrom::Start((64 << 20) - 3)).unwrap();
    file.write_all(b"end").unwrap();
    drop(file);

    copy_sparse(&from, &to).unwrap();
    assert_eq!(std::fs::read(&to).unwrap(), std::fs::read(&from).unwrap());
    // 512-byte blocks: the three extents, not 64 MiB.
    let allocated = std::fs::metadata(&to).unwrap().blocks() * 512;
    assert!(allocated < 1 << 20, "{allocated} bytes allocated");
    // Never over an existing file.
    assert_eq!(
        copy_sparse(&from, &to).unwrap_err().kind(),
        std::io::ErrorKind::AlreadyExists
    );
}

#[test]
fn a_template_is_kept_per_size_paths_and_owner() {
    let paths = ["/home/openhands".to_string(), "/var/tmp".to_string()];
    let user = SandboxUser::default();
    let key = template_key(10 << 30, &paths, user);
    assert_eq!(key, template_key(10 << 30, &paths, user));
    assert_eq!(key.len(), 24);
    assert_ne!(key, template_key(1 << 30, &paths, user));
    assert_ne!(key, template_key(10 << 30, &paths[..1], user));
    let other = SandboxUser {
        uid: 1001,
        ..SandboxUser::default()
    };
    assert_ne!(key, template_key(10 << 30, &paths, other));
    // The paths are separated: ["/a", "/b"] is not ["/a/b"].
    assert_ne!(
        template_key(1, &["/a".to_string(), "/b".to_string()], user),
        template_key(1, &["/a/b".to_string()], user)
    );
}
