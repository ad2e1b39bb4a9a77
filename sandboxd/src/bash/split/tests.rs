//! Unit tests of `bash/split/mod.rs`.

use super::generate::{Rng, statement};
use super::lexer::MAX_NESTING;
use super::*;

fn split(command: &str) -> Vec<String> {
    split_statements(command)
}

/// Commands that are one statement: the result is the whole trimmed text.
#[test]
fn single_statements() {
    let cases = [
        "ls",
        "ls -la /tmp",
        "a && b",
        "a; b",
        "a | b",
        "a |& b",
        "a &",
        "a & b",
        "cd /tmp && touch test.txt",
        "for i in 1 2; do\n echo $i\ndone",
        "for i in 1 2\ndo\n echo $i\ndone",
        "while true; do\n sleep 1\ndone",
        "until false\ndo\n :\ndone",
        "if [ -f x ]; then\n echo yes\nelif [ -d x ]; then\n echo dir\nelse\n echo no\nfi",
        "case $x in\n a) echo a;;\n (b|c) echo bc;;\n *) echo other\nesac",
        "f() {\n echo\n}",
        "f()\n{\n echo\n}",
        "function f {\n echo\n}",
        "function f\n{\n echo\n}",
        "(cd x\nls)",
        "{ echo a\necho b; }",
        "cat <<EOF\nhello\nworld\nEOF",
        "cat <<-EOF\n\thello\n\tEOF",
        "cat <<'EOF'\n$HOME\nls\nEOF",
        "cat << \"E F\"\nx\nE F",
        "python3 - <<'EOF'\nprint(1)\n\nprint(2)\nEOF",
        "cat <<EOF &&\nbody\nEOF\nls",
        "cat <<EOF | grep x\nx\nEOF",
        "echo a \\\n b",
        "echo \"a\nb\"",
        "echo 'a\nb'",
        "echo $'a\nb'",
        "echo $(\nls\n)",
        "echo `ls\n`",
        "x=$(cat <<EOF\nhi\nEOF\n)",
        "a &&\nb",
        "a ||\n\n# comment\nb",
        "a |\nb",
        "! a |\n b",
        "arr=(1\n2 3)",
        "diff <(ls) <(ls\n)",
        "ls # comment\n",
        "ls\n# trailing comment",
        "echo 'it''s'",
        "echo \"Double quotes \\\"do\\\" escape\"",
        "echo 'Single quotes don\\'t escape'",
        "for i in {1..5}; do echo $i; done",
        "grep 'pattern' file.txt | sort | uniq",
        "echo one\\; two; echo three",
        "echo -e 'hello\nworld\nare\nyou\\n\nthere?'",
        "echo -e 'hello\nworld \"\n'",
        "kubectl apply -f - <<EOF\napiVersion: v1\nkind: Pod\nmetadata:\n  name: busybox-sleep\nspec:\n  containers:\n  - name: busybox\n    image: busybox:1.28\n    args:\n    - sleep\n    - \"1000000\"\nEOF",
        "mkdir -p _modules && \\\nfor month in {01..04}; do\n    for day in {01..05}; do\n        touch \"_modules/2024-${month}-${day}-sample.md\"\n    done\ndone && echo \"created files\"",
        "for file in _modules/*.md; do\n    new_date=$(echo $file | sed -E 's/2024-(01|02|03|04)-/2024-/;s/2024-01/2024-08/')\n    mv \"$file\" \"$new_date\"\ndone && echo \"success\"",
        "ls\n\n\n",
        "\n\n  ls -l  \n\n",
    ];
    for command in cases {
        assert_eq!(split(command), vec![command.trim()], "{command:?}");
        assert_eq!(multiple_commands_error(command), None, "{command:?}");
    }
}

/// Text that fails to parse is one statement, like the reference's fallback.
#[test]
fn unparsable_text_is_one_statement() {
    let cases = [
        "echo 'unterminated\nls",
        "echo \"unterminated\nls",
        "cat <<EOF\nunterminated heredoc\nls",
        "echo $(unclosed\nls",
        "if true; then\nls",
        "fi\nls",
        "ls )\necho",
        "select x in a b; do\n:\ndone\nls",
        // The grammar panics on this io number (see `parse::complete_commands`).
        "99999999999>x\nls",
    ];
    for command in cases {
        assert_eq!(split(command), vec![command.trim()], "{command:?}");
    }
}

/// Constructs bashlex cannot parse are split like any other (the reference would run them
/// as one and lose the output after the first prompt).
#[test]
fn constructs_bashlex_cannot_parse_are_still_split() {
    let cases = [
        "case x in a) ;; esac\nls",
        "[[ -f x ]] && echo y\nls",
        "((i++))\nls",
        "for ((i=0; i<3; i++)); do\n:\ndone\nls",
        "time sleep 1\nls",
        "coproc cat\nls",
        "ls\nif true; then\n  [[ -n x ]]\nfi",
        "ls\nf() {\n  case x in *) ;; esac\n}",
    ];
    for command in cases {
        assert_eq!(split(command).len(), 2, "{command:?}");
    }
}

#[test]
fn empty_command_is_one_empty_statement() {
    assert_eq!(split(""), vec![""]);
    assert_eq!(split("  \n \t "), vec![""]);
    assert_eq!(
        split("# only a comment\n# another"),
        vec!["# only a comment\n# another"]
    );
    assert_eq!(multiple_commands_error(""), None);
}

#[test]
fn multiple_statements() {
    let cases: &[(&str, &[&str])] = &[
        ("ls\necho hi", &["ls", "echo hi"]),
        ("a &\nb", &["a &", "b"]),
        ("a;\nb", &["a;", "b"]),
        ("a; b\nc && d", &["a; b", "c && d"]),
        ("ls # comment\necho hi", &["ls # comment", "echo hi"]),
        ("# leading comment\n\nls\necho hi", &["ls", "echo hi"]),
        (
            "\necho \"Hello\" # This is a comment\n# This is another comment\nls -l\n",
            &[
                "echo \"Hello\" # This is a comment\n# This is another comment",
                "ls -l",
            ],
        ),
        (
            "\ncat <<EOF\nmultiline\ntext\nEOF\necho \"Done\"\n",
            &["cat <<EOF\nmultiline\ntext\nEOF", "echo \"Done\""],
        ),
        (
            "\nls -l\n\necho \"Hello\"\n\ncd /tmp\n",
            &["ls -l", "echo \"Hello\"", "cd /tmp"],
        ),
        (
            "\necho \"This is a \\\"quoted\\\" string\"\necho 'This is a '\\''single-quoted'\\'' string'\n",
            &[
                "echo \"This is a \\\"quoted\\\" string\"",
                "echo 'This is a '\\''single-quoted'\\'' string'",
            ],
        ),
        (
            "for i in 1; do\n echo\ndone\nls",
            &["for i in 1; do\n echo\ndone", "ls"],
        ),
        ("f() {\n echo\n}\nf", &["f() {\n echo\n}", "f"]),
        ("function f\n{\n :\n}\nf", &["function f\n{\n :\n}", "f"]),
        ("(cd x\nls)\npwd", &["(cd x\nls)", "pwd"]),
        ("{ a; }\nb", &["{ a; }", "b"]),
        ("if a; then b; fi\nls", &["if a; then b; fi", "ls"]),
        (
            "while a\ndo b\ndone >out\nls",
            &["while a\ndo b\ndone >out", "ls"],
        ),
        ("! false\nls", &["! false", "ls"]),
        ("x=1\ny=2", &["x=1", "y=2"]),
        ("arr=(1\n2)\necho", &["arr=(1\n2)", "echo"]),
        ("echo a \\\n b\nc", &["echo a \\\n b", "c"]),
        ("echo \"a\nb\"\nc", &["echo \"a\nb\"", "c"]),
        (
            "a && cat <<EOF\nbody\nEOF\nls",
            &["a && cat <<EOF\nbody\nEOF", "ls"],
        ),
        (
            "cat <<A <<B\na\nA\nb\nB\nls",
            &["cat <<A <<B\na\nA\nb\nB", "ls"],
        ),
        ("cat <<EOF\nEOF\nls", &["cat <<EOF\nEOF", "ls"]),
        ("<<EOF cat\nx\nEOF\nls", &["<<EOF cat\nx\nEOF", "ls"]),
        ("echo é\nécho ü", &["echo é", "écho ü"]),
        ("ls\r\necho hi\r\n", &["ls", "echo hi"]),
        ("echo done fi }\nx", &["echo done fi }", "x"]),
        ("a &&\nb\nc", &["a &&\nb", "c"]),
        ("ls 2>&1 >|x &>y\nb", &["ls 2>&1 >|x &>y", "b"]),
        (
            "echo $(case x in a) echo;; esac)\nls",
            &["echo $(case x in a) echo;; esac)", "ls"],
        ),
        (
            "cat <<EOF\n$(ls)\n)\nEOF\nls",
            &["cat <<EOF\n$(ls)\n)\nEOF", "ls"],
        ),
        (
            "if true; then\n cat <<EOF\n fi\nEOF\nfi\nls",
            &["if true; then\n cat <<EOF\n fi\nEOF\nfi", "ls"],
        ),
        (
            "echo \"$(echo \"a\nb\")\"\nls",
            &["echo \"$(echo \"a\nb\")\"", "ls"],
        ),
        (
            "echo hi # it's a comment\nls",
            &["echo hi # it's a comment", "ls"],
        ),
        ("echo a#b\nls", &["echo a#b", "ls"]),
        ("echo ${a:-$(\nls)}\nb", &["echo ${a:-$(\nls)}", "b"]),
        ("echo $((1 +\n2))\nls", &["echo $((1 +\n2))", "ls"]),
        ("a |&\nb\nc", &["a |&\nb", "c"]),
        ("ls &&\\\n echo\nc", &["ls &&\\\n echo", "c"]),
        ("cat <(ls) if\nb", &["cat <(ls) if", "b"]),
    ];
    for (command, expected) in cases {
        assert_eq!(split(command), *expected, "{command:?}");
    }
}

/// The reference's own multi-line test: joined commands come back one by one.
#[test]
fn reference_joined_commands_split_back() {
    let commands = [
        "ls -l",
        "echo -e \"hello\nworld\"",
        "echo -e \"hello it\\'s me\"",
        "echo \\\n    -e 'hello' \\\n    -v",
        "echo -e 'hello\\nworld\\nare\\nyou\\nthere?'",
        "echo -e 'hello\nworld\nare\nyou\\n\nthere?'",
        "echo -e 'hello\nworld \"\n'",
        "kubectl apply -f - <<EOF\napiVersion: v1\nkind: Pod\nmetadata:\n  name: busybox-sleep\nspec:\n  containers:\n  - name: busybox\n    image: busybox:1.28\n    args:\n    - sleep\n    - \"1000000\"\nEOF",
        "mkdir -p _modules && \\\nfor month in {01..04}; do\n    for day in {01..05}; do\n        touch \"_modules/2024-${month}-${day}-sample.md\"\n    done\ndone",
    ];
    assert_eq!(split(&commands.join("\n")), commands);
}

#[test]
fn error_text_matches_the_reference() {
    assert_eq!(
        multiple_commands_error("ls\necho hi").as_deref(),
        Some(
            "ERROR: Cannot execute multiple commands at once.\n\
                 Please run each command separately OR chain them into a single command via && or ;\n\
                 Provided commands:\n(1) ls\n(2) echo hi"
        )
    );
    let three = multiple_commands_error("  a\nb &\n\nc  ").unwrap_or_default();
    assert!(
        three.ends_with("Provided commands:\n(1) a\n(2) b &\n(3) c"),
        "{three}"
    );
}

/// Nesting beyond the limit is not parsed; at the limit it is, without overflowing a 2 MiB
/// stack (the default for spawned threads, tokio's included) even in debug builds.
#[test]
fn deep_nesting_is_bounded() {
    // `open` `times` times, `inner`, `close` as often, and a second statement.
    let nest = |open: &str, inner: &str, close: &str, times: usize| {
        format!("{}{inner}{}\nls", open.repeat(times), close.repeat(times))
    };
    let depth = MAX_NESTING - 2;
    let nested = [
        nest("{ ", ":", "; }", depth),
        nest("if a; then ", ":", "; fi", depth),
        nest("while a; do ", ":", "; done", depth),
        nest("( ", ":", ")", depth),
        format!("echo {}", nest("$(", "x", ")", depth)),
        nest(
            "for i in 1; do { (if a; then ",
            ":",
            "; fi) }; done",
            depth / 4,
        ),
    ];
    let too_deep = [
        nest("{ ", ":", "; }", 5000),
        nest("if a; then ", ":", "; fi", 5000),
        format!("echo {}", nest("$(", "x", ")", 50_000)),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let within: Vec<usize> = nested.iter().map(|c| split(c).len()).collect();
            let beyond: Vec<usize> = too_deep.iter().map(|c| split(c).len()).collect();
            (within, beyond)
        });
    let (within, beyond) = handle
        .map(|h| h.join())
        .unwrap_or_else(|e| panic!("spawn: {e}"))
        .unwrap_or_else(|_| panic!("split panicked"));
    assert_eq!(within, vec![2; 6]);
    assert_eq!(beyond, vec![1; 3]);
}

/// Generated programs split into exactly the statements they were built from.
#[test]
fn generated_programs_split_into_their_statements() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..2000 {
        let count = 1 + rng.below(4);
        let mut program = String::new();
        let mut expected = Vec::new();
        for k in 0..count {
            if k > 0 {
                let separator = rng.pick(&["\n", "\n\n", "\n# comment\n", "\n  \n\t"]);
                program.push_str(separator);
                if let Some(last) = expected.last_mut() {
                    *last = format!("{last}{separator}").trim().to_owned();
                }
            }
            let (s, needs_newline) = statement(&mut rng, 0);
            let trailer = rng.pick(&["", " # trailing", ";", " &"]);
            let trailer = if needs_newline { "" } else { trailer };
            program.push_str(&s);
            program.push_str(trailer);
            expected.push(format!("{s}{trailer}").trim().to_owned());
        }
        if count == 1 {
            expected = vec![program.trim().to_owned()];
        }
        assert_eq!(split(&program), expected, "{program:?}");
    }
}

/// No input makes the splitter panic or hang, and its output is always well formed.
#[test]
fn arbitrary_input_never_panics() {
    let pieces = [
        "a", " ", "\n", ";", "&", "|", "(", ")", "{", "}", "'", "\"", "\\", "$", "`", "<<", "<<-",
        "EOF", "#", "if", "then", "fi", "for", "do", "done", "case", "esac", "in", "))", "((",
        "$(", "${", "[[", "]]", "é", "\t", "\r", "function", "!", "=", ">", "<", "*", "\u{0}",
        "\u{1b}[", "\u{fffd}",
    ];
    let mut rng = Rng(7);
    for round in 0..20_000 {
        let text = if round % 4 == 0 {
            let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            (0..rng.below(40)).map(|_| rng.pick(&pieces)).collect()
        };
        let statements = split(&text);
        assert!(!statements.is_empty());
        if statements.len() > 1 {
            let mut rest = text.as_str();
            for statement in &statements {
                assert!(!statement.is_empty(), "{text:?}");
                let at = rest.find(statement.as_str());
                assert!(at.is_some(), "{statement:?} not in order in {text:?}");
                rest = &rest[at.unwrap_or_default() + statement.len()..];
            }
        } else {
            assert_eq!(statements, vec![text.trim()]);
        }
    }
}

/// A 10 KB command is handled quickly (the budget is 1 ms in release builds; the bound here
/// only catches gross regressions such as quadratic behaviour, in any build).
#[test]
fn large_commands_are_fast() {
    let mut many = String::new();
    let mut loop_body = String::from("for i in 1 2 3; do\n");
    let mut n = 0;
    while many.len() < 10_000 {
        many.push_str(&format!(
            "echo \"line {n}\" | grep -v x && ls /tmp/d{n} >/dev/null\n"
        ));
        loop_body.push_str(&format!(
            "  echo \"line {n}\" | grep -v x && ls /tmp/d{n}\n"
        ));
        n += 1;
    }
    loop_body.push_str("done");
    let heredoc = format!(
        "cat <<'EOF' > file.py\n{}EOF",
        "print('hello world')\n".repeat(500)
    );
    let one_line = many.replace('\n', "; ");
    let cases = [(&many, n), (&loop_body, 1), (&heredoc, 1), (&one_line, 1)];
    let bound = if cfg!(debug_assertions) { 200 } else { 20 };
    for (command, expected) in cases {
        let started = std::time::Instant::now();
        assert_eq!(split(command).len(), expected);
        let elapsed = started.elapsed();
        assert!(
            elapsed.as_millis() < bound,
            "{elapsed:?} for {} bytes",
            command.len()
        );
    }
}
