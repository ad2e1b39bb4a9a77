//! Upload, download and listing of files: the blocking work behind `POST /upload_file`,
//! `GET /download_files` and `POST /list_files` (docs/protocol.md §8).
//!
//! Every function here blocks; the HTTP layer runs it on a blocking thread. A `TransferError`'s
//! `Display` is the reference server's `detail` text, so the HTTP layer answers
//! `500 {"detail": err.to_string()}` exactly as the reference does.
//!
//! `listing` lists a directory; `upload` stores an upload, extracting zips with guards the
//! reference lacks; `download` zips a tree; `zip_time` turns file times into zip entry times;
//! `error` is the failure type they share.

mod download;
mod error;
mod listing;
mod upload;
mod zip_time;

pub(crate) use download::zip_tree;
pub(crate) use error::TransferError;
pub(crate) use listing::list_files;
pub(crate) use upload::{store_upload, upload_spool};

#[cfg(test)]
mod tests;

/// Helpers of the tests of more than one transfer module.
#[cfg(test)]
mod test_support {
    use std::fs;
    use std::io;
    use std::path::Path;

    use super::{TransferError, zip_tree};

    pub(super) fn zip_of(path: &Path) -> Result<Vec<u8>, TransferError> {
        let mut out = io::Cursor::new(Vec::new());
        zip_tree(path, &mut out)?;
        Ok(out.into_inner())
    }

    /// Every path under `dir`, relative, sorted; directories end in `/`.
    pub(super) fn tree(dir: &Path) -> Vec<String> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let rel = entry
                    .path()
                    .strip_prefix(base)
                    .unwrap()
                    .display()
                    .to_string();
                if entry.file_type().unwrap().is_dir() {
                    out.push(format!("{rel}/"));
                    walk(base, &entry.path(), out);
                } else {
                    out.push(rel);
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out.sort();
        out
    }
}
