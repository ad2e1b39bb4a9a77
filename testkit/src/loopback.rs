//! An axum app served on a free port of 127.0.0.1 in a task of its own: how the fake servers
//! ([`FakeLlm`](crate::FakeLlm), [`FakeKube`](crate::FakeKube)) listen.

use std::net::SocketAddr;

use axum::Router;
use tokio::task::JoinHandle;

/// Serves `app` on a free port of 127.0.0.1 until the task is aborted: its address and the
/// task. Panics (naming `what`) when the port cannot be bound: a test cannot go on.
pub(crate) async fn serve_on_loopback(what: &str, app: Router) -> (SocketAddr, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{what} cannot listen on 127.0.0.1:0: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{what} has no local address: {e}"));
    let server = tokio::spawn(async move {
        // Ends when the listener fails, which on loopback it does not; aborted on drop.
        let _ = axum::serve(listener, app).await;
    });
    (addr, server)
}
