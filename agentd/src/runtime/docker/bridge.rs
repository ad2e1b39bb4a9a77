//! A sandbox's own bridge network on the engine (named as its bridge interface, `sbx-…`, in a
//! free /28 of the pool): made with its firewall rules ([`network`](super::network)) and, for a
//! policy with domains, its egress proxy policy ([`egress_proxy`](super::egress_proxy)); removed
//! with them; and the networks and rules of sandboxes that went away without agentd swept
//! (never those of one being set up: [`setup`](super::setup)).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use bollard::models::{Ipam, IpamConfig, NetworkCreateRequest};
use bollard::query_parameters::{InspectNetworkOptions, ListNetworksOptionsBuilder};

use super::config::SandboxConfig;
use super::inspect::is_not_found;
use super::{DockerError, DockerHost, egress_proxy, labels, network, setup};

impl DockerHost {
    /// Removes our networks that no container uses any more, with their firewall rules and
    /// egress policies, and the rules and policies of bridges that no longer exist (sandboxes
    /// that went away without agentd). A bridge being set up is left alone (see [`setup`]).
    pub(super) async fn sweep_networks(&self) -> Result<(), DockerError> {
        let _turn = setup::sweep_turn(Path::new(setup::SETUP_DIR)).await;
        let options = ListNetworksOptionsBuilder::default()
            .filters(&labels::managed_filter())
            .build();
        let mut bridges: BTreeSet<String> = self
            .docker
            .list_networks(Some(options))
            .await?
            .into_iter()
            .filter_map(|net| net.name)
            .collect();
        let (rules, policies, locks) = tokio::task::spawn_blocking(|| {
            (
                network::rule_bridges(),
                egress_proxy::policy_bridges(),
                setup::locked_bridges(),
            )
        })
        .await
        .map_err(|e| DockerError::Unsupported(format!("listing the firewall rules failed: {e}")))?;
        bridges.extend(rules);
        bridges.extend(policies);
        bridges.extend(locks);
        for bridge in bridges {
            // Held while this bridge is judged and removed: nobody sets it up meanwhile, and
            // what is seen after taking it is what counts (a rule listed above may belong to
            // a sandbox that has started since).
            let Some(claim) =
                setup::claim_for_sweep(&setup::bridge_lock(&bridge), setup::OnClaim::Remove)
            else {
                continue;
            };
            let in_use = match self
                .docker
                .inspect_network(&bridge, None::<InspectNetworkOptions>)
                .await
            {
                Ok(net) => net.containers.is_some_and(|c| !c.is_empty()),
                Err(e) if is_not_found(&e) => false,
                Err(e) => return Err(e.into()),
            };
            if !in_use {
                self.remove_network(&bridge).await;
            }
            drop(claim);
        }
        Ok(())
    }

    /// Creates the sandbox's own network, named `bridge` as its bridge interface is, labelled
    /// as the sandbox (`labels`), and installs its firewall rules. On failure nothing is left.
    pub(super) async fn create_network(
        &self,
        bridge: &str,
        labels: &HashMap<String, String>,
        config: &SandboxConfig,
    ) -> Result<(), DockerError> {
        let proxied = !config.egress.domains().is_empty();
        let isolation = network::Isolation {
            egress: config.egress.clone(),
            host_ports: config.host_ports.clone(),
            proxy_port: proxied.then_some(egress_proxy::PROXY_PORT),
        };
        // The rules name the bridge's interface, which need not exist yet: they are installed
        // while the engine makes the network (the container starts after both).
        let bridge_name = bridge.to_string();
        let rules = async {
            tokio::task::spawn_blocking(move || network::install(&bridge_name, &isolation))
                .await
                .map_err(|e| {
                    DockerError::Unsupported(format!("installing the firewall rules failed: {e}"))
                })?
                .map_err(DockerError::from)
        };
        let (subnet, rules) = tokio::join!(self.create_bridge(bridge, labels), rules);
        let made = match (subnet, rules) {
            (Ok(subnet), Ok(())) => {
                if proxied {
                    egress_proxy::write_policy(
                        bridge,
                        &subnet,
                        &config.egress,
                        &config.egress_hosts,
                    )
                } else {
                    Ok(())
                }
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        if made.is_err() {
            // The network, the rules and the policy, whichever were made.
            self.remove_network(bridge).await;
        }
        made
    }

    /// Creates the engine's network named `bridge` as its interface is, labelled `labels`, in a
    /// free subnet of the pool, and answers that subnet.
    async fn create_bridge(
        &self,
        bridge: &str,
        labels: &HashMap<String, String>,
    ) -> Result<String, DockerError> {
        // Another agentd may take the same free subnet meanwhile: then the next one.
        let mut attempt = 0;
        loop {
            let taken = self.taken_subnets().await?;
            let subnet = network::free_subnet(&taken, attempt).ok_or_else(|| {
                DockerError::Unsupported(format!(
                    "no free subnet left for a sandbox network in {}/{}",
                    network::SUBNET_POOL.0,
                    network::SUBNET_POOL.1
                ))
            })?;
            let request = NetworkCreateRequest {
                name: bridge.to_string(),
                driver: Some("bridge".to_string()),
                labels: Some(labels.clone()),
                options: Some(HashMap::from([(
                    "com.docker.network.bridge.name".to_string(),
                    bridge.to_string(),
                )])),
                ipam: Some(Ipam {
                    config: Some(vec![IpamConfig {
                        subnet: Some(subnet.clone()),
                        ..IpamConfig::default()
                    }]),
                    ..Ipam::default()
                }),
                ..NetworkCreateRequest::default()
            };
            match self.docker.create_network(request).await {
                Ok(_) => return Ok(subnet),
                Err(e) if attempt < 5 && e.to_string().contains("overlap") => attempt += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The IPv4 subnets of every network the engine has.
    async fn taken_subnets(&self) -> Result<Vec<String>, DockerError> {
        let networks = self
            .docker
            .list_networks(None::<bollard::query_parameters::ListNetworksOptions>)
            .await?;
        Ok(networks
            .into_iter()
            .filter_map(|n| n.ipam?.config)
            .flatten()
            .filter_map(|c| c.subnet)
            .collect())
    }

    /// Removes a sandbox's network and then its firewall rules and egress policy (best
    /// effort, logged); the rules stay while the engine keeps the network.
    pub(super) async fn remove_network(&self, bridge: &str) {
        match self.docker.remove_network(bridge).await {
            Ok(()) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                // A container may still be on it (one started meanwhile): its isolation stays,
                // and `gc` tries again once the network is free.
                tracing::warn!(%bridge, error = %e, "cannot remove a sandbox network; its rules stay");
                return;
            }
        }
        let bridge = bridge.to_string();
        let _ = tokio::task::spawn_blocking(move || {
            network::remove(&bridge);
            egress_proxy::remove_policy(&bridge);
        })
        .await;
    }
}
