//! Unit tests of `bash/split/scan.rs`.

use brush_parser::ParserOptions;

use super::super::generate::{Rng, inputs, statement};
use super::super::lexer::{Lexer, Until};
use super::*;

/// Wherever brush-parser's grammar accepts a program, the structural scan finds as many
/// statements as the grammar does.
#[test]
fn scan_agrees_with_the_grammar_on_random_programs() {
    let mut compared = 0;
    let two_statements = |rng: &mut Rng| {
        let mut program = statement(rng, 0).0;
        program.push_str(rng.pick(&["\n", "\n\n#c\n", ";\n", " &\n"]));
        program.push_str(&statement(rng, 0).0);
        program
    };
    for text in inputs(&mut Rng(42), 30_000, 2000, two_statements) {
        let Ok(tokens) = Lexer::new(&text).tokens(Until::End) else {
            continue;
        };
        let Ok(program) = brush_parser::parse_tokens(&tokens, &ParserOptions::default()) else {
            continue;
        };
        let scanned = scan_tokens(&tokens).map(|s| s.len());
        compared += 1;
        assert_eq!(scanned, Some(program.complete_commands.len()), "{text:?}");
    }
    assert!(compared > 4000, "only {compared} programs parsed");
}
