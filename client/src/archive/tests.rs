//! Unit tests of `archive.rs`.

use super::*;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::symlink;

fn entries(data: &[u8]) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut archive = zip::ZipArchive::new(Cursor::new(data)).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        let mode = entry.unix_mode().unwrap_or(0) & 0o777;
        out.insert(entry.name().unwrap().into_owned(), (content, mode));
    }
    out
}

/// `parent/name`, created with its missing parents, holding `files` (path, content).
fn dir_with(parent: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = parent.join(name);
    fs::create_dir_all(&dir).unwrap();
    for (path, content) in files {
        fs::write(dir.join(path), content).unwrap();
    }
    dir
}

#[test]
fn directory_entries_are_relative_to_its_parent() {
    let tmp = tempfile::tempdir().unwrap();
    dir_with(tmp.path(), "proj/src/empty", &[]);
    let proj = dir_with(
        tmp.path(),
        "proj",
        &[
            ("README", "hi"),
            ("src/main.rs", "fn main() {}"),
            ("run.sh", "#!/bin/sh"),
        ],
    );
    fs::set_permissions(proj.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let data = zip_for_upload(&proj).unwrap();
    let got = entries(&data);
    let names: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "proj/",
            "proj/README",
            "proj/run.sh",
            "proj/src/",
            "proj/src/empty/",
            "proj/src/main.rs"
        ]
    );
    assert_eq!(got["proj/src/main.rs"].0, b"fn main() {}");
    assert_eq!(got["proj/run.sh"].1, 0o755);
}

#[test]
fn dot_paths_get_the_real_name() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = dir_with(tmp.path(), "proj", &[("a", "a")]);
    let data = zip_for_upload(&proj.join("sub/..").join(".")).unwrap_err();
    // `proj/sub` does not exist, so canonicalising fails: a local I/O error.
    assert!(matches!(data, ClientError::Io { .. }));
    let data = zip_for_upload(&proj.join(".")).unwrap();
    assert!(entries(&data).contains_key("proj/a"));
}

#[test]
fn a_single_file_is_one_entry() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("notes.txt"), "n").unwrap();
    let data = zip_for_upload(&tmp.path().join("notes.txt")).unwrap();
    let got = entries(&data);
    assert_eq!(got.keys().collect::<Vec<_>>(), ["notes.txt"]);
}

#[test]
fn links_and_special_files() {
    let tmp = tempfile::tempdir().unwrap();
    let other = dir_with(tmp.path(), "other", &[("o.txt", "o")]);
    let proj = dir_with(tmp.path(), "proj", &[]);
    symlink(other.join("o.txt"), proj.join("file_link")).unwrap();
    symlink(&other, proj.join("dir_link")).unwrap();
    symlink(proj.join("missing"), proj.join("dangling")).unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(proj.join("sock")).unwrap();
    let got = entries(&zip_for_upload(&proj).unwrap());
    assert_eq!(got.keys().collect::<Vec<_>>(), ["proj/", "proj/file_link"]);
    assert_eq!(got["proj/file_link"].0, b"o");
}

#[test]
fn missing_source_is_a_local_error() {
    let err = zip_for_upload(Path::new("/definitely/not/here")).unwrap_err();
    assert!(matches!(err, ClientError::Io { .. }));
    assert!(!err.is_retryable());
}
