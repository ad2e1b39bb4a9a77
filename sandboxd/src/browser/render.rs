//! The `browse` observation as the reference writes it (docs/protocol.md §14): the extras, and
//! the text the agent reads (`openhands/runtime/browser/utils.py`).

use protocol::action::BrowseInteractiveArgs;
use protocol::observation::BrowserOutputExtras;
use protocol::{Observation, ObservationKind};
use serde_json::Value;

use super::actions::Outcome;
use super::axtree;
use super::session::{PageState, Session};

/// A page after a step.
#[derive(Debug)]
pub(crate) struct Page {
    state: PageState,
    screenshot: String,
    set_of_marks: String,
}

/// Reads the page: tabs, URL, focus, the tree (with `tree`), a screenshot, and with `marks`
/// the set-of-marks screenshot.
pub(crate) async fn observe(
    session: &mut Session,
    tree: bool,
    marks: bool,
) -> Result<Page, String> {
    let state = session.read_state(tree).await?;
    let screenshot = session.screenshot().await.unwrap_or_default();
    let set_of_marks = if marks {
        let bids: Vec<String> = state
            .extra_properties
            .iter()
            .filter(|(_, p)| p.get("set_of_marks").and_then(Value::as_bool) == Some(true))
            .map(|(bid, _)| bid.clone())
            .collect();
        session.set_of_marks(&bids).await.unwrap_or_default()
    } else {
        String::new()
    };
    Ok(Page {
        state,
        screenshot,
        set_of_marks,
    })
}

fn data_url(png: &str) -> String {
    if png.is_empty() {
        String::new()
    } else {
        format!("data:image/png;base64,{png}")
    }
}

fn extras(page: &Page, trigger: &str, error: &str, with_tree: bool) -> BrowserOutputExtras {
    let state = &page.state;
    let mut extras = BrowserOutputExtras {
        url: state.url.clone(),
        trigger_by_action: trigger.to_owned(),
        screenshot: data_url(&page.screenshot),
        set_of_marks: data_url(&page.set_of_marks),
        error: !error.is_empty(),
        open_pages_urls: state.open_pages_urls.clone(),
        active_page_index: state.active_page_index,
        last_browser_action_error: error.to_owned(),
        focused_element_bid: state.focused_element_bid.clone(),
        ..BrowserOutputExtras::default()
    };
    if with_tree {
        extras.axtree_object = serde_json::json!({"nodes": state.ax_nodes});
        extras.dom_object = state.dom_snapshot.clone();
        extras.extra_element_properties = Value::Object(state.extra_properties.clone());
    }
    extras
}

fn observation(extras: BrowserOutputExtras, content: String) -> Observation {
    Observation {
        message: format!("Visited {}", extras.url),
        ..Observation::new(ObservationKind::Browse(extras), content)
    }
}

fn error_block(when: &str, error: &str) -> String {
    format!(
        "================ BEGIN error message ===============\nThe following error occurred when {when}:\n{error}\n================ END error message ===============\n"
    )
}

/// The answer to `browse`: the page's Markdown.
pub(crate) fn browse(
    page: Page,
    asked: &str,
    error: Option<String>,
    markdown: &str,
    return_axtree: bool,
) -> Observation {
    let error = error.unwrap_or_default();
    let mut extras = extras(&page, "browse", &error, return_axtree);
    if !error.is_empty() && extras.url.is_empty() {
        extras.url = asked.to_owned();
    }
    extras.last_browser_action = format!("goto({})", sandbox_common::py_repr_str(asked));
    let mut text = format!("[Current URL: {}]\n", extras.url);
    if !error.is_empty() {
        text.push_str(&error_block("trying to visit the URL", &error));
    }
    text.push_str("============== BEGIN webpage content ==============\n");
    text.push_str(markdown);
    text.push_str("\n============== END webpage content ==============\n");
    observation(extras, text)
}

/// The answer to `browse_interactive`: the accessibility tree with bids.
pub(crate) fn interactive(
    page: Page,
    args: &BrowseInteractiveArgs,
    outcome: Outcome,
) -> Observation {
    let tree = axtree::flatten(&page.state.ax_nodes, &page.state.clickable);
    let mut extras = extras(
        &page,
        "browse_interactive",
        &outcome.error,
        args.return_axtree,
    );
    extras.last_browser_action = args.browser_actions.clone();
    let mut text = format!(
        "[Current URL: {}]\n[Focused element bid: {}]\n\n",
        extras.url, extras.focused_element_bid
    );
    if outcome.error.is_empty() {
        text.push_str("[Action executed successfully.]\n");
    } else {
        text.push_str(&error_block("executing the last action", &outcome.error));
    }
    text.push_str(
        "Accessibility tree of the COMPLETE webpage:\nNote: [bid] is the unique alpha-numeric identifier at the beginning of lines for each element in the AXTree. Always use bid to refer to elements in your actions.\n============== BEGIN accessibility tree ==============\n",
    );
    text.push_str(&tree);
    text.push_str("\n============== END accessibility tree ==============\n");
    observation(extras, text)
}

/// The page's HTML as Markdown, as the reference's `html2text` writes it for agents: links
/// kept, images, scripts, styles and the head left out.
pub(crate) fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "script", "style", "noscript", "img", "svg", "template",
        ])
        .build();
    match converter.convert(html) {
        Ok(text) => text,
        Err(e) => format!("[Error converting the page to Markdown: {e}]"),
    }
}
