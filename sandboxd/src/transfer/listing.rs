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
mod tests;
