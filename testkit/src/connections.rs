//! Hostile clients of an HTTP server: connections that send half a request, or nothing, and
//! hold on; and the check that the server closed one.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Opens `count` connections to `addr`: the even ones send `half_request` (a request head
/// without its end) and wait, the odd ones say nothing.
pub fn hold_connections(addr: SocketAddr, count: usize, half_request: &[u8]) -> Vec<TcpStream> {
    (0..count)
        .map(|i| {
            let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("connection {i} to {addr}: {e}"));
            if i % 2 == 0 {
                stream
                    .write_all(half_request)
                    .unwrap_or_else(|e| panic!("half a request on connection {i}: {e}"));
            }
            stream
        })
        .collect()
}

/// Panics unless the server closes `stream` (end of stream or a reset) within `within`,
/// without answering on it.
pub fn assert_closed(stream: &mut TcpStream, within: Duration) {
    stream
        .set_read_timeout(Some(within))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut buf = [0u8; 16];
    match stream.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("not closed: {other:?}"),
    }
}
