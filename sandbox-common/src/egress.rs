//! Domain rules of a sandbox's egress policy: one home for their syntax and for how a name
//! and a port are matched against them, so that agentd refuses a rule the filtering proxy
//! (sandboxd's `--egress-proxy` mode) would not understand, and both agree on what it allows.
//!
//! A rule is a host name (`example.com`), optionally with a TCP port (`example.com:443`); a
//! leading `*.` allows every subdomain but not the name itself (`*.pypi.org:443` allows
//! `files.pypi.org` and `a.b.pypi.org`, not `pypi.org`). Names are compared without case and
//! without a trailing dot. The `:PORT` suffix is [`split_port`]'s, which agentd's rules by
//! address (`10.0.0.0/8:5432`) share.

use std::fmt;
use std::str::FromStr;

/// Why a domain rule or a host name is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("egress rule {rule:?}: {reason}")]
pub struct DomainRuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

/// One allowed destination by name: a host name or a wildcard, and optionally one TCP port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DomainRule {
    /// The name, lower case, without a trailing dot (for a wildcard: the part after `*.`).
    name: String,
    /// Whether the rule is `*.name`: subdomains of `name`, not `name` itself.
    wildcard: bool,
    /// The TCP port; `None`: every port.
    port: Option<u16>,
}

impl DomainRule {
    /// The TCP port the rule names (`None`: every port).
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Whether a connection to `host` (as a client names it: any case, maybe a trailing dot)
    /// on TCP port `port` is allowed by this rule.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let Ok(host) = normalize_host(host) else {
            return false;
        };
        if self.wildcard {
            host.len() > self.name.len() + 1
                && host.ends_with(&self.name)
                && host.as_bytes()[host.len() - self.name.len() - 1] == b'.'
        } else {
            host == self.name
        }
    }
}

/// An egress rule (by name, or agentd's by address) split at its last `:` into what it allows
/// and its TCP port, 1 to 65535 (`None` without a colon); `Err` holds the text after the colon
/// when it is not such a port.
pub fn split_port(rule: &str) -> Result<(&str, Option<u16>), &str> {
    match rule.rsplit_once(':') {
        Some((destination, port)) => match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok((destination, Some(p))),
            _ => Err(port),
        },
        None => Ok((rule, None)),
    }
}

/// `host` lower-cased and without its trailing dot, if it is a valid DNS host name: labels of
/// 1 to 63 letters, digits, `-` and `_` (not starting or ending with `-`), 253 bytes at most,
/// and not all digits and dots (an IPv4 address is not a name).
pub fn normalize_host(host: &str) -> Result<String, String> {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if host.is_empty() {
        return Err("empty host name".to_string());
    }
    if host.len() > 253 {
        return Err("host name longer than 253 bytes".to_string());
    }
    for label in host.split('.') {
        if label.is_empty() {
            return Err("empty label in host name".to_string());
        }
        if label.len() > 63 {
            return Err("label longer than 63 bytes".to_string());
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("label {label:?} starts or ends with '-'"));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!("{c:?} is not allowed in a host name"));
        }
    }
    if host.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err("an IP address is not a host name".to_string());
    }
    Ok(host)
}

impl FromStr for DomainRule {
    type Err = DomainRuleError;

    fn from_str(s: &str) -> Result<DomainRule, DomainRuleError> {
        let error = |reason: String| DomainRuleError {
            rule: s.to_string(),
            reason,
        };
        let (host, port) =
            split_port(s).map_err(|port| error(format!("bad port {port:?} (1 to 65535)")))?;
        let (wildcard, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        if host.contains('*') {
            return Err(error(
                "a wildcard is only allowed as the whole first label (*.example.com)".to_string(),
            ));
        }
        let name = normalize_host(host).map_err(error)?;
        if wildcard && !name.contains('.') {
            return Err(error(format!(
                "*.{name} would allow a whole top-level domain; name a domain below it"
            )));
        }
        Ok(DomainRule {
            name,
            wildcard,
            port,
        })
    }
}

impl fmt::Display for DomainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        f.write_str(&self.name)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
