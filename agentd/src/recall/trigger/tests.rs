//! Unit tests of `recall/trigger.rs`.

use super::first_match;

/// Asserts, for each `(message, expected)`, that the first of `triggers` found in `message` is
/// `expected`.
fn assert_first_matches(triggers: &[&str], cases: &[(&str, Option<&str>)]) {
    let triggers: Vec<String> = triggers.iter().map(|s| (*s).to_string()).collect();
    for (message, expected) in cases {
        assert_eq!(
            first_match(&triggers, message),
            *expected,
            "{triggers:?} in {message:?}"
        );
    }
}

#[test]
fn a_trigger_fires_on_whole_words_only_regression_digit_fired_git() {
    assert_first_matches(
        &["git"],
        &[
            ("use git", Some("git")),
            ("Git, please", Some("git")),
            ("GIT", Some("git")),
            ("install git-lfs", Some("git")),
            ("two gits", Some("git")),
            ("(git)", Some("git")),
            ("a digit", None),
            ("open github", None),
            ("legit", None),
            ("gitignore", None),
            ("git_dir", None),
        ],
    );
}

#[test]
fn plural_endings_count_as_the_word() {
    assert_first_matches(
        &["container", "box"],
        &[
            ("start two containers", Some("container")),
            ("many boxes.", Some("box")),
            ("containerd is running", None),
            ("boxing", None),
        ],
    );
}

#[test]
fn triggers_that_begin_or_end_with_a_symbol_check_only_their_word_ends() {
    assert_first_matches(
        &["/codereview"],
        &[
            ("please /codereview this", Some("/codereview")),
            ("x/codereview", Some("/codereview")),
            ("/codereviewer", None),
        ],
    );
    assert_first_matches(
        &["c++"],
        &[("modern C++17 code", Some("c++")), ("abc++", None)],
    );
}

#[test]
fn the_first_trigger_in_order_is_reported_as_written() {
    assert_first_matches(
        &["GitHub", "git"],
        &[
            ("push to github with git", Some("GitHub")),
            ("only git here", Some("git")),
        ],
    );
    assert_first_matches(
        &["remote server"],
        &[
            ("log in to the Remote Server now", Some("remote server")),
            ("remote  server", None),
        ],
    );
    assert_first_matches(&["", "  "], &[("anything", None)]);
    assert_first_matches(&["git"], &[("", None)]);
}

#[test]
fn non_ascii_messages_are_matched_on_characters() {
    assert_first_matches(
        &["über"],
        &[("Ärger über Über", Some("über")), ("xüber", None)],
    );
    assert_first_matches(&["git"], &[("İgit ǅgit git", Some("git"))]);
}
