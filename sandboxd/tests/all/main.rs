//! Integration tests: each starts the real `sandboxd` binary on an ephemeral port (or a Unix
//! socket in a temporary directory) and talks to it over HTTP. One test binary keeps link times down.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

mod bash;
mod browser;
mod client;
mod configure;
mod fixtures;
mod framing;
mod hostile;
mod http;
mod ipython;
mod lifecycle;
mod live;
mod mcp;
mod transfer;
mod unix_socket;
