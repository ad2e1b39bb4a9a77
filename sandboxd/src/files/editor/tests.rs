//! Unit tests of `files/editor.rs`.

use super::*;

#[test]
fn make_output_numbers_every_piece() {
    assert_eq!(
        make_output("a\nb\n", "/f", 1),
        "Here's the result of running `cat -n` on /f:\n     1\ta\n     2\tb\n     3\t\n"
    );
    assert_eq!(
        make_output("", "/f", 7),
        "Here's the result of running `cat -n` on /f:\n     7\t\n"
    );
    assert_eq!(
        make_output("x", "d", 1234567),
        "Here's the result of running `cat -n` on d:\n1234567\tx\n"
    );
}

#[test]
fn the_notice_lands_on_the_last_numbered_line() {
    let text = format!("{}\n{}", "a".repeat(10), "b".repeat(MAX_RESPONSE_CHARS));
    let out = make_output(&text, "/f", 1);
    let expected_tail = format!(
        "     2\t{}{TEXT_FILE_TRUNCATED_NOTICE}\n",
        "b".repeat(MAX_RESPONSE_CHARS - 11)
    );
    assert!(out.ends_with(&expected_tail));
}

#[test]
fn occurrences_are_literal_and_non_overlapping() {
    let found = |haystack, needle| {
        let o = Occurrences::find(haystack, needle);
        (o.first, o.count, o.lines)
    };
    assert_eq!(found("aaa", "aa"), (Some((1, 0)), 1, vec![1]));
    assert_eq!(found("a.b\nx.y", "."), (Some((1, 1)), 2, vec![1, 2]));
    assert_eq!(found("ab\n", ""), (Some((1, 0)), 4, vec![1, 2]));
    assert_eq!(found("é\né", "é"), (Some((1, 0)), 2, vec![1, 2]));
    assert_eq!(found("x", "y"), (None, 0, vec![]));
}

#[test]
fn counts_lines_like_python_file_iteration() {
    assert_eq!(count_lines(""), 0);
    assert_eq!(count_lines("a"), 1);
    assert_eq!(count_lines("a\n"), 1);
    assert_eq!(count_lines("a\n\n"), 2);
    assert_eq!(line_range("a\nb\nc", 2, 9), "b\nc");
    assert_eq!(line_range("a\nb\nc", 0, 1), "a\n");
}

#[test]
fn insert_line_values() {
    use serde_json::json;
    assert_eq!(parse_insert_line(None), Ok(None));
    assert_eq!(parse_insert_line(Some(&json!(null))), Ok(None));
    assert_eq!(
        parse_insert_line(Some(&json!(3))),
        Ok(Some(PyInt::Small(3)))
    );
    assert_eq!(
        parse_insert_line(Some(&json!(" 3 "))),
        Ok(Some(PyInt::Small(3)))
    );
    assert_eq!(
        parse_insert_line(Some(&json!(2.0))),
        Ok(Some(PyInt::Small(2)))
    );
    assert_eq!(
        parse_insert_line(Some(&json!(u64::MAX))),
        Ok(Some(PyInt::Big(u64::MAX.to_string())))
    );
    assert_eq!(
        parse_insert_line(Some(&json!("two"))),
        Err("Invalid insert_line value: 'two'. Expected an integer.".to_owned())
    );
    assert_eq!(
        parse_insert_line(Some(&json!(1.5))),
        Err("Invalid insert_line value: '1.5'. Expected an integer.".to_owned())
    );
}

#[test]
fn history_keeps_ten_per_file_and_respects_the_budget() {
    let mut state = State::default();
    for i in 0..12 {
        state.push_history("/f", format!("v{i}"));
    }
    assert_eq!(state.history["/f"].len(), MAX_HISTORY_PER_FILE);
    assert_eq!(state.pop_history("/f").as_deref(), Some("v11"));
    assert_eq!(
        state.history["/f"].front().map(|e| e.1.as_str()),
        Some("v2")
    );

    let mut state = State::default();
    let big = "x".repeat(HISTORY_BUDGET_BYTES / 2);
    state.push_history("/a", big.clone());
    state.push_history("/b", big.clone());
    state.push_history("/c", "small".to_owned());
    assert!(state.history_bytes <= HISTORY_BUDGET_BYTES);
    assert!(
        !state.history.contains_key("/a"),
        "the oldest entry anywhere goes first"
    );
    assert_eq!(state.pop_history("/c").as_deref(), Some("small"));
    assert_eq!(state.pop_history("/b").map(|s| s.len()), Some(big.len()));
    assert_eq!(state.history_bytes, 0);
}
