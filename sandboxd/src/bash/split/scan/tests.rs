//! Unit tests of `bash/split/scan.rs`.

use brush_parser::ParserOptions;

use super::super::generate::{Rng, SOUP, soup, statement};
use super::super::lexer::{Lexer, Until};
use super::*;

/// Wherever brush-parser's grammar accepts a program, the structural scan finds as many
/// statements as the grammar does.
#[test]
fn scan_agrees_with_the_grammar_on_random_programs() {
    let mut rng = Rng(42);
    let mut compared = 0;
    let mut inputs: Vec<String> = (0..30_000).map(|_| soup(&mut rng, &SOUP, 24)).collect();
    for _ in 0..2000 {
        let mut program = statement(&mut rng, 0).0;
        program.push_str(rng.pick(&["\n", "\n\n#c\n", ";\n", " &\n"]));
        program.push_str(&statement(&mut rng, 0).0);
        inputs.push(program);
    }
    for text in inputs {
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
