//! The middle cut of over-long observation text: the reference's limit, its notice, and the one
//! function that applies them.

use std::borrow::Cow;

/// Observation text longer than this many characters (code points) loses its middle: the
/// reference's cut of command output, and agentd's default for observations in LLM messages.
pub const MAX_OBSERVATION_CHARS: usize = 30_000;

/// What replaces the middle of a cut text.
pub const TRUNCATION_NOTICE: &str = "\n[... Observation truncated due to length ...]\n";

/// Cuts the middle out of `content` when it has more than `max_chars` characters, keeping
/// `max_chars / 2` characters at each end around [`TRUNCATION_NOTICE`]. Content that fits comes
/// back as it was, without a copy.
pub fn truncate_middle<'a>(content: impl Into<Cow<'a, str>>, max_chars: usize) -> Cow<'a, str> {
    let content = content.into();
    let count = content.chars().count();
    if count <= max_chars {
        return content;
    }
    let half = max_chars / 2;
    let head_end = content
        .char_indices()
        .nth(half)
        .map_or(content.len(), |(i, _)| i);
    let tail_start = content
        .char_indices()
        .nth(count - half)
        .map_or(content.len(), |(i, _)| i);
    let mut out =
        String::with_capacity(head_end + TRUNCATION_NOTICE.len() + content.len() - tail_start);
    out.push_str(&content[..head_end]);
    out.push_str(TRUNCATION_NOTICE);
    out.push_str(&content[tail_start..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests;
