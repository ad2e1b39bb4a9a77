//! Binary-file sniffing in the manner of Python's `binaryornot` (used by the reference for
//! `read` and by the editor): a look at the first 1024 bytes, never blocking on special files.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::OFlag;

use super::encoding;

/// How many leading bytes the heuristic looks at.
const CHUNK: usize = 1024;

/// `binaryornot.check.is_binary(path)`. Missing paths, directories, special files and unreadable
/// files are not binary (the reference swallows the error the same way); a `.pyc` name is.
pub(crate) fn is_binary_file(path: &Path) -> bool {
    if path.as_os_str().as_bytes().ends_with(b".pyc") {
        return true;
    }
    match read_chunk(path) {
        Some((chunk, complete)) => is_binary_bytes(&chunk, complete),
        None => false,
    }
}

/// Opens `path` for reading without blocking on FIFOs or devices: only regular files qualify.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<Option<File>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Ok(None);
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    // The path may have been swapped for something else between the two calls.
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    Ok(Some(file))
}

/// The first [`CHUNK`] bytes of a regular file, and whether they are the whole file.
fn read_chunk(path: &Path) -> Option<(Vec<u8>, bool)> {
    let file = open_regular(path).ok()??;
    let mut chunk = Vec::with_capacity(CHUNK);
    file.take(CHUNK as u64).read_to_end(&mut chunk).ok()?;
    let complete = chunk.len() < CHUNK;
    Some((chunk, complete))
}

/// Bytes `binaryornot` counts as printable ASCII: `\n \r \t \f \b` and 32..=126.
fn is_printable_ascii(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | b'\t' | 0x0c | 0x08 | 32..=126)
}

/// `binaryornot.helpers.is_binary_string`. Where the original asks `chardet` whether the chunk
/// decodes with confidence above 0.9, this asks whether it is UTF-16 with a byte order mark,
/// non-ASCII UTF-8, or a legacy encoding `chardetng` recognises with plausible text — in each
/// case without NUL bytes except for UTF-16.
fn is_binary_bytes(chunk: &[u8], complete: bool) -> bool {
    if chunk.is_empty() {
        return false;
    }
    let len = chunk.len() as f64;
    let control = chunk.iter().filter(|&&b| !is_printable_ascii(b)).count() as f64;
    let low = chunk.iter().filter(|&&b| b < 127).count() as f64;
    let nontext_ratio1 = control / len;
    let nontext_ratio2 = low / len;
    let likely_binary = (nontext_ratio1 > 0.3 && nontext_ratio2 < 0.05)
        || (nontext_ratio1 > 0.8 && nontext_ratio2 > 0.8);
    let decodable = decodable_as_text(chunk, complete);
    if likely_binary {
        !decodable
    } else {
        !decodable && (chunk.contains(&0x00) || chunk.contains(&0xff))
    }
}

fn decodable_as_text(chunk: &[u8], complete: bool) -> bool {
    for (bom, rs) in [
        (&b"\xFF\xFE"[..], encoding_rs::UTF_16LE),
        (&b"\xFE\xFF"[..], encoding_rs::UTF_16BE),
    ] {
        if let Some(body) = chunk.strip_prefix(bom) {
            let usable = if complete {
                body
            } else {
                // Drop a code unit cut in half, and a high surrogate whose pair was cut off.
                let mut end = body.len() & !1;
                if end >= 2 {
                    let unit = if rs == encoding_rs::UTF_16LE {
                        u16::from_le_bytes([body[end - 2], body[end - 1]])
                    } else {
                        u16::from_be_bytes([body[end - 2], body[end - 1]])
                    };
                    if (0xD800..0xDC00).contains(&unit) {
                        end -= 2;
                    }
                }
                &body[..end]
            };
            let (text, had_errors) = rs.decode_without_bom_handling(usable);
            return !had_errors && encoding::looks_like_text(&text);
        }
    }
    if chunk.contains(&0) || chunk.is_ascii() {
        return false;
    }
    if encoding::utf8_prefix_valid(chunk, complete) {
        return true;
    }
    encoding::confident_legacy(chunk, complete).is_some()
}

#[cfg(test)]
pub(crate) mod tests;
