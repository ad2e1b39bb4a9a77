use super::first_match;

fn triggers(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

#[test]
fn a_trigger_fires_on_whole_words_only_regression_digit_fired_git() {
    let git = triggers(&["git"]);
    for message in [
        "use git",
        "Git, please",
        "GIT",
        "install git-lfs",
        "two gits",
        "(git)",
    ] {
        assert_eq!(first_match(&git, message), Some("git"), "{message}");
    }
    for message in ["a digit", "open github", "legit", "gitignore", "git_dir"] {
        assert_eq!(first_match(&git, message), None, "{message}");
    }
}

#[test]
fn plural_endings_count_as_the_word() {
    let container = triggers(&["container", "box"]);
    assert_eq!(
        first_match(&container, "start two containers"),
        Some("container")
    );
    assert_eq!(first_match(&container, "many boxes."), Some("box"));
    assert_eq!(first_match(&container, "containerd is running"), None);
    assert_eq!(first_match(&container, "boxing"), None);
}

#[test]
fn triggers_that_begin_or_end_with_a_symbol_check_only_their_word_ends() {
    let task = triggers(&["/codereview"]);
    assert_eq!(
        first_match(&task, "please /codereview this"),
        Some("/codereview")
    );
    assert_eq!(first_match(&task, "x/codereview"), Some("/codereview"));
    assert_eq!(first_match(&task, "/codereviewer"), None);
    let cpp = triggers(&["c++"]);
    assert_eq!(first_match(&cpp, "modern C++17 code"), Some("c++"));
    assert_eq!(first_match(&cpp, "abc++"), None);
}

#[test]
fn the_first_trigger_in_order_is_reported_as_written() {
    let list = triggers(&["GitHub", "git"]);
    assert_eq!(
        first_match(&list, "push to github with git"),
        Some("GitHub")
    );
    assert_eq!(first_match(&list, "only git here"), Some("git"));
    let words = triggers(&["remote server"]);
    assert_eq!(
        first_match(&words, "log in to the Remote Server now"),
        Some("remote server")
    );
    assert_eq!(first_match(&words, "remote  server"), None);
    assert_eq!(first_match(&triggers(&["", "  "]), "anything"), None);
    assert_eq!(first_match(&triggers(&["git"]), ""), None);
}

#[test]
fn non_ascii_messages_are_matched_on_characters() {
    let list = triggers(&["über"]);
    assert_eq!(first_match(&list, "Ärger über Über"), Some("über"));
    assert_eq!(first_match(&list, "xüber"), None);
    assert_eq!(
        first_match(&triggers(&["git"]), "İgit ǅgit git"),
        Some("git")
    );
}
