//! A network of its own for each sandbox, and the host firewall rules that keep it there.
//!
//! On Docker's default bridge every sandbox reaches every other sandbox's sandboxd, and on any
//! bridge a container reaches the host's services through the bridge's gateway address. So a
//! sandbox with network ([`Network::Bridge`](super::Network::Bridge)) gets:
//!
//! * its own bridge network, a /28 cut from [`SUBNET_POOL`], with a bridge interface named
//!   after the sandbox (`sbx-` and ten hex digits), so the firewall rules can name it before
//!   the container starts. Docker keeps
//!   different bridge networks apart; the rules below say it again for every other bridge;
//! * firewall rules (iptables, in chains of ours hooked into `INPUT` and `DOCKER-USER`) on that
//!   interface: to the host, only replies and the host ports the operator allows
//!   ([`Isolation::host_ports`]); never the link-local range with the cloud metadata address
//!   (169.254.0.0/16), nor another bridge; out to the world, what the egress policy allows.
//!   Refusals are REJECTs (a TCP reset), so a denied connection fails at once with
//!   "Connection refused" instead of hanging;
//! * where the egress policy names domains ([`DomainRule`]s): `nat` rules that redirect the
//!   sandbox's TCP connections to the ports of its domain rules (every port if one has none),
//!   but to addresses an address rule allows, the host and DNS, to the engine's egress proxy
//!   ([`super::egress_proxy`]), which decides them by TLS server name or HTTP `Host` and
//!   answers a refusal with a reason; an `INPUT` allowance of the proxy's port for redirected
//!   connections only; and DNS out, since names must resolve.
//!
//! Each rule carries a comment naming its interface, so the rules of a sandbox are found and
//! deleted with it, and those of sandboxes that went away some other way by [`sweep`].
//!
//! Changing the firewall needs root (CAP_NET_ADMIN) on the host; agentd says so and starts no
//! sandbox rather than one that is not isolated.

use std::collections::BTreeSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use sandbox_common::{DomainRule, split_port};

use super::host_command;

/// Our chain for packets from sandboxes to the host itself (hooked first into `INPUT`).
const INPUT_CHAIN: &str = "SANDBOXD-INPUT";
/// Our chain for packets from sandboxes through the host (hooked first into `FORWARD`).
const FORWARD_CHAIN: &str = "SANDBOXD-FORWARD";
/// Our chain in the `nat` table for connections from sandboxes (hooked first into
/// `PREROUTING`): the redirects to the filtering proxy.
const NAT_CHAIN: &str = "SANDBOXD-PREROUTING";
/// Every chain of ours, with its table.
const CHAINS: [(&str, &str); 3] = [
    ("filter", INPUT_CHAIN),
    ("filter", FORWARD_CHAIN),
    ("nat", NAT_CHAIN),
];
/// Prefix of a sandbox's bridge interface (and of the comments on its rules).
pub(crate) const BRIDGE_PREFIX: &str = "sbx-";
/// The link-local range, with the metadata service of every major cloud (169.254.169.254).
const LINK_LOCAL: &str = "169.254.0.0/16";

/// The address block sandbox networks are cut from (a /28 each: 4,096 sandboxes), instead of
/// Docker's default pools, which hold about thirty networks.
pub(crate) const SUBNET_POOL: (Ipv4Addr, u8) = (Ipv4Addr::new(10, 213, 0, 0), 16);
/// The prefix length of one sandbox's network: 14 addresses, of which it uses two (the
/// gateway and the container).
const SUBNET_PREFIX: u8 = 28;

/// The first /28 of [`SUBNET_POOL`] at or after the `skip`-th that overlaps none of `taken`
/// (CIDR blocks, as Docker lists its networks' subnets); `None` when the pool is full.
pub(crate) fn free_subnet(taken: &[String], skip: usize) -> Option<String> {
    let taken: Vec<(u32, u32)> = taken.iter().filter_map(|t| block(t)).collect();
    let (pool, pool_prefix) = SUBNET_POOL;
    let size = 1u32 << (32 - SUBNET_PREFIX);
    let count = 1u32 << (SUBNET_PREFIX - pool_prefix);
    (0..count)
        .map(|i| u32::from(pool) + i * size)
        .filter(|&start| {
            taken
                .iter()
                .all(|&(lo, hi)| start + size - 1 < lo || start > hi)
        })
        .nth(skip)
        .map(|start| format!("{}/{SUBNET_PREFIX}", Ipv4Addr::from(start)))
}

/// The first and last address of an IPv4 CIDR block.
fn block(cidr: &str) -> Option<(u32, u32)> {
    let (addr, prefix) = cidr.split_once('/')?;
    let addr: Ipv4Addr = addr.parse().ok()?;
    let prefix: u32 = prefix.parse().ok().filter(|&p| p <= 32)?;
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    let lo = u32::from(addr) & mask;
    Some((lo, lo | !mask))
}

/// Where a sandbox's connections may go, beyond the host (see [`Isolation::host_ports`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Egress {
    /// Anywhere (but the host, other sandboxes and the link-local range).
    #[default]
    All,
    /// Nowhere.
    Deny,
    /// Only to these addresses.
    Allow(Vec<EgressRule>),
}

impl FromStr for Egress {
    type Err = String;

    /// `all`, `none` (or `deny`), or a comma-separated list of [`EgressRule`]s.
    fn from_str(s: &str) -> Result<Egress, String> {
        match s.trim() {
            "all" => Ok(Egress::All),
            "none" | "deny" => Ok(Egress::Deny),
            list => list
                .split(',')
                .map(|rule| rule.trim().parse())
                .collect::<Result<Vec<_>, _>>()
                .map(Egress::Allow),
        }
    }
}

impl Egress {
    /// The domain rules of an allow-list (none for `all` and `none`): a sandbox with some needs
    /// the filtering proxy.
    pub fn domains(&self) -> Vec<&DomainRule> {
        self.rules(|r| match r {
            EgressRule::Domain(d) => Some(d),
            EgressRule::Cidr(_) => None,
        })
    }

    /// The address rules of an allow-list.
    pub(crate) fn cidrs(&self) -> Vec<&CidrRule> {
        self.rules(|r| match r {
            EgressRule::Cidr(c) => Some(c),
            EgressRule::Domain(_) => None,
        })
    }

    /// The rules of an allow-list that `pick` keeps (none for `all` and `none`).
    fn rules<'a, T>(&'a self, pick: impl Fn(&'a EgressRule) -> Option<&'a T>) -> Vec<&'a T> {
        match self {
            Egress::Allow(rules) => rules.iter().filter_map(pick).collect(),
            Egress::All | Egress::Deny => Vec::new(),
        }
    }
}

impl fmt::Display for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Egress::All => f.write_str("all"),
            Egress::Deny => f.write_str("none"),
            Egress::Allow(rules) => {
                let rules: Vec<String> = rules.iter().map(ToString::to_string).collect();
                f.write_str(&rules.join(","))
            }
        }
    }
}

/// One allowed destination: by address ([`CidrRule`], kept by the firewall) or by name
/// ([`DomainRule`]: `example.com`, `example.com:443`, `*.pypi.org:443`, kept by the filtering
/// proxy, which matches the TLS server name or the HTTP `Host` of the sandbox's connections).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum EgressRule {
    /// An IPv4 address or block, optionally one TCP port.
    Cidr(CidrRule),
    /// A host name or `*.` wildcard, optionally one TCP port.
    Domain(DomainRule),
}

impl FromStr for EgressRule {
    type Err = String;

    /// An address or block when it starts like one (a digit), else a domain.
    fn from_str(s: &str) -> Result<EgressRule, String> {
        if s.starts_with(|c: char| c.is_ascii_digit())
            && s.split(':').next().is_some_and(|net| {
                net.chars()
                    .all(|c| c.is_ascii_digit() || c == '.' || c == '/')
            })
        {
            s.parse().map(EgressRule::Cidr)
        } else {
            s.parse().map(EgressRule::Domain).map_err(|e| e.to_string())
        }
    }
}

impl TryFrom<String> for EgressRule {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<EgressRule> for String {
    fn from(rule: EgressRule) -> String {
        rule.to_string()
    }
}

impl fmt::Display for EgressRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EgressRule::Cidr(rule) => rule.fmt(f),
            EgressRule::Domain(rule) => rule.fmt(f),
        }
    }
}

/// One allowed destination by address: an IPv4 address or CIDR block, optionally one TCP port
/// (`10.0.0.0/8`, `192.0.2.7:443`, `10.1.0.0/16:5432`). Enforced by the firewall alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CidrRule {
    /// The network address.
    pub addr: Ipv4Addr,
    /// The prefix length (32: one address).
    pub prefix: u8,
    /// The TCP port; `None`: every port and protocol.
    pub port: Option<u16>,
}

impl FromStr for CidrRule {
    type Err = String;

    fn from_str(s: &str) -> Result<CidrRule, String> {
        let (net, port) = split_port(s).map_err(|_| format!("bad port in egress rule {s:?}"))?;
        let (addr, prefix) = match net.split_once('/') {
            Some((addr, prefix)) => (
                addr,
                prefix
                    .parse::<u8>()
                    .ok()
                    .filter(|&p| p <= 32)
                    .ok_or_else(|| format!("bad prefix length in egress rule {s:?}"))?,
            ),
            None => (net, 32),
        };
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("egress rule {s:?} is not an IPv4 address or CIDR block"))?;
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        if u32::from(addr) & !mask != 0 {
            return Err(format!(
                "egress rule {s:?} has host bits set; write {}/{prefix}",
                Ipv4Addr::from(u32::from(addr) & mask)
            ));
        }
        Ok(CidrRule { addr, prefix, port })
    }
}

impl fmt::Display for CidrRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

/// What a sandbox's network may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Isolation {
    /// Beyond the host.
    pub egress: Egress,
    /// TCP ports of the host itself the sandbox may connect to (a package mirror, a proxy);
    /// every other host port refuses it.
    pub host_ports: Vec<u16>,
    /// The filtering proxy's port on the host, where the egress policy names domains: the
    /// sandbox's connections to the ports of its domain rules (every TCP port if one has
    /// none) that no address rule allows are redirected to it.
    pub proxy_port: Option<u16>,
}

/// Errors changing the host's firewall.
#[derive(Debug, thiserror::Error)]
pub enum FirewallError {
    /// `iptables` could not be run (not installed, or not allowed).
    #[error(
        "cannot isolate the sandbox's network: running iptables failed ({0}); agentd needs root (CAP_NET_ADMIN) on the host and iptables installed for a sandbox with network, or choose --network none"
    )]
    Unavailable(String),
    /// `iptables` refused a rule.
    #[error(
        "cannot isolate the sandbox's network: iptables {args} failed: {stderr}; agentd needs root (CAP_NET_ADMIN) on the host for a sandbox with network, or choose --network none"
    )]
    Refused {
        /// The arguments.
        args: String,
        /// What iptables said.
        stderr: String,
    },
}

/// The comment that marks the rules of the sandbox behind `bridge`.
fn comment(bridge: &str) -> String {
    format!("sandboxd:{bridge}")
}

/// The rules of one sandbox, as `iptables -A CHAIN ...` argument lists, in order.
pub(crate) fn rules(bridge: &str, isolation: &Isolation) -> Vec<Vec<String>> {
    let tag = comment(bridge);
    let rule = |chain: &str, matches: &[&str], target: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = vec!["-A".into(), chain.into(), "-i".into(), bridge.into()];
        args.extend(matches.iter().map(|s| s.to_string()));
        args.extend(["-m", "comment", "--comment", &tag].map(String::from));
        args.extend(["-j"].iter().chain(target).map(|s| s.to_string()));
        args
    };
    let reject_tcp: &[&str] = &["REJECT", "--reject-with", "tcp-reset"];
    let reject: &[&str] = &["REJECT", "--reject-with", "icmp-port-unreachable"];
    let established: &[&str] = &["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED"];

    let mut all = vec![rule(INPUT_CHAIN, established, &["RETURN"])];
    if let Some(port) = isolation.proxy_port {
        // Only connections the nat rules below redirected: dialling the proxy is refused.
        all.push(rule(
            INPUT_CHAIN,
            &[
                "-p",
                "tcp",
                "--dport",
                &port.to_string(),
                "-m",
                "conntrack",
                "--ctstate",
                "DNAT",
            ],
            &["RETURN"],
        ));
    }
    for port in &isolation.host_ports {
        let port = port.to_string();
        all.push(rule(
            INPUT_CHAIN,
            &["-p", "tcp", "--dport", &port],
            &["RETURN"],
        ));
    }
    all.push(rule(INPUT_CHAIN, &["-p", "tcp"], reject_tcp));
    all.push(rule(INPUT_CHAIN, &[], reject));

    all.push(rule(FORWARD_CHAIN, established, &["RETURN"]));
    all.push(rule(FORWARD_CHAIN, &["-o", bridge], &["RETURN"]));
    all.push(rule(
        FORWARD_CHAIN,
        &["-d", LINK_LOCAL, "-p", "tcp"],
        reject_tcp,
    ));
    all.push(rule(FORWARD_CHAIN, &["-d", LINK_LOCAL], reject));
    // Another sandbox's bridge, Docker's default one, or any other bridge of Docker's.
    for other in ["sbx-+", "docker0", "br-+"] {
        all.push(rule(FORWARD_CHAIN, &["-o", other, "-p", "tcp"], reject_tcp));
        all.push(rule(FORWARD_CHAIN, &["-o", other], reject));
    }
    match &isolation.egress {
        Egress::All => {}
        Egress::Deny => {
            all.push(rule(FORWARD_CHAIN, &["-p", "tcp"], reject_tcp));
            all.push(rule(FORWARD_CHAIN, &[], reject));
        }
        Egress::Allow(allowed) => {
            for allow in allowed {
                let EgressRule::Cidr(allow) = allow else {
                    continue;
                };
                let net = format!("{}/{}", allow.addr, allow.prefix);
                match allow.port {
                    Some(port) => all.push(rule(
                        FORWARD_CHAIN,
                        &["-d", &net, "-p", "tcp", "--dport", &port.to_string()],
                        &["RETURN"],
                    )),
                    None => all.push(rule(FORWARD_CHAIN, &["-d", &net], &["RETURN"])),
                }
            }
            if !isolation.egress.domains().is_empty() {
                // Names must resolve: DNS, to any resolver (a channel out the operator accepts
                // with domain rules; pins need none).
                for proto in ["udp", "tcp"] {
                    all.push(rule(
                        FORWARD_CHAIN,
                        &["-p", proto, "--dport", "53"],
                        &["RETURN"],
                    ));
                }
            }
            all.push(rule(FORWARD_CHAIN, &["-p", "tcp"], reject_tcp));
            all.push(rule(FORWARD_CHAIN, &[], reject));
        }
    }
    if let Some(proxy_port) = isolation.proxy_port {
        let nat = |matches: &[&str], target: &[&str]| {
            let mut args = vec!["-t".to_string(), "nat".to_string()];
            args.extend(rule(NAT_CHAIN, matches, target));
            args
        };
        let to_proxy: &[&str] = &["REDIRECT", "--to-ports", &proxy_port.to_string()];
        // The host's own addresses are the INPUT rules' business; addresses the policy allows
        // go out as they are; so does DNS.
        all.push(nat(&["-m", "addrtype", "--dst-type", "LOCAL"], &["RETURN"]));
        for allow in isolation.egress.cidrs() {
            let net = format!("{}/{}", allow.addr, allow.prefix);
            match allow.port {
                Some(port) => all.push(nat(
                    &["-d", &net, "-p", "tcp", "--dport", &port.to_string()],
                    &["RETURN"],
                )),
                None => all.push(nat(&["-d", &net], &["RETURN"])),
            }
        }
        all.push(nat(&["-p", "tcp", "--dport", "53"], &["RETURN"]));
        let domains = isolation.egress.domains();
        let mut ports: Vec<u16> = domains.iter().filter_map(|d| d.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        if domains.iter().any(|d| d.port().is_none()) {
            all.push(nat(&["-p", "tcp"], to_proxy));
        } else {
            for port in ports {
                all.push(nat(&["-p", "tcp", "--dport", &port.to_string()], to_proxy));
            }
        }
    }
    all
}

/// Runs `iptables -w ARGS`.
fn iptables(args: &[String]) -> Result<(), FirewallError> {
    let with_wait: Vec<&str> = std::iter::once("-w")
        .chain(args.iter().map(String::as_str))
        .collect();
    let out = host_command::output("iptables", &with_wait)
        .map_err(|e| FirewallError::Unavailable(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(FirewallError::Refused {
            args: args.join(" "),
            stderr: out.stderr,
        })
    }
}

/// Makes our chains and hooks them first into `INPUT`, into Docker's `DOCKER-USER` (which
/// Docker evaluates before its own forwarding rules and never rewrites), or `FORWARD` where
/// there is none, and into `nat` `PREROUTING` (once; idempotent).
fn ensure_chains() -> Result<(), FirewallError> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let forward_hook = if iptables(&s(&["-S", "DOCKER-USER"])).is_ok() {
        "DOCKER-USER"
    } else {
        "FORWARD"
    };
    for (table, chain, hook) in [
        ("filter", INPUT_CHAIN, "INPUT"),
        ("filter", FORWARD_CHAIN, forward_hook),
        ("nat", NAT_CHAIN, "PREROUTING"),
    ] {
        if iptables(&s(&["-t", table, "-S", chain])).is_err() {
            // A concurrent agentd may have made it meanwhile: only the check below counts.
            let _ = iptables(&s(&["-t", table, "-N", chain]));
        }
        if iptables(&s(&["-t", table, "-C", hook, "-j", chain])).is_err() {
            iptables(&s(&["-t", table, "-I", hook, "1", "-j", chain]))?;
        }
    }
    Ok(())
}

/// Installs the rules of the sandbox behind `bridge` (before its container starts; the
/// interface need not exist yet, rules name it): all of them in one `iptables-restore
/// --noflush`, which commits each table whole or not at all. On failure, whatever was
/// installed is removed again.
pub(crate) fn install(bridge: &str, isolation: &Isolation) -> Result<(), FirewallError> {
    ensure_chains()?;
    let batch = restore_batch(&rules(bridge, isolation));
    let out = host_command::output_with_input(
        "iptables-restore",
        &["--wait", "--noflush"],
        batch.as_bytes(),
    )
    .map_err(|e| FirewallError::Unavailable(format!("iptables-restore: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    remove(bridge);
    Err(FirewallError::Refused {
        args: batch,
        stderr: out.stderr,
    })
}

/// The `iptables-restore` input that appends `rules` (as [`rules`] makes them: `-A CHAIN ...`,
/// after `-t TABLE` for another table than `filter`), one section per table, in order.
fn restore_batch(rules: &[Vec<String>]) -> String {
    let mut tables: Vec<(&str, Vec<String>)> = Vec::new();
    for rule in rules {
        let (table, spec) = match rule.as_slice() {
            [flag, table, spec @ ..] if flag == "-t" => (table.as_str(), spec),
            spec => ("filter", spec),
        };
        let line = spec
            .iter()
            .map(|arg| restore_word(arg))
            .collect::<Vec<_>>()
            .join(" ");
        match tables.iter_mut().find(|(t, _)| *t == table) {
            Some((_, lines)) => lines.push(line),
            None => tables.push((table, vec![line])),
        }
    }
    let mut batch = String::new();
    for (table, lines) in tables {
        batch.push_str(&format!("*{table}\n"));
        for line in lines {
            batch.push_str(&line);
            batch.push('\n');
        }
        batch.push_str("COMMIT\n");
    }
    batch
}

/// One argument as `iptables-restore` reads it: as it is, or double-quoted when it has a
/// space or a quote (none of ours do; a comment might).
fn restore_word(arg: &str) -> String {
    if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
        format!("\"{}\"", arg.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        arg.to_string()
    }
}

/// Deletes every rule that carries `bridge`'s comment. Best effort: a rule that cannot be
/// deleted is logged and left for [`sweep`].
pub(crate) fn remove(bridge: &str) {
    for (table, chain) in CHAINS {
        for rule in listed_rules(table, chain) {
            if rule_bridge(&rule) == Some(bridge) {
                delete(table, &rule);
            }
        }
    }
}

/// The bridges our rules name (those of live sandboxes and any left behind).
pub(crate) fn rule_bridges() -> BTreeSet<String> {
    CHAINS
        .iter()
        .flat_map(|(table, chain)| listed_rules(table, chain))
        .filter_map(|rule| rule_bridge(&rule).map(str::to_owned))
        .collect()
}

/// The bridge named by a listed rule's comment.
fn rule_bridge(rule: &str) -> Option<&str> {
    let rest = rule.split("--comment ").nth(1)?;
    let tag = rest.split_whitespace().next()?.trim_matches('"');
    tag.strip_prefix("sandboxd:")
}

/// The `-A CHAIN ...` lines of `iptables -t TABLE -S CHAIN` (none when the chain does not
/// exist).
fn listed_rules(table: &str, chain: &str) -> Vec<String> {
    let Ok(out) = host_command::output("iptables", &["-w", "-t", table, "-S", chain]) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("-A "))
        .map(str::to_owned)
        .collect()
}

/// Deletes a rule of `table` given as `iptables -S` lists it.
fn delete(table: &str, listed: &str) {
    let Some(spec) = listed.strip_prefix("-A ") else {
        return;
    };
    // `iptables -S` quotes comments; ours have no spaces, so each word is one argument.
    let mut args: Vec<String> = vec!["-t".into(), table.into(), "-D".into()];
    args.extend(
        spec.split_whitespace()
            .map(|word| word.trim_matches('"').to_string()),
    );
    if let Err(e) = iptables(&args) {
        tracing::warn!(rule = listed, error = %e, "cannot delete a sandbox firewall rule");
    }
}

#[cfg(test)]
mod tests;
