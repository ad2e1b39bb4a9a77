//! The browser (`browse`, `browse_interactive`): a real Chromium started by sandboxd, against
//! pages served inside the sandbox by a server the agent starts with a `run` action.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use testkit::bid_of;

use crate::common::{Options, Sandbox, content, eventually};

/// A sandbox with the browser on, serving the test site from its workspace; its base URL.
async fn serving() -> (Sandbox, String) {
    let sb = Sandbox::with(Options {
        browser: true,
        ..Options::default()
    })
    .await;
    testkit::copy_site(&sb.ws);
    let obs = sb
        .run(&format!(
            "cd {} && (python3 serve.py &) ; echo started",
            sb.ws_str()
        ))
        .await;
    assert_eq!(content(&obs).trim(), "started", "{obs}");
    let port_file = sb.ws.join("port");
    eventually("the site's server", || port_file.exists()).await;
    let port = std::fs::read_to_string(&port_file).unwrap();
    (sb, format!("http://127.0.0.1:{}", port.trim()))
}

async fn browse(sb: &Sandbox, url: &str) -> Value {
    sb.act(json!({"action": "browse", "args": {"url": url}}))
        .await
}

async fn interact(sb: &Sandbox, actions: &str) -> Value {
    sb.act(json!({"action": "browse_interactive", "args": {"browser_actions": actions}}))
        .await
}

/// The text between the tree's markers.
fn tree(obs: &Value) -> &str {
    let text = content(obs);
    let start = text
        .find("============== BEGIN accessibility tree ==============\n")
        .unwrap_or_else(|| panic!("no tree in {text}"));
    let rest = &text[start + 55..];
    &rest[..rest
        .find("\n============== END accessibility tree")
        .unwrap()]
}

fn assert_png(data_url: &Value) -> (u32, u32) {
    let b64 = data_url
        .as_str()
        .unwrap()
        .strip_prefix("data:image/png;base64,")
        .expect("a PNG data URL");
    let png = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test(flavor = "multi_thread")]
async fn browse_answers_the_page_as_markdown() {
    let (sb, base) = serving().await;
    let obs = browse(&sb, &format!("{base}/index.html")).await;
    assert_eq!(obs["observation"], "browse", "{obs}");
    let url = format!("{base}/index.html");
    assert_eq!(
        content(&obs),
        format!(
            "[Current URL: {url}]\n============== BEGIN webpage content ==============\n\
             # Hello form\n\nSome **bold** text and a [link to the second page](second.html).\n\n\
             *   apples\n*   pears\n\nName \n\nRed\n\nGreen\n\n Send\n\
             ============== END webpage content ==============\n"
        )
    );
    let extras = &obs["extras"];
    assert_eq!(obs["message"], format!("Visited {url}"));
    assert_eq!(extras["url"], url);
    assert_eq!(extras["trigger_by_action"], "browse");
    assert_eq!(extras["error"], false);
    assert_eq!(extras["open_pages_urls"], json!([url]));
    assert_eq!(extras["axtree_object"], json!({}));
    assert_eq!(assert_png(&extras["screenshot"]), (1280, 720));
    // The reference's key set (its client passes them as keywords).
    let keys: Vec<&str> = extras
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut reference = [
        "url",
        "trigger_by_action",
        "screenshot",
        "screenshot_path",
        "set_of_marks",
        "error",
        "goal_image_urls",
        "open_pages_urls",
        "active_page_index",
        "dom_object",
        "axtree_object",
        "extra_element_properties",
        "last_browser_action",
        "last_browser_action_error",
        "focused_element_bid",
        "filter_visible_only",
    ];
    reference.sort_unstable();
    assert_eq!(keys, reference);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_is_filled_and_sent_a_link_followed_and_history_walked() {
    let (sb, base) = serving().await;
    let index = format!("{base}/index.html");
    let obs = interact(&sb, &format!("goto('{index}')")).await;
    assert_eq!(obs["extras"]["url"], index, "{obs}");
    assert!(content(&obs).contains("[Action executed successfully.]"));
    let page = tree(&obs).to_owned();
    let expected = [
        "RootWebArea 'Form page', url='BASE/index.html'",
        "\t[4] heading 'Hello form'",
        "\t[5] paragraph ''",
        "\t\tStaticText 'Some'",
        "\t\tStaticText 'bold'",
        "\t\tStaticText 'text and a'",
        "\t\t[7] link 'link to the second page', clickable, url='BASE/second.html'",
        "\t\tStaticText '.'",
        "\t[8] list ''",
        "\t\t[9] listitem ''",
        "\t\t\tListMarker '•'",
        "\t\t\tStaticText 'apples'",
        "\t\t[10] listitem ''",
        "\t\t\tListMarker '•'",
        "\t\t\tStaticText 'pears'",
        "\t[11] form ''",
        "\t\t[12] LabelText '', clickable",
        "\t\t\tStaticText 'Name'",
        "\t\t[13] textbox 'Name', clickable, required",
        "\t\t\tgeneric",
        "\t\t[14] combobox '' value='Red', hasPopup='menu', expanded=False",
        "\t\t\tMenuListPopup ''",
        "\t\t\t\t[15] option 'Red', selected=True",
        "\t\t\t\t[16] option 'Green', selected=False",
        "\t\t[17] button 'Send', clickable",
        "\t[18] image 'a picture', url='BASE/missing.png'",
    ];
    assert_eq!(page, expected.join("\n").replace("BASE", &base));
    let (name, color, send, link) = (
        bid_of(&page, "textbox 'Name'"),
        bid_of(&page, "combobox"),
        bid_of(&page, "button 'Send'"),
        bid_of(&page, "link 'link to the second page'"),
    );
    assert_eq!(assert_png(&obs["extras"]["set_of_marks"]), (1280, 720));

    // Fill and select: the page is the same, the bids too.
    let obs = interact(
        &sb,
        &format!("fill('{name}', 'Ada Lovelace')\nselect_option('{color}', 'Green')"),
    )
    .await;
    assert_eq!(obs["extras"]["error"], false, "{}", content(&obs));
    assert_eq!(obs["extras"]["focused_element_bid"], name);
    let filled = tree(&obs);
    assert!(
        filled.contains(&format!("[{name}] textbox 'Name' value='Ada Lovelace'")),
        "{filled}"
    );
    assert!(
        filled.contains(&format!("[{color}] combobox '' value='Green'")),
        "{filled}"
    );
    assert_eq!(bid_of(filled, "button 'Send'"), send);

    // Send: the form's GET lands on the second page.
    let obs = interact(&sb, &format!("click('{send}')")).await;
    let sent = format!("{base}/second.html?name=Ada+Lovelace&color=g");
    assert_eq!(obs["extras"]["url"], sent, "{}", content(&obs));
    assert!(content(&obs).starts_with(&format!("[Current URL: {sent}]\n")));
    assert!(
        tree(&obs).contains("heading 'Second page'"),
        "{}",
        tree(&obs)
    );

    // Back to the form, then through the link.
    let obs = interact(&sb, "go_back()").await;
    assert_eq!(obs["extras"]["url"], index);
    let obs = interact(&sb, &format!("click('{link}')")).await;
    assert_eq!(obs["extras"]["url"], format!("{base}/second.html"));
    let obs = interact(&sb, "go_back()").await;
    assert_eq!(obs["extras"]["url"], index);
    let obs = interact(&sb, "go_forward()").await;
    assert_eq!(obs["extras"]["url"], format!("{base}/second.html"));
    assert_eq!(
        obs["extras"]["open_pages_urls"],
        json!([format!("{base}/second.html")])
    );
    assert_eq!(obs["extras"]["active_page_index"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_bids_and_bad_actions_get_browsergyms_errors() {
    let (sb, base) = serving().await;
    interact(&sb, &format!("goto('{base}/second.html')")).await;
    let cases = [
        (
            "click('999')",
            "ValueError: Could not find element with bid \"999\"",
        ),
        ("fill(12, 'x')", "ValueError: expected a string, got 12"),
        (
            "frobnicate('1')",
            "NameError: name 'frobnicate' is not defined",
        ),
        (
            "click()",
            "TypeError: click() missing 1 required positional argument: 'bid'",
        ),
        (
            "noop(1, 2)",
            "TypeError: noop() takes from 0 to 1 positional arguments but 2 were given",
        ),
    ];
    for (action, error) in cases {
        let obs = interact(&sb, action).await;
        assert_eq!(obs["observation"], "browse", "{obs}");
        assert_eq!(obs["extras"]["error"], true, "{action}");
        assert_eq!(
            obs["extras"]["last_browser_action_error"], error,
            "{action}"
        );
        assert!(
            content(&obs).contains(&format!(
                "================ BEGIN error message ===============\nThe following error occurred when executing the last action:\n{error}\n================ END error message ===============\n"
            )),
            "{}",
            content(&obs)
        );
    }
    // Text without a call is no action (BrowserGym's lenient parser), not an error.
    let obs = interact(&sb, "I will now look at the page.").await;
    assert_eq!(obs["extras"]["error"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_that_never_answers_times_out_without_blocking_the_shell() {
    let (sb, base) = serving().await;
    let slow = sb.act(json!({"action": "browse_interactive",
        "args": {"browser_actions": format!("goto('{base}/slow')")}, "timeout": 4}));
    let shell = async {
        // While the browser waits, bash answers at once.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = Instant::now();
        let obs = sb.run("echo free").await;
        assert_eq!(content(&obs), "free");
        started.elapsed()
    };
    let (obs, shell_took) = tokio::join!(slow, shell);
    assert!(
        shell_took < Duration::from_secs(2),
        "bash waited {shell_took:?}"
    );
    let error = obs["extras"]["last_browser_action_error"].as_str().unwrap();
    assert!(
        error.starts_with("TimeoutError: page.goto: Timeout ") && error.ends_with("ms exceeded."),
        "{obs}"
    );
    // The browser is still usable.
    let obs = interact(&sb, &format!("goto('{base}/second.html')")).await;
    assert_eq!(obs["extras"]["error"], false, "{}", content(&obs));
}

/// The browser's main process among sandboxd's descendants.
fn chromium_of(sandboxd: u32) -> Option<u32> {
    let mut todo = vec![sandboxd];
    while let Some(pid) = todo.pop() {
        // Children are listed per thread that started them.
        let mut children = String::new();
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            children += &std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            children.push(' ');
        }
        for child in children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("--remote-debugging-pipe") {
                return Some(child);
            }
            todo.push(child);
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_that_crashed_is_started_again() {
    let (sb, base) = serving().await;
    let obs = browse(&sb, &format!("{base}/second.html")).await;
    assert_eq!(obs["extras"]["error"], false, "{obs}");
    let chromium = chromium_of(sb.pid()).expect("a running browser");
    let killed = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(chromium).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(killed.is_ok());
    eventually("the browser to be gone", || {
        !Path::new(&format!("/proc/{chromium}")).exists() || chromium_of(sb.pid()) != Some(chromium)
    })
    .await;
    let obs = browse(&sb, &format!("{base}/index.html")).await;
    assert_eq!(obs["observation"], "browse", "{obs}");
    assert!(content(&obs).contains("# Hello form"), "{}", content(&obs));
    let again = chromium_of(sb.pid()).expect("a new browser");
    assert_ne!(again, chromium);
}
