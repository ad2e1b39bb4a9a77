//! The global microagents that ship inside the agentd binary (`agentd/microagents/*.md`, built
//! in with `include_str!`), so they work wherever agentd is installed: git, GitHub, GitLab,
//! Docker, ssh, security, code review (`/codereview`), npm and pip. Workspace microagents of
//! the same name replace them.

use super::microagent::{Microagent, MicroagentError};

/// Each built-in file's name (without `.md`, its microagent's name) and text.
const FILES: [(&str, &str); 9] = [
    (
        "code-review",
        include_str!("../../microagents/code-review.md"),
    ),
    ("docker", include_str!("../../microagents/docker.md")),
    ("git", include_str!("../../microagents/git.md")),
    ("github", include_str!("../../microagents/github.md")),
    ("gitlab", include_str!("../../microagents/gitlab.md")),
    ("npm", include_str!("../../microagents/npm.md")),
    ("pip", include_str!("../../microagents/pip.md")),
    ("security", include_str!("../../microagents/security.md")),
    ("ssh", include_str!("../../microagents/ssh.md")),
];

/// The built-in microagents, parsed (a unit test checks that each one parses).
pub(crate) fn microagents() -> Result<Vec<Microagent>, MicroagentError> {
    FILES
        .iter()
        .map(|(name, text)| Microagent::parse(&format!("built-in {name}.md"), Some(name), text))
        .collect()
}

#[cfg(test)]
mod tests;
