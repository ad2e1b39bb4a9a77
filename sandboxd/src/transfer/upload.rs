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
use std::io::{self, Read, Write};
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

/// Stores an upload (docs/protocol.md §8) with the default [`ExtractLimits`]; see [`store_upload_with_limits`].
pub(crate) fn store_upload(
    destination: &Path,
    filename: &str,
    data: &[u8],
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
/// The zip is extracted straight from `data`: the reference's "write the zip into the
/// destination, extract, delete it" has the same visible result, minus clobbering a file that
/// happened to have the zip's name. A replaced file keeps its permission bits (and, when `owner`
/// is `None`, its owner where possible); it is replaced by rename, so a symbolic link at its name
/// is replaced rather than written through. Directories and files created are given to `owner`
/// (`(uid, gid)`) when set.
fn store_upload_with_limits(
    destination: &Path,
    filename: &str,
    data: &[u8],
    recursive: bool,
    owner: Option<(u32, u32)>,
    limits: ExtractLimits,
) -> Result<(), TransferError> {
    if !destination.is_absolute() {
        return Err(TransferError::DestinationNotAbsolute);
    }
    check_filename(filename)?;
    let is_zip = filename.ends_with(".zip");
    if recursive && !is_zip {
        return Err(TransferError::RecursiveNotZip);
    }
    create_dir_all_owned(destination, owner)?;
    if is_zip {
        extract_zip(destination, data, owner, limits)
    } else {
        write_file_replacing(&destination.join(filename), false, owner, |file| {
            file.write_all(data)?;
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
    data: &[u8],
    owner: Option<(u32, u32)>,
    limits: ExtractLimits,
) -> Result<(), TransferError> {
    let mut archive = ZipArchive::new(io::Cursor::new(data))
        .map_err(|err| TransferError::InvalidZip(err.to_string()))?;
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
mod tests {
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
        store_upload(&dest, "u.txt", b"one", false, None).unwrap();
        assert_eq!(fs::read(dest.join("u.txt")).unwrap(), b"one");
        store_upload(&dest, "u.txt", b"two", false, None).unwrap();
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
        store_upload(tmp.path(), "run.sh", b"new", false, None).unwrap();
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
            |dest| store_upload(dest, "f.txt", b"uploaded", false, None).unwrap(),
            b"uploaded",
        );
    }

    #[test]
    fn upload_onto_a_directory_fails_with_the_os_style_message() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("x")).unwrap();
        let err = store_upload(tmp.path(), "x", b"data", false, None).unwrap_err();
        assert!(matches!(err, TransferError::Io(_)));
        assert!(err.to_string().starts_with("Is a directory"), "{err}");
    }

    #[test]
    fn upload_into_a_file_destination_fails() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("file"), "x").unwrap();
        let err = store_upload(&tmp.path().join("file"), "a", b"", false, None).unwrap_err();
        assert!(err.to_string().starts_with("Not a directory"), "{err}");
    }

    #[test]
    fn relative_destination_is_refused() {
        let err = store_upload(Path::new("rel/dir"), "a.txt", b"x", false, None).unwrap_err();
        assert_eq!(err.to_string(), "400: Destination must be an absolute path");
    }

    #[test]
    fn recursive_non_zip_is_refused_before_touching_the_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("new");
        let err = store_upload(&dest, "a.txt", b"x", true, None).unwrap_err();
        assert_eq!(err.to_string(), "400: Recursive uploads must be zip files");
        assert!(!dest.exists());
    }

    #[test]
    fn bad_file_names_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        for name in ["", ".", "..", "../x", "a/b", "/etc/passwd", "nul\0byte"] {
            let err = store_upload(tmp.path(), name, b"x", false, None).unwrap_err();
            assert!(
                matches!(err, TransferError::InvalidFilename(ref n) if n == name),
                "{name:?}: {err}"
            );
        }
        assert!(tree(tmp.path()).is_empty());
        // Dots inside a name are fine.
        store_upload(tmp.path(), "a..b", b"x", false, None).unwrap();
        store_upload(tmp.path(), "..hidden", b"x", false, None).unwrap();
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
        store_upload(&dest, "tmpab12cd.zip", &zip, true, None).unwrap();
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
        store_upload(tmp.path(), "bundle.zip", &zip, false, None).unwrap();
        assert_eq!(tree(tmp.path()), ["x.txt"]);
    }

    #[test]
    fn a_file_with_the_zip_name_survives_extraction() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("bundle.zip"), "mine").unwrap();
        let zip = make_zip(&[("x.txt", b"x")]);
        store_upload(tmp.path(), "bundle.zip", &zip, true, None).unwrap();
        assert_eq!(fs::read(tmp.path().join("bundle.zip")).unwrap(), b"mine");
    }

    #[test]
    fn extraction_overwrites_existing_files_and_merges_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("d")).unwrap();
        fs::write(tmp.path().join("d/a.txt"), "old").unwrap();
        fs::write(tmp.path().join("d/keep.txt"), "keep").unwrap();
        let zip = make_zip(&[("d/a.txt", b"new")]);
        store_upload(tmp.path(), "u.zip", &zip, true, None).unwrap();
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
            let err = store_upload(&dest, "evil.zip", &zip, true, None).unwrap_err();
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
        let err = store_upload(&dest, "u.zip", &zip, true, None).unwrap_err();
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
            store_upload(&dest, "u.zip", &zip, true, None),
            Err(TransferError::UnsafeEntry { .. })
        ));
    }

    #[test]
    fn extraction_replaces_a_file_symlink_instead_of_writing_through_it() {
        let zip = make_zip(&[("f.txt", b"from zip")]);
        assert_replaces_link_to_outside(
            |dest| store_upload(dest, "u.zip", &zip, true, None).unwrap(),
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
        store_upload(tmp.path(), "s.zip", &data, true, None).unwrap();
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
        store_upload(&tmp.path().join("ws"), "u.zip", &zip, true, None).unwrap();
        assert_eq!(fs::read(real.join("a/b.txt")).unwrap(), b"b");
    }

    #[test]
    fn too_many_entries_are_refused_before_extraction() {
        let tmp = tempfile::tempdir().unwrap();
        let zip = make_zip(&[("a", b"1"), ("b", b"2"), ("c", b"3")]);
        let limits = ExtractLimits {
            max_bytes: MAX_EXTRACTED_BYTES,
            max_entries: 2,
        };
        let err =
            store_upload_with_limits(tmp.path(), "u.zip", &zip, true, None, limits).unwrap_err();
        assert_eq!(
            err.to_string(),
            "400: Zip archive exceeds the limit of 2 entries"
        );
        assert!(tree(tmp.path()).is_empty());
    }

    #[test]
    fn too_many_bytes_are_refused_before_extraction() {
        let tmp = tempfile::tempdir().unwrap();
        // Highly compressible: a small zip that expands past the limit.
        let big = vec![0_u8; 1 << 20];
        let zip = make_zip(&[("small", b"1"), ("bomb", &big)]);
        assert!(zip.len() < 16 * 1024);
        let limits = ExtractLimits {
            max_bytes: 1000,
            max_entries: MAX_ZIP_ENTRIES,
        };
        let err =
            store_upload_with_limits(tmp.path(), "u.zip", &zip, true, None, limits).unwrap_err();
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
        assert!(tree(tmp.path()).is_empty());
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
        let err = store_upload(tmp.path(), "u.zip", b"not a zip at all", true, None).unwrap_err();
        assert!(matches!(err, TransferError::InvalidZip(_)), "{err}");
        assert!(err.to_string().starts_with("400: Invalid zip file: "));
    }

    #[test]
    fn an_entry_under_an_existing_file_fails_cleanly() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("a"), "file").unwrap();
        let zip = make_zip(&[("a/b.txt", b"x")]);
        let err = store_upload(tmp.path(), "u.zip", &zip, true, None).unwrap_err();
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
        store_upload(&dest, "u.zip", &zip, true, Some(owner)).unwrap();
        store_upload(&dest, "plain.txt", b"p", false, Some(owner)).unwrap();
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
}
