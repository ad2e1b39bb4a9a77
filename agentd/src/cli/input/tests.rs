use super::read_message;

fn lines(text: &str) -> impl Iterator<Item = std::io::Result<String>> + '_ {
    text.lines().map(|l| Ok(l.to_string()))
}

#[test]
fn messages_go_on_after_a_backslash_and_end_at_exit() {
    let mut input = lines("\n  \nfirst\nsecond \\\nline\n/exit\nlater");
    assert_eq!(read_message(&mut input).as_deref(), Some("first"));
    assert_eq!(read_message(&mut input).as_deref(), Some("second \nline"));
    assert_eq!(read_message(&mut input), None);
    assert_eq!(read_message(&mut lines("")), None);
}
