//! Splits a bash command into its top-level statements, so that a command holding more than one
//! (`ls\necho hi`) can be refused with the reference's "multiple commands" error (docs/protocol.md §4.3 step 2).
//!
//! A *statement* is what bash calls a complete command: the text up to a newline that ends the
//! command at top level. `a && b`, `a; b`, `a | b`, loops, `if`, `case`, functions, subshells,
//! groups, heredocs, quoted newlines and backslash continuations are all one statement.
//!
//! How it works:
//! 1. A command without any newline is one statement; nothing is parsed.
//! 2. The lexer (`lexer.rs`) does the lexical work (quotes, `$( )`, `${ }`, backquotes, heredoc
//!    bodies, comments, continuations) and yields tokens with source positions, in the form
//!    brush-parser's grammar takes. (brush-parser's own tokenizer produces the same tokens, which a
//!    test checks, but can loop forever on some malformed input such as `$(<< |#`.)
//! 3. A small structural scan over those tokens (`scan.rs`) finds the newline tokens that end a
//!    statement at top level (not inside `{ }`, `( )`, `if`/`fi`, loops, `case`, `[[ ]]`, and not
//!    after `&&`, `||`, `|` or a function header). If it finds one statement, that is the answer.
//! 4. Otherwise brush-parser's grammar parses the tokens (`parse.rs`) and is the authority on how
//!    many statements there are. The scan's statement starts are used when its count agrees; if
//!    not, the starts come from the syntax tree's source locations.
//! 5. Each statement's text (here) is the source from its first token up to the next statement's
//!    first token, trimmed: like the reference, comments and heredoc bodies that follow a
//!    statement stay with it (`echo a # note\n# more\nls` gives `echo a # note\n# more` and `ls`).
//!    Blank and comment-only lines before the first statement are not part of any statement.
//!
//! Anything that fails to tokenize or parse (an unclosed quote or heredoc, unsupported syntax) is one
//! statement, as in the reference. Unlike the reference's parser (bashlex), constructs such as
//! `case`, `[[ ]]`, `(( ))`, arithmetic `for`, `coproc` and `time` are understood: bashlex fails on
//! them and the reference then sends several statements to bash as one, whose second prompt ends
//! the command early and loses the rest of its output. Pathologically nested input (more than 64
//! levels) is not parsed (the parsers recurse per level), and counts as one statement.

mod lexer;
mod parse;
mod scan;

use lexer::{Lexer, Until};

/// The first lines of the reference's error for a command with more than one statement.
const MULTIPLE_COMMANDS_HEADER: &str = "ERROR: Cannot execute multiple commands at once.\n\
     Please run each command separately OR chain them into a single command via && or ;\n\
     Provided commands:";

/// The top-level statements of `command`, as source slices (trimmed). One element (the whole trimmed text) when parsing fails or when there is at most one statement.
fn split_statements(command: &str) -> Vec<String> {
    let text = command.trim();
    match statement_offsets(text) {
        Some(offsets) if offsets.len() > 1 => offsets
            .iter()
            .enumerate()
            .map(|(k, &start)| {
                let end = offsets.get(k + 1).copied().unwrap_or(text.len());
                text.get(start..end).unwrap_or_default().trim().to_owned()
            })
            .collect(),
        _ => vec![text.to_owned()],
    }
}

/// The reference's error text for more than one statement, or None when there is at most one.
pub(crate) fn multiple_commands_error(command: &str) -> Option<String> {
    let statements = split_statements(command);
    if statements.len() <= 1 {
        return None;
    }
    let mut message = String::from(MULTIPLE_COMMANDS_HEADER);
    for (k, statement) in statements.iter().enumerate() {
        message.push_str(&format!("\n({}) {statement}", k + 1));
    }
    Some(message)
}

/// Byte offsets in `text` where its top-level statements start, or None when `text` is one
/// statement (or cannot be parsed, which counts as one).
fn statement_offsets(text: &str) -> Option<Vec<usize>> {
    if !text.contains('\n') {
        return None;
    }
    let mut lexer = Lexer::new(text);
    let tokens = lexer.tokens(Until::End).ok()?;
    let scanned = scan::scan_tokens(&tokens)?;
    if scanned.len() <= 1 {
        return None;
    }
    let commands = parse::complete_commands(&tokens)?;
    if commands.len() <= 1 {
        return None;
    }
    let starts = if scanned.len() == commands.len() {
        scanned
    } else {
        parse::located_starts(&commands, &tokens)
    };
    let offsets: Vec<usize> = starts
        .iter()
        .filter_map(|&i| tokens.get(i))
        .filter_map(|token| lexer.byte_offset(token.location().start.index))
        .collect();
    let ascending = offsets.windows(2).all(|pair| pair[0] < pair[1]);
    (offsets.len() > 1 && ascending).then_some(offsets)
}

#[cfg(test)]
mod tests;

/// Random shell programs for the randomized tests of every pass.
#[cfg(test)]
mod generate {
    /// A small deterministic generator (xorshift64*), so the randomized tests need no crates.
    pub(super) struct Rng(pub(super) u64);

    impl Rng {
        pub(super) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        pub(super) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        pub(super) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }
    }

    /// A random statement; the flag says whether a heredoc in it needs a newline right after.
    pub(super) fn statement(rng: &mut Rng, depth: usize) -> (String, bool) {
        let simple = [
            "echo hi",
            "ls -la /tmp",
            "x=1",
            "echo \"a\nb\"",
            "echo 'q\n\nr'",
            "echo $(ls\n)",
            "echo `date`",
            "echo a \\\n  b",
            "arr=(1\n2)",
            "cat <(ls\n)",
            "echo \"it's\" 'say \"x\"'",
            "! false",
            "echo done fi esac } then",
            "grep -E 'a|b' f >out 2>&1",
        ];
        let kind = if depth >= 3 {
            rng.below(2)
        } else {
            rng.below(12)
        };
        match kind {
            0 | 1 => (rng.pick(&simple).to_owned(), false),
            2 => (
                rng.pick(&[
                    "cat <<EOF\nx\n\ny\nEOF",
                    "cat <<-'E'\n\tif\n\tE",
                    "python3 - <<\"PY\"\nprint(1)\nPY",
                ])
                .to_owned(),
                true,
            ),
            3 => {
                let (a, _) = statement(rng, depth + 3);
                let (b, nl) = statement(rng, depth + 1);
                let op = rng.pick(&[
                    " | ", " |\n  ", " && ", " &&\n", " || ", " ||\n\n", "; ", " & ",
                ]);
                // `a | ! b` is not valid shell; `!` only starts a pipeline.
                let b = if op.trim() == "|" && b.starts_with('!') {
                    b[1..].to_owned()
                } else {
                    b
                };
                (format!("{a}{op}{b}"), nl)
            }
            4 => (
                format!("if {}; then\n{}\nfi", simple[0], body(rng, depth)),
                false,
            ),
            5 => (
                format!(
                    "if true\nthen {}\nelse\n{}\nfi",
                    body(rng, depth),
                    body(rng, depth)
                ),
                false,
            ),
            6 => (
                format!("for i in 1 2; do\n{}\ndone", body(rng, depth)),
                false,
            ),
            7 => (
                format!("while false\ndo\n{}\ndone >/dev/null", body(rng, depth)),
                false,
            ),
            8 => (format!("{{\n{}\n}}", body(rng, depth)), false),
            9 => (format!("(\n{}\n)", body(rng, depth)), false),
            10 => (format!("f() {{\n{}\n}}", body(rng, depth)), false),
            _ => (format!("function g\n{{\n{}\n}}", body(rng, depth)), false),
        }
    }

    fn body(rng: &mut Rng, depth: usize) -> String {
        let mut text = String::new();
        let mut after_newline = false;
        for k in 0..1 + rng.below(3) {
            let (s, needs_newline) = statement(rng, depth + 1);
            if k > 0 {
                text.push_str(if after_newline {
                    rng.pick(&["", "\n", "# note\n"])
                } else {
                    rng.pick(&["\n", "\n\n", "; ", "\n# note\n"])
                });
            }
            text.push_str(&s);
            if needs_newline {
                text.push('\n');
            }
            after_newline = needs_newline;
        }
        text
    }

    pub(super) fn soup(rng: &mut Rng, pieces: &[&str], max: usize) -> String {
        (0..1 + rng.below(max)).map(|_| rng.pick(pieces)).collect()
    }

    /// The inputs of a randomized test, all drawn from `rng`: `soups` soups of [`SOUP`], then
    /// `programs` programs made by `program`.
    pub(super) fn inputs(
        rng: &mut Rng,
        soups: usize,
        programs: usize,
        mut program: impl FnMut(&mut Rng) -> String,
    ) -> Vec<String> {
        let mut inputs: Vec<String> = (0..soups).map(|_| soup(rng, &SOUP, 24)).collect();
        inputs.extend((0..programs).map(|_| program(rng)));
        inputs
    }

    /// Shell-ish fragments for random programs. Heredocs are left out: brush's own tokenizer,
    /// which the lexer is compared with, can loop forever on some heredoc soups.
    pub(super) const SOUP: [&str; 43] = [
        "a",
        "b",
        " ",
        " ",
        "\n",
        "\n",
        ";",
        "&",
        "&&",
        "|",
        "||",
        "(",
        ")",
        "{ ",
        " }",
        "'q'",
        "\"d\"",
        "\\\n",
        "$(x)",
        "`y`",
        "#c\n",
        "if ",
        "then ",
        "else ",
        "fi",
        "for i in 1; do ",
        "done",
        "while ",
        "do ",
        "function f ",
        "f() ",
        "!",
        ">o",
        "x=(1 2)",
        "é",
        "\"$(c \")\")\"",
        "${v:-'}'}",
        "$((1+(2)))",
        "$'\\''",
        "@(a|b)",
        "2>&1",
        "&>>l",
        "\\;",
    ];
}
