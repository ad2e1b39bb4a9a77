//! The policy file of a sandbox whose egress policy names domains: written by agentd into the
//! host directory the filtering proxy (`sandboxd --egress-proxy`) reads, one file per sandbox
//! network (`BRIDGE.json`), removed with the network.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

/// What the proxy needs to decide one sandbox's connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressPolicy {
    /// The sandbox network's IPv4 subnet (`10.213.0.16/28`): connections from an address in
    /// it are decided by this policy.
    pub subnet: String,
    /// The domain rules (`example.com`, `example.com:443`, `*.pypi.org:443`), as
    /// `sandbox_common::DomainRule` parses them.
    pub domains: Vec<String>,
    /// Names the proxy resolves to these addresses instead of asking DNS (pins).
    #[serde(default)]
    pub hosts: BTreeMap<String, Ipv4Addr>,
}
