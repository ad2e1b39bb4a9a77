//! Tests of the Docker runtime against the real engine. They need the base image
//! (`images/base/build.sh`, which `.ci/run` runs) and a sandboxd binary for images
//! (`AGENTD_SANDBOXD_BIN`, else the workspace's debug build).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "tests fail loudly and report timings"
)]

mod browser;
mod common;
mod image;
mod isolation;
mod lifecycle;
mod mcp;
mod sandbox;
