//! `POST /list_files`: the names in one directory, in the reference's order.

use std::fs;
use std::path::Path;

/// `POST /list_files` semantics (docs/protocol.md §8): names of the entries of `dir`; directories first with a
/// trailing `/`, then files, each group sorted case-insensitively; hidden entries included.
///
/// Symbolic links are classified by their target; dangling ones are left out. A missing path, a
/// path that is not a directory, or any error yields an empty list.
pub(crate) fn list_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else {
            return Vec::new();
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        match fs::metadata(entry.path()) {
            Ok(meta) if meta.is_dir() => dirs.push(format!("{name}/")),
            Ok(_) => files.push(name),
            Err(_) => {}
        }
    }
    sort_case_insensitive(&mut dirs);
    sort_case_insensitive(&mut files);
    dirs.append(&mut files);
    dirs
}

/// Sorts by lower-cased name (the reference's key), then by the name itself so that the order of
/// names differing only in case is deterministic.
fn sort_case_insensitive(names: &mut [String]) {
    names.sort_by_cached_key(|name| (name.to_lowercase(), name.clone()));
}

#[cfg(test)]
mod tests {
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
}
