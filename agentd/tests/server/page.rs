//! The web page in a real headless Chromium, as a person uses it: start a conversation from the
//! page, watch the agent's events arrive live, answer its question, see it finish. A screenshot
//! is saved to `target/tmp/conversation-page.png`.

use std::time::Duration;

use serde_json::json;
use testkit::{Chromium, FakeLlm, Reply};

use super::{KEY, start};

/// Puts `text` in the page's field `field` and clicks its button `button`, as a person does.
async fn type_and_click(browser: &mut Chromium, field: &str, text: &str, button: &str) {
    let text = serde_json::to_string(text).unwrap();
    browser
        .eval(&format!(
            "document.getElementById('{field}').value = {text}; \
             document.getElementById('{button}').click(); true"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_starts_watches_and_answers_a_conversation_in_the_page() {
    let fake = FakeLlm::start([
        // Slow enough that the page is following before the command runs.
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "echo hello-from-the-agent"}),
        )])
        .delay(Duration::from_millis(500)),
        Reply::text("Which file should I write?"),
        Reply::tool_calls([("execute_bash", json!({"command": "echo kept > notes.txt"}))]),
        Reply::finish("notes.txt is written"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &fake, &[]);
    let mut browser = Chromium::start().await.unwrap();
    browser
        .goto(&format!("{}/#key={KEY}", server.url))
        .await
        .unwrap();

    // Start a conversation from the page; it is listed and selected.
    type_and_click(
        &mut browser,
        "task",
        "Say hello, then write a file I name.",
        "create",
    )
    .await;
    browser
        .wait_for("document.querySelectorAll('#list li.selected').length === 1")
        .await
        .unwrap();
    let listed = browser
        .eval("document.querySelector('#list li.selected').textContent")
        .await
        .unwrap();
    assert!(listed.as_str().unwrap().contains("Say hello"), "{listed}");

    // The events arrive live: the command, its output, the agent's question.
    browser
        .wait_for("document.getElementById('events').textContent.includes('hello-from-the-agent')")
        .await
        .unwrap();
    browser
        .wait_for(
            "document.getElementById('events').textContent.includes('Which file should I write?')",
        )
        .await
        .unwrap();
    browser
        .wait_for("document.getElementById('state').textContent === 'awaiting user input'")
        .await
        .unwrap();

    // The person answers; the agent writes the file and finishes.
    type_and_click(&mut browser, "message", "notes.txt", "send").await;
    browser
        .wait_for("document.getElementById('state').textContent === 'finished'")
        .await
        .unwrap();
    let shown = browser
        .eval("document.getElementById('events').textContent")
        .await
        .unwrap();
    let shown = shown.as_str().unwrap();
    for expected in [
        "notes.txt",
        "echo kept > notes.txt",
        "notes.txt is written",
        "exit 0",
    ] {
        assert!(shown.contains(expected), "{expected:?} not in {shown}");
    }
    let stats = browser
        .eval("document.getElementById('stats').textContent")
        .await
        .unwrap();
    assert!(stats.as_str().unwrap().contains("step 4/"), "{stats}");

    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conversation-page.png");
    browser.screenshot(&shot).await.unwrap();
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
}
