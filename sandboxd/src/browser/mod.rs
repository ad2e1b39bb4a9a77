//! The browser behind `browse` and `browse_interactive` (docs/protocol.md §14): Chromium from
//! the image, started on first use, headless, as the sandbox user and in its own process group,
//! driven over the DevTools protocol on a pipe (`cdp`), and started again when it died.
//!
//! One step at a time runs in the browser (its own lock: bash, IPython and file actions never
//! wait for it); each runs in a task of its own, so a caller that goes away does not cut a step
//! in half. `lang` reads BrowserGym's action language, `actions` runs it, `axtree` renders the
//! accessibility tree, `render` writes the observation's text as the reference does.

mod actions;
mod axtree;
mod cdp;
mod lang;
mod render;
mod scripts;
mod session;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use protocol::Observation;
use protocol::action::{BrowseInteractiveArgs, BrowseUrlArgs};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::observations;
use crate::user::RunAs;
use session::Session;

/// The reference's limit on one step ("Browser environment took too long to respond.").
const STEP_TIMEOUT: Duration = Duration::from_secs(120);
/// Playwright's default navigation timeout.
const NAVIGATION_TIMEOUT: Duration = Duration::from_secs(30);
/// What the reference answers when there is no browser.
pub(crate) const UNSUPPORTED: &str = "Browser functionality is not supported or disabled.";

/// The page size (BrowserGym's default viewport).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Viewport {
    pub(crate) width: u32,
    pub(crate) height: u32,
}

/// How the browser is started.
#[derive(Debug, Clone)]
pub(crate) struct BrowserConfig {
    /// `--enable-browser` (default) or `--no-enable-browser`.
    pub(crate) enabled: bool,
    /// The Chromium program (`--chromium`, default `chromium` on `PATH`).
    pub(crate) chromium: String,
    /// The user it runs as.
    pub(crate) run_as: Option<RunAs>,
    /// Environment on top of sandboxd's own.
    pub(crate) env: BTreeMap<String, String>,
    /// Where it starts (downloads go to `.downloads` in it).
    pub(crate) working_dir: PathBuf,
    pub(crate) viewport: Viewport,
}

/// The browser: started on first use, one step at a time.
#[derive(Debug, Clone)]
pub(crate) struct Browser {
    config: Arc<BrowserConfig>,
    session: Arc<Mutex<Option<Session>>>,
}

impl Browser {
    pub(crate) fn new(config: BrowserConfig) -> Browser {
        Browser {
            config: Arc::new(config),
            session: Arc::default(),
        }
    }

    /// `browse`: opens `url` and answers its content as Markdown.
    pub(crate) async fn browse(&self, args: BrowseUrlArgs, timeout: Option<f64>) -> Observation {
        let url = normalize_url(&args.url);
        self.step(timeout, move |session, deadline| {
            Box::pin(async move {
                let nav_deadline = deadline.min(Instant::now() + NAVIGATION_TIMEOUT);
                let error = session.goto(&url, nav_deadline).await.err();
                let page = render::observe(session, args.return_axtree, false).await?;
                let markdown = match session.html().await {
                    Ok(html) => render::markdown(&html),
                    Err(e) => e,
                };
                Ok(render::browse(
                    page,
                    &url,
                    error,
                    &markdown,
                    args.return_axtree,
                ))
            })
        })
        .await
    }

    /// `browse_interactive`: runs the actions, then answers the page with its accessibility
    /// tree, screenshot and set of marks.
    pub(crate) async fn interact(
        &self,
        args: BrowseInteractiveArgs,
        timeout: Option<f64>,
    ) -> Observation {
        self.step(timeout, move |session, deadline| {
            Box::pin(async move {
                let outcome = actions::run(session, &args.browser_actions, deadline).await;
                let page = render::observe(session, true, true).await?;
                Ok(render::interactive(page, &args, outcome))
            })
        })
        .await
    }

    /// Runs one step on a live browser (started or restarted first), in a task of its own,
    /// within the step's time.
    async fn step<F>(&self, timeout: Option<f64>, work: F) -> Observation
    where
        F: for<'a> FnOnce(
                &'a mut Session,
                Instant,
            ) -> std::pin::Pin<
                Box<dyn Future<Output = Result<Observation, String>> + Send + 'a>,
            > + Send
            + 'static,
    {
        if !self.config.enabled {
            return observations::error(UNSUPPORTED);
        }
        let limit = timeout
            .and_then(|t| sandbox_common::timeout_duration(t).ok())
            .filter(|t| !t.is_zero())
            .unwrap_or(STEP_TIMEOUT);
        let (config, slot) = (self.config.clone(), self.session.clone());
        let task = tokio::spawn(async move {
            let mut slot = slot.lock().await;
            let alive = match slot.as_ref() {
                Some(session) => session.answers().await,
                None => true,
            };
            if !alive {
                tracing::warn!("the browser died; starting it again");
                *slot = None;
            }
            if slot.is_none() {
                match Session::launch(&config, &config.working_dir).await {
                    Ok(session) => *slot = Some(session),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot start the browser");
                        return observations::error(format!("{UNSUPPORTED} ({e})"));
                    }
                }
            }
            let Some(session) = slot.as_mut() else {
                return observations::error(UNSUPPORTED);
            };
            let deadline = Instant::now() + limit;
            // A little past the deadline: the step's own waits end at it and still observe.
            let outcome =
                tokio::time::timeout_at(deadline + Duration::from_secs(5), work(session, deadline))
                    .await;
            let alive = session.is_alive();
            if !alive {
                tracing::warn!(pid = session.pid(), "the browser died during a step");
                *slot = None;
            }
            match outcome {
                Ok(Ok(obs)) => obs,
                Ok(Err(e)) if !alive => observations::error(format!(
                    "The browser exited during this action; it is started again for the next one. ({e})"
                )),
                Ok(Err(e)) => observations::error(format!("The browser action failed: {e}")),
                Err(_) => {
                    // Whatever it was waiting for may never come: start afresh next time.
                    *slot = None;
                    observations::error("Browser environment took too long to respond.")
                }
            }
        });
        task.await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "browser step failed");
            observations::error("The browser action failed unexpectedly.")
        })
    }
}

/// What `browse` navigates to: URLs with a scheme as given, an absolute path as a `file:`
/// URL, anything else as `http://` (the reference glued it to its own directory).
fn normalize_url(url: &str) -> String {
    let url = url.trim();
    let has_scheme = url.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !scheme.contains('.')
            && (url.contains("://") || matches!(scheme, "about" | "data" | "javascript"))
    });
    if has_scheme {
        url.to_owned()
    } else if url.starts_with('/') {
        format!("file://{url}")
    } else {
        format!("http://{url}")
    }
}

#[cfg(test)]
mod tests;
