//! Finds sandboxd's private prompt markers in the raw PTY byte stream.
//!
//! The shell prints two markers, both as APC strings (`ESC _ ... ESC \`) that terminals ignore:
//! `PS0` prints a *start* marker after bash has read a command and before it runs it, and `PS1`
//! prints an *end* marker carrying the shell's state once the command has finished. Both begin
//! with `ESC _ sbx` followed by a random per-session token, so output that happens to contain a
//! marker of another session (or of the reference's `###PS1JSON###`) cannot end a command early.

/// What the framer found in a chunk of PTY output, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Bytes the command printed.
    Output(Vec<u8>),
    /// Bash has read a command and is about to run it (`PS0`).
    Started,
    /// The prompt is back: the command finished with this state (`PS1`).
    Prompt(PromptState),
}

/// The shell state printed with each prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PromptState {
    /// `$?` of the last command.
    pub(crate) exit_code: i64,
    /// `$!`, or −1 when no background job was started yet.
    pub(crate) pid: i64,
    /// `\u`.
    pub(crate) username: String,
    /// `\h`.
    pub(crate) hostname: String,
    /// `$PWD`.
    pub(crate) working_dir: String,
    /// `$PATH`, to resolve `python` the way `which` would, without a fork per prompt.
    pub(crate) path: String,
}

const FIELD_SEP: u8 = 0x1f;
/// Payloads longer than this are not ours: give up and treat the bytes as output.
const MAX_PAYLOAD: usize = 256 * 1024;

/// Splits the PTY stream into output and markers; keeps partial markers across chunks.
#[derive(Debug)]
pub(crate) struct Framer {
    /// `ESC _ sbx <token>`.
    prefix: Vec<u8>,
    /// Bytes held back because they may be the start of a marker.
    pending: Vec<u8>,
}

impl Framer {
    /// A framer for the markers of `token`.
    pub(crate) fn new(token: &str) -> Self {
        let mut prefix = b"\x1b_sbx".to_vec();
        prefix.extend_from_slice(token.as_bytes());
        Framer {
            prefix,
            pending: Vec::new(),
        }
    }

    /// The `PS0` value that prints the start marker.
    pub(crate) fn ps0(token: &str) -> String {
        format!("\\e_sbx{token}S\\e\\\\")
    }

    /// The `PS1` value that prints the end marker. `$__sbx_ec` is set by `PROMPT_COMMAND`.
    pub(crate) fn ps1(token: &str) -> String {
        format!(
            "\\e_sbx{token}E${{__sbx_ec}}\\037$!\\037\\u\\037\\h\\037${{PWD}}\\037${{PATH}}\\e\\\\"
        )
    }

    /// Splits `chunk` (appended to any held-back bytes) into segments.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<Segment> {
        let mut buf = std::mem::take(&mut self.pending);
        buf.extend_from_slice(chunk);
        let mut segments = Vec::new();
        let mut out_start = 0;
        let mut i = 0;
        while let Some(off) = memchr::memchr(0x1b, &buf[i..]) {
            let at = i + off;
            let rest = &buf[at..];
            if rest.len() < self.prefix.len() {
                if self.prefix.starts_with(rest) {
                    // A marker may begin here: hold it back.
                    push_output(&mut segments, &buf[out_start..at]);
                    self.pending = rest.to_vec();
                    return segments;
                }
                i = at + 1;
                continue;
            }
            if !rest.starts_with(&self.prefix) {
                i = at + 1;
                continue;
            }
            let body = &rest[self.prefix.len()..];
            let Some(end) = find_st(body) else {
                if body.len() > MAX_PAYLOAD {
                    i = at + 1;
                    continue;
                }
                push_output(&mut segments, &buf[out_start..at]);
                self.pending = rest.to_vec();
                return segments;
            };
            match parse(&body[..end]) {
                Some(segment) => {
                    push_output(&mut segments, &buf[out_start..at]);
                    segments.push(segment);
                    i = at + self.prefix.len() + end + 2;
                    out_start = i;
                }
                None => i = at + 1,
            }
        }
        push_output(&mut segments, &buf[out_start..]);
        segments
    }
}

fn push_output(segments: &mut Vec<Segment>, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    if let Some(Segment::Output(prev)) = segments.last_mut() {
        prev.extend_from_slice(bytes);
    } else {
        segments.push(Segment::Output(bytes.to_vec()));
    }
}

/// Position of the string terminator `ESC \`.
fn find_st(body: &[u8]) -> Option<usize> {
    memchr::memmem::find(body, b"\x1b\\")
}

fn parse(body: &[u8]) -> Option<Segment> {
    match body.split_first()? {
        (b'S', []) => Some(Segment::Started),
        (b'E', fields) => {
            let text = String::from_utf8_lossy(fields);
            let mut it = text.split(FIELD_SEP as char);
            let exit_code = it.next()?.trim().parse().unwrap_or(-1);
            let pid = it.next()?.trim().parse().unwrap_or(-1);
            let username = it.next()?.to_owned();
            let hostname = it.next()?.to_owned();
            let working_dir = it.next()?.to_owned();
            // PATH is last; anything after it (a separator inside PATH) belongs to it.
            let path = it.collect::<Vec<_>>().join("\u{1f}");
            Some(Segment::Prompt(PromptState {
                exit_code,
                pid,
                username,
                hostname,
                working_dir,
                path,
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
