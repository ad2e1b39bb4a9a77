//! Why a transfer failed: the one error type of uploads and downloads, whose `Display` is the
//! reference's `detail` text.

use std::io;

use zip::result::ZipError;

/// Why an upload, download or listing failed. `Display` is the `detail` the HTTP layer sends; the
/// reference answers every one of them with status 500.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransferError {
    /// The upload destination is not an absolute path. The caller's mistake: retrying cannot help.
    #[error("400: Destination must be an absolute path")]
    DestinationNotAbsolute,
    /// `recursive` was set but the uploaded file is not named `*.zip`. Retrying cannot help.
    #[error("400: Recursive uploads must be zip files")]
    RecursiveNotZip,
    /// The download path is not an absolute path. Retrying cannot help.
    #[error("400: Path must be an absolute path")]
    PathNotAbsolute,
    /// The download path does not exist (or cannot be inspected). Retrying helps only once the
    /// file has been created.
    #[error("404: File not found")]
    NotFound,
    /// The upload's file name is empty, `.` or `..`, or holds `/` or NUL. Retrying cannot help.
    #[error("400: Invalid file name {0:?}")]
    InvalidFilename(String),
    /// The upload is not a readable zip archive, or uses what this server cannot extract
    /// (encryption, an unknown compression method). Retrying cannot help.
    #[error("400: Invalid zip file: {0}")]
    InvalidZip(String),
    /// An entry would land outside the destination (absolute name, `..`) or pass through a
    /// symbolic link. Nothing of the archive is written when the name itself is unsafe. Retrying
    /// cannot help.
    #[error("400: Unsafe zip entry {name:?}: {reason}")]
    UnsafeEntry {
        /// The entry's name in the archive.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The archive has more entries, or expands to more bytes, than the upload's `ExtractLimits`
    /// allow. Retrying cannot help.
    #[error("400: Zip archive exceeds the limit of {limit} {what}")]
    TooLarge {
        /// `"entries"` or `"bytes"`.
        what: &'static str,
        /// The limit that was hit.
        limit: u64,
    },
    /// A file system operation failed; `Display` is the OS message. Retrying helps only if the
    /// condition was transient (disk full, a concurrent change).
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl From<ZipError> for TransferError {
    fn from(err: ZipError) -> Self {
        match err {
            ZipError::Io(err) => TransferError::Io(err),
            other => TransferError::InvalidZip(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests;
