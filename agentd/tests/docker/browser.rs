//! The browser in a container sandbox: the image with Chromium (`images/browser/build.sh`), a
//! site served inside the sandbox by a server the agent starts, `browse` and a
//! `browse_interactive` sequence over it, as the hardened container's user.

use agentd::docker::{DockerHost, ensure_sandbox_image};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::common::{Running, sandboxd_binary};

static IMAGE: OnceCell<String> = OnceCell::const_new();

/// The sandbox image made from the browser base (`AGENTD_TEST_BROWSER_BASE`, default
/// `sandboxd-base:bookworm-browser`).
async fn browser_image() -> String {
    IMAGE
        .get_or_init(|| async {
            let base = std::env::var("AGENTD_TEST_BROWSER_BASE")
                .unwrap_or_else(|_| "sandboxd-base:bookworm-browser".to_owned());
            let docker = DockerHost::connect().expect("Docker engine");
            ensure_sandbox_image(docker.docker(), &base, &sandboxd_binary(), |_| {})
                .await
                .unwrap_or_else(|e| panic!("cannot make the browser sandbox image from {base} (images/browser/build.sh): {e}"))
                .tag
        })
        .await
        .clone()
}

async fn act(sandbox: &Running, action: Value) -> Value {
    sandbox
        .client
        .execute_json(&action)
        .await
        .expect("an answer")
}

fn text(obs: &Value) -> &str {
    obs["content"].as_str().unwrap_or_default()
}

fn bid(obs: &Value, what: &str) -> String {
    testkit::bid_of(text(obs), what)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_container_sandbox_browses_pages_it_serves() {
    let image = browser_image().await;
    let sandbox = Running::with(|c| c.image = image).await;
    let site = tempfile::tempdir().unwrap();
    let dir = site.path().join("site");
    std::fs::create_dir(&dir).unwrap();
    testkit::copy_site(&dir);
    sandbox
        .client
        .upload_file(&dir, "/home/openhands", true)
        .await
        .unwrap();
    let (code, port) = sandbox
        .sh("cd /home/openhands/site && (python3 serve.py &) && until [ -f port ]; do sleep 0.05; done; cat port")
        .await;
    assert_eq!(code, 0, "{port}");
    let base = format!("http://127.0.0.1:{}", port.trim());

    let obs = act(
        &sandbox,
        json!({"action": "browse", "args": {"url": format!("{base}/index.html")}}),
    )
    .await;
    assert_eq!(obs["observation"], "browse", "{obs}");
    assert!(
        text(&obs).contains(
            "# Hello form\n\nSome **bold** text and a [link to the second page](second.html)."
        ),
        "{}",
        text(&obs)
    );
    assert!(
        obs["extras"]["screenshot"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,iVBORw0KGgo")
    );

    let step = |actions: String| {
        act(
            &sandbox,
            json!({"action": "browse_interactive", "args": {"browser_actions": actions}}),
        )
    };
    let obs = step(format!("goto('{base}/index.html')")).await;
    let (name, send) = (bid(&obs, "textbox 'Name'"), bid(&obs, "button 'Send'"));
    let obs = step(format!("fill('{name}', 'Grace')\nclick('{send}')")).await;
    assert_eq!(
        obs["extras"]["url"],
        format!("{base}/second.html?name=Grace&color=r"),
        "{}",
        text(&obs)
    );
    let obs = step("go_back()".to_owned()).await;
    assert_eq!(obs["extras"]["url"], format!("{base}/index.html"));
    let obs = step("click('999')".to_owned()).await;
    assert_eq!(
        obs["extras"]["last_browser_action_error"],
        "ValueError: Could not find element with bid \"999\""
    );

    // Chromium runs as the sandbox user, in its own process group.
    let (_, ps) = sandbox.sh("ps -o uid=,pid=,pgid=,args= -C chromium | grep -- --remote-debugging-pipe | grep -v -- --type=").await;
    let fields: Vec<&str> = ps.split_whitespace().collect();
    assert_eq!(fields.first(), Some(&"1000"), "{ps}");
    assert_eq!(fields.get(1), fields.get(2), "{ps}");
}
