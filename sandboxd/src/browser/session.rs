//! One running Chromium: its process group, its DevTools connection, its tabs, and what is done
//! in them (navigation, input, the observation's parts).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::cdp::{Cdp, CdpError, Event, items, text_at};
use super::scripts;
use super::{BrowserConfig, Viewport};
use crate::child::{self, ChildSpec, Group};

/// How long Chromium may take to answer its first command.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long, after an input action, a navigation it caused has to show up.
const SETTLE_GRACE: Duration = Duration::from_millis(30);

/// Playwright's message for a command to a page or browser that is gone.
pub(crate) const CLOSED: &str = "Error: Target page, context or browser has been closed";

/// A tab: its target and the DevTools session attached to it.
#[derive(Debug, Clone)]
struct Tab {
    target: String,
    session: String,
}

/// What a page shows, read after a step.
#[derive(Debug, Default)]
pub(crate) struct PageState {
    pub(crate) url: String,
    pub(crate) open_pages_urls: Vec<String>,
    pub(crate) active_page_index: i64,
    pub(crate) focused_element_bid: String,
    /// The accessibility tree's nodes, each with its `browsergym_id`.
    pub(crate) ax_nodes: Vec<Value>,
    pub(crate) clickable: HashSet<String>,
    /// Per bid: `{visibility, bbox, clickable, set_of_marks}`.
    pub(crate) extra_properties: serde_json::Map<String, Value>,
    pub(crate) dom_snapshot: Value,
}

/// A running browser.
#[derive(Debug)]
pub(crate) struct Session {
    cdp: Cdp,
    group: Group,
    tabs: Vec<Tab>,
    active: usize,
    viewport: Viewport,
    /// Chromium's profile, removed with the session.
    _profile: tempfile::TempDir,
}

impl Session {
    /// Starts Chromium headless with its DevTools on a pipe, as the sandbox user, in its own
    /// process group, and attaches to its first tab.
    pub(crate) async fn launch(config: &BrowserConfig, cwd: &Path) -> Result<Session, String> {
        let profile = profile_dir(config)?;
        let profile_arg = format!("--user-data-dir={}", profile.path().display());
        let window = format!(
            "--window-size={},{}",
            config.viewport.width, config.viewport.height
        );
        // `sh` gives Chromium the pipe on fds 3 (commands) and 4 (answers), the ends
        // `--remote-debugging-pipe` speaks on, and nothing on its stdin and stdout.
        let mut args: Vec<&str> = vec![
            "-c",
            r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null"#,
            config.chromium.as_str(),
            "--headless",
            "--remote-debugging-pipe",
            // The sandbox is the isolation boundary; Chromium's own sandbox needs user
            // namespaces, which hardened containers do not grant.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-features=Translate,MediaRouter,OptimizationHints",
            "--password-store=basic",
            "--mute-audio",
            "--hide-scrollbars",
            profile_arg.as_str(),
            window.as_str(),
        ];
        args.push("about:blank");
        let spawned = child::spawn(&ChildSpec {
            program: "sh",
            args: &args,
            run_as: config.run_as.as_ref(),
            cwd,
            env: &config.env,
            piped: true,
            what: "browser",
        })
        .map_err(|e| format!("cannot start {}: {e}", config.chromium))?;
        let child::Child {
            mut group,
            stdin,
            stdout,
            mut stderr,
        } = spawned;
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err("the browser has no DevTools pipe".to_owned());
        };
        let cdp = Cdp::new(stdin, stdout);
        let first = tokio::select! {
            answer = tokio::time::timeout(START_TIMEOUT, cdp.call(None, "Browser.getVersion", json!({}))) => answer,
            status = group.exited() => {
                let err = stderr.finished().await;
                return Err(format!("{} exited ({status}) as it started: {}", config.chromium, last_lines(&err)));
            }
        };
        match first {
            Ok(Ok(version)) => {
                let product = version
                    .get("product")
                    .and_then(|p| p.as_str())
                    .unwrap_or("");
                tracing::info!(pid = group.pid, product, "browser started");
            }
            Ok(Err(e)) => return Err(format!("the browser did not answer: {e}")),
            Err(_) => {
                return Err(format!(
                    "the browser did not answer within {START_TIMEOUT:?}"
                ));
            }
        }
        let mut session = Session {
            cdp,
            group,
            tabs: Vec::new(),
            active: 0,
            viewport: config.viewport,
            _profile: profile,
        };
        let downloads = cwd.join(".downloads");
        let _ = session
            .cdp
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({"behavior": "allow", "downloadPath": downloads.to_string_lossy()}),
            )
            .await;
        let targets = session.page_targets().await.map_err(|e| e.to_string())?;
        match targets.first() {
            Some((target, _)) => session.attach(target).await,
            None => session.new_tab().await,
        }
        .map_err(|e| format!("cannot open a tab: {e}"))?;
        Ok(session)
    }

    /// Whether the browser still runs and its connection is open.
    pub(crate) fn is_alive(&self) -> bool {
        self.cdp.is_open() && self.group.exit_status().is_none()
    }

    /// Whether the browser answers a command now (a browser killed a moment ago may not have
    /// been noticed yet).
    pub(crate) async fn answers(&self) -> bool {
        let probe = self.cdp.call(None, "Browser.getVersion", json!({}));
        self.is_alive()
            && matches!(
                tokio::time::timeout(Duration::from_secs(5), probe).await,
                Ok(Ok(_))
            )
    }

    /// Chromium's process id (its group's).
    pub(crate) fn pid(&self) -> i32 {
        self.group.pid
    }

    /// Events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.cdp.subscribe()
    }

    fn tab(&self) -> Result<&Tab, String> {
        self.tabs.get(self.active).ok_or_else(|| CLOSED.to_owned())
    }

    /// A command to the active tab.
    async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let tab = self.tab()?;
        self.cdp
            .call(Some(&tab.session), method, params)
            .await
            .map_err(describe)
    }

    /// Evaluates `expression` in the active tab; its value.
    pub(crate) async fn eval(&self, expression: &str) -> Result<Value, String> {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        js_result(answer)
    }

    async fn page_targets(&self) -> Result<Vec<(String, String)>, CdpError> {
        let answer = self.cdp.call(None, "Target.getTargets", json!({})).await?;
        Ok(items(&answer, "targetInfos")
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("page"))
            .filter_map(|t| {
                Some((
                    t.get("targetId")?.as_str()?.to_owned(),
                    t.get("url")?.as_str()?.to_owned(),
                ))
            })
            .collect())
    }

    /// Attaches to `target` and makes it the active tab.
    async fn attach(&mut self, target: &str) -> Result<(), CdpError> {
        let answer = self
            .cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .await?;
        let session = text_at(&answer, "sessionId");
        self.cdp
            .call(Some(&session), "Page.enable", json!({}))
            .await?;
        let _ = self
            .cdp
            .call(
                Some(&session),
                "Emulation.setDeviceMetricsOverride",
                json!({"width": self.viewport.width, "height": self.viewport.height,
                       "deviceScaleFactor": 1, "mobile": false}),
            )
            .await;
        self.tabs.push(Tab {
            target: target.to_owned(),
            session,
        });
        self.active = self.tabs.len() - 1;
        Ok(())
    }

    /// Opens a blank tab and makes it active (`new_tab()`).
    pub(crate) async fn new_tab(&mut self) -> Result<(), CdpError> {
        let answer = self
            .cdp
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .await?;
        let target = text_at(&answer, "targetId");
        self.attach(&target).await
    }

    /// Closes the active tab (`tab_close()`); the last one left becomes active, and closing
    /// the only tab leaves a blank one.
    pub(crate) async fn close_tab(&mut self) -> Result<(), String> {
        let tab = self.tab()?.clone();
        self.cdp
            .call(None, "Target.closeTarget", json!({"targetId": tab.target}))
            .await
            .map_err(describe)?;
        self.tabs.remove(self.active);
        if self.tabs.is_empty() {
            self.new_tab().await.map_err(describe)?;
        }
        self.active = self.tabs.len() - 1;
        Ok(())
    }

    /// Makes tab `index` active (`tab_focus(index)`).
    pub(crate) async fn focus_tab(&mut self, index: i64) -> Result<(), String> {
        let len = i64::try_from(self.tabs.len()).unwrap_or(i64::MAX);
        let i = if index < 0 { index + len } else { index };
        let Some(i) = usize::try_from(i).ok().filter(|i| *i < self.tabs.len()) else {
            return Err("IndexError: list index out of range".to_owned());
        };
        self.active = i;
        let target = self.tabs[i].target.clone();
        self.cdp
            .call(None, "Target.activateTarget", json!({"targetId": target}))
            .await
            .map_err(describe)?;
        Ok(())
    }

    /// Picks up tabs the page opened (the newest becomes active, as in BrowserGym) and forgets
    /// tabs it closed; answers the tabs' URLs.
    async fn sync_tabs(&mut self) -> Result<Vec<String>, String> {
        let targets = self.page_targets().await.map_err(describe)?;
        let open: HashSet<&str> = targets.iter().map(|(t, _)| t.as_str()).collect();
        let active = self.tab().ok().map(|t| t.target.clone());
        self.tabs.retain(|t| open.contains(t.target.as_str()));
        self.active = active
            .and_then(|a| self.tabs.iter().position(|t| t.target == a))
            .unwrap_or(self.tabs.len().saturating_sub(1));
        for (target, _) in &targets {
            if !self.tabs.iter().any(|t| &t.target == target) {
                self.attach(target).await.map_err(describe)?;
            }
        }
        if self.tabs.is_empty() {
            self.new_tab().await.map_err(describe)?;
        }
        let urls: HashMap<&str, &str> = targets
            .iter()
            .map(|(t, u)| (t.as_str(), u.as_str()))
            .collect();
        Ok(self
            .tabs
            .iter()
            .map(|t| {
                urls.get(t.target.as_str())
                    .copied()
                    .unwrap_or("about:blank")
                    .to_owned()
            })
            .collect())
    }

    /// `goto(url)`: navigates the active tab and waits for the page's load event, until
    /// `deadline` at most.
    pub(crate) async fn goto(&self, url: &str, deadline: Instant) -> Result<(), String> {
        let mut events = self.subscribe();
        let started = Instant::now();
        let navigate = self.call("Page.navigate", json!({"url": url}));
        let answer = match tokio::time::timeout_at(deadline, navigate).await {
            Ok(answer) => answer?,
            Err(_) => return Err(self.timed_out("page.goto", started).await),
        };
        if let Some(error) = answer.get("errorText").and_then(Value::as_str) {
            return Err(format!("Error: page.goto: {error} at {url}"));
        }
        if answer.get("loaderId").is_none() {
            return Ok(());
        }
        if self.wait_loaded(&mut events, true, deadline).await.is_err() {
            return Err(self.timed_out("page.goto", started).await);
        }
        Ok(())
    }

    /// Stops loading and describes the timeout as Playwright does.
    async fn timed_out(&self, what: &str, started: Instant) -> String {
        let _ = self.call("Page.stopLoading", json!({})).await;
        format!(
            "TimeoutError: {what}: Timeout {}ms exceeded.",
            started.elapsed().as_millis()
        )
    }

    /// After an input action: waits until a navigation it caused (if one shows up within
    /// [`SETTLE_GRACE`]) has loaded, until `deadline` at most. A page that keeps loading is
    /// not an error of the action: it is observed as it is.
    pub(crate) async fn settle(&self, events: &mut broadcast::Receiver<Event>, deadline: Instant) {
        let _ = self.wait_loaded(events, false, deadline).await;
    }

    /// Waits for the active tab's main frame to stop loading; `loading` says it has started.
    /// Without a start within [`SETTLE_GRACE`], returns at once.
    async fn wait_loaded(
        &self,
        events: &mut broadcast::Receiver<Event>,
        mut loading: bool,
        deadline: Instant,
    ) -> Result<(), ()> {
        let Ok(tab) = self.tab() else { return Ok(()) };
        let grace = Instant::now() + SETTLE_GRACE;
        loop {
            let until = if loading {
                deadline
            } else {
                grace.min(deadline)
            };
            let event = match tokio::time::timeout_at(until, events.recv()).await {
                Ok(Ok(event)) => event,
                Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
                Ok(Err(broadcast::error::RecvError::Closed)) => return Ok(()),
                Err(_) if loading => return Err(()),
                Err(_) => return Ok(()),
            };
            if event.session.as_deref() != Some(tab.session.as_str()) {
                continue;
            }
            let main_frame =
                event.params.get("frameId").and_then(Value::as_str) == Some(tab.target.as_str());
            match event.method.as_str() {
                "Page.frameRequestedNavigation" | "Page.frameStartedLoading" if main_frame => {
                    loading = true;
                }
                "Page.loadEventFired" if loading => return Ok(()),
                "Page.frameStoppedLoading" if main_frame && loading => return Ok(()),
                _ => {}
            }
        }
    }

    /// `go_back()` / `go_forward()`: nothing when there is no such entry.
    pub(crate) async fn history(&self, step: i64, deadline: Instant) -> Result<(), String> {
        let history = self.call("Page.getNavigationHistory", json!({})).await?;
        let current = history
            .get("currentIndex")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let entries = history
            .get("entries")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(entry) = usize::try_from(current + step)
            .ok()
            .and_then(|i| entries.get(i))
        else {
            return Ok(());
        };
        let mut events = self.subscribe();
        self.call(
            "Page.navigateToHistoryEntry",
            json!({"entryId": entry.get("id").cloned().unwrap_or_default()}),
        )
        .await?;
        self.settle(&mut events, deadline).await;
        Ok(())
    }

    /// The element with `bid`, as a remote object id; BrowserGym's error when there is none.
    pub(crate) async fn element(&self, bid: &str) -> Result<String, String> {
        let expression = scripts::FIND_ELEMENT.replace("__BID__", &Value::from(bid).to_string());
        let answer = self
            .call("Runtime.evaluate", json!({"expression": expression}))
            .await?;
        answer
            .pointer("/result/objectId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("ValueError: Could not find element with bid \"{bid}\""))
    }

    /// Calls `function` (JavaScript, `this` = the element) with `args`; its value.
    pub(crate) async fn call_on(
        &self,
        object: &str,
        function: &str,
        args: &[Value],
    ) -> Result<Value, String> {
        let arguments: Vec<Value> = args.iter().map(|a| json!({"value": a})).collect();
        let answer = self
            .call(
                "Runtime.callFunctionOn",
                json!({"objectId": object, "functionDeclaration": function,
                       "arguments": arguments, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        js_result(answer)
    }

    /// Scrolls the element into view; the viewport coordinates of its centre.
    pub(crate) async fn center(&self, object: &str) -> Result<(f64, f64), String> {
        let v = self.call_on(object, scripts::CENTER, &[]).await?;
        let n = |i: usize| v.get(i).and_then(Value::as_f64).unwrap_or(0.0);
        if n(2) < 1.0 || n(3) < 1.0 {
            return Err("Error: Element is not visible".to_owned());
        }
        Ok((n(0), n(1)))
    }

    /// A mouse event at (x, y).
    pub(crate) async fn mouse(
        &self,
        kind: &str,
        at: (f64, f64),
        extra: Value,
    ) -> Result<(), String> {
        let mut params = json!({"type": kind, "x": at.0, "y": at.1});
        if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
            p.extend(extra);
        }
        self.call("Input.dispatchMouseEvent", params)
            .await
            .map(drop)
    }

    /// A key event.
    pub(crate) async fn key(&self, params: Value) -> Result<(), String> {
        self.call("Input.dispatchKeyEvent", params).await.map(drop)
    }

    /// Types `text` where the focus is.
    pub(crate) async fn insert_text(&self, text: &str) -> Result<(), String> {
        self.call("Input.insertText", json!({"text": text}))
            .await
            .map(drop)
    }

    /// Sets the files of an `<input type=file>`.
    pub(crate) async fn set_files(&self, object: &str, files: &[String]) -> Result<(), String> {
        self.call(
            "DOM.setFileInputFiles",
            json!({"objectId": object, "files": files}),
        )
        .await
        .map(drop)
    }

    /// The viewport's size.
    pub(crate) fn viewport(&self) -> Viewport {
        self.viewport
    }

    /// The active tab's HTML.
    pub(crate) async fn html(&self) -> Result<String, String> {
        let v = self
            .eval("document.documentElement ? document.documentElement.outerHTML : ''")
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// A PNG of the viewport, base64.
    pub(crate) async fn screenshot(&self) -> Result<String, String> {
        let answer = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "optimizeForSpeed": true}),
            )
            .await?;
        Ok(text_at(&answer, "data"))
    }

    /// The screenshot with the bids of `bids` drawn over their elements.
    pub(crate) async fn set_of_marks(&self, bids: &[String]) -> Result<String, String> {
        let draw = scripts::DRAW_MARKS.replace("__BIDS__", &json!(bids).to_string());
        self.eval(&draw).await?;
        let shot = self.screenshot().await;
        let _ = self.eval(scripts::REMOVE_MARKS).await;
        shot
    }

    /// The tabs, URL and focus, and with `tree` the accessibility tree with bids and the DOM
    /// snapshot's properties.
    pub(crate) async fn read_state(&mut self, tree: bool) -> Result<PageState, String> {
        let open_pages_urls = self.sync_tabs().await?;
        let focused = self.eval(scripts::MARK_ELEMENTS).await.unwrap_or_default();
        let url = self
            .eval("location.href")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut state = PageState {
            url,
            active_page_index: i64::try_from(self.active).unwrap_or(-1),
            open_pages_urls,
            focused_element_bid: focused.as_str().unwrap_or_default().to_owned(),
            ..PageState::default()
        };
        if !tree {
            return Ok(state);
        }
        let snapshot = self
            .call(
                "DOMSnapshot.captureSnapshot",
                json!({"computedStyles": [], "includeDOMRects": true}),
            )
            .await?;
        let elements = snapshot_elements(&snapshot);
        let mut ax = self.call("Accessibility.getFullAXTree", json!({})).await?;
        let mut nodes = match ax.get_mut("nodes").map(Value::take) {
            Some(Value::Array(nodes)) => nodes,
            _ => Vec::new(),
        };
        let bids: HashMap<i64, String> = elements
            .iter()
            .map(|e| (e.backend_id, e.bid.clone()))
            .collect();
        super::axtree::attach_bids(&mut nodes, &bids);
        for e in &elements {
            if e.clickable {
                state.clickable.insert(e.bid.clone());
            }
            let visible = e.bounds.is_some_and(|b| b[2] > 0.0 && b[3] > 0.0);
            state.extra_properties.insert(
                e.bid.clone(),
                json!({"visibility": if visible { 1.0 } else { 0.0 },
                       "bbox": e.bounds.map(|b| json!(b)),
                       "clickable": e.clickable,
                       "set_of_marks": e.clickable && visible}),
            );
        }
        state.ax_nodes = nodes;
        state.dom_snapshot = snapshot;
        Ok(state)
    }
}

/// An element of a DOM snapshot that has a bid.
struct SnapshotElement {
    backend_id: i64,
    bid: String,
    clickable: bool,
    bounds: Option<[f64; 4]>,
}

/// The elements with bids in a `DOMSnapshot.captureSnapshot` answer (every document).
fn snapshot_elements(snapshot: &Value) -> Vec<SnapshotElement> {
    let strings: Vec<&str> = items(snapshot, "strings")
        .map(|s| s.as_str().unwrap_or_default())
        .collect();
    let string = |v: &Value| {
        v.as_u64()
            .and_then(|i| strings.get(usize::try_from(i).ok()?))
            .copied()
    };
    let mut out = Vec::new();
    for doc in items(snapshot, "documents") {
        let nodes = &doc["nodes"];
        let backend = nodes["backendNodeId"].as_array();
        let attributes = nodes["attributes"].as_array();
        let clickable: HashSet<u64> = nodes["isClickable"]["index"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .collect();
        let mut bounds: HashMap<u64, [f64; 4]> = HashMap::new();
        let layout = &doc["layout"];
        if let (Some(index), Some(rects)) =
            (layout["nodeIndex"].as_array(), layout["bounds"].as_array())
        {
            for (i, r) in index.iter().zip(rects) {
                let n = |k: usize| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                if let Some(i) = i.as_u64() {
                    bounds.insert(i, [n(0), n(1), n(2), n(3)]);
                }
            }
        }
        let (Some(backend), Some(attributes)) = (backend, attributes) else {
            continue;
        };
        for (i, (id, attrs)) in backend.iter().zip(attributes).enumerate() {
            let attrs: Vec<&Value> = attrs.as_array().into_iter().flatten().collect();
            let bid = attrs
                .chunks(2)
                .find(|pair| pair.first().and_then(|n| string(n)) == Some("bid"))
                .and_then(|pair| pair.get(1).and_then(|v| string(v)));
            let (Some(bid), Some(id)) = (bid, id.as_i64()) else {
                continue;
            };
            let i = i as u64;
            out.push(SnapshotElement {
                backend_id: id,
                bid: bid.to_owned(),
                clickable: clickable.contains(&i),
                bounds: bounds.get(&i).copied(),
            });
        }
    }
    out
}

/// The value of a `Runtime.evaluate` or `callFunctionOn` answer, or the page's exception.
fn js_result(answer: Value) -> Result<Value, String> {
    if let Some(exception) = answer.get("exceptionDetails") {
        let text = exception
            .pointer("/exception/description")
            .and_then(Value::as_str)
            .or_else(|| exception.get("text").and_then(Value::as_str))
            .unwrap_or("the page threw an exception");
        return Err(format!("Error: {text}"));
    }
    Ok(answer
        .pointer("/result/value")
        .cloned()
        .unwrap_or(Value::Null))
}

/// A failed DevTools command as the agent reads it.
fn describe(e: CdpError) -> String {
    match e {
        CdpError::Closed => CLOSED.to_owned(),
        CdpError::Protocol { method, message } => format!("Error: {method}: {message}"),
    }
}

fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// A private profile directory owned by the sandbox user.
fn profile_dir(config: &BrowserConfig) -> Result<tempfile::TempDir, String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("sandboxd-browser-")
        .tempdir()
        .map_err(|e| format!("cannot create the browser's profile directory: {e}"))?;
    let setup = || -> std::io::Result<()> {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        if let Some(user) = &config.run_as {
            std::os::unix::fs::chown(dir.path(), Some(user.uid), Some(user.gid))?;
        }
        Ok(())
    };
    setup().map_err(|e| format!("cannot prepare {}: {e}", dir.path().display()))?;
    Ok(dir)
}
