//! Latency of sandboxd's live features (issue 20), printed as one table measured in one run:
//! the first streamed chunk of `echo` over `/execute_action/stream` and the echo round trip of
//! one key on a WebSocket terminal, next to a plain `run true` over `/execute_action`. Run with
//! `cargo bench -p sandboxd --bench live`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "benchmark binary"
)]

use std::time::{Duration, Instant};

use client::protocol::api::{CreateTerminalRequest, StreamEvent};
use client::{ExecuteOptions, SandboxClient, TerminalOutput};

mod common;

use common::{print_heading, print_quantiles, start, verdict};
use testkit::bench::{ms, p50_p99};

#[tokio::main]
async fn main() {
    let ws = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let (daemon, _) = start(ws.path(), &[], &http).await;
    let c = SandboxClient::new(&daemon.url, None).unwrap();
    let run_true = client::run_action("true", Some(30.0));
    let echo = client::run_action("echo x", Some(30.0));
    let term = c
        .create_terminal(&CreateTerminalRequest {
            command: Some(vec!["cat".into()]),
            ..CreateTerminalRequest::default()
        })
        .await
        .unwrap();
    let mut socket = c.attach_terminal(&term.id).await.unwrap();

    const N: usize = 300;
    let (mut plain, mut first, mut key) = (Vec::new(), Vec::new(), Vec::new());
    // Interleaved, so that machine noise hits every series alike; the first 30 warm up.
    for i in 0..N + 30 {
        let t = Instant::now();
        c.execute(&run_true).await.unwrap();
        let run_took = t.elapsed();

        let t = Instant::now();
        let mut events = c
            .execute_stream(&echo, &ExecuteOptions::default())
            .await
            .unwrap();
        let mut chunk_took = None;
        while let Some(event) = events.next().await.unwrap() {
            if matches!(event, StreamEvent::Output { .. }) && chunk_took.is_none() {
                chunk_took = Some(t.elapsed());
            }
        }

        // `cat` on a terminal: the line discipline echoes the key.
        let t = Instant::now();
        socket.input(b"k").await.unwrap();
        loop {
            match socket.next().await.unwrap() {
                Some(TerminalOutput::Data(bytes)) if bytes.contains(&b'k') => break,
                Some(_) => {}
                None => panic!("the terminal closed"),
            }
        }
        let key_took = t.elapsed();
        if i % 50 == 0 {
            // Keep cat's line short.
            socket.input(b"\n").await.unwrap();
        }
        if i >= 30 {
            plain.push(run_took);
            first.push(chunk_took.expect("echo streams a chunk"));
            key.push(key_took);
        }
    }
    let row = |name: &str, samples: &mut Vec<Duration>, target_ms: f64| {
        let (p50, p99) = p50_p99(samples);
        let note = format!(
            "   target p50 <= {target_ms} ms: {}",
            verdict(ms(p50) <= target_ms)
        );
        print_quantiles(40, name, p50, p99, &note);
    };
    print_heading(
        &format!("sandboxd live latency, {N} samples per series, one run"),
        "",
        40,
    );
    row("run `true` over /execute_action", &mut plain, 5.0);
    row("first streamed chunk of `echo x`", &mut first, 5.0);
    row("terminal key echo round trip (WebSocket)", &mut key, 1.0);
}
