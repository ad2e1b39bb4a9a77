//! Unit tests of `bash/split/parse.rs`.

use super::super::lexer::{Lexer, Until};
use super::*;

/// brush-parser's grammar panics on an io number that overflows `i32`: that counts as the
/// grammar rejecting the text, not as a crash of the caller.
#[test]
fn a_panic_in_the_grammar_is_a_rejection() {
    let tokens = Lexer::new("99999999999>x\nls").tokens(Until::End).unwrap();
    let direct = catch_unwind(|| brush_parser::parse_tokens(&tokens, &ParserOptions::default()));
    assert!(
        direct.is_err(),
        "brush-parser no longer panics here; the catch_unwind may have become unnecessary"
    );
    assert!(complete_commands(&tokens).is_none());
}
