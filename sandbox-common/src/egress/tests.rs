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
fn names_match_without_case_or_trailing_dot_on_the_port_and_wildcards_below_the_apex() {
    for (text, host, port, allowed) in [
        ("web.test:8080", "web.test", 8080, true),
        ("web.test:8080", "WEB.Test.", 8080, true),
        ("web.test:8080", "web.test", 80, false),
        ("web.test:8080", "other.test", 8080, false),
        ("web.test:8080", "a.web.test", 8080, false),
        ("web.test:8080", "xweb.test", 8080, false),
        ("web.test", "web.test", 1, true),
        ("web.test", "web.test", 65535, true),
        ("*.pypi.org:443", "files.pypi.org", 443, true),
        ("*.pypi.org:443", "a.b.PYPI.org.", 443, true),
        ("*.pypi.org:443", "pypi.org", 443, false),
        ("*.pypi.org:443", "evilpypi.org", 443, false),
        ("*.pypi.org:443", "files.pypi.org", 80, false),
        ("*.pypi.org:443", "files.pypi.org.evil.com", 443, false),
        // Names a client may send that are no host names match nothing.
        ("*.example.com", "a b.example.com", 80, false),
        ("*.example.com", "", 80, false),
    ] {
        assert_eq!(
            rule(text).allows(host, port),
            allowed,
            "{text} allows {host}:{port}"
        );
    }
}

#[test]
fn a_port_is_split_off_at_the_last_colon() {
    for (text, split) in [
        ("example.com", Ok(("example.com", None))),
        ("example.com:443", Ok(("example.com", Some(443)))),
        ("10.0.0.0/8:5432", Ok(("10.0.0.0/8", Some(5432)))),
        ("a:b:65535", Ok(("a:b", Some(65535)))),
        ("example.com:0", Err("0")),
        ("example.com:65536", Err("65536")),
        ("example.com:", Err("")),
        ("http://x.com", Err("//x.com")),
    ] {
        assert_eq!(split_port(text), split, "{text}");
    }
}
