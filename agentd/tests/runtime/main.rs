//! Tests of [`agentd::Runtime`] against real sandboxes: local sandboxd processes
//! (`AGENTD_SANDBOXD_BIN`, else the workspace's `target/debug/sandboxd`), remote ones started
//! here, and Docker containers (the base image `images/base/build.sh` imports, with
//! `AGENTD_SANDBOXD_BIN` put into it).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod common;
mod docker;
mod local;
mod remote;
