//! agentd's per-step overhead, in one run: a scripted agent doing `true` commands on the local
//! runtime, with 10, 1,000 and 10,000 events of history already in the session, against the
//! same commands sent straight to the same kind of sandbox with the client. The difference per
//! step is what the event stream, the controller (state machine, stuck detection, state file)
//! and the runtime task add. Target: <= 1 ms, and flat as the history grows.
#![allow(clippy::print_stdout, reason = "a benchmark prints its results")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::EventStream;
use agentd::ScriptedAgent;
use agentd::{RunSpec, run_session};
use agentd::{Runtime, RuntimeConfig};
use protocol::action::{CmdRunArgs, MessageArgs};
use protocol::{Action, ActionKind, Event, EventSource};

const STEPS: usize = 200;

fn run_true(i: usize) -> Action {
    Action::from(ActionKind::Run(CmdRunArgs::new(format!("true {i}"))))
}

fn runtime_config(workspace: &std::path::Path) -> RuntimeConfig {
    let sandboxd = testkit::sandboxd_binary("release");
    let mut config = RuntimeConfig {
        workspace: Some(workspace.to_path_buf()),
        sandboxd_binary: Some(sandboxd),
        ..RuntimeConfig::default()
    };
    config.local.no_login_shell = true;
    config
}

/// Mean time per step of a run with `history` events already in its session.
async fn agentd_step(history: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let stream = EventStream::open(&agentd::session_dir(&sessions, "bench")).unwrap();
    for i in 0..history {
        let message = Action::from(ActionKind::Message(MessageArgs {
            content: format!("earlier message {i}"),
            ..MessageArgs::default()
        }));
        stream.add(message, EventSource::User).unwrap();
    }
    drop(stream);

    let marks: Arc<Mutex<(Option<Instant>, Option<Instant>)>> = Arc::default();
    let seen = marks.clone();
    let on_event = move |event: &Event| {
        let mut marks = seen.lock().unwrap();
        if let Event::Action(a) = event {
            if a.source == Some(EventSource::Agent) && marks.0.is_none() {
                marks.0 = Some(Instant::now());
            }
            if matches!(a.kind, ActionKind::Finish(_)) {
                marks.1 = Some(Instant::now());
            }
        }
    };
    let spec = RunSpec::new(
        "bench",
        sessions,
        "run true",
        Box::new(ScriptedAgent::new((0..STEPS).map(run_true))),
        runtime_config(dir.path()),
        10 * STEPS as u32,
    );
    let outcome = run_session(spec, on_event).await.unwrap();
    assert!(outcome.finished(), "{:?}", outcome.state);
    let (first, finish) = *marks.lock().unwrap();
    (finish.unwrap() - first.unwrap()) / STEPS as u32
}

/// Mean time of the same commands sent straight to a sandbox.
async fn direct_step() -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::start(&runtime_config(dir.path())).await.unwrap();
    for i in 0..20 {
        runtime.execute(&run_true(i)).await;
    }
    let started = Instant::now();
    for i in 0..STEPS {
        runtime
            .client()
            .run(&format!("true {i}"), None)
            .await
            .unwrap();
    }
    let elapsed = started.elapsed() / STEPS as u32;
    runtime.close().await.unwrap();
    elapsed
}

#[tokio::main]
async fn main() {
    let direct = direct_step().await;
    println!("agentd per-step overhead, local runtime, {STEPS} `true` steps per history size");
    println!(
        "  client -> sandboxd `run true` directly      {:>8.3} ms",
        ms(direct)
    );
    for history in [10, 1_000, 10_000] {
        let step = agentd_step(history).await;
        let overhead = step.saturating_sub(direct);
        println!(
            "  history {history:>6} events: step {:>7.3} ms, overhead {:>7.3} ms  (target <= 1 ms, flat)",
            ms(step),
            ms(overhead)
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
