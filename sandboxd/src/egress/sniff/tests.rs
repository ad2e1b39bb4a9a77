//! Unit tests of `egress/sniff.rs`: server names from real ClientHello bytes (made by
//! Python's ssl, that is OpenSSL, for `web.test`) and hosts from HTTP request heads.

use super::*;

fn client_hello() -> Vec<u8> {
    let hex = include_str!("client_hello_web_test.hex").trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn the_server_name_of_a_client_hello_is_found() {
    assert_eq!(
        sniff(&client_hello()),
        Sniffed::Tls(Some("web.test".into()))
    );
}

#[test]
fn a_client_hello_cut_anywhere_needs_more_bytes() {
    let hello = client_hello();
    for cut in [0, 1, 4, 5, 60, hello.len() - 1] {
        assert_eq!(sniff(&hello[..cut]), Sniffed::NeedMore, "cut at {cut}");
    }
}

#[test]
fn a_client_hello_split_over_two_records_is_joined() {
    let hello = client_hello();
    let payload = &hello[5..];
    let (a, b) = payload.split_at(100);
    let mut split = Vec::new();
    for part in [a, b] {
        split.extend_from_slice(&[0x16, 3, 1]);
        split.extend_from_slice(&(part.len() as u16).to_be_bytes());
        split.extend_from_slice(part);
    }
    assert_eq!(sniff(&split), Sniffed::Tls(Some("web.test".into())));
}

#[test]
fn a_client_hello_without_sni_has_no_name() {
    // A ClientHello body with no extensions: version, random, empty session id, one cipher
    // suite, null compression.
    let mut body = vec![3, 3];
    body.extend_from_slice(&[0; 32]);
    body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
    let mut hello = vec![1, 0, 0, body.len() as u8];
    hello.extend_from_slice(&body);
    let mut record = vec![0x16, 3, 1, 0, hello.len() as u8];
    record.extend_from_slice(&hello);
    assert_eq!(sniff(&record), Sniffed::Tls(None));
}

#[test]
fn broken_tls_is_unknown() {
    let mut hello = client_hello();
    // The extensions' length claims more than there is.
    let bad_length = [0x16, 3, 1, 0, 8, 1, 0, 0, 4, 3, 3, 0, 0];
    assert_eq!(sniff(&bad_length), Sniffed::Unknown);
    // A handshake that is not a ClientHello.
    hello[5] = 2;
    assert_eq!(sniff(&hello), Sniffed::Unknown);
    // An alert record.
    assert_eq!(sniff(&[0x15, 3, 3, 0, 2, 2, 40]), Sniffed::Unknown);
}

#[test]
fn the_host_of_an_http_request_is_found_without_its_port() {
    for (head, host) in [
        (
            "GET / HTTP/1.1\r\nHost: web.test:8080\r\nAccept: */*\r\n\r\n",
            Some("web.test"),
        ),
        (
            "GET / HTTP/1.1\r\nUser-Agent: x\r\nhOsT:Web.Test\r\n\r\n",
            Some("Web.Test"),
        ),
        (
            "POST /x HTTP/1.1\r\nHost: [::1]:80\r\n\r\nbody",
            Some("::1"),
        ),
        ("GET http://web.test/ HTTP/1.0\r\n\r\n", None),
        ("GET / HTTP/1.1\nHost: web.test\n\n", Some("web.test")),
    ] {
        assert_eq!(
            sniff(head.as_bytes()),
            Sniffed::Http(host.map(String::from)),
            "{head:?}"
        );
    }
}

#[test]
fn an_unfinished_request_head_needs_more_and_garbage_is_unknown() {
    assert_eq!(sniff(b"GE"), Sniffed::NeedMore);
    assert_eq!(sniff(b"GET / HTTP/1.1\r\nHost: web"), Sniffed::NeedMore);
    assert_eq!(sniff(b"SSH-2.0-OpenSSH_9.2\r\n"), Sniffed::Unknown);
    assert_eq!(sniff(b"HELLO there\r\n"), Sniffed::Unknown);
    assert_eq!(sniff(b"\x00\x01binary"), Sniffed::Unknown);
    let endless = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(MAX_SNIFF_BYTES));
    assert_eq!(sniff(endless.as_bytes()), Sniffed::Unknown);
}
