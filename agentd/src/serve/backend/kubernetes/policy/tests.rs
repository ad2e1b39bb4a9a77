//! Unit tests of `serve/backend/kubernetes/policy.rs`.

use super::*;

fn policy(egress: &Egress) -> NetworkPolicySpec {
    let service = BTreeMap::from([("app".to_string(), "agentd".to_string())]);
    sandbox_policy(&PolicyPlan {
        service: "svc",
        runtime_id: "rt-1",
        service_labels: &service,
        port: 8000,
        egress,
        owner: None,
    })
    .spec
    .unwrap()
}

#[test]
fn a_sandbox_admits_the_service_only_on_sandboxds_port() {
    let spec = policy(&Egress::All);
    assert_eq!(
        spec.pod_selector.unwrap().match_labels.unwrap()[pod::RUNTIME_ID],
        "rt-1"
    );
    assert_eq!(
        spec.policy_types.unwrap(),
        ["Ingress".to_string(), "Egress".to_string()]
    );
    let ingress = &spec.ingress.unwrap()[0];
    let from = &ingress.from.as_ref().unwrap()[0];
    assert_eq!(
        from.pod_selector.clone().unwrap().match_labels.unwrap()["app"],
        "agentd"
    );
    assert_eq!(
        ingress.ports.as_ref().unwrap()[0].port,
        Some(IntOrString::Int(8000))
    );
}

#[test]
fn egress_is_the_docker_backends_as_far_as_addresses_go() {
    let all = policy(&Egress::All).egress.unwrap();
    let block = all[0].to.as_ref().unwrap()[0].ip_block.clone().unwrap();
    assert_eq!(block.cidr, "0.0.0.0/0");
    assert_eq!(block.except, Some(vec![LINK_LOCAL.to_string()]));

    assert!(policy(&Egress::Deny).egress.unwrap().is_empty());

    let allow: Egress = "10.0.0.0/8,192.0.2.7:443".parse().unwrap();
    let rules = policy(&allow).egress.unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(
        rules[0].to.as_ref().unwrap()[0]
            .ip_block
            .clone()
            .unwrap()
            .cidr,
        "10.0.0.0/8"
    );
    assert_eq!(rules[0].ports, None, "a block without a port: every port");
    assert_eq!(
        rules[1].ports.as_ref().unwrap()[0].port,
        Some(IntOrString::Int(443))
    );
}

#[test]
fn domain_rules_cannot_be_said_and_are_refused() {
    assert!(expressible(&Egress::All).is_ok());
    assert!(expressible(&"10.0.0.0/8".parse().unwrap()).is_ok());
    let err = expressible(&"pypi.org:443,10.0.0.0/8".parse().unwrap()).unwrap_err();
    assert!(err.contains("pypi.org"), "{err}");
}
