//! Unit tests of `egress.rs`: domain rules parse, print back, refuse garbage and match names.

use super::*;

fn rule(s: &str) -> DomainRule {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn domain_rules_parse_and_print_back_normalized() {
    for (text, printed) in [
        ("example.com", "example.com"),
        ("Example.COM.", "example.com"),
        ("example.com:443", "example.com:443"),
        ("*.pypi.org:443", "*.pypi.org:443"),
        ("web.test", "web.test"),
        ("_srv.example.com", "_srv.example.com"),
        ("localhost", "localhost"),
    ] {
        assert_eq!(rule(text).to_string(), printed, "{text}");
    }
}

#[test]
fn garbage_is_refused_with_the_reason() {
    for (text, reason) in [
        ("", "empty host name"),
        ("example.com:0", "bad port"),
        ("example.com:https", "bad port"),
        ("example.com:70000", "bad port"),
        ("exa mple.com", "' ' is not allowed"),
        ("a..b", "empty label"),
        ("-a.com", "starts or ends with '-'"),
        ("foo*.com", "wildcard is only allowed"),
        ("*.*.com", "wildcard is only allowed"),
        ("*.com", "whole top-level domain"),
        ("192.0.2.7", "IP address is not a host name"),
        ("http://x.com", "bad port"),
        (&"a".repeat(64), "longer than 63"),
    ] {
        let error = text.parse::<DomainRule>().unwrap_err().to_string();
        assert!(error.contains(reason), "{text}: {error}");
    }
}

#[test]
fn names_match_without_case_or_trailing_dot_and_on_the_port() {
    let exact = rule("web.test:8080");
    assert!(exact.allows("web.test", 8080));
    assert!(exact.allows("WEB.Test.", 8080));
    assert!(!exact.allows("web.test", 80));
    assert!(!exact.allows("other.test", 8080));
    assert!(!exact.allows("a.web.test", 8080));
    assert!(!exact.allows("xweb.test", 8080));

    let any_port = rule("web.test");
    assert!(any_port.allows("web.test", 1) && any_port.allows("web.test", 65535));
}

#[test]
fn a_wildcard_allows_subdomains_but_not_the_apex() {
    let wild = rule("*.pypi.org:443");
    assert!(wild.allows("files.pypi.org", 443));
    assert!(wild.allows("a.b.PYPI.org.", 443));
    assert!(!wild.allows("pypi.org", 443));
    assert!(!wild.allows("evilpypi.org", 443));
    assert!(!wild.allows("files.pypi.org", 80));
    assert!(!wild.allows("files.pypi.org.evil.com", 443));
}

#[test]
fn invalid_client_names_match_nothing() {
    let wild = rule("*.example.com");
    assert!(!wild.allows("a b.example.com", 80));
    assert!(!wild.allows("", 80));
}
