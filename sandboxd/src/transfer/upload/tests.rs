//! Unit tests of `transfer/upload.rs`.

use std::os::unix::fs::symlink;

use zip::ZipWriter;
use zip::write::SimpleFileOptions;

use super::super::test_support::tree;
use super::*;

/// Builds a zip in memory from `(name, content)` pairs; names ending in `/` are directories.
fn make_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    make_zip_with_modes(
        &entries
            .iter()
            .map(|(n, c)| (*n, *c, 0o644))
            .collect::<Vec<_>>(),
    )
}

fn make_zip_with_modes(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut zip = ZipWriter::new(io::Cursor::new(Vec::new()));
    for (name, content, mode) in entries {
        let options = SimpleFileOptions::default().unix_permissions(*mode);
        if name.ends_with('/') {
            zip.add_directory(*name, options).unwrap();
        } else {
            zip.start_file(*name, options).unwrap();
            zip.write_all(content).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}

// ---- store_upload: plain files -----------------------------------------------------------

#[test]
fn upload_single_file_creates_destination_and_overwrites() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("up/deep");
    store_upload(&dest, "u.txt", io::Cursor::new(b"one"), false, None).unwrap();
    assert_eq!(fs::read(dest.join("u.txt")).unwrap(), b"one");
    store_upload(&dest, "u.txt", io::Cursor::new(b"two"), false, None).unwrap();
    assert_eq!(fs::read(dest.join("u.txt")).unwrap(), b"two");
    // No temporary files left behind.
    assert_eq!(tree(&dest), ["u.txt"]);
}

#[test]
fn overwrite_keeps_the_permission_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("run.sh");
    fs::write(&script, "old").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).unwrap();
    store_upload(tmp.path(), "run.sh", io::Cursor::new(b"new"), false, None).unwrap();
    let meta = fs::metadata(&script).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o751);
    assert_eq!(fs::read(&script).unwrap(), b"new");
}

/// Runs `upload` on a destination whose `f.txt` is a symbolic link to a file outside it, and
/// checks that the link was replaced by a file holding `expected`, the outside file untouched.
fn assert_replaces_link_to_outside(upload: impl FnOnce(&Path), expected: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.txt");
    fs::write(&outside, "precious").unwrap();
    let dest = tmp.path().join("dest");
    fs::create_dir(&dest).unwrap();
    symlink(&outside, dest.join("f.txt")).unwrap();
    upload(&dest);
    assert_eq!(fs::read(&outside).unwrap(), b"precious");
    assert!(fs::symlink_metadata(dest.join("f.txt")).unwrap().is_file());
    assert_eq!(fs::read(dest.join("f.txt")).unwrap(), expected);
}

#[test]
fn upload_replaces_a_symlink_instead_of_writing_through_it() {
    assert_replaces_link_to_outside(
        |dest| store_upload(dest, "f.txt", io::Cursor::new(b"uploaded"), false, None).unwrap(),
        b"uploaded",
    );
}

#[test]
fn upload_onto_a_directory_fails_with_the_os_style_message() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("x")).unwrap();
    let err = store_upload(tmp.path(), "x", io::Cursor::new(b"data"), false, None).unwrap_err();
    assert!(matches!(err, TransferError::Io(_)));
    assert!(err.to_string().starts_with("Is a directory"), "{err}");
}

#[test]
fn upload_into_a_file_destination_fails() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("file"), "x").unwrap();
    let err = store_upload(
        &tmp.path().join("file"),
        "a",
        io::Cursor::new(b""),
        false,
        None,
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("Not a directory"), "{err}");
}

#[test]
fn relative_destination_is_refused() {
    let err = store_upload(
        Path::new("rel/dir"),
        "a.txt",
        io::Cursor::new(b"x"),
        false,
        None,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "400: Destination must be an absolute path");
}

#[test]
fn recursive_non_zip_is_refused_before_touching_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("new");
    let err = store_upload(&dest, "a.txt", io::Cursor::new(b"x"), true, None).unwrap_err();
    assert_eq!(err.to_string(), "400: Recursive uploads must be zip files");
    assert!(!dest.exists());
}

#[test]
fn bad_file_names_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["", ".", "..", "../x", "a/b", "/etc/passwd", "nul\0byte"] {
        let err = store_upload(tmp.path(), name, io::Cursor::new(b"x"), false, None).unwrap_err();
        assert!(
            matches!(err, TransferError::InvalidFilename(ref n) if n == name),
            "{name:?}: {err}"
        );
    }
    assert!(tree(tmp.path()).is_empty());
    // Dots inside a name are fine.
    store_upload(tmp.path(), "a..b", io::Cursor::new(b"x"), false, None).unwrap();
    store_upload(tmp.path(), "..hidden", io::Cursor::new(b"x"), false, None).unwrap();
    assert_eq!(tree(tmp.path()), ["..hidden", "a..b"]);
}

// ---- store_upload: zips ------------------------------------------------------------------

#[test]
fn recursive_zip_is_extracted_and_not_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("up2");
    let zip = make_zip_with_modes(&[
        ("d/", b"", 0o755),
        ("d/a.txt", b"alpha", 0o644),
        ("d/bin/run.sh", b"#!/bin/sh\n", 0o755),
        ("d/empty/", b"", 0o755),
    ]);
    store_upload(&dest, "tmpab12cd.zip", io::Cursor::new(&zip), true, None).unwrap();
    assert_eq!(
        tree(&dest),
        ["d/", "d/a.txt", "d/bin/", "d/bin/run.sh", "d/empty/"]
    );
    assert_eq!(fs::read(dest.join("d/a.txt")).unwrap(), b"alpha");
    let exec = fs::metadata(dest.join("d/bin/run.sh")).unwrap().mode();
    assert_ne!(exec & 0o100, 0, "execute bit kept: {exec:o}");
    let plain = fs::metadata(dest.join("d/a.txt")).unwrap().mode();
    assert_eq!(plain & 0o111, 0, "no execute bit added: {plain:o}");
}

#[test]
fn a_zip_name_is_extracted_even_without_recursive() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = make_zip(&[("x.txt", b"x")]);
    store_upload(tmp.path(), "bundle.zip", io::Cursor::new(&zip), false, None).unwrap();
    assert_eq!(tree(tmp.path()), ["x.txt"]);
}

#[test]
fn a_file_with_the_zip_name_survives_extraction() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("bundle.zip"), "mine").unwrap();
    let zip = make_zip(&[("x.txt", b"x")]);
    store_upload(tmp.path(), "bundle.zip", io::Cursor::new(&zip), true, None).unwrap();
    assert_eq!(fs::read(tmp.path().join("bundle.zip")).unwrap(), b"mine");
}

#[test]
fn extraction_overwrites_existing_files_and_merges_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("d")).unwrap();
    fs::write(tmp.path().join("d/a.txt"), "old").unwrap();
    fs::write(tmp.path().join("d/keep.txt"), "keep").unwrap();
    let zip = make_zip(&[("d/a.txt", b"new")]);
    store_upload(tmp.path(), "u.zip", io::Cursor::new(&zip), true, None).unwrap();
    assert_eq!(fs::read(tmp.path().join("d/a.txt")).unwrap(), b"new");
    assert_eq!(fs::read(tmp.path().join("d/keep.txt")).unwrap(), b"keep");
}

#[test]
fn malicious_zip_names_are_refused_and_nothing_is_written() {
    let cases: [(&str, &str); 5] = [
        ("../evil.txt", "contains a '..' component"),
        ("ok/../../evil.txt", "contains a '..' component"),
        ("/tmp/evil.txt", "is an absolute path"),
        ("a/..", "contains a '..' component"),
        ("nul\0.txt", "contains a NUL byte"),
    ];
    for (bad, reason) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("dest");
        // A harmless entry first: it must not be written either.
        let zip = make_zip(&[("first.txt", b"1"), (bad, b"pwned")]);
        let err = store_upload(&dest, "evil.zip", io::Cursor::new(&zip), true, None).unwrap_err();
        match &err {
            TransferError::UnsafeEntry { name, reason: r } => {
                assert_eq!(name, bad);
                assert_eq!(*r, reason);
            }
            other => panic!("{bad:?}: unexpected {other}"),
        }
        assert!(err.to_string().starts_with("400: Unsafe zip entry"));
        assert!(tree(&dest).is_empty(), "{bad:?}: {:?}", tree(&dest));
        assert_eq!(tree(tmp.path()), ["dest/"], "{bad:?}");
    }
}

#[test]
fn extraction_does_not_follow_a_directory_symlink_out_of_the_destination() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let dest = tmp.path().join("dest");
    fs::create_dir(&dest).unwrap();
    symlink(&outside, dest.join("link")).unwrap();
    let zip = make_zip(&[("link/pwned.txt", b"x")]);
    let err = store_upload(&dest, "u.zip", io::Cursor::new(&zip), true, None).unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::UnsafeEntry {
                reason: "passes through a symbolic link",
                ..
            }
        ),
        "{err}"
    );
    assert!(tree(&outside).is_empty());
    // A directory entry naming the link is refused too.
    let zip = make_zip(&[("link/", b"")]);
    assert!(matches!(
        store_upload(&dest, "u.zip", io::Cursor::new(&zip), true, None),
        Err(TransferError::UnsafeEntry { .. })
    ));
}

#[test]
fn extraction_replaces_a_file_symlink_instead_of_writing_through_it() {
    let zip = make_zip(&[("f.txt", b"from zip")]);
    assert_replaces_link_to_outside(
        |dest| store_upload(dest, "u.zip", io::Cursor::new(&zip), true, None).unwrap(),
        b"from zip",
    );
}

#[test]
fn symlink_entries_become_regular_files_like_the_reference() {
    let mut zip = ZipWriter::new(io::Cursor::new(Vec::new()));
    zip.add_symlink("l", "/etc/passwd", SimpleFileOptions::default())
        .unwrap();
    let data = zip.finish().unwrap().into_inner();
    let tmp = tempfile::tempdir().unwrap();
    store_upload(tmp.path(), "s.zip", io::Cursor::new(&data), true, None).unwrap();
    let meta = fs::symlink_metadata(tmp.path().join("l")).unwrap();
    assert!(meta.is_file());
    assert_eq!(fs::read(tmp.path().join("l")).unwrap(), b"/etc/passwd");
}

#[test]
fn destination_itself_may_be_a_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    fs::create_dir(&real).unwrap();
    symlink(&real, tmp.path().join("ws")).unwrap();
    let zip = make_zip(&[("a/b.txt", b"b")]);
    store_upload(
        &tmp.path().join("ws"),
        "u.zip",
        io::Cursor::new(&zip),
        true,
        None,
    )
    .unwrap();
    assert_eq!(fs::read(real.join("a/b.txt")).unwrap(), b"b");
}

/// Uploads `zip` to be extracted under `limits` into an empty directory, which must stay
/// empty; the refusal.
fn refused_extraction(zip: &[u8], limits: ExtractLimits) -> TransferError {
    let tmp = tempfile::tempdir().unwrap();
    let err = store_upload_with_limits(
        tmp.path(),
        "u.zip",
        io::Cursor::new(zip),
        true,
        None,
        limits,
    )
    .unwrap_err();
    assert!(tree(tmp.path()).is_empty(), "{err}");
    err
}

#[test]
fn too_many_entries_are_refused_before_extraction() {
    let zip = make_zip(&[("a", b"1"), ("b", b"2"), ("c", b"3")]);
    let limits = ExtractLimits {
        max_bytes: MAX_EXTRACTED_BYTES,
        max_entries: 2,
    };
    let err = refused_extraction(&zip, limits);
    assert_eq!(
        err.to_string(),
        "400: Zip archive exceeds the limit of 2 entries"
    );
}

#[test]
fn too_many_bytes_are_refused_before_extraction() {
    // Highly compressible: a small zip that expands past the limit.
    let big = vec![0_u8; 1 << 20];
    let zip = make_zip(&[("small", b"1"), ("bomb", &big)]);
    assert!(zip.len() < 16 * 1024);
    let limits = ExtractLimits {
        max_bytes: 1000,
        max_entries: MAX_ZIP_ENTRIES,
    };
    let err = refused_extraction(&zip, limits);
    assert!(
        matches!(
            err,
            TransferError::TooLarge {
                what: "bytes",
                limit: 1000
            }
        ),
        "{err}"
    );
}

#[test]
fn copy_limited_counts_real_bytes_not_declared_ones() {
    let mut sink = Vec::new();
    let data = [7_u8; 100];
    assert_eq!(copy_limited(&mut &data[..], &mut sink, 100).unwrap(), 100);
    let mut sink = Vec::new();
    assert!(matches!(
        copy_limited(&mut &data[..], &mut sink, 99),
        Err(CopyError::OverBudget)
    ));
}

#[test]
fn garbage_is_an_invalid_zip() {
    let tmp = tempfile::tempdir().unwrap();
    let err = store_upload(
        tmp.path(),
        "u.zip",
        io::Cursor::new(b"not a zip at all"),
        true,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, TransferError::InvalidZip(_)), "{err}");
    assert!(err.to_string().starts_with("400: Invalid zip file: "));
}

#[test]
fn an_entry_under_an_existing_file_fails_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("a"), "file").unwrap();
    let zip = make_zip(&[("a/b.txt", b"x")]);
    let err = store_upload(tmp.path(), "u.zip", io::Cursor::new(&zip), true, None).unwrap_err();
    assert!(err.to_string().starts_with("Not a directory"), "{err}");
    assert_eq!(fs::read(tmp.path().join("a")).unwrap(), b"file");
}

#[test]
fn created_files_and_dirs_are_given_to_the_owner() {
    let tmp = tempfile::tempdir().unwrap();
    let me = fs::metadata(tmp.path()).unwrap();
    // As root, hand things to someone else; otherwise chown to ourselves (always allowed).
    let owner = if me.uid() == 0 {
        (4242, 4343)
    } else {
        (me.uid(), me.gid())
    };
    let dest = tmp.path().join("new/dest");
    let zip = make_zip(&[("d/", b""), ("d/e/f.txt", b"f")]);
    store_upload(&dest, "u.zip", io::Cursor::new(&zip), true, Some(owner)).unwrap();
    store_upload(
        &dest,
        "plain.txt",
        io::Cursor::new(b"p"),
        false,
        Some(owner),
    )
    .unwrap();
    for rel in ["", "d", "d/e", "d/e/f.txt", "plain.txt"] {
        let meta = fs::metadata(dest.join(rel)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), owner, "{rel:?}");
    }
    // `new`, created on the way to the destination, too; the existing temp dir is untouched.
    let meta = fs::metadata(tmp.path().join("new")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), owner);
    let meta = fs::metadata(tmp.path()).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (me.uid(), me.gid()));
}
