//! `[llm.router]`: the models a client hands some of its requests to (OpenHands'
//! `multimodal_router`, plus a fallback). A request whose messages carry an image goes to the
//! `vision` model; a request the main model refuses as over its context window goes to the
//! `fallback` model, and so does every later one (the history does not shrink back below the
//! window by itself). Each target is a client of its own with its own metrics (the registry's
//! `llm_for_routing.{name}` services); a routed completion reports the accumulated cost of all.

use std::sync::atomic::{AtomicBool, Ordering};

use protocol::llm::{Content, ContentPart, Message, Tool};

use super::config::RouterConfig;
use super::{Completion, Llm, LlmError};

/// The router of one client.
pub(super) struct Router {
    pub(super) vision: Option<Llm>,
    fallback: Option<Llm>,
    /// The main model's context window was exceeded: the fallback takes every request.
    fell_back: AtomicBool,
}

impl Router {
    pub(super) fn new(config: &RouterConfig) -> Result<Router, LlmError> {
        let make = |config: &Option<Box<super::LlmConfig>>| -> Result<Option<Llm>, LlmError> {
            match config {
                Some(config) => {
                    let mut config = (**config).clone();
                    // A target routes nothing further.
                    config.router = None;
                    Llm::new(config).map(Some)
                }
                None => Ok(None),
            }
        };
        Ok(Router {
            vision: make(&config.vision)?,
            fallback: make(&config.fallback)?,
            fell_back: AtomicBool::new(false),
        })
    }

    /// The targets by name.
    pub(super) fn targets(&self) -> Vec<(&'static str, Llm)> {
        let mut targets = Vec::new();
        if let Some(vision) = &self.vision {
            targets.push(("vision", vision.clone()));
        }
        if let Some(fallback) = &self.fallback {
            targets.push(("fallback", fallback.clone()));
        }
        targets
    }

    /// A completion by the model that should answer it.
    pub(super) async fn completion(
        &self,
        main: &Llm,
        messages: Vec<Message>,
        tools: &[Tool],
    ) -> Result<Completion, LlmError> {
        let mut completion = match (&self.vision, &self.fallback) {
            (Some(vision), _) if carries_images(&messages) => {
                tracing::debug!(model = vision.model(), "routed: the request carries images");
                with_settings(vision, main)
                    .complete(messages, tools)
                    .await?
            }
            (_, Some(fallback)) if self.fell_back.load(Ordering::Relaxed) => {
                with_settings(fallback, main)
                    .complete(messages, tools)
                    .await?
            }
            (_, Some(fallback)) => match main.complete(messages.clone(), tools).await {
                Err(e) if e.is_context_window_exceeded() => {
                    tracing::warn!(
                        from = main.model(),
                        to = fallback.model(),
                        "the prompt exceeds the model's context window; routed to the fallback model"
                    );
                    self.fell_back.store(true, Ordering::Relaxed);
                    with_settings(fallback, main)
                        .complete(messages, tools)
                        .await?
                }
                other => other?,
            },
            _ => main.complete(messages, tools).await?,
        };
        completion.metrics.accumulated_cost = main.metrics().accumulated_cost
            + self
                .targets()
                .iter()
                .map(|(_, llm)| llm.metrics().accumulated_cost)
                .sum::<f64>();
        Ok(completion)
    }
}

/// `target` with `main`'s secret mask and retry listener.
fn with_settings(target: &Llm, main: &Llm) -> Llm {
    let mut target = target.clone();
    target.mask = main.mask.clone();
    target.listener = main.listener.clone();
    target
}

/// Whether a message has an image part.
fn carries_images(messages: &[Message]) -> bool {
    messages.iter().any(|m| {
        matches!(&m.content, Some(Content::Parts(parts))
            if parts.iter().any(|p| matches!(p, ContentPart::ImageUrl { .. })))
    })
}
