//! The grammar pass: brush-parser's parse of the tokens into complete commands, the authority on
//! how many statements there are, and statement starts from the syntax tree's source locations.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ast::{self, SourceLocation};
use brush_parser::{ParserOptions, Token};

use super::lexer::is_newline;

/// The complete commands (top-level statements) of `tokens`, or None when the grammar rejects
/// them.
pub(super) fn complete_commands(tokens: &[Token]) -> Option<Vec<ast::CompleteCommand>> {
    let options = ParserOptions::default();
    // brush-parser's grammar can panic instead of failing: an all-digit word too large for an
    // `i32` right before a redirection (`99999999999>f`) is an io number, and its grammar action
    // `unwrap`s the number's parse. This runs with the agent's command on the bash shell's
    // actor task; a panic there would end the actor and kill its shell, so that this command and
    // every later one would be answered "the bash shell has ended". Caught, the panic counts as
    // the grammar rejecting the text: it is one statement and goes to bash as it is. (The
    // default panic hook still prints the panic message on stderr.) Stack overflow, which does
    // not unwind, cannot happen here: the lexer and the scan refuse text nested deeper than
    // `MAX_NESTING` first.
    let program = catch_unwind(AssertUnwindSafe(|| {
        brush_parser::parse_tokens(tokens, &options)
    }))
    .ok()?
    .ok()?;
    Some(program.complete_commands)
}

/// Statement starts (token indices) from the syntax tree's source locations: each complete
/// command's reported start, moved back to the first token after the preceding newline (the tree
/// omits a leading `!` or `function`). Used only when the structural scan disagrees with the
/// grammar.
pub(super) fn located_starts(commands: &[ast::CompleteCommand], tokens: &[Token]) -> Vec<usize> {
    let heredoc_parts = heredoc_parts(tokens);
    let mut starts: Vec<usize> = Vec::new();
    for command in commands {
        let Some(anchor) = command.location().map(|span| span.start.index) else {
            continue;
        };
        let Some(mut index) = tokens.iter().enumerate().position(|(i, token)| {
            !is_newline(token)
                && !heredoc_parts.get(i).copied().unwrap_or(false)
                && token.location().start.index >= anchor
        }) else {
            continue;
        };
        while index > 0 && tokens.get(index - 1).is_some_and(|t| !is_newline(t)) {
            index -= 1;
        }
        if starts.last().is_none_or(|&last| last < index) {
            starts.push(index);
        }
    }
    starts
}

/// Marks the tokens that are a heredoc's body and end tag (they come out of source order).
fn heredoc_parts(tokens: &[Token]) -> Vec<bool> {
    let mut parts = vec![false; tokens.len()];
    let mut pending = 0usize;
    for (index, token) in tokens.iter().enumerate() {
        match token {
            Token::Operator(op, _) if op == "<<" || op == "<<-" => pending = 3,
            Token::Operator(..) => pending = 0,
            Token::Word(..) if pending > 0 => {
                // The first word is the delimiter, which is in source order.
                if pending < 3
                    && let Some(part) = parts.get_mut(index)
                {
                    *part = true;
                }
                pending -= 1;
            }
            Token::Word(..) => {}
        }
    }
    parts
}

#[cfg(test)]
mod tests;
