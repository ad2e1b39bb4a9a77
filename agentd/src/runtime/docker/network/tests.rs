//! Unit tests of `runtime/docker/network.rs`: policies parse, and become the rules they say.

use super::*;

#[test]
fn egress_policies_parse_and_print_back() {
    for (text, printed) in [
        ("all", "all"),
        ("none", "none"),
        ("deny", "none"),
        ("192.0.2.7", "192.0.2.7/32"),
        ("10.0.0.0/8, 192.0.2.7:443", "10.0.0.0/8,192.0.2.7/32:443"),
        ("10.1.0.0/16:5432", "10.1.0.0/16:5432"),
        ("PyPI.org.", "pypi.org"),
        (
            "*.pypi.org:443, web.test:8080,10.0.0.0/8",
            "*.pypi.org:443,web.test:8080,10.0.0.0/8",
        ),
        ("1password.com:443", "1password.com:443"),
    ] {
        let egress: Egress = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(egress.to_string(), printed, "{text}");
        assert_eq!(printed.parse::<Egress>().unwrap(), egress, "{text}");
    }
}

#[test]
fn bad_egress_rules_are_refused_with_the_reason() {
    for (text, reason) in [
        ("pypi.org:0", "bad port"),
        ("*.org", "whole top-level domain"),
        ("pypi.*", "wildcard is only allowed"),
        ("exa mple.com", "not allowed in a host name"),
        ("10.0.0.0/8,", "empty host name"),
        ("10.0.0.1/8", "host bits set; write 10.0.0.0/8"),
        ("10.0.0.0/33", "bad prefix length"),
        ("10.0.0.1:0", "bad port"),
        ("10.0.0.1:http", "bad port"),
    ] {
        let error = text.parse::<Egress>().unwrap_err();
        assert!(error.contains(reason), "{text}: {error}");
    }
}

fn rendered(isolation: &Isolation) -> Vec<String> {
    rules("sbx-abc123", isolation)
        .into_iter()
        .map(|r| r.join(" "))
        .collect()
}

/// The rules of a sandbox whose egress policy is `egress`, with no host port and the
/// filtering proxy (if any) at `proxy_port`.
fn rendered_egress(egress: &str, proxy_port: Option<u16>) -> Vec<String> {
    rendered(&Isolation {
        egress: egress.parse().unwrap_or_else(|e| panic!("{egress}: {e}")),
        host_ports: Vec::new(),
        proxy_port,
    })
}

/// Asserts that the first rule containing `first` comes before the first containing `then`.
fn assert_comes_before(rules: &[String], first: &str, then: &str) {
    let position = |part: &str| {
        rules
            .iter()
            .position(|r| r.contains(part))
            .unwrap_or_else(|| panic!("no rule with {part}\nin {rules:#?}"))
    };
    assert!(
        position(first) < position(then),
        "{first} after {then}: {rules:#?}"
    );
}

/// The refusal of every other TCP port of the host.
const HOST_REFUSAL: &str = "SANDBOXD-INPUT -i sbx-abc123 -p tcp -m comment";

#[test]
fn the_host_and_the_metadata_range_and_other_bridges_are_refused_always() {
    let rules = rendered(&Isolation::default());
    let tag = "-m comment --comment sandboxd:sbx-abc123";
    for expected in [
        format!(
            "-A SANDBOXD-INPUT -i sbx-abc123 -m conntrack --ctstate ESTABLISHED,RELATED {tag} -j RETURN"
        ),
        format!("-A SANDBOXD-INPUT -i sbx-abc123 -p tcp {tag} -j REJECT --reject-with tcp-reset"),
        format!(
            "-A SANDBOXD-INPUT -i sbx-abc123 {tag} -j REJECT --reject-with icmp-port-unreachable"
        ),
        format!(
            "-A SANDBOXD-FORWARD -i sbx-abc123 -d 169.254.0.0/16 -p tcp {tag} -j REJECT --reject-with tcp-reset"
        ),
        format!(
            "-A SANDBOXD-FORWARD -i sbx-abc123 -o sbx-+ {tag} -j REJECT --reject-with icmp-port-unreachable"
        ),
        format!(
            "-A SANDBOXD-FORWARD -i sbx-abc123 -o docker0 {tag} -j REJECT --reject-with icmp-port-unreachable"
        ),
    ] {
        assert!(
            rules.contains(&expected),
            "missing {expected}\nin {rules:#?}"
        );
    }
    // Allow-all adds no final refusal.
    assert!(
        !rules
            .last()
            .unwrap()
            .contains("FORWARD -i sbx-abc123 -m comment")
    );
}

#[test]
fn allowed_host_ports_come_before_the_refusal_of_the_host() {
    let rules = rendered(&Isolation {
        host_ports: vec![3128],
        ..Isolation::default()
    });
    assert_comes_before(
        &rules,
        "SANDBOXD-INPUT -i sbx-abc123 -p tcp --dport 3128",
        HOST_REFUSAL,
    );
}

#[test]
fn an_allow_list_returns_its_destinations_and_refuses_the_rest() {
    let rules = rendered_egress("10.0.0.0/8,192.0.2.7:443", None);
    let tail: Vec<&str> = rules
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(String::as_str)
        .collect();
    let tag = "-m comment --comment sandboxd:sbx-abc123";
    assert_eq!(
        tail,
        [
            format!("-A SANDBOXD-FORWARD -i sbx-abc123 -d 10.0.0.0/8 {tag} -j RETURN"),
            format!(
                "-A SANDBOXD-FORWARD -i sbx-abc123 -d 192.0.2.7/32 -p tcp --dport 443 {tag} -j RETURN"
            ),
            format!(
                "-A SANDBOXD-FORWARD -i sbx-abc123 -p tcp {tag} -j REJECT --reject-with tcp-reset"
            ),
            format!(
                "-A SANDBOXD-FORWARD -i sbx-abc123 {tag} -j REJECT --reject-with icmp-port-unreachable"
            ),
        ]
    );
}

#[test]
fn listed_rules_name_their_bridge() {
    assert_eq!(
        rule_bridge(
            "-A SANDBOXD-INPUT -i sbx-abc123 -m comment --comment sandboxd:sbx-abc123 -j RETURN"
        ),
        Some("sbx-abc123")
    );
    assert_eq!(rule_bridge("-A SANDBOXD-INPUT -i eth0 -j RETURN"), None);
}

#[test]
fn subnets_are_cut_from_the_pool_around_those_taken() {
    assert_eq!(free_subnet(&[], 0).as_deref(), Some("10.213.0.0/28"));
    assert_eq!(free_subnet(&[], 1).as_deref(), Some("10.213.0.16/28"));
    let taken = ["172.17.0.0/16".to_string(), "10.213.0.0/27".to_string()];
    assert_eq!(free_subnet(&taken, 0).as_deref(), Some("10.213.0.32/28"));
    // A block over the whole pool leaves nothing.
    assert_eq!(free_subnet(&["10.0.0.0/8".to_string()], 0), None);
}

#[test]
fn a_domain_policy_redirects_the_ports_of_its_domains_to_the_proxy() {
    let rules = rendered_egress("web.test:8080,*.pypi.org:443,192.0.2.7:22", Some(18129));
    let tag = "-m comment --comment sandboxd:sbx-abc123";
    let nat: Vec<&str> = rules
        .iter()
        .filter(|r| r.starts_with("-t nat"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        nat,
        [
            format!(
                "-t nat -A SANDBOXD-PREROUTING -i sbx-abc123 -m addrtype --dst-type LOCAL {tag} -j RETURN"
            ),
            format!(
                "-t nat -A SANDBOXD-PREROUTING -i sbx-abc123 -d 192.0.2.7/32 -p tcp --dport 22 {tag} -j RETURN"
            ),
            format!(
                "-t nat -A SANDBOXD-PREROUTING -i sbx-abc123 -p tcp --dport 53 {tag} -j RETURN"
            ),
            format!(
                "-t nat -A SANDBOXD-PREROUTING -i sbx-abc123 -p tcp --dport 443 {tag} -j REDIRECT --to-ports 18129"
            ),
            format!(
                "-t nat -A SANDBOXD-PREROUTING -i sbx-abc123 -p tcp --dport 8080 {tag} -j REDIRECT --to-ports 18129"
            ),
        ]
    );
    // The proxy's port, for redirected connections only, before the host's refusal.
    assert_comes_before(
        &rules,
        "SANDBOXD-INPUT -i sbx-abc123 -p tcp --dport 18129 -m conntrack --ctstate DNAT",
        HOST_REFUSAL,
    );
    // Names resolve: DNS goes out; everything else not allowed is refused.
    for dns in [
        format!("-A SANDBOXD-FORWARD -i sbx-abc123 -p udp --dport 53 {tag} -j RETURN"),
        format!("-A SANDBOXD-FORWARD -i sbx-abc123 -p tcp --dport 53 {tag} -j RETURN"),
    ] {
        assert!(rules.contains(&dns), "missing {dns}\nin {rules:#?}");
    }
    let last_filter = rules.iter().rfind(|r| !r.starts_with("-t nat")).unwrap();
    assert!(
        last_filter.contains("FORWARD -i sbx-abc123 -m comment")
            && last_filter.contains("REJECT --reject-with icmp-port-unreachable"),
        "{rules:#?}"
    );
}

#[test]
fn a_domain_without_a_port_redirects_every_tcp_port() {
    let rules = rendered_egress("web.test:8080,example.com", Some(18129));
    let redirects: Vec<&String> = rules.iter().filter(|r| r.contains("REDIRECT")).collect();
    assert_eq!(redirects.len(), 1, "{redirects:#?}");
    assert!(
        redirects[0].contains("-i sbx-abc123 -p tcp -m comment"),
        "{redirects:#?}"
    );
}

#[test]
fn an_address_only_policy_has_no_redirect_and_no_dns() {
    let rules = rendered_egress("10.0.0.0/8", None);
    assert!(
        !rules
            .iter()
            .any(|r| r.contains("nat") || r.contains("--dport 53"))
    );
}

#[test]
fn the_rules_go_to_iptables_restore_in_one_batch_per_table_in_order() {
    let rules = rules(
        "sbx-abc123",
        &Isolation {
            egress: "example.com:443".parse().unwrap(),
            host_ports: Vec::new(),
            proxy_port: Some(3128),
        },
    );
    let batch = restore_batch(&rules);
    let sections: Vec<&str> = batch.split_inclusive("COMMIT\n").collect();
    assert_eq!(sections.len(), 2, "{batch}");
    assert!(sections[0].starts_with("*filter\n-A SANDBOXD-INPUT -i sbx-abc123 "));
    assert!(sections[1].starts_with("*nat\n-A SANDBOXD-PREROUTING -i sbx-abc123 "));
    // Every rule, each once, in its table's order, without the `-t` that named the table.
    let lines: Vec<&str> = batch.lines().filter(|l| l.starts_with("-A ")).collect();
    let expected: Vec<String> = rules
        .iter()
        .filter(|r| r[0] != "-t")
        .chain(rules.iter().filter(|r| r[0] == "-t"))
        .map(|r| {
            r.iter()
                .skip_while(|a| *a != "-A")
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(lines, expected);
    // A word with a space or a quote is quoted as iptables-restore reads it.
    assert_eq!(restore_word("sandboxd:sbx-1"), "sandboxd:sbx-1");
    assert_eq!(restore_word("a \"b\""), r#""a \"b\"""#);
    assert_eq!(restore_word(""), r#""""#);
}
