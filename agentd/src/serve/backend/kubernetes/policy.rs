//! A sandbox's NetworkPolicy: what the Docker backend's host firewall does for a sandbox,
//! as far as a NetworkPolicy can say it. Ingress only from the service's own pods, on
//! sandboxd's port (sandboxes do not reach each other); egress as the sandbox's
//! [`Egress`] policy says: `all` is everywhere but the link-local range (the cloud metadata
//! address), `none` is nowhere, an allow-list is its address rules. Domain rules cannot be
//! said (a NetworkPolicy has no names): [`expressible`] refuses them. Pure: no API calls.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod;
use crate::runtime::docker::Egress;

/// The addresses `all` keeps a sandbox from, as the Docker backend's firewall does: the
/// link-local range, where clouds serve instance metadata and credentials.
const LINK_LOCAL: &str = "169.254.0.0/16";

/// Whether a NetworkPolicy can enforce `egress`; `Err` says why not.
pub(super) fn expressible(egress: &Egress) -> Result<(), String> {
    let domains = egress.domains();
    if domains.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = domains.iter().map(ToString::to_string).collect();
    Err(format!(
        "egress policy {egress}: the kubernetes backend enforces egress with a NetworkPolicy, which has no domain rules ({}); allow addresses (CIDR blocks) instead",
        names.join(", ")
    ))
}

/// What one sandbox's policy is made of.
#[derive(Debug)]
pub(super) struct PolicyPlan<'a> {
    pub(super) service: &'a str,
    pub(super) runtime_id: &'a str,
    /// The labels of the service's pods, the only ones a sandbox accepts connections from.
    pub(super) service_labels: &'a BTreeMap<String, String>,
    /// sandboxd's port.
    pub(super) port: u16,
    pub(super) egress: &'a Egress,
    /// The pod the policy goes with (deleted with it by the garbage collector).
    pub(super) owner: Option<OwnerReference>,
}

/// The NetworkPolicy of one sandbox pod.
pub(super) fn sandbox_policy(plan: &PolicyPlan<'_>) -> NetworkPolicy {
    let tcp = |port: u16| NetworkPolicyPort {
        port: Some(IntOrString::Int(i32::from(port))),
        protocol: Some("TCP".to_string()),
        ..NetworkPolicyPort::default()
    };
    let block = |cidr: String, except: Option<Vec<String>>| NetworkPolicyPeer {
        ip_block: Some(IPBlock { cidr, except }),
        ..NetworkPolicyPeer::default()
    };
    let egress = match plan.egress {
        Egress::All => vec![NetworkPolicyEgressRule {
            to: Some(vec![block(
                "0.0.0.0/0".to_string(),
                Some(vec![LINK_LOCAL.to_string()]),
            )]),
            ports: None,
        }],
        Egress::Deny => Vec::new(),
        Egress::Allow(_) => plan
            .egress
            .cidrs()
            .into_iter()
            .map(|rule| NetworkPolicyEgressRule {
                to: Some(vec![block(format!("{}/{}", rule.addr, rule.prefix), None)]),
                ports: rule.port.map(|port| vec![tcp(port)]),
            })
            .collect(),
    };
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(plan.runtime_id.to_string()),
            labels: Some(pod::labels(plan.service, plan.runtime_id)),
            owner_references: plan.owner.clone().map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    pod::RUNTIME_ID.to_string(),
                    plan.runtime_id.to_string(),
                )])),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".to_string(), "Egress".to_string()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(plan.service_labels.clone()),
                        ..LabelSelector::default()
                    }),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: Some(vec![tcp(plan.port)]),
            }]),
            egress: Some(egress),
        }),
    }
}

#[cfg(test)]
mod tests;
