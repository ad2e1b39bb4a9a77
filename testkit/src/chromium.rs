//! [`Chromium`]: a real headless Chromium (Debian's `chromium`) a test drives over the DevTools
//! protocol, to test a web page as a person's browser runs it: navigate, evaluate JavaScript in
//! the page (to read what it shows, type and click), wait for a condition, take a screenshot.
//!
//! The browser runs in a process group of its own, with a throw-away profile, and is killed
//! with its group and reaped when dropped. It talks to nothing but the pages the test opens.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

type Pending = std::sync::Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// A headless Chromium with one page open; see the module documentation.
#[derive(Debug)]
pub struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    commands: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: u64,
    session: String,
}

/// The browser binary: `CHROMIUM` if set, else `chromium` on the PATH.
pub fn chromium_binary() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".to_string())
}

impl Chromium {
    /// Starts the browser and opens one blank page. `Err` says why it could not (no browser
    /// installed, no DevTools address).
    pub async fn start() -> Result<Chromium, String> {
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut command = Command::new(chromium_binary());
        command
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-extensions",
                "--window-size=1280,900",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", chromium_binary()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        // The first line that names the DevTools address; the rest of stderr is drained so the
        // browser never blocks on a full pipe.
        let (found, address) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("DevTools listening on ").nth(1)
                    && let Some(found) = found.take()
                {
                    let _ = found.send(url.trim().to_string());
                }
            }
        });
        let url = match address.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => url,
            Err(_) => {
                kill_group(&mut child);
                return Err("chromium did not print its DevTools address within 60 s".to_string());
            }
        };
        let (socket, _) = tokio_tungstenite::connect_async(&url)
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        let (mut sink, mut stream) = socket.split();
        let (commands, mut outgoing) = mpsc::unbounded_channel::<String>();
        let pending: Pending = Default::default();
        tokio::spawn(async move {
            while let Some(text) = outgoing.recv().await {
                if sink.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
        });
        let answers = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if let Some(id) = value["id"].as_u64()
                    && let Some(answer) = answers
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .remove(&id)
                {
                    let _ = answer.send(value);
                }
            }
        });
        let mut browser = Chromium {
            child,
            _profile: profile,
            commands,
            pending,
            next_id: 0,
            session: String::new(),
        };
        let target = browser
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await?;
        let target_id = target["targetId"]
            .as_str()
            .ok_or("no targetId")?
            .to_string();
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await?;
        browser.session = attached["sessionId"]
            .as_str()
            .ok_or("no sessionId")?
            .to_string();
        browser.call("Page.enable", json!({})).await?;
        browser.call("Runtime.enable", json!({})).await?;
        Ok(browser)
    }

    /// Sends a DevTools command (to the page once one is attached) and returns its `result`.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let (answer, answered) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, answer);
        self.commands
            .send(message.to_string())
            .map_err(|_| "the DevTools connection is closed")?;
        let value = tokio::time::timeout(Duration::from_secs(60), answered)
            .await
            .map_err(|_| format!("{method}: no answer within 60 s"))?
            .map_err(|_| format!("{method}: the DevTools connection closed"))?;
        if let Some(error) = value.get("error") {
            return Err(format!("{method}: {error}"));
        }
        Ok(value["result"].clone())
    }

    /// Opens `url` in the page.
    pub async fn goto(&mut self, url: &str) -> Result<(), String> {
        self.call("Page.navigate", json!({"url": url})).await?;
        self.wait_for("document.readyState === 'complete'").await
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(format!("{expression}: {exception}"));
        }
        Ok(result["result"]["value"].clone())
    }

    /// Waits (up to 60 s, polling every 50 ms) until `condition`, a JavaScript expression, is
    /// true in the page.
    pub async fn wait_for(&mut self, condition: &str) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if self.eval(condition).await.ok() == Some(Value::Bool(true)) {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("waited 60 s for {condition}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Saves a PNG screenshot of the page to `path`.
    pub async fn screenshot(&mut self, path: &Path) -> Result<(), String> {
        use base64::Engine as _;
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await?;
        let data = shot["data"].as_str().ok_or("no screenshot data")?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| e.to_string())?;
        std::fs::write(path, png).map_err(|e| e.to_string())
    }
}

fn kill_group(child: &mut Child) {
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
    let _ = child.wait();
}

impl Drop for Chromium {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}
