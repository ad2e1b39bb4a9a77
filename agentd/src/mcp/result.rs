//! The content of an `mcp` observation, one home for writing it and reading it back.
//!
//! It is the reference's: the tool's `CallToolResult` as Python's `json.dumps` writes it
//! (`", "` and `": "` separators, non-ASCII as `\uXXXX`; keys `meta`, `content`,
//! `structuredContent`, `isError`, each content item with its `annotations` and `meta`), or,
//! when the call got no result, `{"isError": true, "error": "...", "content": []}`. The model
//! does not read that JSON (the reference sends it as it is, images in base64 included):
//! [`read_content`] gives its text and its images apart.
//!
//! Also here: the reference's `message` of a `call_tool_mcp` action, which shows the arguments
//! as a Python dict.

use sandbox_common::py_repr_str;
use serde_json::{Map, Value};

/// The content of an observation of a call that got `result` (the tool's own error
/// included). `result` is the `CallToolResult` as JSON (MCP's camelCase, `_meta`).
pub(crate) fn result_content(result: &Value) -> String {
    let items: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(item_json).collect())
        .unwrap_or_default();
    let field = |key: &str| result.get(key).cloned().unwrap_or(Value::Null);
    format!(
        "{{\"meta\": {}, \"content\": [{}], \"structuredContent\": {}, \"isError\": {}}}",
        python_json(&field("_meta")),
        items.join(", "),
        python_json(&field("structuredContent")),
        python_json(&Value::Bool(result["isError"].as_bool().unwrap_or(false)))
    )
}

/// The content of an observation of a call that got no result (`error` says why).
pub(crate) fn error_content(error: &str) -> String {
    format!(
        "{{\"isError\": true, \"error\": {}, \"content\": []}}",
        python_json(&Value::String(error.to_owned()))
    )
}

/// One content item with its keys in the Python SDK's order: `type`, its own fields, then
/// `annotations` and `meta` (`_meta` on the wire), present even when null.
fn item_json(item: &Value) -> String {
    let Some(map) = item.as_object() else {
        return python_json(item);
    };
    let own: &[&str] = match map.get("type").and_then(Value::as_str) {
        Some("text") => &["text"],
        Some("image" | "audio") => &["data", "mimeType"],
        Some("resource") => &["resource"],
        _ => &[],
    };
    let mut keys: Vec<&str> = vec!["type"];
    keys.extend(own);
    let rest = map
        .keys()
        .map(String::as_str)
        .filter(|k| !keys.contains(k) && !["annotations", "_meta"].contains(k));
    let mut rest: Vec<&str> = rest.collect();
    rest.sort_unstable();
    keys.extend(rest);
    let mut fields: Vec<String> = keys
        .iter()
        .filter_map(|k| map.get(*k).map(|v| (k, v)))
        .map(|(k, v)| format!("{}: {}", python_json(&Value::from(*k)), python_json(v)))
        .collect();
    for (key, wire) in [("annotations", "annotations"), ("meta", "_meta")] {
        let value = map.get(wire).unwrap_or(&Value::Null);
        fields.push(format!("\"{key}\": {}", python_json(value)));
    }
    format!("{{{}}}", fields.join(", "))
}

/// `value` as Python's `json.dumps` writes it (object keys in the order `serde_json` keeps).
fn python_json(value: &Value) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    match serde::Serialize::serialize(value, &mut serializer) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => "null".to_owned(),
    }
}

/// `json.dumps`'s defaults: `", "`, `": "`, ASCII only.
struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        for c in fragment.chars() {
            if c.is_ascii() {
                let mut buf = [0u8; 1];
                writer.write_all(c.encode_utf8(&mut buf).as_bytes())?;
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
}

/// `", "` before every item but the first.
fn separator<W: ?Sized + std::io::Write>(writer: &mut W, first: bool) -> std::io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

/// What a model reads of an `mcp` observation's content: its text, and its images as
/// `data:` URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ReadContent {
    /// The text items, a line per other item (resources, images when they are not shown),
    /// and the error of a call that failed.
    pub(crate) text: String,
    /// The images, as `data:MIME;base64,DATA` URLs.
    pub(crate) images: Vec<String>,
    /// Whether the call failed (no result, or the tool's own error).
    pub(crate) failed: bool,
}

/// Reads `content` (see the module documentation); content that is not that JSON is text.
pub(crate) fn read_content(content: &str) -> ReadContent {
    let Ok(Value::Object(result)) = serde_json::from_str::<Value>(content) else {
        return ReadContent {
            text: content.to_owned(),
            images: Vec::new(),
            failed: false,
        };
    };
    let mut lines = Vec::new();
    let mut images = Vec::new();
    let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
    if let Some(error) = result.get("error").and_then(Value::as_str) {
        lines.push(format!("The MCP tool call failed: {error}"));
    } else if failed {
        lines.push("The MCP tool reported an error:".to_owned());
    }
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        read_item(item, &mut lines, &mut images);
    }
    let has_text = result
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|items| !items.is_empty());
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
        && !has_text
    {
        lines.push(structured.to_string());
    }
    ReadContent {
        text: lines.join("\n"),
        images,
        failed,
    }
}

fn read_item(item: &Value, lines: &mut Vec<String>, images: &mut Vec<String>) {
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => lines.push(text("text").to_owned()),
        "image" => images.push(format!("data:{};base64,{}", text("mimeType"), text("data"))),
        "audio" => lines.push(format!(
            "[Audio ({}) of {} base64 characters, not shown]",
            text("mimeType"),
            text("data").len()
        )),
        "resource" => {
            let resource = item.get("resource").cloned().unwrap_or(Value::Null);
            let field = |key: &str| {
                resource
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            match resource.get("text").and_then(Value::as_str) {
                Some(body) => lines.push(format!("[Resource {}]\n{body}", field("uri"))),
                None => lines.push(format!(
                    "[Resource {} ({}) of {} base64 characters, not shown]",
                    field("uri"),
                    field("mimeType"),
                    field("blob").len()
                )),
            }
        }
        "resource_link" => lines.push(format!("[Resource link {}]", text("uri"))),
        _ => lines.push(item.to_string()),
    }
}

/// The reference's `message` of a `call_tool_mcp` action.
pub(crate) fn action_message(name: &str, arguments: &Map<String, Value>) -> String {
    format!(
        "I am interacting with the MCP server with name:\n```\n{name}\n```\nand arguments:\n```\n{}\n```",
        python_repr(&Value::Object(arguments.clone()))
    )
}

/// `value` as Python's `repr` shows the value `json.loads` makes of it.
fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_repr_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), python_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests;
