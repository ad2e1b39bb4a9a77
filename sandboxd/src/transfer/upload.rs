//! `POST /upload_file`: stores an uploaded file, or extracts an uploaded zip, into a directory.
//!
//! Zip extraction is hardened where the reference is not:
//! * every entry name is checked before anything is written: absolute names, `..` components and
//!   NUL bytes reject the whole archive ("zip slip");
//! * extraction never passes through a symbolic link inside the destination, and never writes
//!   through one: each file is written under a temporary name in its directory and renamed into
//!   place, which replaces a link instead of following it;
//! * the number of entries and the bytes written (counted, not taken from the archive's claims)
//!   are bounded by [`ExtractLimits`].
//!
//! Remaining limit: the checks use paths, not directory handles, so a process inside the sandbox
//! that swaps a directory for a symbolic link between the check and the write can still redirect
//! one file. Closing that needs `openat`-style calls, which std does not offer.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt, fchown, lchown};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use zip::ZipArchive;

use super::error::TransferError;

/// Default bound on the bytes one zip upload may extract: 4 GiB.
const MAX_EXTRACTED_BYTES: u64 = 4 << 30;

/// Default bound on the number of entries in one zip upload.
const MAX_ZIP_ENTRIES: usize = 100_000;

/// Bounds on what extracting one uploaded zip may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ExtractLimits {
    /// Total bytes of file content written, summed over all entries.
    max_bytes: u64,
    /// Number of entries (files and directories) in the archive.
    max_entries: usize,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits {
            max_bytes: MAX_EXTRACTED_BYTES,
            max_entries: MAX_ZIP_ENTRIES,
        }
    }
}

/// Checks an upload's destination and name, creates the destination directory (given to
/// `owner`) and opens the spool the upload is streamed into before it is stored: an anonymous
/// file in the destination itself (the filesystem the upload is bound for, not a small `/tmp`),
/// never visible under a name and gone when closed. The upload is then never held in memory.
pub(crate) fn upload_spool(
    destination: &Path,
    filename: &str,
    recursive: bool,
    owner: Option<(u32, u32)>,
) -> Result<File, TransferError> {
    check_upload(destination, filename, recursive)?;
    create_dir_all_owned(destination, owner)?;
    Ok(tempfile::tempfile_in(destination)?)
}

/// The checks every upload passes before anything is written.
fn check_upload(destination: &Path, filename: &str, recursive: bool) -> Result<(), TransferError> {
    if !destination.is_absolute() {
        return Err(TransferError::DestinationNotAbsolute);
    }
    check_filename(filename)?;
    if recursive && !filename.ends_with(".zip") {
        return Err(TransferError::RecursiveNotZip);
    }
    Ok(())
}

/// Stores an upload (docs/protocol.md §8) with the default [`ExtractLimits`]; see [`store_upload_with_limits`].
pub(crate) fn store_upload(
    destination: &Path,
    filename: &str,
    data: impl Read + Seek,
    recursive: bool,
    owner: Option<(u32, u32)>,
) -> Result<(), TransferError> {
    store_upload_with_limits(
        destination,
        filename,
        data,
        recursive,
        owner,
        ExtractLimits::default(),
    )
}

/// Stores an upload (docs/protocol.md §8): creates the destination directory; if `recursive` or `filename` ends in
/// `.zip`, extracts the zip `data` into the destination; otherwise writes `destination/filename`,
/// replacing an existing file.
///
/// `data` is read from its start. The zip is extracted straight from `data`: the reference's "write the zip into the
/// destination, extract, delete it" has the same visible result, minus clobbering a file that
/// happened to have the zip's name. A replaced file keeps its permission bits (and, when `owner`
/// is `None`, its owner where possible); it is replaced by rename, so a symbolic link at its name
/// is replaced rather than written through. Directories and files created are given to `owner`
/// (`(uid, gid)`) when set.
fn store_upload_with_limits(
    destination: &Path,
    filename: &str,
    mut data: impl Read + Seek,
    recursive: bool,
    owner: Option<(u32, u32)>,
    limits: ExtractLimits,
) -> Result<(), TransferError> {
    check_upload(destination, filename, recursive)?;
    create_dir_all_owned(destination, owner)?;
    data.rewind()?;
    if filename.ends_with(".zip") {
        extract_zip(destination, io::BufReader::new(data), owner, limits)
    } else {
        write_file_replacing(&destination.join(filename), false, owner, |file| {
            io::copy(&mut data, file)?;
            Ok(())
        })
    }
}

/// Rejects upload file names that are not one plain path component.
fn check_filename(filename: &str) -> Result<(), TransferError> {
    if filename.is_empty()
        || filename == "."
        || filename == ".."
        || filename.contains('/')
        || filename.contains('\0')
    {
        return Err(TransferError::InvalidFilename(filename.to_owned()));
    }
    Ok(())
}

/// One archive entry that passed validation.
#[derive(Debug)]
struct PlannedEntry {
    index: usize,
    name: String,
    rel: PathBuf,
    kind: EntryKind,
}

#[derive(Debug, Clone, Copy)]
enum EntryKind {
    Dir,
    File { executable: bool },
}

/// Extracts the zip `data` into the existing directory `destination`.
fn extract_zip(
    destination: &Path,
    data: impl Read + Seek,
    owner: Option<(u32, u32)>,
    limits: ExtractLimits,
) -> Result<(), TransferError> {
    let mut archive =
        ZipArchive::new(data).map_err(|err| TransferError::InvalidZip(err.to_string()))?;
    if archive.len() > limits.max_entries {
        return Err(TransferError::TooLarge {
            what: "entries",
            limit: u64::try_from(limits.max_entries).unwrap_or(u64::MAX),
        });
    }

    // Validate every name before writing anything.
    let mut plan = Vec::with_capacity(archive.len());
    let mut declared: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive.by_index_data(index)?;
        let name = entry.name()?.into_owned();
        if entry.encrypted() {
            return Err(TransferError::InvalidZip(format!(
                "entry {name:?} is encrypted"
            )));
        }
        let unsafe_entry = |reason| TransferError::UnsafeEntry {
            name: name.clone(),
            reason,
        };
        let rel = entry_relative_path(&name).map_err(unsafe_entry)?;
        let kind = if entry.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File {
                executable: entry.unix_mode().is_some_and(|mode| mode & 0o111 != 0),
            }
        };
        if rel.as_os_str().is_empty() {
            match kind {
                EntryKind::Dir => continue,
                EntryKind::File { .. } => return Err(unsafe_entry("has no file name")),
            }
        }
        declared = declared.saturating_add(entry.size());
        plan.push(PlannedEntry {
            index,
            name,
            rel,
            kind,
        });
    }
    if declared > limits.max_bytes {
        return Err(TransferError::TooLarge {
            what: "bytes",
            limit: limits.max_bytes,
        });
    }

    let root = fs::canonicalize(destination)?;
    let mut budget = limits.max_bytes;
    for entry in plan {
        match entry.kind {
            EntryKind::Dir => ensure_entry_dirs(&root, &entry.rel, owner, &entry.name)?,
            EntryKind::File { executable } => {
                if let Some(parent) = entry.rel.parent() {
                    ensure_entry_dirs(&root, parent, owner, &entry.name)?;
                }
                let mut reader = archive.by_index(entry.index)?;
                let target = root.join(&entry.rel);
                write_file_replacing(&target, executable, owner, |file| {
                    match copy_limited(&mut reader, file, budget) {
                        Ok(written) => {
                            budget -= written;
                            Ok(())
                        }
                        Err(CopyError::Read(err)) => Err(TransferError::InvalidZip(format!(
                            "entry {:?}: {err}",
                            entry.name
                        ))),
                        Err(CopyError::Write(err)) => Err(TransferError::Io(err)),
                        Err(CopyError::OverBudget) => Err(TransferError::TooLarge {
                            what: "bytes",
                            limit: limits.max_bytes,
                        }),
                    }
                })?;
            }
        }
    }
    Ok(())
}

/// The path an entry name denotes, relative to the destination, or why it is unsafe. `.` and
/// empty components are dropped; the result may be empty (the destination itself).
fn entry_relative_path(name: &str) -> Result<PathBuf, &'static str> {
    if name.contains('\0') {
        return Err("contains a NUL byte");
    }
    if name.starts_with('/') {
        return Err("is an absolute path");
    }
    let mut rel = PathBuf::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("contains a '..' component"),
            part => rel.push(part),
        }
    }
    Ok(rel)
}

/// Creates the directories of `rel` under `root` one by one, refusing to pass through a symbolic
/// link; created ones are given to `owner`.
fn ensure_entry_dirs(
    root: &Path,
    rel: &Path,
    owner: Option<(u32, u32)>,
    name: &str,
) -> Result<(), TransferError> {
    let mut current = root.to_path_buf();
    for component in rel.components() {
        current.push(component);
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(TransferError::UnsafeEntry {
                    name: name.to_owned(),
                    reason: "passes through a symbolic link",
                });
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(not_a_directory(&current).into()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => create_dir_owned(&current, owner)?,
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// `mkdir -p` that gives each directory it creates to `owner`. Symbolic links in `path` are
/// followed: the destination is the caller's choice.
fn create_dir_all_owned(path: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut current = Some(path);
    while let Some(dir) = current {
        match fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => return Err(not_a_directory(dir)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing.push(dir);
                current = dir.parent();
            }
            Err(err) => return Err(err),
        }
    }
    for dir in missing.into_iter().rev() {
        create_dir_owned(dir, owner)?;
    }
    Ok(())
}

/// Creates one directory (tolerating a concurrent creation) and gives it to `owner`.
fn create_dir_owned(dir: &Path, owner: Option<(u32, u32)>) -> io::Result<()> {
    match fs::create_dir(dir) {
        Ok(()) => {
            if let Some((uid, gid)) = owner {
                lchown(dir, Some(uid), Some(gid))?;
            }
            Ok(())
        }
        Err(err)
            if err.kind() == io::ErrorKind::AlreadyExists
                && fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) =>
        {
            Ok(())
        }
        Err(err) => Err(err),
    }
}

fn not_a_directory(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotADirectory,
        format!("Not a directory: '{}'", path.display()),
    )
}

/// Writes `target` by filling a temporary file in its directory and renaming it into place, so a
/// symbolic link at `target` is replaced, never followed, and readers never see a half-written
/// file. A replaced regular file's permission bits are kept (and its owner, when `owner` is
/// `None`, as far as allowed); `executable` adds execute bits where read bits are set.
fn write_file_replacing(
    target: &Path,
    executable: bool,
    owner: Option<(u32, u32)>,
    fill: impl FnOnce(&mut File) -> Result<(), TransferError>,
) -> Result<(), TransferError> {
    let dir = target.parent().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "path has no parent directory")
    })?;
    let old = match fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("Is a directory: '{}'", target.display()),
            )
            .into());
        }
        Ok(meta) if meta.is_file() => Some(meta),
        // A symbolic link or special file: replaced, never followed or opened.
        Ok(_) => None,
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err.into()),
    };
    let (temp_path, mut file) = create_temp_file(dir)?;
    let result = (|| {
        fill(&mut file)?;
        match (owner, &old) {
            (Some((uid, gid)), _) => fchown(&file, Some(uid), Some(gid))?,
            // Best effort: keeping a replaced file's owner may need privileges we lack.
            (None, Some(old)) => {
                let _ = fchown(&file, Some(old.uid()), Some(old.gid()));
            }
            (None, None) => {}
        }
        let current = file.metadata()?.mode() & 0o777;
        let mut mode = old.as_ref().map_or(current, |old| old.mode() & 0o777);
        if executable {
            mode |= (mode & 0o444) >> 2;
        }
        if mode != current {
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        fs::rename(&temp_path, target)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp_path);
    }
    result
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a new, uniquely named file in `dir` (`O_EXCL`, so never through a link).
fn create_temp_file(dir: &Path) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    for _ in 0..100 {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".sbx-upload-{pid}-{n}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "could not create a temporary file",
    ))
}

/// Why [`copy_limited`] stopped.
#[derive(Debug)]
enum CopyError {
    Read(io::Error),
    Write(io::Error),
    OverBudget,
}

/// Copies `src` to `dst`, failing as soon as more than `budget` bytes have been read.
fn copy_limited(src: &mut impl Read, dst: &mut impl Write, budget: u64) -> Result<u64, CopyError> {
    let mut buf = vec![0_u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(CopyError::Read(err)),
        };
        total = total.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
        if total > budget {
            return Err(CopyError::OverBudget);
        }
        dst.write_all(&buf[..n]).map_err(CopyError::Write)?;
    }
}

#[cfg(test)]
mod tests;
