//! The BrowsingAgent end to end (`agentd run --agent BrowsingAgent`): a local sandbox with the
//! host's Chromium, a page served on this machine, and the fake model's fenced BrowserGym calls.

use std::path::Path;

use protocol::{ActionKind, Event, EventSource, ObservationKind};
use testkit::{Reply, Site};

use crate::{actions, delegate_to, delegation, observations, run_scripted, session_events};

/// `dir/ws` for the agent, and the test site served from `dir/site`: its server and the URL of
/// its first page.
async fn workspace_and_site(dir: &Path) -> (std::path::PathBuf, Site, String) {
    let (ws, site_dir) = (dir.join("ws"), dir.join("site"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&site_dir).unwrap();
    let site = Site::serve(&site_dir).await;
    let page = format!("{}/index.html", site.url());
    (ws, site, page)
}

/// The BrowsingAgent's answers: it opens `page`, then tells the user the heading.
fn browse_and_tell(page: &str) -> [Reply; 2] {
    [
        Reply::text(format!("I will open the page.\n```goto('{page}')```")),
        Reply::text("The heading says it.\n```send_msg_to_user('The heading is Hello form')```"),
    ]
}

/// Whether a `browse` observation of the session is of `page`.
fn browsed(events: &[Event], page: &str) -> bool {
    observations(events).any(|o| matches!(&o.kind, ObservationKind::Browse(x) if x.url == page))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_browsing_agent_reads_a_page_and_answers_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, _site, page) = workspace_and_site(dir.path()).await;
    let fake = run_scripted(
        dir.path(),
        &ws,
        browse_and_tell(&page),
        "What does the heading of the page say?",
        "",
        &["--agent", "BrowsingAgent"],
    )
    .await;

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
    assert!(browsed(&events, &page), "{events:?}");
    let told = actions(&events).any(|a| {
        a.source == Some(EventSource::Agent)
            && matches!(&a.kind, ActionKind::Message(m) if m.content == "The heading is Hello form")
    });
    assert!(told, "{events:?}");
    let finished = actions(&events).rev().find_map(|a| match &a.kind {
        ActionKind::Finish(f) => Some(&f.outputs),
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
    let (ws, _site, page) = workspace_and_site(dir.path()).await;
    // CodeAct delegates; the BrowsingAgent browses and answers; CodeAct finishes.
    let [open, tell] = browse_and_tell(&page);
    run_scripted(
        dir.path(),
        &ws,
        [
            delegate_to(
                "BrowsingAgent",
                &format!("What does the heading of {page} say?"),
            ),
            open,
            tell,
            Reply::finish("The heading is Hello form"),
        ],
        "Find out what the heading of the test page says.",
        "[agent]\ndelegation = true\n",
        &[],
    )
    .await;
    let events = session_events(dir.path());
    assert!(browsed(&events, &page), "{events:?}");
    let (_, _, answer) = delegation(&events);
    assert_eq!(
        answer.outputs["content"], "The heading is Hello form",
        "{events:?}"
    );
}
