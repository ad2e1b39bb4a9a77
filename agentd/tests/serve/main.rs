//! `agentd serve` end to end: each test starts the real binary on an ephemeral port against the
//! real Docker engine (or a fake Kubernetes API, `kubernetes.rs`), and talks to it over HTTP
//! (the runtime API, then sandboxd).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;

mod agents;
mod api;
mod cli;
mod compat;
mod dropin;
mod front;
mod kubernetes;
mod restart;
mod swarm;
