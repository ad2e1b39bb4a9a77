//! A token estimate for chat messages, good enough to keep a prompt under a budget without a
//! tokenizer: models see about four characters of English or code per token.
//!
//! The heuristic, per message: [`MESSAGE_OVERHEAD`] tokens for the role and framing, plus one
//! token per [`CHARS_PER_TOKEN`] characters (rounded up) of its text, of each tool call's id,
//! name and arguments, and of a tool result's id and name, plus [`IMAGE_TOKENS`] per image
//! (whatever its URL's length: a `data:` URL's base64 is not what the model pays for). It
//! over-counts dense prose a little and under-counts text in scripts that tokenise worse
//! (Chinese, long runs of symbols); budgets should leave a margin.

use protocol::llm::{Content, ContentPart, Message};

/// Characters per token.
pub(crate) const CHARS_PER_TOKEN: usize = 4;
/// Tokens every message costs besides its text.
pub(crate) const MESSAGE_OVERHEAD: usize = 4;
/// Tokens an image costs (OpenAI's figure for one 512-pixel tile at high detail).
pub(crate) const IMAGE_TOKENS: usize = 765;

/// The estimated tokens of `text`.
pub(crate) fn text_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN)
}

/// The estimated tokens of one message.
pub(crate) fn message_tokens(message: &Message) -> usize {
    let content = match &message.content {
        None => 0,
        Some(Content::Text(text)) => text_tokens(text),
        Some(Content::Parts(parts)) => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => text_tokens(text),
                ContentPart::ImageUrl { .. } => IMAGE_TOKENS,
            })
            .sum(),
    };
    let calls: usize = message
        .tool_calls
        .iter()
        .flatten()
        .map(|call| {
            text_tokens(&call.id)
                + text_tokens(&call.function.name)
                + text_tokens(&call.function.arguments)
        })
        .sum();
    let result = message.tool_call_id.as_deref().map_or(0, text_tokens)
        + message.name.as_deref().map_or(0, text_tokens);
    MESSAGE_OVERHEAD + content + calls + result
}

/// The estimated tokens of a conversation.
pub(crate) fn estimate_tokens(messages: &[Message]) -> usize {
    messages.iter().map(message_tokens).sum()
}

#[cfg(test)]
mod tests;
