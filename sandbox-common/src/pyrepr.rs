//! Python's `repr` of a `str`, which the reference's messages show (an editor's error naming a
//! path, the arguments of an MCP call): one home for sandboxd and agentd.

/// Whether `repr()` prints `c` as is (an approximation of `str.isprintable()` without the
/// Unicode category tables: controls, separators, format characters, surrogates and private
/// use are escaped).
fn is_py_printable(c: char) -> bool {
    let u = u32::from(c);
    if c == ' ' {
        return true;
    }
    if u < 0x20 || (0x7f..=0xa0).contains(&u) || u == 0xad {
        return false;
    }
    if c.is_whitespace() {
        return false;
    }
    !matches!(u,
        0x0600..=0x0605 | 0x061c | 0x06dd | 0x070f | 0x180e | 0x200b..=0x200f | 0x202a..=0x202e
        | 0x2060..=0x206f | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb | 0xf0000..=0x10ffff
        | 0xe0000..=0xe007f)
}

/// `repr(s)` of a Python `str`.
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_py_printable(c) => out.push(c),
            c => {
                let u = u32::from(c);
                if u <= 0xff {
                    out.push_str(&format!("\\x{u:02x}"));
                } else if u <= 0xffff {
                    out.push_str(&format!("\\u{u:04x}"));
                } else {
                    out.push_str(&format!("\\U{u:08x}"));
                }
            }
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests;
