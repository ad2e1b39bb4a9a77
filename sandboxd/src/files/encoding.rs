//! Text encodings of edited files: detection (UTF-8 when valid, else `chardetng`), strict
//! decoding and encoding with `encoding_rs`, Python-style codec error messages, and the universal
//! newline translation Python's text files apply on reading.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{DecoderResult, EncoderResult, Encoding};

/// How many leading bytes detection looks at (the reference: 1 MiB).
pub(crate) const DETECTION_SAMPLE: usize = 1 << 20;

/// The encoding of a text file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextEncoding {
    /// UTF-8 without a byte order mark (also plain ASCII).
    Utf8,
    /// UTF-8 with a byte order mark: stripped on reading, written back (`utf-8-sig`).
    Utf8Sig,
    /// UTF-16 little endian with a byte order mark.
    Utf16Le,
    /// UTF-16 big endian with a byte order mark.
    Utf16Be,
    /// A legacy encoding detected by `chardetng` (windows-125x, Shift_JIS, GBK, ...).
    Legacy(&'static Encoding),
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const UTF16LE_BOM: &[u8] = b"\xFF\xFE";
const UTF16BE_BOM: &[u8] = b"\xFE\xFF";

/// Detects the encoding of a file from its first bytes. `complete` says whether `sample` is the
/// whole file (so a sequence cut at its end is an error rather than an artefact of the cut).
pub(crate) fn detect(sample: &[u8], complete: bool) -> TextEncoding {
    if sample.starts_with(UTF8_BOM) {
        return TextEncoding::Utf8Sig;
    }
    if sample.starts_with(UTF16LE_BOM) {
        return TextEncoding::Utf16Le;
    }
    if sample.starts_with(UTF16BE_BOM) {
        return TextEncoding::Utf16Be;
    }
    if utf8_prefix_valid(sample, complete) {
        return TextEncoding::Utf8;
    }
    match confident_legacy(sample, complete) {
        Some(encoding) => TextEncoding::Legacy(encoding),
        None => TextEncoding::Utf8,
    }
}

/// Whether `bytes` is UTF-8, allowing a sequence cut at the end when `bytes` is only a prefix.
pub(crate) fn utf8_prefix_valid(bytes: &[u8], complete: bool) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => !complete && e.error_len().is_none(),
    }
}

/// Whether decoded text looks like text: no NUL, no C0 controls other than the usual layout
/// ones, no C1 controls, no replacement characters. This stands in for the reference's
/// "charset detector confidence above 0.9".
pub(crate) fn looks_like_text(text: &str) -> bool {
    text.chars().all(|c| match c {
        '\t' | '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{08}' | '\u{1b}' => true,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{fffd}' => false,
        _ => true,
    })
}

/// A legacy encoding `chardetng` guesses for `sample`, accepted only when the sample decodes
/// without errors into plausible text.
pub(crate) fn confident_legacy(sample: &[u8], complete: bool) -> Option<&'static Encoding> {
    if sample.is_ascii() {
        return None;
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(sample, complete);
    let encoding = detector.guess(None, Utf8Detection::Deny);
    let text = decode_strict(encoding, sample, complete).ok()?;
    looks_like_text(&text).then_some(encoding)
}

/// Decodes `bytes` with `encoding`, refusing malformed input; on failure returns the byte
/// offset and length of the first malformed sequence. With `last == false` an incomplete
/// sequence at the end is dropped instead of being an error.
fn decode_strict(
    encoding: &'static Encoding,
    bytes: &[u8],
    last: bool,
) -> Result<String, (usize, usize)> {
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let capacity = decoder
        .max_utf8_buffer_length_without_replacement(bytes.len())
        .unwrap_or(bytes.len().saturating_mul(3))
        .max(16);
    let mut out = String::with_capacity(capacity);
    let mut consumed = 0;
    loop {
        let (result, read) =
            decoder.decode_to_string_without_replacement(&bytes[consumed..], &mut out, last);
        consumed += read;
        match result {
            DecoderResult::InputEmpty => return Ok(out),
            DecoderResult::OutputFull => out.reserve(bytes.len() - consumed + 16),
            DecoderResult::Malformed(bad, after) => {
                let bad = usize::from(bad);
                let start = consumed.saturating_sub(usize::from(after) + bad);
                return Err((start, bad.max(1)));
            }
        }
    }
}

/// Python's codec name for an `encoding_rs` encoding, as it appears in codec errors.
fn python_codec_name(encoding: &'static Encoding) -> String {
    if encoding.is_single_byte() {
        "charmap".to_owned()
    } else {
        encoding.name().to_ascii_lowercase().replace('-', "_")
    }
}

/// `str(UnicodeDecodeError)` of Python's UTF-8 codec for `bytes` failing with `err`.
fn utf8_error_message(bytes: &[u8], err: std::str::Utf8Error) -> String {
    let start = err.valid_up_to();
    let (len, reason) = match err.error_len() {
        None => (bytes.len() - start, "unexpected end of data"),
        Some(n) => {
            let lead = bytes.get(start).copied().unwrap_or(0);
            let invalid_start = n == 1 && !(0xC2..=0xF4).contains(&lead);
            let reason = if invalid_start {
                "invalid start byte"
            } else {
                "invalid continuation byte"
            };
            (n, reason)
        }
    };
    codec_error("utf-8", bytes, start, len, reason)
}

fn codec_error(codec: &str, bytes: &[u8], start: usize, len: usize, reason: &str) -> String {
    if len <= 1 {
        let byte = bytes.get(start).copied().unwrap_or(0);
        format!("'{codec}' codec can't decode byte 0x{byte:02x} in position {start}: {reason}")
    } else {
        format!(
            "'{codec}' codec can't decode bytes in position {start}-{}: {reason}",
            start + len - 1
        )
    }
}

/// Decodes a whole file. The error is Python's `UnicodeDecodeError` text.
pub(crate) fn decode(bytes: &[u8], encoding: TextEncoding) -> Result<String, String> {
    match encoding {
        TextEncoding::Utf8 => decode_utf8(bytes),
        TextEncoding::Utf8Sig => decode_utf8(bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes)),
        TextEncoding::Utf16Le | TextEncoding::Utf16Be => {
            let (rs, bom, codec) = if encoding == TextEncoding::Utf16Le {
                (encoding_rs::UTF_16LE, UTF16LE_BOM, "utf-16-le")
            } else {
                (encoding_rs::UTF_16BE, UTF16BE_BOM, "utf-16-be")
            };
            let body = bytes.strip_prefix(bom).unwrap_or(bytes);
            decode_strict(rs, body, true).map_err(|(start, len)| {
                let reason = if start + len >= body.len() {
                    "truncated data"
                } else {
                    "illegal encoding"
                };
                codec_error(codec, body, start, len, reason)
            })
        }
        TextEncoding::Legacy(rs) => decode_strict(rs, bytes, true).map_err(|(start, len)| {
            let reason = if rs.is_single_byte() {
                "character maps to <undefined>"
            } else {
                "illegal multibyte sequence"
            };
            codec_error(&python_codec_name(rs), bytes, start, len, reason)
        }),
    }
}

fn decode_utf8(bytes: &[u8]) -> Result<String, String> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_owned()),
        Err(err) => Err(utf8_error_message(bytes, err)),
    }
}

/// Python's escape of one character in a `UnicodeEncodeError` message.
fn escaped_char(c: char) -> String {
    let u = u32::from(c);
    if u <= 0xff {
        format!("'\\x{u:02x}'")
    } else if u <= 0xffff {
        format!("'\\u{u:04x}'")
    } else {
        format!("'\\U{u:08x}'")
    }
}

/// Encodes text for writing. The error is Python's `UnicodeEncodeError` text.
pub(crate) fn encode(text: &str, encoding: TextEncoding) -> Result<Vec<u8>, String> {
    match encoding {
        TextEncoding::Utf8 => Ok(text.as_bytes().to_vec()),
        TextEncoding::Utf8Sig => {
            let mut out = UTF8_BOM.to_vec();
            out.extend_from_slice(text.as_bytes());
            Ok(out)
        }
        TextEncoding::Utf16Le | TextEncoding::Utf16Be => {
            let little = encoding == TextEncoding::Utf16Le;
            let mut out = Vec::with_capacity(2 + text.len() * 2);
            out.extend_from_slice(if little { UTF16LE_BOM } else { UTF16BE_BOM });
            for unit in text.encode_utf16() {
                let bytes = if little {
                    unit.to_le_bytes()
                } else {
                    unit.to_be_bytes()
                };
                out.extend_from_slice(&bytes);
            }
            Ok(out)
        }
        TextEncoding::Legacy(rs) => encode_legacy(text, rs),
    }
}

fn encode_legacy(text: &str, rs: &'static Encoding) -> Result<Vec<u8>, String> {
    let mut encoder = rs.new_encoder();
    let mut out = Vec::with_capacity(text.len() + 16);
    let mut consumed = 0;
    loop {
        let (result, read) =
            encoder.encode_from_utf8_to_vec_without_replacement(&text[consumed..], &mut out, true);
        consumed += read;
        match result {
            EncoderResult::InputEmpty => return Ok(out),
            EncoderResult::OutputFull => out.reserve(text.len() - consumed + 16),
            EncoderResult::Unmappable(c) => {
                let position = text[..consumed].chars().count().saturating_sub(1);
                let reason = if rs.is_single_byte() {
                    "character maps to <undefined>"
                } else {
                    "illegal multibyte sequence"
                };
                return Err(format!(
                    "'{}' codec can't encode character {} in position {position}: {reason}",
                    python_codec_name(rs),
                    escaped_char(c)
                ));
            }
        }
    }
}

/// Python's universal newlines on reading: `\r\n` and lone `\r` become `\n`.
pub(crate) fn universal_newlines(text: String) -> String {
    if !text.contains('\r') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
