//! What one cell produced and the text the reference makes of it (docs/protocol.md §5): IOPub outputs in
//! arrival order, `image/png` data as `data:` URLs, SGR colours stripped, the no-output text and
//! the working-directory and interpreter lines.

use serde_json::Value;

/// Content of a cell that printed nothing.
const NO_OUTPUT: &str = "[Code executed successfully with no output]";

/// Text kept per cell; the reference has no limit, this only stops a runaway cell from taking
/// all memory.
const MAX_TEXT_BYTES: usize = 64 * 1024 * 1024;

/// Outputs of one `execute_request`, collected from the IOPub messages whose parent it is.
#[derive(Debug, Default)]
pub(crate) struct CellOutput {
    texts: Vec<String>,
    bytes: usize,
    truncated: bool,
    images: Vec<String>,
    /// An `error` ended the cell: later outputs are not part of its result.
    errored: bool,
    /// Content of the `execute_reply`, once it arrived.
    pub(crate) reply: Option<Value>,
    /// Where the cell's text goes as it arrives (for a streaming request).
    pub(crate) live: Option<std::sync::Arc<crate::feed::Feed>>,
}

impl CellOutput {
    /// Takes one IOPub message of this cell into account (`status` is handled by the caller).
    pub(crate) fn absorb(&mut self, msg_type: &str, content: &Value) {
        if self.errored {
            return;
        }
        match msg_type {
            "stream" => {
                if let Some(text) = content.get("text").and_then(Value::as_str) {
                    self.push(text.to_owned());
                }
            }
            "execute_result" | "display_data" => {
                let data = content.get("data");
                if let Some(text) = data.and_then(|d| d.get("text/plain")).and_then(mime_text) {
                    self.push(text);
                }
                if let Some(png) = data.and_then(|d| d.get("image/png")).and_then(mime_text) {
                    // Older IPythons end the base64 text with a newline; a data URL has none.
                    self.images
                        .push(format!("data:image/png;base64,{}", png.trim_ascii()));
                }
            }
            "error" => {
                let lines: Vec<&str> = content
                    .get("traceback")
                    .and_then(Value::as_array)
                    .map(|l| l.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                self.push(lines.join("\n"));
                self.errored = true;
            }
            _ => {}
        }
    }

    fn push(&mut self, text: String) {
        if self.truncated {
            return;
        }
        if self.bytes + text.len() > MAX_TEXT_BYTES {
            self.truncated = true;
            self.texts.push(format!(
                "\n[... further output of this cell dropped: more than {} MiB ...]",
                MAX_TEXT_BYTES / (1024 * 1024)
            ));
            return;
        }
        if let Some(live) = &self.live {
            live.push(strip_sgr(&text).as_bytes());
        }
        self.bytes += text.len();
        self.texts.push(text);
    }

    /// Whether any text part arrived.
    pub(crate) fn has_text(&self) -> bool {
        !self.texts.is_empty()
    }

    /// The cell's text (parts concatenated, colours stripped, or [`NO_OUTPUT`]) and its images
    /// (`None` when there were none).
    pub(crate) fn render(&self) -> (String, Option<Vec<String>>) {
        let text = if self.texts.is_empty() {
            NO_OUTPUT.to_owned()
        } else {
            strip_sgr(&self.texts.concat())
        };
        let images = (!self.images.is_empty()).then(|| self.images.clone());
        (text, images)
    }
}

/// A MIME bundle value as text: a string, or a list of lines as notebooks store them.
fn mime_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(lines) => Some(lines.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// Removes SGR sequences matching `\x1B\[\d+(;\d+){0,2}m`, and only those.
fn strip_sgr(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while let Some(pos) = memchr::memchr(0x1b, &bytes[i..]) {
        let start = i + pos;
        match sgr_len(&bytes[start..]) {
            Some(len) => {
                out.push_str(&text[copied..start]);
                i = start + len;
                copied = i;
            }
            None => i = start + 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Length of the SGR sequence at the start of `b`, if there is one.
fn sgr_len(b: &[u8]) -> Option<usize> {
    if b.get(1) != Some(&b'[') {
        return None;
    }
    let mut i = 2;
    for group in 0..3 {
        if group > 0 {
            if b.get(i) != Some(&b';') {
                break;
            }
            i += 1;
        }
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            // `\x1b[1;m`: the regex backtracks to before the `;`, which then is not `m`.
            return None;
        }
        i += digits;
    }
    (b.get(i) == Some(&b'm')).then_some(i + 1)
}

/// Python's `str.rstrip()`.
pub(crate) fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// The observation content: the text without trailing whitespace, then, with `include_extra`,
/// the working directory (the shell's) and the kernel's interpreter.
pub(crate) fn final_content(text: &str, include_extra: bool, cwd: &str, python: &str) -> String {
    let mut content = py_rstrip(text).to_owned();
    if include_extra {
        content.push_str(&format!(
            "\n[Jupyter current working directory: {cwd}]\n[Jupyter Python interpreter: {python}]"
        ));
    }
    content
}

#[cfg(test)]
mod tests;
