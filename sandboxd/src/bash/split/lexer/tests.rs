//! Unit tests of `bash/split/lexer.rs`.

use super::super::generate::{Rng, inputs, statement};
use super::*;

fn kinds_and_values(tokens: &[Token]) -> Vec<(bool, String)> {
    tokens
        .iter()
        .map(|t| (matches!(t, Token::Operator(..)), t.to_str().to_owned()))
        .collect()
}

/// The lexer produces the tokens brush-parser's own tokenizer does, wherever that one succeeds.
#[test]
fn lexer_matches_brush_tokenizer() {
    let mut compared = 0;
    for text in inputs(&mut Rng(1234), 20_000, 2000, |rng| statement(rng, 0).0) {
        let Ok(expected) = brush_parser::uncached_tokenize_str(&text, &Default::default()) else {
            continue;
        };
        let Ok(actual) = Lexer::new(&text).tokens(Until::End) else {
            panic!("lexer rejected {text:?}, which brush tokenizes");
        };
        compared += 1;
        let (mut expected, mut actual) = (kinds_and_values(&expected), kinds_and_values(&actual));
        // brush gives a heredoc body with `<<-` its tabs stripped, and keeps a
        // backslash-newline inside a word; neither matters to the grammar.
        for (_, value) in expected.iter_mut().chain(actual.iter_mut()) {
            *value = value.replace("\\\n", "").replace('\t', "");
        }
        assert_eq!(actual, expected, "{text:?}");
    }
    assert!(compared > 5000, "only {compared} compared");
}
