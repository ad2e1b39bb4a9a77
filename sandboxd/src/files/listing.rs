//! The editor's directory view, done natively: what the reference gets from
//! `find -L {path} -maxdepth 2 -not \( -path '{path}/\.*' -o -path '{path}/*/\.*' \) | sort`
//! (GNU find, C.UTF-8 locale) plus its hidden-entry count, formatting and truncation.

use std::collections::{BinaryHeap, HashMap};
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::pycompat::{py_strip, strerror, truncate_chars};

/// The reference's `MAX_RESPONSE_LEN_CHAR`.
const MAX_CHARS: usize = 16_000;

/// Appended to a directory listing cut at [`MAX_CHARS`].
pub(crate) const DIRECTORY_TRUNCATED_NOTICE: &str = "<response clipped><NOTE>Due to the max output limit, only part of this directory has been shown to you. You should use `ls -la` instead to view large directories incrementally.</NOTE>";

/// Appended to other output (here: find's error text) cut at [`MAX_CHARS`].
const GENERIC_TRUNCATED_NOTICE: &str = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>";

/// One printed entry: its path bytes (what `sort` compares) and whether it is a directory
/// (symlinks followed, as Python's `Path.is_dir()` does when the reference adds the `/`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    path: Vec<u8>,
    is_dir: bool,
}

/// What the walk found: the smallest entries in sort order, find's error text, and the number
/// of hidden entries at depth 1.
struct Walk {
    /// Max-heap keeping only the `cap` smallest entries: nothing past them can survive the cut
    /// at [`MAX_CHARS`], and this bounds memory on huge directories.
    kept: BinaryHeap<Entry>,
    cap: usize,
    /// Whether the `-path` patterns can match at all (see [`view_directory`]).
    exclude_hidden: bool,
    stderr: String,
    hidden: usize,
}

impl Walk {
    fn print(&mut self, path: Vec<u8>, is_dir: bool) {
        self.kept.push(Entry { path, is_dir });
        if self.kept.len() > self.cap {
            self.kept.pop();
        }
    }

    fn error(&mut self, path: &[u8], message: &str) {
        // Everything past MAX_CHARS is cut anyway; stop growing.
        if self.stderr.len() <= MAX_CHARS * 4 {
            self.stderr.push_str(&format!(
                "find: ‘{}’: {message}\n",
                String::from_utf8_lossy(path)
            ));
        }
    }

    fn loop_error(&mut self, path: &[u8], ancestor: &[u8]) {
        if self.stderr.len() <= MAX_CHARS * 4 {
            self.stderr.push_str(&format!(
                "find: File system loop detected; ‘{}’ is part of the same file system loop as ‘{}’.\n",
                String::from_utf8_lossy(path),
                String::from_utf8_lossy(ancestor)
            ));
        }
    }
}

fn io_message(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => strerror(code),
        None => err.to_string(),
    }
}

/// `find`'s path for a child: the parent, a `/` unless the parent already ends in one, the name.
fn child_path(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(parent.len() + 1 + name.len());
    path.extend_from_slice(parent);
    if !parent.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// How `find -L` sees an entry.
enum Seen {
    /// `stat` worked (symlinks followed).
    Found(Metadata),
    /// A dangling symlink: listed as itself, no error.
    Dangling,
    /// `stat` failed otherwise (e.g. a symlink loop): an error, not listed.
    Failed(io::Error),
}

fn look(path: &[u8]) -> Seen {
    let os = std::ffi::OsStr::from_bytes(path);
    match fs::metadata(os) {
        Ok(meta) => Seen::Found(meta),
        Err(err) if err.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(os).is_ok() => {
            Seen::Dangling
        }
        Err(err) => Seen::Failed(err),
    }
}

/// Reads a directory's entry names in `readdir` order, or find's error text.
fn read_names(path: &[u8]) -> Result<Vec<OsString>, io::Error> {
    let mut names = Vec::new();
    for entry in fs::read_dir(std::ffi::OsStr::from_bytes(path))? {
        names.push(entry?.file_name());
    }
    Ok(names)
}

/// Lists `path` (the normalised path the agent gave, known to be a directory) two levels deep.
/// `Ok` holds the editor's output; `Err` holds find's error text, which the reference reports
/// as the editor error (so one unreadable subdirectory or symlink loop fails the whole view).
///
/// Emulated details of the reference pipeline:
/// * `find -L` follows symlinks: a symlink to a directory is listed with a `/` and descended
///   into; a dangling symlink is listed as a file; a symlink loop (`ELOOP`) or a directory that
///   is its own ancestor ("File system loop detected") is an error and not listed.
/// * Hidden entries are excluded by the `-path` globs, in which `*` also matches `/`, so any
///   entry with a component starting with `.` below `{path}` is left out. When `{path}` ends in
///   `/` (only `/` itself after normalisation) the globs begin with `//` and match nothing, so
///   nothing is excluded: the reference lists hidden entries of `/`.
/// * `sort` runs in byte order on the paths as find prints them, *before* the reference appends
///   `/` to directories. So `/w/a-b` sorts between `/w/a` and `/w/a/x` ('-' < '/'), and a
///   directory's children need not follow it directly.
/// * The find output (each path plus `\n`) is cut at 16 000 characters with the directory
///   notice, then stripped and split on `\n`; only pieces that are whole directory paths get
///   the `/` (the cut piece carrying the notice never does).
pub(crate) fn view_directory(path: &str) -> Result<String, String> {
    let root = path.as_bytes().to_vec();
    let root_chars = path.chars().count();
    // Every printed line but the root's is at least `{root}/x\n`.
    let min_line = root_chars + 2;
    let mut walk = Walk {
        kept: BinaryHeap::new(),
        cap: MAX_CHARS / min_line + 2,
        exclude_hidden: !path.ends_with('/'),
        stderr: String::new(),
        hidden: 0,
    };

    let root_meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) => return Err(format!("find: ‘{path}’: {}\n", io_message(&err))),
    };
    walk.print(root.clone(), root_meta.is_dir());
    let root_id = (root_meta.dev(), root_meta.ino());

    match read_names(&root) {
        Err(err) => walk.error(&root, &io_message(&err)),
        Ok(names) => {
            for name in names {
                let name = name.as_bytes();
                let child = child_path(&root, name);
                let hidden = name.starts_with(b".");
                let excluded = walk.exclude_hidden && hidden;
                match look(&child) {
                    Seen::Failed(err) => walk.error(&child, &io_message(&err)),
                    Seen::Dangling => {
                        walk.hidden += usize::from(hidden);
                        if !excluded {
                            walk.print(child, false);
                        }
                    }
                    Seen::Found(meta) if meta.is_dir() => {
                        let id = (meta.dev(), meta.ino());
                        if id == root_id {
                            walk.loop_error(&child, &root);
                            continue;
                        }
                        walk.hidden += usize::from(hidden);
                        if !excluded {
                            walk.print(child.clone(), true);
                        }
                        walk_second_level(&mut walk, &root, root_id, &child, id, excluded);
                    }
                    Seen::Found(_) => {
                        walk.hidden += usize::from(hidden);
                        if !excluded {
                            walk.print(child, false);
                        }
                    }
                }
            }
        }
    }

    if !walk.stderr.is_empty() {
        return Err(truncate_chars(
            &walk.stderr,
            MAX_CHARS,
            GENERIC_TRUNCATED_NOTICE,
        ));
    }

    let entries = walk.kept.into_sorted_vec();
    let mut raw = String::new();
    let mut dirs: HashMap<String, bool> = HashMap::with_capacity(entries.len());
    for entry in entries {
        let text = String::from_utf8_lossy(&entry.path).into_owned();
        raw.push_str(&text);
        raw.push('\n');
        dirs.insert(text, entry.is_dir);
    }
    let raw = truncate_chars(&raw, MAX_CHARS, DIRECTORY_TRUNCATED_NOTICE);
    let stripped = py_strip(&raw);
    let formatted: Vec<String> = if stripped.is_empty() {
        Vec::new()
    } else {
        stripped
            .split('\n')
            .map(|piece| {
                if dirs.get(piece).copied().unwrap_or(false) {
                    format!("{piece}/")
                } else {
                    piece.to_owned()
                }
            })
            .collect()
    };
    let mut output = format!(
        "Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{}",
        formatted.join("\n")
    );
    if walk.hidden > 0 {
        output.push_str(&format!(
            "\n\n{} hidden files/directories in this directory are excluded. You can use 'ls -la {path}' to see them.",
            walk.hidden
        ));
    }
    Ok(output)
}

/// Lists the children of the depth-1 directory `dir` (depth 2: listed, never descended).
fn walk_second_level(
    walk: &mut Walk,
    root: &[u8],
    root_id: (u64, u64),
    dir: &[u8],
    dir_id: (u64, u64),
    dir_excluded: bool,
) {
    let names = match read_names(dir) {
        Ok(names) => names,
        Err(err) => {
            walk.error(dir, &io_message(&err));
            return;
        }
    };
    for name in names {
        let name = name.as_bytes();
        let child = child_path(dir, name);
        let excluded = dir_excluded || (walk.exclude_hidden && name.starts_with(b"."));
        match look(&child) {
            Seen::Failed(err) => walk.error(&child, &io_message(&err)),
            Seen::Dangling => {
                if !excluded {
                    walk.print(child, false);
                }
            }
            Seen::Found(meta) => {
                let is_dir = meta.is_dir();
                if is_dir {
                    let id = (meta.dev(), meta.ino());
                    if id == root_id {
                        walk.loop_error(&child, root);
                        continue;
                    }
                    if id == dir_id {
                        walk.loop_error(&child, dir);
                        continue;
                    }
                }
                if !excluded {
                    walk.print(child, is_dir);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
