//! `GET /download_files`: a zip of every regular file under a path, streamed into a writer.

use std::fs::{self, File};
use std::io::{self, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::error::TransferError;
use super::zip_time::zip_time;

/// `GET /download_files` (docs/protocol.md §8): writes into `out` a zip of every regular file under `path`
/// (recursive walk), named relative to `path` with `/` separators; a path naming a plain file
/// yields an empty zip.
///
/// Like the reference (`os.walk` without `followlinks`): symbolic links to files are included with
/// their target's content, links to directories are not descended, unreadable directories are
/// skipped, and directories are not entries (empty ones vanish). Unlike it, special files (FIFOs,
/// sockets, devices) and dangling links are skipped rather than read or failed on, files that
/// vanish during the walk are skipped, and entries come in sorted order. Names that are not UTF-8
/// are converted lossily; times are stored as UTC.
pub(crate) fn zip_tree<W: Write + Seek>(path: &Path, out: W) -> Result<(), TransferError> {
    if !path.is_absolute() {
        return Err(TransferError::PathNotAbsolute);
    }
    // The reference's `os.path.exists` is false for any error, so every failure here is a 404.
    let meta = fs::metadata(path).map_err(|_| TransferError::NotFound)?;
    let mut zip = ZipWriter::new(out).set_auto_large_file();
    if meta.is_dir() {
        let mut stack = vec![(path.to_path_buf(), String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            let Ok(read) = fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<fs::DirEntry> = read.filter_map(Result::ok).collect();
            entries.sort_by_key(fs::DirEntry::file_name);
            let mut subdirs = Vec::new();
            for entry in entries {
                let Ok(file_type) = entry.file_type() else {
                    continue;
                };
                let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
                let entry_path = entry.path();
                if file_type.is_dir() {
                    subdirs.push((entry_path, format!("{name}/")));
                } else if file_type.is_file()
                    || (file_type.is_symlink()
                        && fs::metadata(&entry_path).is_ok_and(|m| m.is_file()))
                {
                    add_file(&mut zip, &entry_path, &name)?;
                }
            }
            // Popped in sorted order: a pre-order walk.
            stack.extend(subdirs.into_iter().rev());
        }
    }
    zip.finish()?;
    Ok(())
}

/// Appends one file to the archive, skipping it if it vanished or is no longer a regular file.
fn add_file<W: Write + Seek>(
    zip: &mut ZipWriter<W>,
    path: &Path,
    name: &str,
) -> Result<(), TransferError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(());
    }
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .unix_permissions(meta.mode())
        .large_file(meta.len() >= u64::from(u32::MAX))
        .last_modified_time(zip_time(meta.modified().ok()));
    zip.start_file(name, options)?;
    io::copy(&mut file, zip)?;
    Ok(())
}

#[cfg(test)]
mod tests;
