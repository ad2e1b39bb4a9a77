//! What agentd reads of the engine's answers: an inspected container's labels, state, name,
//! sandboxd's URL and app ports, and whether an error says "not found".

use std::collections::BTreeMap;

use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum};

use super::config::{SANDBOXD_PORT, SOCKET_NAME};
use super::labels;

/// Where sandboxd answers: its socket, or the port published on loopback.
pub(crate) fn url_of(inspect: &ContainerInspectResponse) -> Option<String> {
    if let Some(dir) = label(inspect, labels::SOCKET_DIR) {
        return Some(format!("unix:{dir}/{SOCKET_NAME}"));
    }
    let port = format!("{SANDBOXD_PORT}/tcp");
    inspect
        .network_settings
        .as_ref()?
        .ports
        .as_ref()?
        .get(&port)?
        .as_ref()?
        .first()?
        .host_port
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| format!("http://127.0.0.1:{p}"))
}

/// The published app ports of an inspected container (every published TCP port but
/// sandboxd's): container port → host port.
pub(crate) fn app_ports_of(inspect: &ContainerInspectResponse) -> BTreeMap<u16, u16> {
    let Some(ports) = inspect
        .network_settings
        .as_ref()
        .and_then(|n| n.ports.as_ref())
    else {
        return BTreeMap::new();
    };
    ports
        .iter()
        .filter_map(|(port, bindings)| {
            let inside: u16 = port.strip_suffix("/tcp")?.parse().ok()?;
            let outside: u16 = bindings
                .as_ref()?
                .first()?
                .host_port
                .as_deref()?
                .parse()
                .ok()?;
            (inside != SANDBOXD_PORT).then_some((inside, outside))
        })
        .collect()
}

/// The engine's state of an inspected container.
pub(crate) fn state_of(inspect: &ContainerInspectResponse) -> Option<ContainerStateStatusEnum> {
    inspect.state.as_ref()?.status
}

/// The value of label `key` of an inspected container.
pub(crate) fn label<'a>(inspect: &'a ContainerInspectResponse, key: &str) -> Option<&'a str> {
    inspect
        .config
        .as_ref()?
        .labels
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether an inspected container is one of ours.
pub(super) fn is_managed(inspect: &ContainerInspectResponse) -> bool {
    label(inspect, labels::MANAGED) == Some("true")
}

/// An inspected container's name (without the engine's leading `/`).
pub(super) fn container_name(inspect: &ContainerInspectResponse) -> String {
    inspect
        .name
        .as_deref()
        .unwrap_or_default()
        .trim_start_matches('/')
        .to_string()
}

/// Whether the engine answered 404 (no such container, image, network or service).
pub(crate) fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}
