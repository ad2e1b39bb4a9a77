//! Unit tests of `bash/output.rs`.

use super::*;
use crate::bash::SpoolBudget;

#[test]
fn window_keeps_the_last_lines_and_the_spool_keeps_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = CommandOutput::new(dir.path().join("out.log"), SpoolBudget::new(1 << 30));
    let text: String = (1..=50_000).map(|i| format!("Line {i}\r\n")).collect();
    out.feed(text.as_bytes());
    out.finish();
    let (content, kept) = out.take();
    assert_eq!(kept, Some(MAX_LINES));
    assert!(content.ends_with("Line 50000"));
    assert!(content.starts_with(&format!("Line {}", 50_000 - MAX_LINES + 1)));
    let spool = std::fs::read_to_string(dir.path().join("out.log")).unwrap();
    assert_eq!(spool.lines().count(), 50_000);
}

#[test]
fn an_already_shown_partial_line_is_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = CommandOutput::new(dir.path().join("out.log"), SpoolBudget::new(1 << 30));
    out.feed(b"Enter name: ");
    assert_eq!(out.take(), ("Enter name:".to_owned(), None));
    out.feed(b"Hello John\r\n");
    assert_eq!(out.take(), ("Hello John".to_owned(), None));
}
