//! Unit tests of `serve/backend/kubernetes/mod.rs`.

use super::*;

#[test]
fn names_are_checked_as_kubernetes_checks_them() {
    assert!(is_label_value("test-1.a_b"));
    assert!(!is_label_value("-x") && !is_label_value("x-") && !is_label_value(&"x".repeat(64)));
    assert!(!is_label_value("a/b"));
    assert!(is_dns_subdomain("gvisor") && is_dns_subdomain("kata.fc"));
    assert!(!is_dns_subdomain("") && !is_dns_subdomain("Kata") && !is_dns_subdomain("a..b"));
}

fn settings() -> KubernetesSettings {
    KubernetesSettings::default()
}

#[test]
fn what_a_pod_cannot_be_is_refused_when_the_service_starts() {
    let ok = ServeConfig {
        sandbox: SandboxConfig {
            app_ports: 0,
            ..ServeConfig::default().sandbox
        },
        ..ServeConfig::default()
    };
    assert_eq!(unsupported(&ok, &settings()), Ok(()));
    let app_ports = ServeConfig::default();
    assert!(
        unsupported(&app_ports, &settings())
            .unwrap_err()
            .contains("--app-ports 0")
    );
    let mut domains = ok.clone();
    domains
        .egress_keys
        .insert("k".to_string(), "pypi.org".parse().unwrap());
    assert!(
        unsupported(&domains, &settings())
            .unwrap_err()
            .contains("pypi.org")
    );
    let mut bad_name = ok.clone();
    bad_name.name = "a/b".to_string();
    assert!(unsupported(&bad_name, &settings()).is_err());
    let bad_class = KubernetesSettings {
        runtime_classes: vec!["Not A Class".to_string()],
        ..settings()
    };
    assert!(unsupported(&ok, &bad_class).is_err());
    let no_labels = KubernetesSettings {
        service_labels: BTreeMap::new(),
        ..settings()
    };
    assert!(unsupported(&ok, &no_labels).is_err());
}
