//! Quoting for bash: how a string becomes one word of a command line that bash reads back as
//! exactly that string (sandboxd's set-up line, agentd's workspace commands).

/// `s` as one single-quoted bash word (`'` written as `'\''`).
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests;
