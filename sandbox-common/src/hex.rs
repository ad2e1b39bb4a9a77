//! Bytes as lower-case hexadecimal: digests in names and tags, random tokens.

use std::fmt::Write;

/// `bytes` as `2 * bytes.len()` lower-case hex digits.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

#[cfg(test)]
mod tests;
