//! Unit tests of `serve/front_door.rs`.

use axum::http::HeaderValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn an_upgrade_needs_the_upgrade_header_and_the_connection_token() {
    assert!(is_upgrade(&headers(&[
        ("connection", "keep-alive, Upgrade"),
        ("upgrade", "websocket"),
    ])));
    assert!(!is_upgrade(&headers(&[("upgrade", "websocket")])));
    assert!(!is_upgrade(&headers(&[("connection", "upgrade")])));
}

#[test]
fn hop_by_hop_headers_and_those_connection_names_are_not_forwarded() {
    let kept = end_to_end(&headers(&[
        ("connection", "x-private"),
        ("x-private", "1"),
        ("keep-alive", "timeout=5"),
        ("transfer-encoding", "chunked"),
        ("host", "front.example"),
        ("x-session-api-key", "k"),
        ("content-type", "application/json"),
    ]));
    let mut names: Vec<&str> = kept.keys().map(HeaderName::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["content-type", "x-session-api-key"]);
}

/// Reads an HTTP head (up to the blank line).
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).await.unwrap(),
            1,
            "the head ended early"
        );
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A WebSocket-like upgrade goes through: the sandbox sees the upgrade request on its own
/// path and host, switches protocols, and the bytes flow both ways through the front door.
#[tokio::test]
async fn an_upgrade_is_forwarded_and_the_connections_are_joined() {
    let sandbox = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sandbox_addr = sandbox.local_addr().unwrap();
    let seen = tokio::spawn(async move {
        let (mut stream, _) = sandbox.accept().await.unwrap();
        let head = read_head(&mut stream).await;
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\nsec-websocket-accept: yes\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 4];
        stream.read_exact(&mut buf).await.unwrap();
        stream.write_all(&buf).await.unwrap();
        head
    });
    let target = reqwest::Url::parse(&format!("http://{sandbox_addr}/pty/1?rows=24")).unwrap();
    let app = axum::Router::new().route(
        "/{*rest}",
        axum::routing::any(move |request: Request| {
            let target = target.clone();
            async move { upgrade(target, request).await.unwrap() }
        }),
    );
    let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front_addr = front.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(front, app).await.unwrap() });

    let mut caller = TcpStream::connect(front_addr).await.unwrap();
    caller
        .write_all(b"GET /sandboxes/rt-1/pty/1?rows=24 HTTP/1.1\r\nhost: front\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-key: abc\r\nx-session-api-key: k\r\n\r\n")
        .await
        .unwrap();
    let answer = read_head(&mut caller).await;
    assert!(answer.starts_with("HTTP/1.1 101"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("sec-websocket-accept: yes"),
        "{answer}"
    );
    caller.write_all(b"ping").await.unwrap();
    let mut echoed = [0u8; 4];
    caller.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");

    let head = seen.await.unwrap().to_ascii_lowercase();
    assert!(
        head.starts_with("get /pty/1?rows=24 http/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains(&format!("host: {sandbox_addr}")), "{head}");
    assert!(head.contains("upgrade: websocket"), "{head}");
    assert!(head.contains("sec-websocket-key: abc"), "{head}");
    assert!(head.contains("x-session-api-key: k"), "{head}");
}
