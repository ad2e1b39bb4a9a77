//! Unit tests of `files/listing.rs`.

use super::*;
use std::os::unix::fs::symlink;

/// A temporary directory to list, and its path as text.
fn temp_root() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_owned();
    (dir, root)
}

/// The first line of a listing of `root`.
fn heading(root: &str) -> String {
    format!(
        "Here's the files and directories up to 2 levels deep in {root}, excluding hidden items:"
    )
}

#[test]
fn lists_like_the_reference_fixture() {
    let (dir, w) = temp_root();
    fs::write(dir.path().join("hello.sh"), "x").unwrap();
    fs::write(dir.path().join("t2.txt"), "x").unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    assert_eq!(
        view_directory(&w).unwrap(),
        format!("{}\n{w}/\n{w}/hello.sh\n{w}/sub/\n{w}/t2.txt", heading(&w))
    );
}

#[test]
fn hidden_entries_symlinks_and_sort_order() {
    let (dir, w) = temp_root();
    let p = dir.path();
    fs::create_dir_all(p.join("a/deep/deeper")).unwrap();
    fs::write(p.join("a/x"), "").unwrap();
    fs::write(p.join("a/.hidden_in_a"), "").unwrap();
    fs::create_dir(p.join("a-b")).unwrap();
    fs::create_dir(p.join(".git")).unwrap();
    fs::write(p.join(".git/config"), "").unwrap();
    fs::write(p.join(".env"), "").unwrap();
    symlink("a", p.join("link")).unwrap();
    symlink("nowhere", p.join("dangling")).unwrap();
    let out = view_directory(&w).unwrap();
    let expected = [
        format!("{w}/"),
        format!("{w}/a/"),
        format!("{w}/a-b/"),
        format!("{w}/a/deep/"),
        format!("{w}/a/x"),
        format!("{w}/dangling"),
        format!("{w}/link/"),
        format!("{w}/link/deep/"),
        format!("{w}/link/x"),
    ]
    .join("\n");
    assert_eq!(
        out,
        format!(
            "{}\n{expected}\n\n2 hidden files/directories in this directory are excluded. You can use 'ls -la {w}' to see them.",
            heading(&w)
        )
    );
}

#[test]
fn symlink_loops_are_errors_not_hangs() {
    let (dir, w) = temp_root();
    let p = dir.path();
    fs::create_dir(p.join("sub")).unwrap();
    symlink("..", p.join("sub/up")).unwrap();
    let err = view_directory(&w).unwrap_err();
    assert_eq!(
        err,
        format!(
            "find: File system loop detected; ‘{w}/sub/up’ is part of the same file system loop as ‘{w}’.\n"
        )
    );
    fs::remove_file(p.join("sub/up")).unwrap();
    symlink("l2", p.join("l1")).unwrap();
    symlink("l1", p.join("l2")).unwrap();
    let err = view_directory(&w).unwrap_err();
    assert!(err.contains(&format!(
        "find: ‘{w}/l1’: Too many levels of symbolic links\n"
    )));
    assert!(err.contains(&format!(
        "find: ‘{w}/l2’: Too many levels of symbolic links\n"
    )));
}

#[test]
fn long_error_text_is_clipped_with_the_generic_notice() {
    let (dir, w) = temp_root();
    for i in 0..300 {
        // Each a link to itself: ELOOP, one error line per entry.
        let name = format!("loop_with_a_long_enough_name_{i:04}");
        symlink(&name, dir.path().join(&name)).unwrap();
    }
    let err = view_directory(&w).unwrap_err();
    assert!(err.ends_with(GENERIC_TRUNCATED_NOTICE));
    assert_eq!(
        err.chars().count(),
        MAX_CHARS + GENERIC_TRUNCATED_NOTICE.chars().count()
    );
}

#[test]
fn long_listings_are_clipped_with_the_directory_notice() {
    let (dir, w) = temp_root();
    for i in 0..600 {
        fs::write(
            dir.path().join(format!("file_with_a_long_name_{i:04}.txt")),
            "",
        )
        .unwrap();
    }
    let out = view_directory(&w).unwrap();
    assert!(out.ends_with(DIRECTORY_TRUNCATED_NOTICE));
    let header = format!("{}\n", heading(&w));
    let body = out.strip_prefix(&header).unwrap();
    let raw_len = body.chars().count() - DIRECTORY_TRUNCATED_NOTICE.chars().count() - 1;
    // 16 000 characters of find output, plus the one '/' added to the root line.
    assert_eq!(raw_len, MAX_CHARS);
    assert!(body.starts_with(&format!("{w}/\n{w}/file_with_a_long_name_0000.txt\n")));
}
