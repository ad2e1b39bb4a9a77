//! When a knowledge microagent's trigger fires on a message.
//!
//! The reference fires on a plain case-insensitive substring, so `git` fires on "digit" and
//! `ssh` on "sshd_config"'s neighbours alike. Here a trigger fires when it occurs in the message,
//! case-insensitively, **as a whole word**: where the trigger begins with a letter, digit or `_`,
//! the character before the match must not be one; where it ends with one, the character after
//! the match must not be one, except for an English plural ending (`s` or `es`) followed by a
//! non-word character. So `git` fires on "git", "Git,", "git-lfs" and "gits", not on "digit",
//! "github" or "legit"; `container` fires on "containers"; `/codereview` (which begins with `/`)
//! fires on "please /codereview this"; a trigger of several words (`remote server`) must match
//! them as written, spaces included.

/// The first of `triggers` (in their order) that fires on `message`, as written.
pub(crate) fn first_match<'a>(triggers: &'a [String], message: &str) -> Option<&'a str> {
    let message = message.to_lowercase();
    triggers
        .iter()
        .find(|t| fires(&t.to_lowercase(), &message))
        .map(String::as_str)
}

/// Whether `trigger` occurs in `message` as a whole word (both already lower-cased).
fn fires(trigger: &str, message: &str) -> bool {
    let trigger = trigger.trim();
    if trigger.is_empty() {
        return false;
    }
    let check_start = trigger.chars().next().is_some_and(is_word);
    let check_end = trigger.chars().next_back().is_some_and(is_word);
    message.match_indices(trigger).any(|(start, matched)| {
        let before = message[..start].chars().next_back();
        let after = &message[start + matched.len()..];
        (!check_start || !before.is_some_and(is_word)) && (!check_end || ends_word(after))
    })
}

/// Whether the text after a match ends the word: nothing or a non-word character next, or a
/// plural ending (`s`, `es`) and then that.
fn ends_word(after: &str) -> bool {
    let boundary = |rest: &str| !rest.chars().next().is_some_and(is_word);
    boundary(after)
        || after.strip_prefix("es").is_some_and(boundary)
        || after.strip_prefix('s').is_some_and(boundary)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests;
