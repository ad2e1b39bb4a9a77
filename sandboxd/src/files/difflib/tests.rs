//! Unit tests of `files/difflib.rs`.

use super::*;

/// Cases generated with CPython 3.11's difflib (see `testdata/gen_difflib_cases.py`):
/// one JSON object per line with `a`, `b` (texts) and `diff` (`get_diff(a, b, "p")`),
/// and for some also `opcodes` (`get_opcodes()` of the split texts).
const CASES: &str = include_str!("../testdata/difflib_cases.jsonl");

#[test]
fn matches_python_on_generated_cases() {
    let mut count = 0;
    for (number, line) in CASES.lines().enumerate() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let a = case["a"].as_str().unwrap();
        let b = case["b"].as_str().unwrap();
        let expected = case["diff"].as_str().unwrap();
        assert_eq!(
            get_diff(a, b, "p"),
            expected,
            "case {number}: {a:?} -> {b:?}"
        );
        if let Some(opcodes) = case.get("opcodes") {
            let al: Vec<&str> = a.split('\n').collect();
            let bl: Vec<&str> = b.split('\n').collect();
            let ours: Vec<serde_json::Value> = SequenceMatcher::new(&al, &bl)
                .opcodes()
                .iter()
                .map(|op| {
                    let tag = match op.tag {
                        Tag::Equal => "equal",
                        Tag::Replace => "replace",
                        Tag::Delete => "delete",
                        Tag::Insert => "insert",
                    };
                    serde_json::json!([tag, op.i1, op.i2, op.j1, op.j2])
                })
                .collect();
            assert_eq!(&serde_json::Value::from(ours), opcodes, "case {number}");
        }
        count += 1;
    }
    assert!(count >= 300, "only {count} cases");
}

#[test]
fn spec_examples() {
    assert_eq!(
        get_diff("", "line one\nline two\nline one", "p"),
        "--- p\n+++ p\n@@ -1 +1,3 @@\n-\n+line one\n+line two\n+line one"
    );
    assert_eq!(get_diff("same", "same", "p"), "");
    assert_eq!(
        get_diff("a  \nb", "a\nb", "p"),
        "--- p\n+++ p\n@@ -1 +1 @@\n-a\n+a",
        "trailing whitespace is stripped from diff lines"
    );
}

#[test]
fn string_sequences_match_python() {
    // SequenceMatcher(None, "abxcd", "abcd").get_opcodes()
    let a: Vec<char> = "abxcd".chars().collect();
    let b: Vec<char> = "abcd".chars().collect();
    let ops = SequenceMatcher::new(&a, &b).opcodes();
    assert_eq!(
        ops,
        vec![
            Opcode {
                tag: Tag::Equal,
                i1: 0,
                i2: 2,
                j1: 0,
                j2: 2
            },
            Opcode {
                tag: Tag::Delete,
                i1: 2,
                i2: 3,
                j1: 2,
                j2: 2
            },
            Opcode {
                tag: Tag::Equal,
                i1: 3,
                i2: 5,
                j1: 2,
                j2: 4
            },
        ]
    );
}
