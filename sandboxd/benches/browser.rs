//! Browser benchmark: the p50 and p99 of a `browse` of a local page (Markdown answer, with its
//! screenshot) and of a `browse_interactive` click (the click, the accessibility tree, the
//! screenshot and the set of marks), against a page served on this machine. Needs `chromium`
//! on PATH. Run with `cargo bench -p sandboxd --bench browser`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "benchmark binary"
)]

use std::time::Instant;

use serde_json::{Value, json};

#[allow(
    dead_code,
    reason = "the benchmarks' shared helpers; not all are used here"
)]
mod common;

use common::{print_heading, print_quantiles, start};
use testkit::bench::p50_p99;
use testkit::{Site, bid_of};

const RUNS: usize = 30;

#[tokio::main]
async fn main() {
    let ws = tempfile::tempdir().unwrap();
    let site = Site::serve(ws.path()).await;
    let base = site.url();
    let http = reqwest::Client::new();
    let (daemon, _) = start(ws.path(), &["--enable-browser"], &http).await;
    let act = |action: Value| {
        let (http, url) = (http.clone(), format!("{}/execute_action", daemon.url));
        async move {
            let started = Instant::now();
            let obs = testkit::json_answer(http.post(url).json(&json!({ "action": action }))).await;
            assert_eq!(obs["observation"], "browse", "{obs}");
            assert_eq!(obs["extras"]["error"], false, "{obs}");
            (started.elapsed(), obs)
        }
    };
    let page = format!("{base}/index.html");
    let browse = json!({"action": "browse", "args": {"url": page}});
    // The first one starts Chromium.
    let (cold, _) = act(browse.clone()).await;
    let mut browses = Vec::new();
    for _ in 0..RUNS {
        browses.push(act(browse.clone()).await.0);
    }
    let (_, obs) = act(json!({"action": "browse_interactive", "args": {"browser_actions": format!("goto('{page}')")}})).await;
    let bid = bid_of(obs["content"].as_str().unwrap(), "textbox 'Name'");
    let click = json!({"action": "browse_interactive", "args": {"browser_actions": format!("click('{bid}')")}});
    let mut clicks = Vec::new();
    for _ in 0..RUNS {
        clicks.push(act(click.clone()).await.0);
    }
    print_heading("sandboxd browser", &format!(", {RUNS} runs each"), 34);
    for (name, samples) in [
        ("browse (local page, Markdown)", &mut browses),
        ("click (tree, screenshot, marks)", &mut clicks),
    ] {
        let (p50, p99) = p50_p99(samples);
        print_quantiles(34, name, p50, p99, "");
    }
    println!(
        "first browse, Chromium started: {:.0} ms",
        cold.as_secs_f64() * 1000.0
    );
}
