//! Content hashes of files, for conditional writes: a `read` answers with the hash of what it
//! read, and a `write` or `edit` that names the hash the caller last read is refused when the
//! file no longer has it.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The prefix of every content hash: the algorithm.
const ALGORITHM: &str = "sha256:";

/// The content hash of the regular file at `path`, `sha256:HEX`; `None` when it is not a
/// regular file or cannot be read. Blocking: reads the whole file.
pub(crate) fn content_hash(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(format!(
        "{ALGORITHM}{}",
        sandbox_common::hex(&hasher.finalize())
    ))
}

/// A content hash as a caller sends it (`If-Match`): an entity tag, quoted or not, weak or
/// not, holding `sha256:` and 64 hex digits. `Err` says what is wrong.
pub(crate) fn parse_expected(value: &str) -> Result<String, String> {
    let tag = value.trim();
    let tag = tag.strip_prefix("W/").unwrap_or(tag);
    let tag = tag
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(tag);
    let hex = tag.strip_prefix(ALGORITHM).ok_or_else(|| {
        format!(
            "If-Match must be a content hash as `read` gives it (\"sha256:HEX\"), not {value:?}"
        )
    })?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "If-Match must hold sha256: and 64 hexadecimal digits, not {value:?}"
        ));
    }
    Ok(format!("{ALGORITHM}{}", hex.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests;
