//! The BrowsingAgent end to end (`agentd run --agent BrowsingAgent`): a local sandbox with the
//! host's Chromium, a page served on this machine, and the fake model's fenced BrowserGym calls.

use std::path::Path;
use std::time::{Duration, Instant};

use protocol::{ActionKind, Event, EventSource, ObservationKind};
use testkit::{FakeLlm, Reply};

use crate::{run, session_events, succeeded};

const SITE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../sandboxd/tests/fixtures/site"
);

/// The test site's server, killed on drop.
struct Site(std::process::Child);

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn serve(dir: &Path) -> (Site, String) {
    for file in ["index.html", "second.html", "serve.py"] {
        std::fs::copy(Path::new(SITE).join(file), dir.join(file)).unwrap();
    }
    let site = Site(
        std::process::Command::new("python3")
            .arg("serve.py")
            .current_dir(dir)
            .spawn()
            .unwrap(),
    );
    let port = dir.join("port");
    let started = Instant::now();
    while !port.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the site did not start"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let port = std::fs::read_to_string(port).unwrap();
    (site, format!("http://127.0.0.1:{}", port.trim()))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_browsing_agent_reads_a_page_and_answers_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, site_dir) = (dir.path().join("ws"), dir.path().join("site"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&site_dir).unwrap();
    let (_site, base) = serve(&site_dir).await;
    let page = format!("{base}/index.html");
    let fake = FakeLlm::start([
        Reply::text(format!("I will open the page.\n```goto('{page}')```")),
        Reply::text("The heading says it.\n```send_msg_to_user('The heading is Hello form')```"),
    ])
    .await;
    succeeded(
        run(
            dir.path(),
            &ws,
            &fake,
            "What does the heading of the page say?",
            "",
            &["--agent", "BrowsingAgent"],
        )
        .await,
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("## Goal:\nWhat does the heading of the page say?\n"),
        "{system}"
    );
    let user = requests[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains(&format!("# Current Page URL:\n{page}\n")),
        "{user}"
    );
    assert!(user.contains("\t[4] heading 'Hello form'"), "{user}");
    assert!(
        user.contains(&format!("# Previous Actions\ngoto('{page}')\n")),
        "{user}"
    );

    let events = session_events(dir.path());
    let browsed = events.iter().any(|e| {
        matches!(e, Event::Observation(o) if matches!(&o.kind, ObservationKind::Browse(x) if x.url == page))
    });
    assert!(browsed, "{events:?}");
    let told = events.iter().any(|e| {
        matches!(e, Event::Action(a) if a.source == Some(EventSource::Agent)
            && matches!(&a.kind, ActionKind::Message(m) if m.content == "The heading is Hello form"))
    });
    assert!(told, "{events:?}");
    let finished = events.iter().rev().find_map(|e| match e {
        Event::Action(a) => match &a.kind {
            ActionKind::Finish(f) => Some(f.outputs.clone()),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(
        finished.unwrap()["content"],
        "The heading is Hello form",
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn codeact_hands_a_web_question_to_the_browsing_agent_and_gets_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, site_dir) = (dir.path().join("ws"), dir.path().join("site"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&site_dir).unwrap();
    let (_site, base) = serve(&site_dir).await;
    let page = format!("{base}/index.html");
    let fake = FakeLlm::start([
        // CodeAct delegates; the BrowsingAgent browses and answers; CodeAct finishes.
        Reply::tool_calls([(
            "delegate_to_agent",
            serde_json::json!({"agent": "BrowsingAgent", "task": format!("What does the heading of {page} say?")}),
        )]),
        Reply::text(format!("I will open the page.\n```goto('{page}')```")),
        Reply::text("The heading says it.\n```send_msg_to_user('The heading is Hello form')```"),
        Reply::tool_calls([("finish", serde_json::json!({"message": "The heading is Hello form"}))]),
    ])
    .await;
    succeeded(
        run(
            dir.path(),
            &ws,
            &fake,
            "Find out what the heading of the test page says.",
            "[agent]\ndelegation = true\n",
            &[],
        )
        .await,
    );
    let events = session_events(dir.path());
    let browsed = events.iter().any(|e| {
        matches!(e, Event::Observation(o) if matches!(&o.kind, ObservationKind::Browse(x) if x.url == page))
    });
    assert!(browsed, "{events:?}");
    let answer = events.iter().find_map(|e| match e {
        Event::Observation(o) => match &o.kind {
            ObservationKind::Delegate(x) => Some(x.outputs.clone()),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(
        answer.unwrap()["content"],
        "The heading is Hello form",
        "{events:?}"
    );
}
