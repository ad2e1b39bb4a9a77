//! Python semantics the reference's messages depend on: `str(Path)` normalisation, whitespace
//! stripping, `splitlines`, `repr` of strings and lists, `int()` parsing, OSError text and the
//! editor's character-based truncation.

use std::io;

use sandbox_common::py_repr_str;

/// `str.isspace()` for one character: Unicode White_Space plus the ASCII separators
/// U+001C..U+001F that Python also counts (Rust's `char::is_whitespace` does not).
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.strip()` with no argument.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// `str.rstrip()` with no argument.
pub(crate) fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

/// Line boundaries of `str.splitlines()` other than `\r` (handled apart for `\r\n`).
fn is_py_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// `str.splitlines()` (without `keepends`): no trailing empty piece, `""` gives no lines.
pub(crate) fn py_splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\r' {
            lines.push(&s[start..i]);
            if let Some(&(_, '\n')) = chars.peek() {
                chars.next();
                start = i + 2;
            } else {
                start = i + 1;
            }
        } else if is_py_line_break(c) {
            lines.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// `str(pathlib.PurePosixPath(s))`: empty and `.` components and trailing slashes dropped,
/// exactly two leading slashes kept, `..` kept, `""` → `"."`.
pub(crate) fn py_path_str(s: &str) -> String {
    let root = if s.starts_with("//") && !s.starts_with("///") {
        "//"
    } else if s.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = s
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = format!("{root}{}", parts.join("/"));
    if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

/// `str(PurePosixPath(base) / rel)`: `rel` wins when absolute.
pub(crate) fn py_path_join(base: &str, rel: &str) -> String {
    let base = py_path_str(base);
    if rel.starts_with('/') || base == "." {
        py_path_str(rel)
    } else if base.ends_with('/') {
        // `/` or `//`: the root already ends in a separator.
        py_path_str(&format!("{base}{rel}"))
    } else {
        py_path_str(&format!("{base}/{rel}"))
    }
}

/// `Path(s).is_absolute()` on POSIX.
pub(crate) fn py_is_absolute(s: &str) -> bool {
    s.starts_with('/')
}

/// `PurePosixPath(s).suffix`: the final component's extension, dot included, or `""`.
pub(crate) fn py_suffix(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or("");
    match name.rfind('.') {
        Some(i) if i > 0 && i < name.len() - 1 => &name[i..],
        _ => "",
    }
}

/// `str(list_of_ints)`: `[1, 2]`.
pub(crate) fn py_int_list(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// The C library's message for an errno value (`strerror`), as Python puts it in an OSError.
pub(crate) fn strerror(code: i32) -> String {
    let text = io::Error::from_raw_os_error(code).to_string();
    let suffix = format!(" (os error {code})");
    match text.strip_suffix(&suffix) {
        Some(message) => message.to_owned(),
        None => text,
    }
}

/// `str(OSError)` as Python formats it for a failed call on `filename`:
/// `[Errno 2] No such file or directory: '/x'`. Errors without an errno give their own text.
pub(crate) fn os_error_message(err: &io::Error, filename: &str) -> String {
    match err.raw_os_error() {
        Some(code) => format!(
            "[Errno {code}] {}: {}",
            strerror(code),
            py_repr_str(filename)
        ),
        None => err.to_string(),
    }
}

/// A Python `int` as the editor sees it: small enough for our arithmetic, or only printable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PyInt {
    /// Fits in an `i64`.
    Small(i64),
    /// Too large for an `i64`; kept as its decimal text (always out of any line range).
    Big(String),
}

impl std::fmt::Display for PyInt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PyInt::Small(v) => write!(f, "{v}"),
            PyInt::Big(text) => f.write_str(text),
        }
    }
}

/// `int(s)` for a string: surrounding whitespace, an optional sign, ASCII digits with single
/// underscores between them. `None` where Python raises `ValueError` (non-ASCII digits, which
/// Python would accept, are refused too).
pub(crate) fn py_parse_int(s: &str) -> Option<PyInt> {
    let t = py_strip(s);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return None;
    }
    let mut clean = String::with_capacity(digits.len());
    let mut previous_underscore = false;
    for c in digits.chars() {
        if c == '_' {
            if previous_underscore {
                return None;
            }
            previous_underscore = true;
        } else if c.is_ascii_digit() {
            previous_underscore = false;
            clean.push(c);
        } else {
            return None;
        }
    }
    let trimmed = clean.trim_start_matches('0');
    let magnitude = if trimmed.is_empty() { "0" } else { trimmed };
    let text = if negative && magnitude != "0" {
        format!("-{magnitude}")
    } else {
        magnitude.to_owned()
    };
    Some(match text.parse::<i64>() {
        Ok(v) => PyInt::Small(v),
        Err(_) => PyInt::Big(text),
    })
}

/// `maybe_truncate(text, 16000, notice)`: cut to `max_chars` characters (code points) and
/// append `notice` when longer.
pub(crate) fn truncate_chars(text: &str, max_chars: usize, notice: &str) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}{notice}", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
