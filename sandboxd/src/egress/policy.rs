//! The policies the proxy decides by: one file per sandbox network in a directory agentd
//! writes (`protocol::egress::EgressPolicy`), found by the connecting address; and the
//! addresses an allowed name may be reached at.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use protocol::egress::EgressPolicy;
use sandbox_common::{DomainRule, normalize_host};

/// An IPv4 block (`10.213.0.0/16`) as first and last address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    lo: u32,
    hi: u32,
}

impl Block {
    /// `ADDR/PREFIX`, or one address.
    pub(super) fn parse(cidr: &str) -> Option<Block> {
        let (addr, prefix) = cidr.split_once('/').unwrap_or((cidr, "32"));
        let addr: Ipv4Addr = addr.parse().ok()?;
        let prefix: u32 = prefix.parse().ok().filter(|&p| p <= 32)?;
        Some(Block::new(addr, prefix))
    }

    fn new(addr: Ipv4Addr, prefix: u32) -> Block {
        let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
        let lo = u32::from(addr) & mask;
        Block { lo, hi: lo | !mask }
    }

    /// The first address, as a number (a key for the block).
    pub(super) fn first(&self) -> u32 {
        self.lo
    }

    pub(super) fn contains(&self, addr: Ipv4Addr) -> bool {
        (self.lo..=self.hi).contains(&u32::from(addr))
    }
}

/// One sandbox's policy, parsed.
#[derive(Debug, Clone)]
pub(super) struct Policy {
    /// The sandbox network.
    pub(super) subnet: Block,
    rules: Vec<DomainRule>,
    /// Pinned names (normalized) → address.
    hosts: BTreeMap<String, Ipv4Addr>,
}

impl Policy {
    /// The policy a file says; `Err` says what is wrong with it.
    pub(super) fn from_file(file: &EgressPolicy) -> Result<Policy, String> {
        let subnet =
            Block::parse(&file.subnet).ok_or_else(|| format!("bad subnet {:?}", file.subnet))?;
        let rules = file
            .domains
            .iter()
            .map(|d| d.parse::<DomainRule>().map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let hosts = file
            .hosts
            .iter()
            .map(|(name, addr)| Ok((normalize_host(name)?, *addr)))
            .collect::<Result<_, String>>()?;
        Ok(Policy {
            subnet,
            rules,
            hosts,
        })
    }

    /// Whether `host` on TCP port `port` is allowed.
    pub(super) fn allows(&self, host: &str, port: u16) -> bool {
        self.rules.iter().any(|r| r.allows(host, port))
    }

    /// The address `host` is pinned to, if it is.
    pub(super) fn pinned(&self, host: &str) -> Option<Ipv4Addr> {
        self.hosts.get(&normalize_host(host).ok()?).copied()
    }
}

/// The policy of the sandbox at `source`, from the `*.json` files in `dir` (read at each
/// connection: they are few and small, and a sandbox's file appears just before it starts).
/// A file that cannot be read or parsed is logged and skipped.
pub(super) fn policy_for(dir: &Path, source: Ipv4Addr) -> Option<Policy> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot read the egress policies");
            return None;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let parsed = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                serde_json::from_slice::<EgressPolicy>(&bytes).map_err(|e| e.to_string())
            })
            .and_then(|file| Policy::from_file(&file));
        match parsed {
            Ok(policy) if policy.subnet.contains(source) => return Some(policy),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "bad egress policy file")
            }
        }
    }
    None
}

/// Where the proxy never connects, whatever a name resolves or is pinned to: loopback, the
/// link-local range (cloud metadata), this host's own addresses, unspecified, multicast and
/// broadcast addresses, and the blocks given (`--deny`: every sandbox network). A name
/// resolved by DNS (not pinned) may not reach the subnets of this host's Docker bridges
/// either (other containers); a pin, the operator's word, may.
#[derive(Debug, Clone, Default)]
pub(super) struct Forbidden {
    /// The `--deny` blocks.
    pub(super) denied: Vec<Block>,
    /// This host's addresses.
    pub(super) local: Vec<Ipv4Addr>,
    /// The subnets of this host's Docker bridges (`docker0`, `br-*`).
    pub(super) bridges: Vec<Block>,
}

impl Forbidden {
    /// The `--deny` blocks and what this host's interfaces say now.
    pub(super) fn now(denied: &[Block]) -> Forbidden {
        let mut forbidden = Forbidden {
            denied: denied.to_vec(),
            ..Forbidden::default()
        };
        let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
            return forbidden;
        };
        for interface in interfaces {
            let Some(addr) = interface.address.as_ref().and_then(|a| a.as_sockaddr_in()) else {
                continue;
            };
            let ip = addr.ip();
            forbidden.local.push(ip);
            let name = interface.interface_name.as_str();
            if name == "docker0" || name.starts_with("br-") {
                let prefix = interface
                    .netmask
                    .as_ref()
                    .and_then(|m| m.as_sockaddr_in())
                    .map_or(32, |m| u32::from(m.ip()).count_ones());
                forbidden.bridges.push(Block::new(ip, prefix));
            }
        }
        forbidden
    }

    /// Why the proxy will not connect to `addr` (`pinned`: the name was pinned), if it will
    /// not.
    pub(super) fn refuses(&self, addr: Ipv4Addr, pinned: bool) -> Option<&'static str> {
        if addr.is_loopback() || addr.is_unspecified() || self.local.contains(&addr) {
            Some("an address of the host")
        } else if addr.is_link_local() {
            Some("the link-local range")
        } else if addr.is_multicast() || addr.is_broadcast() {
            Some("not a unicast address")
        } else if self.denied.iter().any(|b| b.contains(addr)) {
            Some("a sandbox network")
        } else if !pinned && self.bridges.iter().any(|b| b.contains(addr)) {
            Some("a container network of the host")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests;
