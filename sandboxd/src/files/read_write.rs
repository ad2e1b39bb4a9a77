//! The plain `read` (default mode) and `write` actions (docs/protocol.md §6): paths resolved against
//! the shell's working directory, UTF-8 with Python's universal newlines, the reference's line
//! selection and splicing rules.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use nix::fcntl::OFlag;
use protocol::Observation;
use protocol::action::{FileReadArgs, FileReadSource, FileWriteArgs};

use super::FileContext;
use super::binary::open_regular;
use super::pycompat::{os_error_message, py_is_absolute, py_path_join, py_path_str};
use crate::observations;

/// `_resolve_path`: absolute paths as given, others joined to the shell's working directory;
/// either way normalised like `str(pathlib.Path)` (`..` is kept).
pub(crate) fn resolve(path: &str, cwd: &Path) -> String {
    if py_is_absolute(path) {
        py_path_str(path)
    } else {
        py_path_join(&cwd.to_string_lossy(), path)
    }
}

/// Why reading lines failed.
enum LinesError {
    /// Not valid UTF-8.
    Decode,
    /// The OS refused.
    Io(io::Error),
}

impl From<io::Error> for LinesError {
    fn from(err: io::Error) -> Self {
        LinesError::Io(err)
    }
}

/// Splits one `read_until(b'\n')` segment into lines the way Python's universal-newline mode
/// does (`\r\n`, `\r` and `\n` all end a line and become `\n`), validating UTF-8.
fn push_segment_lines(segment: &[u8], out: &mut impl FnMut(String)) -> Result<(), LinesError> {
    let mut start = 0;
    let mut i = 0;
    while i < segment.len() {
        match segment[i] {
            b'\r' | b'\n' => {
                let line =
                    std::str::from_utf8(&segment[start..i]).map_err(|_| LinesError::Decode)?;
                out(format!("{line}\n"));
                i += if segment[i] == b'\r' && segment.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < segment.len() {
        let line = std::str::from_utf8(&segment[start..]).map_err(|_| LinesError::Decode)?;
        out(line.to_owned());
    }
    Ok(())
}

/// Reads every line (so that invalid UTF-8 anywhere is an error, as in the reference) but keeps
/// only those `read_lines(all_lines, start, end)` returns, in one pass:
/// `end == -1` → lines from `clamp(start, 0, n)`; otherwise `b = max(0, min(s, n - 2))`,
/// `e = max(b + 1, clamp(end, 0, n))`, lines `[b, e)`.
fn select_lines(reader: impl BufRead, start: i64, end: i64) -> Result<String, LinesError> {
    let first = u64::try_from(start.max(0)).unwrap_or(0);
    let wanted_end = if end == -1 {
        u64::MAX
    } else {
        u64::try_from(end.max(0))
            .unwrap_or(0)
            .max(first.saturating_add(1))
    };
    let mut kept: Vec<(u64, String)> = Vec::new();
    // The last two lines, for when the file is shorter than `start`.
    let mut tail: [Option<(u64, String)>; 2] = [None, None];
    let mut n: u64 = 0;
    let mut segment = Vec::new();
    let mut reader = reader;
    loop {
        segment.clear();
        if reader.read_until(b'\n', &mut segment)? == 0 {
            break;
        }
        push_segment_lines(&segment, &mut |line| {
            let index = n;
            n += 1;
            if index >= first && index < wanted_end {
                kept.push((index, line.clone()));
            }
            if end != -1 {
                tail[0] = tail[1].take();
                tail[1] = Some((index, line));
            }
        })?;
    }

    if end == -1 {
        return Ok(kept.into_iter().map(|(_, line)| line).collect());
    }
    let n = i128::from(n);
    let s = i128::from(start).clamp(0, n);
    let e0 = i128::from(end).clamp(0, n);
    let b = s.min(n - 2).max(0);
    let e = (b + 1).max(e0);
    let within = |index: u64| i128::from(index) >= b && i128::from(index) < e;
    let source = if b == s {
        kept
    } else {
        tail.into_iter().flatten().collect()
    };
    Ok(source
        .into_iter()
        .filter(|(index, _)| within(*index))
        .map(|(_, line)| line)
        .collect())
}

/// The `read` action in default mode (after the binary check done by the caller).
pub(crate) fn read_default(args: &FileReadArgs, abs: &str, ctx: &FileContext) -> Observation {
    let cwd = ctx.cwd.to_string_lossy();
    let not_found = || format!("File not found: {abs}. Your current working directory is {cwd}.");
    let meta = match fs::metadata(abs) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return observations::error(not_found());
        }
        Err(err) => return observations::error(os_error_message(&err, abs)),
    };
    if meta.is_dir() {
        return observations::error(format!(
            "Path is a directory: {abs}. You can only read files"
        ));
    }
    let file = match open_regular(Path::new(abs)) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return observations::error(format!(
                "Path is not a regular file: {abs}. You can only read files"
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return observations::error(not_found());
        }
        Err(err) => return observations::error(os_error_message(&err, abs)),
    };
    match select_lines(
        BufReader::with_capacity(1 << 16, file),
        args.start,
        args.end,
    ) {
        Ok(content) => observations::read(abs, FileReadSource::Default, content),
        Err(LinesError::Decode) => {
            observations::error(format!("File could not be decoded as utf-8: {abs}."))
        }
        Err(LinesError::Io(err)) => observations::error(os_error_message(&err, abs)),
    }
}

/// Python's `seq[:stop]` / `seq[start:]` bound for a possibly negative index.
fn py_index(len: usize, index: i64) -> usize {
    let len_i = i128::try_from(len).unwrap_or(i128::MAX);
    let index = i128::from(index);
    let bound = if index < 0 { len_i + index } else { index };
    usize::try_from(bound.clamp(0, len_i)).unwrap_or(len)
}

/// The file's lines as Python's `readlines()` gives them (universal newlines).
fn python_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    // Only fails on invalid UTF-8, which `text` cannot contain.
    let _ = push_segment_lines(text.as_bytes(), &mut |line| lines.push(line));
    lines
}

/// `insert_lines(to_insert, original, start, end)` of the reference, with every piece of the
/// new content followed by `\n`.
fn splice(original: &[String], content: &str, start: i64, end: i64) -> String {
    let mut out = String::with_capacity(content.len() + 1);
    if start != 0 {
        for line in &original[..py_index(original.len(), start)] {
            out.push_str(line);
        }
    }
    for piece in content.split('\n') {
        out.push_str(piece);
        out.push('\n');
    }
    if end != -1 {
        for line in &original[py_index(original.len(), end)..] {
            out.push_str(line);
        }
    }
    out
}

/// `os.makedirs(dir)` that also hands every directory it creates to `owner`.
fn create_parents(dir: &Path, owner: Option<(u32, u32)>) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        if path.as_os_str().is_empty() || path.exists() {
            break;
        }
        missing.push(path);
        current = path.parent();
    }
    for path in missing.into_iter().rev() {
        if let Err(err) = fs::create_dir(path) {
            if err.kind() == io::ErrorKind::AlreadyExists && path.is_dir() {
                continue;
            }
            return Err(os_error_message(&err, &path.to_string_lossy()));
        }
        if let Some((uid, gid)) = owner {
            // Best effort: the reference leaves new directories to the server's user.
            let _ = std::os::unix::fs::chown(path, Some(uid), Some(gid));
        }
    }
    Ok(())
}

/// The `write` action.
pub(crate) fn write(args: &FileWriteArgs, ctx: &FileContext) -> Observation {
    let abs = resolve(&args.path, ctx.cwd);
    let path = Path::new(&abs);
    if let Some(parent) = path.parent()
        && let Err(message) = create_parents(parent, ctx.owner)
    {
        return observations::error(super::denied::explain(message, path));
    }
    let result = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(format!(
            "Path is a directory: {abs}. You can only write to files"
        )),
        Ok(meta) if !meta.is_file() => Err(format!(
            "Path is not a regular file: {abs}. You can only write to files"
        )),
        Ok(meta) => write_existing(args, &abs, &meta),
        Err(err) if err.kind() == io::ErrorKind::NotFound => write_new(args, &abs, ctx.owner),
        Err(err) => Err(os_error_message(&err, &abs)),
    };
    match result {
        Ok(()) => observations::write(&abs),
        Err(message) => observations::error(super::denied::explain(message, path)),
    }
}

/// Maps an error of opening the file to the reference's message.
fn open_error(err: &io::Error, abs: &str) -> String {
    if err.kind() == io::ErrorKind::NotFound {
        format!("File not found: {abs}")
    } else if err.kind() == io::ErrorKind::IsADirectory {
        format!("Path is a directory: {abs}. You can only write to files")
    } else {
        os_error_message(err, abs)
    }
}

/// The message for a failed `chmod`/`chown` after writing.
fn metadata_error(err: &io::Error, abs: &str) -> String {
    if err.kind() == io::ErrorKind::PermissionDenied {
        format!(
            "File {abs} written, but failed to change ownership and permissions: {}",
            os_error_message(err, abs)
        )
    } else {
        os_error_message(err, abs)
    }
}

fn write_new(args: &FileWriteArgs, abs: &str, owner: Option<(u32, u32)>) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o664)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(abs)
        .map_err(|err| open_error(&err, abs))?;
    let mut data = String::with_capacity(args.content.len() + 1);
    for piece in args.content.split('\n') {
        data.push_str(piece);
        data.push('\n');
    }
    file.write_all(data.as_bytes())
        .map_err(|err| os_error_message(&err, abs))?;
    drop(file);

    fs::set_permissions(abs, fs::Permissions::from_mode(0o664))
        .map_err(|err| metadata_error(&err, abs))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(abs, Some(uid), Some(gid))
            .map_err(|err| metadata_error(&err, abs))?;
    }
    Ok(())
}

fn write_existing(args: &FileWriteArgs, abs: &str, before: &fs::Metadata) -> Result<(), String> {
    let mut file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(abs)
        .map_err(|err| open_error(&err, abs))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| os_error_message(&err, abs))?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(format!("File could not be decoded as utf-8: {abs}"));
    };
    let lines = python_lines(text);
    let new_text = splice(&lines, &args.content, args.start, args.end);
    drop(lines);
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(new_text.as_bytes()))
        .and_then(|()| file.set_len(new_text.len() as u64))
        .map_err(|err| os_error_message(&err, abs))?;
    drop(file);

    // Writing in place keeps mode and owner; put back only what the kernel may have changed
    // (it clears set-id bits on write), so files we may write but not chmod still work.
    let after = fs::metadata(abs).map_err(|err| os_error_message(&err, abs))?;
    if after.mode() & 0o7777 != before.mode() & 0o7777 {
        fs::set_permissions(abs, fs::Permissions::from_mode(before.mode() & 0o7777))
            .map_err(|err| metadata_error(&err, abs))?;
    }
    if (after.uid(), after.gid()) != (before.uid(), before.gid()) {
        std::os::unix::fs::chown(abs, Some(before.uid()), Some(before.gid()))
            .map_err(|err| metadata_error(&err, abs))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
