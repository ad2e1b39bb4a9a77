//! The `rules` analyzer's table: patterns (regular expressions, case-insensitive) over what an
//! action touches, each with the risk it means. An action's risk is the highest of the rules
//! that match it; none matching is low. The built-in table ([`DEFAULT_RULES`]) is documented in
//! docs/protocol.md §15.3; `[[security.rules]]` entries add to it (they can raise a risk, never
//! lower one).
//!
//! What each action type is matched on:
//! - `run`: the command, `run_ipython`: the cell's code (both as [`RuleTarget::Command`]);
//! - `read`: its path ([`RuleTarget::Path`]);
//! - `write` and `edit` (other than `view`): their path, as [`RuleTarget::Path`] and
//!   [`RuleTarget::Write`]; a path outside the sandbox's workspace is at least medium;
//! - `browse`: the URL ([`RuleTarget::Url`]);
//! - `call_tool_mcp`: medium (the tool's effects are not known here).

use protocol::ActionKind;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use super::Risk;

/// What a rule's pattern is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleTarget {
    /// A shell command or an IPython cell.
    Command,
    /// The path of a file read, written or edited.
    Path,
    /// The path of a file written or edited (not read).
    Write,
    /// A URL browsed.
    Url,
}

/// One `[[security.rules]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSetting {
    /// What the pattern is matched against.
    pub on: RuleTarget,
    /// A regular expression (Rust `regex` syntax, case-insensitive), found anywhere.
    pub pattern: String,
    /// The risk a match means: `low`, `medium` or `high`.
    pub risk: Risk,
    /// Why (for logs).
    #[serde(default)]
    pub description: String,
}

/// A pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("[security] rule {pattern:?}: {source}")]
pub struct RulesError {
    /// The pattern.
    pub pattern: String,
    /// What is wrong with it.
    pub source: regex::Error,
}

/// The built-in rules: (target, pattern, risk, why).
pub(crate) const DEFAULT_RULES: &[(RuleTarget, &str, Risk, &str)] = &[
    // Destruction of the system or the home directory.
    (
        RuleTarget::Command,
        r"\brm\s+(-\S+\s+)*-[a-z]*r[a-z]*\s+(-\S+\s+)*(/|/\*|~|~/|~/\*|\$home/?)(\s|$|[;&|)'\x22])",
        Risk::High,
        "recursive removal of / or the home directory",
    ),
    (
        RuleTarget::Command,
        r"--no-preserve-root",
        Risk::High,
        "rm --no-preserve-root",
    ),
    (
        RuleTarget::Command,
        r"shutil\.rmtree\(\s*['\x22](/|~)['\x22]",
        Risk::High,
        "rmtree of / or ~",
    ),
    (
        RuleTarget::Command,
        r"\bmkfs(\.\w+)?\b|\bdd\b[^\n]*\bof=/dev/",
        Risk::High,
        "overwrites a disk",
    ),
    (
        RuleTarget::Command,
        r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}",
        Risk::High,
        "fork bomb",
    ),
    // Running code fetched from the network.
    (
        RuleTarget::Command,
        r"\b(curl|wget|fetch)\b[^\n|;&]*\|\s*(sudo\s+)?(\S*/)?(ba|z|k|da|fi)?sh\b",
        Risk::High,
        "downloaded script piped into a shell",
    ),
    (
        RuleTarget::Command,
        r"\b(curl|wget)\b[^\n|;&]*\|\s*(sudo\s+)?(\S*/)?(python[0-9.]*|perl|ruby|node)\b",
        Risk::High,
        "downloaded script piped into an interpreter",
    ),
    (
        RuleTarget::Command,
        r"(\b(ba|z|k|da)?sh\b|\bsource\b|\beval\b)[^\n]*(\$\(|<\(|`)\s*(curl|wget)\b",
        Risk::High,
        "downloaded script run by a shell",
    ),
    // Hiding what was done.
    (
        RuleTarget::Command,
        r"\bunset\s+histfile\b|\bhistfile=/dev/null|\bhist(file)?size=0\b|\bset\s+\+o\s+history\b|\bhistory\s+-[a-z]*c",
        Risk::High,
        "disables or clears the shell history",
    ),
    // Key material and credentials.
    (
        RuleTarget::Command,
        r"\.ssh/(id_[a-z0-9_]+|authorized_keys|known_hosts)|\.pem\b|\.p12\b|/etc/(shadow|gshadow|sudoers)\b|\.aws/credentials|\.netrc\b|\.gnupg\b|\.kube/config|\.docker/config\.json|\.git-credentials",
        Risk::High,
        "touches key material or credentials",
    ),
    (
        RuleTarget::Path,
        r"(^|/)\.ssh/|\.(pem|key|p12|pfx)$|^/etc/(shadow|gshadow|sudoers)$|\.aws/credentials$|(^|/)\.netrc$|(^|/)\.gnupg/|\.kube/config$|\.docker/config\.json$|(^|/)\.git-credentials$",
        Risk::High,
        "key material or credentials",
    ),
    // Sending data out.
    (
        RuleTarget::Command,
        r"\bcurl\b[^\n]*(\s(-d|--data(-binary|-raw|-urlencode)?)(\s+|=)?['\x22]?@|\s-f\s+\S+=@|\s(-t|--upload-file)\s)",
        Risk::High,
        "uploads a file with curl",
    ),
    (
        RuleTarget::Command,
        r"\bwget\b[^\n]*--post-file",
        Risk::High,
        "uploads a file with wget",
    ),
    (
        RuleTarget::Command,
        r"/dev/(tcp|udp)/",
        Risk::High,
        "raw network connection from bash",
    ),
    (
        RuleTarget::Command,
        r"\b(nc|ncat|netcat|socat)\b[^\n]*(<|\|)|\|\s*(nc|ncat|netcat|socat)\b",
        Risk::High,
        "data piped to a network socket",
    ),
    (
        RuleTarget::Command,
        r"\b(scp|rsync|sftp)\b[^\n]*\s\S+@?\S*:\S*",
        Risk::High,
        "copies files to another host",
    ),
    // Writing where the system lives.
    (
        RuleTarget::Command,
        r">>?\s*/(etc|usr|bin|sbin|boot|lib|lib64|root|sys|proc)/|\btee\s+(-a\s+)?/(etc|usr|bin|sbin|boot|lib|root)/",
        Risk::High,
        "writes into a system directory",
    ),
    (
        RuleTarget::Write,
        r"^/(etc|usr|bin|sbin|boot|lib|lib64|root|sys|proc|dev)(/|$)",
        Risk::High,
        "writes into a system directory",
    ),
    (
        RuleTarget::Write,
        r"(^|/)\.(bashrc|bash_profile|profile|zshrc|bash_logout)$",
        Risk::Medium,
        "changes a shell start-up file",
    ),
    // Worth a look.
    (
        RuleTarget::Command,
        r"\bsudo\b|\bsu\s+-?\s*\w*$|\bchown\b",
        Risk::Medium,
        "acts as another user",
    ),
    (
        RuleTarget::Command,
        r"\bchmod\s+(-\S+\s+)*[0-7]?777\b",
        Risk::Medium,
        "world-writable permissions",
    ),
    (
        RuleTarget::Command,
        r"\bgit\s+push\b[^\n]*(--force\b|\s-f\b)",
        Risk::Medium,
        "force push",
    ),
    (
        RuleTarget::Command,
        r"\brm\s+(-\S+\s+)*-[a-z]*r",
        Risk::Medium,
        "recursive removal",
    ),
    (
        RuleTarget::Command,
        r"\b(curl|wget|ssh|telnet|ftp)\b|requests\.(get|post|put)|urllib",
        Risk::Medium,
        "network access",
    ),
    (
        RuleTarget::Command,
        r"\b(pip3?|npm|yarn|apt(-get)?|gem|cargo)\s+install\b|%pip\s+install",
        Risk::Medium,
        "installs software",
    ),
    (
        RuleTarget::Command,
        r"\bkill(all)?\s+-(9|kill)\b|\bpkill\b",
        Risk::Medium,
        "kills processes",
    ),
    (
        RuleTarget::Url,
        r"^file:",
        Risk::High,
        "a local file through the browser",
    ),
    (
        RuleTarget::Url,
        r"169\.254\.169\.254|metadata\.google\.internal|100\.100\.100\.200",
        Risk::High,
        "a cloud metadata service",
    ),
];

#[derive(Debug, Clone)]
struct Rule {
    on: RuleTarget,
    pattern: Regex,
    risk: Risk,
    description: String,
}

/// The compiled table.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
}

fn compile(pattern: &str) -> Result<Regex, RulesError> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .map_err(|source| RulesError {
            pattern: pattern.to_string(),
            source,
        })
}

impl RuleSet {
    /// The built-in rules and `extra`.
    pub(crate) fn with_defaults(extra: &[RuleSetting]) -> Result<RuleSet, RulesError> {
        let mut rules = Vec::with_capacity(DEFAULT_RULES.len() + extra.len());
        for (on, pattern, risk, description) in DEFAULT_RULES {
            rules.push(Rule {
                on: *on,
                pattern: compile(pattern)?,
                risk: *risk,
                description: (*description).to_string(),
            });
        }
        for setting in extra {
            rules.push(Rule {
                on: setting.on,
                pattern: compile(&setting.pattern)?,
                risk: setting.risk,
                description: setting.description.clone(),
            });
        }
        Ok(RuleSet { rules })
    }

    /// The highest risk of the rules matching `text` on one of `targets` (low without one).
    fn matched(&self, targets: &[RuleTarget], text: &str) -> Risk {
        let mut risk = Risk::Low;
        for rule in &self.rules {
            if targets.contains(&rule.on) && rule.risk > risk && rule.pattern.is_match(text) {
                tracing::debug!(rule = %rule.description, risk = rule.risk.as_str(), "security rule matched");
                risk = rule.risk;
            }
        }
        risk
    }

    /// The risk of an action; `workspace` is the sandbox's workspace directory.
    pub(crate) fn risk(&self, kind: &ActionKind, workspace: Option<&str>) -> Risk {
        match kind {
            ActionKind::Run(args) => self.matched(&[RuleTarget::Command], &args.command),
            ActionKind::RunIpython(args) => self.matched(&[RuleTarget::Command], &args.code),
            ActionKind::Read(args) => self.matched(&[RuleTarget::Path], &normalize(&args.path)),
            ActionKind::Edit(args) if args.command == "view" => {
                self.matched(&[RuleTarget::Path], &normalize(&args.path))
            }
            ActionKind::Write(protocol::action::FileWriteArgs { path, .. })
            | ActionKind::Edit(protocol::action::FileEditArgs { path, .. }) => {
                let path = normalize(path);
                let risk = self.matched(&[RuleTarget::Path, RuleTarget::Write], &path);
                if outside(&path, workspace) {
                    risk.max(Risk::Medium)
                } else {
                    risk
                }
            }
            ActionKind::Browse(args) => self.matched(&[RuleTarget::Url], &args.url),
            ActionKind::BrowseInteractive(args) => {
                self.matched(&[RuleTarget::Url], &args.browser_actions)
            }
            ActionKind::Mcp(_) => Risk::Medium,
            _ => Risk::Low,
        }
    }
}

/// `path` with `.` and `..` components resolved (lexically; relative paths stay relative).
fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Whether the (normalized) `path` is outside `workspace`: an absolute path not under it, or
/// a relative one that climbs out. Without a known workspace nothing is outside.
fn outside(path: &str, workspace: Option<&str>) -> bool {
    let Some(workspace) = workspace else {
        return false;
    };
    if path.starts_with("..") {
        return true;
    }
    if !path.starts_with('/') {
        return false;
    }
    let workspace = normalize(workspace);
    let workspace = workspace.trim_end_matches('/');
    !(path == workspace || path.starts_with(&format!("{workspace}/")) || workspace.is_empty())
}

#[cfg(test)]
mod tests;
