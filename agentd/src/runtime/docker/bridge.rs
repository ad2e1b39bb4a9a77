//! A sandbox's own bridge network on the engine (named as its bridge interface, `sbx-…`, in a
//! free /28 of the pool): made with its firewall rules ([`network`](super::network)) and, for a
//! policy with domains, its egress proxy policy ([`egress_proxy`](super::egress_proxy)); removed
//! with them; and the networks and rules of sandboxes that went away without agentd swept.

use std::collections::HashMap;

use bollard::models::{Ipam, IpamConfig, NetworkCreateRequest};
use bollard::query_parameters::{InspectNetworkOptions, ListNetworksOptionsBuilder};

use super::config::SandboxConfig;
use super::inspect::is_not_found;
use super::{DockerError, DockerHost, egress_proxy, labels, network};

impl DockerHost {
    /// Removes our networks that no container uses any more, and the firewall rules of
    /// bridges that no longer exist (sandboxes that went away without agentd).
    pub(super) async fn sweep_networks(&self) -> Result<(), DockerError> {
        let options = ListNetworksOptionsBuilder::default()
            .filters(&labels::managed_filter())
            .build();
        let mut live = Vec::new();
        for net in self.docker.list_networks(Some(options)).await? {
            let Some(name) = net.name else { continue };
            let inspected = self
                .docker
                .inspect_network(&name, None::<InspectNetworkOptions>)
                .await;
            let in_use = match inspected {
                Ok(net) => net.containers.is_some_and(|c| !c.is_empty()),
                Err(e) if is_not_found(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            if in_use {
                live.push(name);
            } else {
                self.remove_network(&name).await;
            }
        }
        let _ = tokio::task::spawn_blocking(move || {
            network::sweep(&live);
            egress_proxy::sweep_policies(&live);
        })
        .await;
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

    /// Removes a sandbox's network and its firewall rules (best effort, logged).
    pub(super) async fn remove_network(&self, bridge: &str) {
        match self.docker.remove_network(bridge).await {
            Ok(()) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => tracing::warn!(%bridge, error = %e, "cannot remove a sandbox network"),
        }
        let bridge = bridge.to_string();
        let _ = tokio::task::spawn_blocking(move || {
            network::remove(&bridge);
            egress_proxy::remove_policy(&bridge);
        })
        .await;
    }
}
