use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

use super::{Limits, authenticated, serve};

/// Limits with every deadline long, for a test to shorten the one it is about.
fn patient() -> Limits {
    Limits {
        max_connections: 64,
        max_unauthenticated: 16,
        header_read_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        unauthenticated_idle_timeout: Duration::from_secs(60),
        eviction_age: Duration::from_secs(60),
        shutdown_grace: Some(Duration::from_secs(1)),
    }
}

/// Patient limits but for a head deadline of 300 ms.
fn head_deadline() -> Limits {
    Limits {
        header_read_timeout: Duration::from_millis(300),
        ..patient()
    }
}

/// Patient limits but for room for two connections, both of which may be strangers.
fn two_connections() -> Limits {
    Limits {
        max_connections: 2,
        max_unauthenticated: 2,
        ..patient()
    }
}

/// Patient limits but for the idle deadlines, in milliseconds: `strangers` for connections
/// that have not authenticated, `known` for the others.
fn idle_deadlines(strangers: u64, known: u64) -> Limits {
    Limits {
        unauthenticated_idle_timeout: Duration::from_millis(strangers),
        idle_timeout: Duration::from_millis(known),
        ..patient()
    }
}

/// Patient limits but for room for `strangers` connections that have not authenticated, of
/// which a newcomer may evict the oldest once it is `age` old.
fn evicting(strangers: usize, age: Duration) -> Limits {
    Limits {
        max_unauthenticated: strangers,
        eviction_age: age,
        ..patient()
    }
}

/// `/open` answers anyone; `/auth` marks its connection authenticated; `/slow` too, after
/// 800 ms.
fn app() -> Router {
    Router::new()
        .route("/open", get(|| async { "open" }))
        .route(
            "/auth",
            get(|request: Request| async move {
                authenticated(request.extensions());
                "auth"
            }),
        )
        .route(
            "/slow",
            get(|request: Request| async move {
                authenticated(request.extensions());
                tokio::time::sleep(Duration::from_millis(800)).await;
                "slow"
            }),
        )
}

/// Starts a server with `limits`; it stops when the test's runtime ends.
async fn start(limits: Limits) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app(), limits, std::future::pending()));
    addr
}

/// Sends a GET of `path` on `stream` and reads the answer's body (the routes answer short
/// bodies with a content-length).
async fn get_on(stream: &mut TcpStream, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before the answer: {answer:?}");
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap()
                .parse()
                .unwrap();
            if body.len() >= length {
                return body.to_string();
            }
        }
    }
}

/// Starts `count` clients at once, each sending a GET of `path` on a connection of its own;
/// each answers its answer's body.
fn clients(addr: SocketAddr, count: usize, path: &'static str) -> Vec<JoinHandle<String>> {
    (0..count)
        .map(|_| {
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                get_on(&mut stream, path).await
            })
        })
        .collect()
}

/// Waits (at most 5 s) for the server to close `stream`; how long that took.
async fn closed(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 64];
    loop {
        match timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the connection is still open after 5 s"),
        }
    }
}

#[tokio::test]
async fn a_head_that_never_completes_is_closed_at_the_deadline() {
    let addr = start(head_deadline()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /open HTTP/1.1\r\nhost: t\r\n")
        .await
        .unwrap();
    let took = closed(&mut stream).await;
    assert!(took >= Duration::from_millis(200), "{took:?}");
    // A connection that says nothing at all has the same deadline.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    closed(&mut silent).await;
}

#[tokio::test]
async fn the_head_deadline_starts_again_with_each_request() {
    let addr = start(head_deadline()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut stream, "/auth").await, "auth");
    // Idle and authenticated: the head deadline is not running.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(get_on(&mut stream, "/auth").await, "auth");
    // Half a head: it is.
    stream.write_all(b"GET /open HTTP/1.1\r\n").await.unwrap();
    closed(&mut stream).await;
}

#[tokio::test]
async fn strangers_idle_out_soon_and_authenticated_connections_later() {
    let addr = start(idle_deadlines(200, 1500)).await;
    let mut stranger = TcpStream::connect(addr).await.unwrap();
    let mut known = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut stranger, "/open").await, "open");
    assert_eq!(get_on(&mut known, "/auth").await, "auth");
    let took = closed(&mut stranger).await;
    assert!(took < Duration::from_millis(1000), "{took:?}");
    // Still open after the strangers' deadline, and closed after its own.
    assert_eq!(get_on(&mut known, "/open").await, "open");
    let took = closed(&mut known).await;
    assert!(took >= Duration::from_millis(1000), "{took:?}");
}

#[tokio::test]
async fn a_request_in_flight_outlives_the_idle_deadline() {
    let addr = start(idle_deadlines(100, 100)).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut stream, "/slow").await, "slow");
}

#[tokio::test]
async fn held_strangers_cannot_lock_a_client_out() {
    let addr = start(evicting(4, Duration::from_millis(100))).await;
    // Twenty connections that send half a request and hold on (the head deadline is a minute).
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET /open HTTP/1.1\r\n").await.unwrap();
        held.push(stream);
    }
    let mut client = TcpStream::connect(addr).await.unwrap();
    let answer = timeout(Duration::from_secs(5), get_on(&mut client, "/auth"))
        .await
        .expect("the client is served within 5 s");
    assert_eq!(answer, "auth");
}

#[tokio::test]
async fn a_burst_of_new_clients_waits_instead_of_evicting_itself() {
    let addr = start(evicting(2, Duration::from_secs(60))).await;
    for client in clients(addr, 50, "/auth") {
        let answer = timeout(Duration::from_secs(10), client)
            .await
            .expect("every client is served")
            .unwrap();
        assert_eq!(answer, "auth");
    }
}

#[tokio::test]
async fn at_the_cap_the_longest_idle_connection_makes_room() {
    let addr = start(two_connections()).await;
    let mut first = TcpStream::connect(addr).await.unwrap();
    let mut second = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut first, "/auth").await, "auth");
    assert_eq!(get_on(&mut second, "/auth").await, "auth");
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut third, "/auth").await, "auth");
    closed(&mut first).await;
    assert_eq!(get_on(&mut second, "/auth").await, "auth");
}

#[tokio::test]
async fn past_the_cap_of_busy_connections_a_new_one_waits_its_turn() {
    let addr = start(two_connections()).await;
    let busy = clients(addr, 2, "/slow");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut third, "/auth").await, "auth");
    // Served once a slow request was done (800 ms after it began), not before.
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    for answer in busy {
        assert_eq!(answer.await.unwrap(), "slow");
    }
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_returns() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, app(), patient(), async {
        let _ = stopped.await;
    }));
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_on(&mut stream, "/auth").await, "auth");
    stop.send(()).unwrap();
    timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns")
        .unwrap();
    closed(&mut stream).await;
}
