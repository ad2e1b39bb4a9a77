//! Unit tests of `transfer/download.rs`.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{PermissionsExt, symlink};

use zip::ZipArchive;

use super::super::test_support::zip_of;
use super::*;

/// Name → content of every entry of a zip.
fn read_zip(data: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut archive = ZipArchive::new(io::Cursor::new(data)).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        out.insert(entry.name().unwrap().into_owned(), content);
    }
    out
}

fn zip_names(data: &[u8]) -> Vec<String> {
    let archive = ZipArchive::new(io::Cursor::new(data)).unwrap();
    archive
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .collect()
}
#[test]
fn zip_tree_holds_every_regular_file_relative_to_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("up2");
    fs::create_dir_all(root.join("d/sub")).unwrap();
    fs::create_dir_all(root.join("empty")).unwrap();
    fs::write(root.join("d/a.txt"), "a").unwrap();
    fs::write(root.join("d/sub/b.txt"), "b").unwrap();
    fs::write(root.join(".hidden"), "h").unwrap();
    let zip = zip_of(&root).unwrap();
    assert_eq!(zip_names(&zip), [".hidden", "d/a.txt", "d/sub/b.txt"]);
    assert_eq!(read_zip(&zip)["d/sub/b.txt"], b"b");
}

#[test]
fn zip_tree_of_a_plain_file_is_an_empty_zip() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("f.txt"), "x").unwrap();
    let zip = zip_of(&tmp.path().join("f.txt")).unwrap();
    assert!(zip_names(&zip).is_empty());
}

#[test]
fn zip_tree_errors_match_the_reference() {
    assert_eq!(
        zip_of(Path::new("relative/path")).unwrap_err().to_string(),
        "400: Path must be an absolute path"
    );
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(
        zip_of(&tmp.path().join("missing")).unwrap_err().to_string(),
        "404: File not found"
    );
}

#[test]
fn zip_tree_follows_file_links_but_not_dir_links_and_skips_special_files() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "s").unwrap();
    let root = tmp.path().join("root");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("real.txt"), "r").unwrap();
    symlink(outside.join("secret.txt"), root.join("file_link")).unwrap();
    symlink(&outside, root.join("dir_link")).unwrap();
    symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    let zip = zip_of(&root).unwrap();
    assert_eq!(zip_names(&zip), ["file_link", "real.txt"]);
    assert_eq!(read_zip(&zip)["file_link"], b"s");
}

#[test]
fn zip_tree_keeps_modes_and_times() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(tmp.path().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let zip = zip_of(tmp.path()).unwrap();
    let mut archive = ZipArchive::new(io::Cursor::new(zip)).unwrap();
    let entry = archive.by_index(0).unwrap();
    assert_eq!(entry.unix_mode().unwrap() & 0o777, 0o755);
    assert_eq!(entry.compression(), CompressionMethod::Deflated);
    let year = entry.last_modified().unwrap().year();
    assert!(year >= 2024, "{year}");
}

#[test]
fn zip_tree_streams_into_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("f"), "x").unwrap();
    let mut out = tempfile::tempfile().unwrap();
    zip_tree(tmp.path(), &mut out).unwrap();
    out.seek(io::SeekFrom::Start(0)).unwrap();
    let mut data = Vec::new();
    out.read_to_end(&mut data).unwrap();
    assert_eq!(zip_names(&data), ["f"]);
}
