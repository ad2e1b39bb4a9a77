//! Python literals of JSON values, for LocAgent's cells: a tool call's arguments written as
//! the reference writes them, the `repr()` of the dict Python's `json.loads` makes of the
//! arguments' text (keys in the order they were written, a repeated key's last value in its
//! first place).

use std::fmt::Write as _;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value as Python's `json.loads` sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PyValue {
    /// `null`: `None`.
    None,
    /// `true`, `false`: `True`, `False`.
    Bool(bool),
    /// An integer: `int`.
    Int(i128),
    /// A number with a fraction or an exponent (or beyond 64 bits): `float`.
    Float(f64),
    /// A string: `str`.
    Str(String),
    /// An array: `list`.
    List(Vec<PyValue>),
    /// An object: `dict`, in the order of its keys.
    Dict(Vec<(String, PyValue)>),
}

impl<'de> serde::Deserialize<'de> for PyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PyValue, D::Error> {
        deserializer.deserialize_any(PyValueVisitor)
    }
}

struct PyValueVisitor;

impl<'de> Visitor<'de> for PyValueVisitor {
    type Value = PyValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<PyValue, E> {
        Ok(PyValue::None)
    }

    fn visit_none<E: de::Error>(self) -> Result<PyValue, E> {
        Ok(PyValue::None)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<PyValue, E> {
        Ok(PyValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<PyValue, E> {
        Ok(PyValue::Int(i128::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<PyValue, E> {
        Ok(PyValue::Int(i128::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<PyValue, E> {
        Ok(PyValue::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<PyValue, E> {
        Ok(PyValue::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<PyValue, E> {
        Ok(PyValue::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PyValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(PyValue::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PyValue, A::Error> {
        let mut entries: Vec<(String, PyValue)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, PyValue>()? {
            // A dict keeps a repeated key where it first came, with its last value.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(PyValue::Dict(entries))
    }
}

impl PyValue {
    /// Python's `repr()` of the value: a literal that evaluates to it.
    pub(crate) fn repr(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            PyValue::None => out.push_str("None"),
            PyValue::Bool(true) => out.push_str("True"),
            PyValue::Bool(false) => out.push_str("False"),
            PyValue::Int(n) => {
                let _ = write!(out, "{n}");
            }
            PyValue::Float(x) => out.push_str(&float_repr(*x)),
            PyValue::Str(s) => out.push_str(&str_repr(s)),
            PyValue::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            PyValue::Dict(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&str_repr(key));
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Python's `repr()` of a float: the shortest digits that read back as the same number, in
/// positional notation for exponents from -4 to 15, else as `d.ddde±XX`. (JSON has no NaN or
/// infinity; were there one, it is written as an expression that makes it.)
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "float('nan')".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "float('inf')"
        } else {
            "-float('inf')"
        }
        .to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `-1.2345e-7`, `0e0`, `1e16`.
    let scientific = format!("{x:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let body = if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let whole = usize::try_from(exponent).unwrap_or(0) + 1;
            if digits.len() <= whole {
                format!("{digits}{}.0", "0".repeat(whole - digits.len()))
            } else {
                format!("{}.{}", &digits[..whole], &digits[whole..])
            }
        } else {
            let zeros = usize::try_from(-exponent - 1).unwrap_or(0);
            format!("0.{}{digits}", "0".repeat(zeros))
        }
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{first}{fraction}e{exponent_sign}{:02}",
            exponent.unsigned_abs()
        )
    };
    format!("{sign}{body}")
}

/// Python's `repr()` of a string: single quotes unless the text has a single quote and no
/// double one; backslash, the quote, `\t`, `\n`, `\r` escaped; other control characters as
/// `\xNN`; characters Python does not print (separators, format and private-use characters)
/// as `\xNN`, `\uNNNN` or `\UNNNNNNNN`; the rest as they are.
pub(crate) fn str_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == ' ' || (c.is_ascii() && !c.is_ascii_control()) => out.push(c),
            c if !is_printable(c) => {
                let code = u32::from(c);
                let _ = if code < 0x100 {
                    write!(out, "\\x{code:02x}")
                } else if code < 0x10000 {
                    write!(out, "\\u{code:04x}")
                } else {
                    write!(out, "\\U{code:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The code points Python's `str.isprintable()` rejects that this knows of: controls,
/// separators other than the space, format characters, private use, non-characters. (Python
/// also escapes unassigned code points, which would take Unicode's tables to know; they are
/// written as themselves, which reads back as the same string.)
fn is_printable(c: char) -> bool {
    const NOT_PRINTABLE: &[(u32, u32)] = &[
        (0x0000, 0x001f),
        (0x007f, 0x00a0),
        (0x00ad, 0x00ad),
        (0x0600, 0x0605),
        (0x061c, 0x061c),
        (0x06dd, 0x06dd),
        (0x070f, 0x070f),
        (0x0890, 0x0891),
        (0x08e2, 0x08e2),
        (0x1680, 0x1680),
        (0x180e, 0x180e),
        (0x2000, 0x200f),
        (0x2028, 0x202f),
        (0x205f, 0x2064),
        (0x2066, 0x206f),
        (0x3000, 0x3000),
        (0xe000, 0xf8ff),
        (0xfdd0, 0xfdef),
        (0xfeff, 0xfeff),
        (0xfff9, 0xfffb),
        (0x110bd, 0x110bd),
        (0x110cd, 0x110cd),
        (0x13430, 0x1343f),
        (0x1bca0, 0x1bca3),
        (0x1d173, 0x1d17a),
        (0xe0001, 0xe0001),
        (0xe0020, 0xe007f),
        (0xf0000, 0x10ffff),
    ];
    let code = u32::from(c);
    // U+xFFFE and U+xFFFF of every plane are non-characters.
    if code & 0xfffe == 0xfffe {
        return false;
    }
    !NOT_PRINTABLE
        .iter()
        .any(|&(first, last)| (first..=last).contains(&code))
}

#[cfg(test)]
mod tests;
