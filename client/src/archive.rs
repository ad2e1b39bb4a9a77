//! Packing a local file or directory into the in-memory zip that a recursive upload sends.
//!
//! Like OpenHands' client, entry names are relative to the *parent* of the source, so uploading
//! `/home/me/proj` to `/workspace` yields `/workspace/proj/...` in the sandbox. Unlike it, empty
//! directories are kept (as directory entries), permission bits are stored (sandboxd restores
//! the execute bit), entries are sorted, and special files are skipped.

use std::fs::{self, File};
use std::io::{self, Cursor, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::ClientError;

/// Zips `source` (a directory, or a single file) with names relative to its parent directory.
///
/// Symbolic links to files are stored with their target's content; links to directories are not
/// followed; FIFOs, sockets and devices are skipped. Names must be UTF-8.
pub fn zip_for_upload(source: &Path) -> Result<Vec<u8>, ClientError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ClientError::Io { path, source }
    };
    // Canonical, so that `.` or `dir/..` still have a name to use.
    let source = fs::canonicalize(source).map_err(io_err(source))?;
    let meta = fs::metadata(&source).map_err(io_err(&source))?;
    let top = match source.file_name() {
        Some(name) => utf8_name(name, &source)?,
        // `/`: entries relative to the directory itself.
        None => String::new(),
    };

    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let zip_err = |path: &Path| {
        let path = path.to_path_buf();
        move |err: zip::result::ZipError| ClientError::Io {
            path,
            source: io::Error::other(err),
        }
    };
    if meta.is_dir() {
        let mut stack: Vec<(PathBuf, String)> = Vec::new();
        if top.is_empty() {
            stack.push((source.clone(), String::new()));
        } else {
            add_dir(&mut zip, &format!("{top}/"), &meta).map_err(zip_err(&source))?;
            stack.push((source.clone(), format!("{top}/")));
        }
        while let Some((dir, prefix)) = stack.pop() {
            let mut entries = fs::read_dir(&dir)
                .map_err(io_err(&dir))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(io_err(&dir))?;
            entries.sort_by_key(fs::DirEntry::file_name);
            let mut subdirs = Vec::new();
            for entry in entries {
                let path = entry.path();
                let name = format!("{prefix}{}", utf8_name(&entry.file_name(), &path)?);
                let file_type = entry.file_type().map_err(io_err(&path))?;
                if file_type.is_dir() {
                    let meta = entry.metadata().map_err(io_err(&path))?;
                    add_dir(&mut zip, &format!("{name}/"), &meta).map_err(zip_err(&path))?;
                    subdirs.push((path, format!("{name}/")));
                } else if file_type.is_file()
                    || (file_type.is_symlink() && fs::metadata(&path).is_ok_and(|m| m.is_file()))
                {
                    add_file(&mut zip, &path, &name)?;
                }
            }
            stack.extend(subdirs.into_iter().rev());
        }
    } else if meta.is_file() {
        add_file(&mut zip, &source, &top)?;
    } else {
        return Err(ClientError::Io {
            path: source,
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file or directory",
            ),
        });
    }
    let cursor = zip.finish().map_err(zip_err(&source))?;
    Ok(cursor.into_inner())
}

fn utf8_name(name: &std::ffi::OsStr, path: &Path) -> Result<String, ClientError> {
    name.to_str()
        .map(str::to_owned)
        .ok_or_else(|| ClientError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidData, "file name is not UTF-8"),
        })
}

fn add_dir(
    zip: &mut ZipWriter<Cursor<Vec<u8>>>,
    name: &str,
    meta: &fs::Metadata,
) -> zip::result::ZipResult<()> {
    let options = SimpleFileOptions::default().unix_permissions(meta.permissions().mode());
    zip.add_directory(name, options)
}

fn add_file(
    zip: &mut ZipWriter<Cursor<Vec<u8>>>,
    path: &Path,
    name: &str,
) -> Result<(), ClientError> {
    let io_err = |source| ClientError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .unix_permissions(meta.permissions().mode())
        .large_file(meta.len() >= u64::from(u32::MAX));
    zip.start_file(name, options)
        .map_err(|err| io_err(io::Error::other(err)))?;
    io::copy(&mut file, zip).map_err(io_err)?;
    zip.flush().map_err(io_err)?;
    Ok(())
}

#[cfg(test)]
mod tests;
