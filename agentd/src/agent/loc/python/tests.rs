//! Unit tests of `agent/loc/python.rs`.

use super::*;

fn repr_of(json: &str) -> String {
    serde_json::from_str::<PyValue>(json).unwrap().repr()
}

#[test]
fn json_values_become_python_literals() {
    assert_eq!(
        repr_of(
            r#"{"search_terms": ["Order", "bill"], "line_nums": null, "deep": [[1, [true, false]], {}], "n": -3}"#
        ),
        "{'search_terms': ['Order', 'bill'], 'line_nums': None, 'deep': [[1, [True, False]], {}], 'n': -3}"
    );
    assert_eq!(repr_of("{}"), "{}");
    assert_eq!(repr_of("[]"), "[]");
    assert_eq!(
        repr_of(r#"{"a": {"b": {"c": null}}}"#),
        "{'a': {'b': {'c': None}}}"
    );
}

#[test]
fn keys_keep_their_order_and_a_repeated_key_its_first_place_with_its_last_value() {
    assert_eq!(repr_of(r#"{"z": 1, "a": 2, "z": 3}"#), "{'z': 3, 'a': 2}");
}

#[test]
fn strings_are_quoted_and_escaped_as_python_does() {
    assert_eq!(str_repr("plain"), "'plain'");
    assert_eq!(str_repr("it's"), "\"it's\"");
    assert_eq!(str_repr("say \"hi\""), "'say \"hi\"'");
    assert_eq!(str_repr("both ' and \""), "'both \\' and \"'");
    assert_eq!(str_repr("back\\slash"), "'back\\\\slash'");
    assert_eq!(str_repr("tab\tnew\nline\rcr"), "'tab\\tnew\\nline\\rcr'");
    assert_eq!(str_repr("\u{0}\u{1b}\u{7f}"), "'\\x00\\x1b\\x7f'");
    assert_eq!(str_repr("\u{85}\u{a0}\u{ad}"), "'\\x85\\xa0\\xad'");
    assert_eq!(
        str_repr("zero\u{200b}width\u{2028}"),
        "'zero\\u200bwidth\\u2028'"
    );
    assert_eq!(str_repr("\u{e000}\u{10ffff}"), "'\\ue000\\U0010ffff'");
    assert_eq!(str_repr("héllo wörld 日本 🐍"), "'héllo wörld 日本 🐍'");
    assert_eq!(str_repr("'); import os; ('"), "\"'); import os; ('\"");
}

#[test]
fn floats_are_written_as_python_writes_them() {
    let cases = [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (2.5, "2.5"),
        (123.456, "123.456"),
        (0.1, "0.1"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e-7, "1.5e-07"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1.2345678901234568e17, "1.2345678901234568e+17"),
        (1e300, "1e+300"),
        (-2.75e-300, "-2.75e-300"),
        (f64::INFINITY, "float('inf')"),
    ];
    for (x, expected) in cases {
        assert_eq!(float_repr(x), expected, "{x:e}");
    }
    assert_eq!(repr_of("[2.0, 1e3, 10, 1E-7]"), "[2.0, 1000.0, 10, 1e-07]");
}

/// The system Python agrees: each text's `repr(json.loads(text))` is ours.
#[tokio::test]
async fn the_literals_are_what_python_itself_writes() {
    let texts = [
        r#"{"search_terms": ["a'b", "c\"d", "e'f\"g", "\\", "\u0000\u001f\u007f\u0085\u00a0"], "x": [1.5, -0.0, 1e22, 5e-324, 0.30000000000000004, 123456789012345678]}"#,
        r#"{"u": "\u200b\u2028\u2029\u202f\u3000\ufeff\ue000 é 日本 \ud83d\udc0d", "b": [true, false, null], "nested": {"k": [[], {}]}}"#,
        r#"{"dup": 1, "other": 2, "dup": 3}"#,
    ];
    for text in texts {
        let ours = repr_of(text);
        let python = tokio::process::Command::new("python3")
            .args([
                "-c",
                "import json, sys; sys.stdout.write(repr(json.loads(sys.argv[1])))",
                text,
            ])
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(std::time::Duration::from_secs(30), python)
            .await
            .expect("python3 answers within 30 s")
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert_eq!(String::from_utf8(output.stdout).unwrap(), ours, "{text}");
    }
}
