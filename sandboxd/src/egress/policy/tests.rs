//! Unit tests of `egress/policy.rs`: policy files, lookup by source, forbidden addresses.

use super::*;

fn file(subnet: &str, domains: &[&str]) -> EgressPolicy {
    EgressPolicy {
        subnet: subnet.into(),
        domains: domains.iter().map(|d| d.to_string()).collect(),
        hosts: BTreeMap::from([("Web.Test.".to_string(), Ipv4Addr::new(10, 0, 0, 5))]),
    }
}

#[test]
fn a_policy_allows_its_names_and_ports_and_knows_its_pins() {
    let policy =
        Policy::from_file(&file("10.213.0.16/28", &["web.test:8080", "*.pypi.org"])).unwrap();
    assert!(policy.allows("web.test", 8080));
    assert!(!policy.allows("web.test", 80));
    assert!(policy.allows("files.pypi.org", 443));
    assert!(!policy.allows("other.test", 8080));
    assert_eq!(policy.pinned("WEB.test"), Some(Ipv4Addr::new(10, 0, 0, 5)));
    assert_eq!(policy.pinned("other.test"), None);
}

#[test]
fn a_bad_policy_file_says_why() {
    let error = Policy::from_file(&file("10.213.0.16/28", &["*.com"])).unwrap_err();
    assert!(error.contains("top-level"), "{error}");
    let error = Policy::from_file(&file("nonsense", &[])).unwrap_err();
    assert!(error.contains("bad subnet"), "{error}");
}

#[test]
fn the_policy_of_a_source_is_the_file_whose_subnet_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, subnet, domain) in [
        ("sbx-a.json", "10.213.0.0/28", "a.test"),
        ("sbx-b.json", "10.213.0.16/28", "b.test"),
    ] {
        let json = serde_json::to_vec(&file(subnet, &[domain])).unwrap();
        std::fs::write(dir.path().join(name), json).unwrap();
    }
    std::fs::write(dir.path().join("broken.json"), b"{").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"ignored").unwrap();

    let b = policy_for(dir.path(), Ipv4Addr::new(10, 213, 0, 18)).unwrap();
    assert!(b.allows("b.test", 1) && !b.allows("a.test", 1));
    let a = policy_for(dir.path(), Ipv4Addr::new(10, 213, 0, 2)).unwrap();
    assert!(a.allows("a.test", 1));
    assert!(policy_for(dir.path(), Ipv4Addr::new(10, 213, 0, 40)).is_none());
    assert!(policy_for(&dir.path().join("missing"), Ipv4Addr::new(10, 213, 0, 2)).is_none());
}

#[test]
fn the_host_metadata_and_sandboxes_are_never_reached_and_bridges_only_by_pin() {
    let forbidden = Forbidden {
        denied: vec![Block::parse("10.213.0.0/16").unwrap()],
        local: vec![Ipv4Addr::new(192, 168, 1, 10)],
        bridges: vec![Block::parse("172.17.0.0/16").unwrap()],
    };
    for (addr, pinned, refused) in [
        ("127.0.0.1", true, true),
        ("0.0.0.0", true, true),
        ("192.168.1.10", true, true),
        ("169.254.169.254", true, true),
        ("224.0.0.1", true, true),
        ("255.255.255.255", true, true),
        ("10.213.0.18", true, true),
        ("172.17.0.2", false, true),
        ("172.17.0.2", true, false),
        ("192.0.2.7", false, false),
    ] {
        let ip: Ipv4Addr = addr.parse().unwrap();
        assert_eq!(
            forbidden.refuses(ip, pinned).is_some(),
            refused,
            "{addr} pinned={pinned}"
        );
    }
}

#[test]
fn blocks_parse_and_hold_their_addresses() {
    let block = Block::parse("10.213.0.16/28").unwrap();
    assert!(block.contains(Ipv4Addr::new(10, 213, 0, 16)));
    assert!(block.contains(Ipv4Addr::new(10, 213, 0, 31)));
    assert!(!block.contains(Ipv4Addr::new(10, 213, 0, 32)));
    assert_eq!(Block::parse("192.0.2.7"), Block::parse("192.0.2.7/32"));
    assert!(Block::parse("10.0.0.0/33").is_none());
}
