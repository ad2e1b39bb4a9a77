//! Unit tests of `transfer/listing.rs`.

use std::os::unix::fs::symlink;

use super::*;

#[test]
fn list_files_orders_dirs_first_case_insensitively_with_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for dir in ["sub", "Alpha", ".git", "beta"] {
        fs::create_dir(d.join(dir)).unwrap();
    }
    for file in ["b.txt", "A.txt", ".env", "c.TXT", "a.md"] {
        fs::write(d.join(file), "x").unwrap();
    }
    symlink(d.join("sub"), d.join("link_to_dir")).unwrap();
    symlink(d.join("b.txt"), d.join("link_to_file")).unwrap();
    symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    assert_eq!(
        list_files(d),
        [
            ".git/",
            "Alpha/",
            "beta/",
            "link_to_dir/",
            "sub/",
            ".env",
            "a.md",
            "A.txt",
            "b.txt",
            "c.TXT",
            "link_to_file",
        ]
    );
}

#[test]
fn list_files_sorts_dirs_with_their_slash_like_the_reference() {
    // Python sorts "sub/" and "sub-a/" by `lower()` with the slash: '-' < '/'.
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("sub")).unwrap();
    fs::create_dir(tmp.path().join("sub-a")).unwrap();
    assert_eq!(list_files(tmp.path()), ["sub-a/", "sub/"]);
}

#[test]
fn list_files_is_empty_for_missing_file_and_empty_dir() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(list_files(tmp.path()).is_empty());
    assert!(list_files(&tmp.path().join("missing")).is_empty());
    fs::write(tmp.path().join("f"), "x").unwrap();
    assert!(list_files(&tmp.path().join("f")).is_empty());
}
