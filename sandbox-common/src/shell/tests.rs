use super::shell_quote;

#[test]
fn quoted_words_read_back_as_themselves() {
    assert_eq!(shell_quote("plain"), "'plain'");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("it's $HOME `x` \\"), r"'it'\''s $HOME `x` \'");
    for word in ["a b", "it's", "$(rm -rf /)", "\"\n'", "ünï"] {
        let out = std::process::Command::new("bash")
            .args(["-c", &format!("printf %s {}", shell_quote(word))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
    }
}
