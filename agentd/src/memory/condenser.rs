//! Condensers: what keeps an agent's view of a long history within the model's reach
//! (OpenHands V0's condensers), chosen by the `[condenser]` section of the settings
//! ([`CondenserConfig`]).
//!
//! A condenser gets the [`View`] of the history and returns either a (possibly transformed)
//! view to prompt with, or a `condensation` action ([`Condensed::Condensation`]). The agent
//! returns that action as its step's action instead of calling the model: the controller
//! records it in the event stream (it needs no observation), and the next step's view applies
//! it. So forgetting is recorded and survives a resume.
//!
//! - [`NoOp`]: the view as it is.
//! - [`RecentEvents`]: once the view is over `max_events` events or `max_tokens` estimated
//!   tokens, forgets the middle, keeping the first `keep_first` events and the newest ones, down
//!   to half of each limit (so that it condenses now and then, not at every step).
//! - [`ObservationMasking`]: a pure view transform; observations older than the newest
//!   `attention_window` events show [`MASKED`] instead of their content.
//! - [`LlmSummarizing`]: like recent events, but the LLM summarises what is forgotten (and the
//!   previous summary) and the summary is shown after the kept head.
//!
//! Forgetting never splits a model response from its tool results: the cut points move so that
//! an assistant's tool calls and their results are kept or forgotten together.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use protocol::action::CondensationArgs;
use protocol::observation::EmptyExtras;
use protocol::{Action, ActionKind, Event, EventSource, Observation, ObservationKind};
use serde::Deserialize;

use super::conversation::{ConversationMemory, content_text, response_key};
use super::render::truncate_content;
use super::tokens::{CHARS_PER_TOKEN, text_tokens};
use super::view::{View, is_user_message};
use crate::llm::{Llm, LlmError, Message};

/// What an old observation shows under [`ObservationMasking`].
pub(crate) const MASKED: &str = "<MASKED>";

/// What a condenser makes of a view.
#[derive(Debug, Clone)]
pub(crate) enum Condensed {
    /// Prompt with this view.
    View(View),
    /// Return this `condensation` action as the step's action (and do not call the model).
    Condensation(Box<Action>),
}

/// The future [`Condenser::condense`] returns.
pub type CondenseFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Condensed, CondenserError>> + Send + 'a>>;

/// Shrinks views.
pub(crate) trait Condenser: Send + std::fmt::Debug {
    /// The view to prompt with, or a condensation to record first.
    fn condense<'a>(&'a mut self, view: View) -> CondenseFuture<'a>;
}

/// Why a condenser could not be built or could not condense.
#[derive(Debug, thiserror::Error)]
pub enum CondenserError {
    /// The settings are inconsistent (or the LLM condenser has no LLM); retrying cannot help.
    #[error("condenser settings: {0}")]
    Config(String),
    /// The summarising call failed after the client's retries; a later step may succeed.
    #[error("summarising the history failed: {0}")]
    Llm(#[from] LlmError),
    /// The model's answer held no summary; asking again may help.
    #[error("the model returned an empty summary")]
    EmptySummary,
}

/// The `[condenser]` settings: `type` picks the condenser, the other keys are its settings.
///
/// ```toml
/// [condenser]
/// type = "recent"          # noop | recent | observation_masking | llm
/// keep_first = 1
/// max_events = 100
/// max_tokens = 60000       # optional
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CondenserConfig {
    /// Keep everything.
    #[default]
    #[serde(rename = "noop")]
    NoOp,
    /// [`RecentEvents`].
    Recent {
        /// Events kept at the start (the system and first user message).
        #[serde(default = "one")]
        keep_first: usize,
        /// Most events in the view before condensing.
        #[serde(default = "hundred")]
        max_events: usize,
        /// Most estimated tokens of the prompt before condensing.
        #[serde(default)]
        max_tokens: Option<usize>,
    },
    /// [`ObservationMasking`].
    ObservationMasking {
        /// Newest events whose observations stay whole.
        #[serde(default = "hundred")]
        attention_window: usize,
    },
    /// [`LlmSummarizing`].
    Llm {
        /// Events kept at the start, before the summary.
        #[serde(default = "one")]
        keep_first: usize,
        /// Most events in the view before condensing.
        #[serde(default = "hundred")]
        max_size: usize,
        /// Most estimated tokens of the prompt before condensing.
        #[serde(default)]
        max_tokens: Option<usize>,
        /// Longest text of one event in the summarising prompt (characters).
        #[serde(default = "ten_thousand")]
        max_event_length: usize,
    },
}

const fn one() -> usize {
    1
}
const fn hundred() -> usize {
    100
}
const fn ten_thousand() -> usize {
    10_000
}

impl CondenserConfig {
    /// Whether the condenser calls a model (and so needs one of its own: the run's
    /// `condenser` service).
    pub fn calls_model(&self) -> bool {
        matches!(self, CondenserConfig::Llm { .. })
    }

    /// The condenser these settings describe; `llm` is the model the LLM condenser summarises
    /// with (required for it, unused by the others). Token estimates use the default
    /// [`ConversationMemory`] rendering.
    pub(crate) fn build(&self, llm: Option<Llm>) -> Result<Box<dyn Condenser>, CondenserError> {
        let memory = ConversationMemory::default();
        Ok(match *self {
            CondenserConfig::NoOp => Box::new(NoOp),
            CondenserConfig::Recent {
                keep_first,
                max_events,
                max_tokens,
            } => {
                check_sizes(keep_first, max_events, max_tokens)?;
                Box::new(RecentEvents {
                    keep_first,
                    max_events,
                    max_tokens,
                    memory,
                })
            }
            CondenserConfig::ObservationMasking { attention_window } => {
                Box::new(ObservationMasking { attention_window })
            }
            CondenserConfig::Llm {
                keep_first,
                max_size,
                max_tokens,
                max_event_length,
            } => {
                check_sizes(keep_first, max_size, max_tokens)?;
                let llm = llm.ok_or_else(|| {
                    CondenserError::Config("the llm condenser needs an LLM to summarise".into())
                })?;
                Box::new(LlmSummarizing {
                    llm,
                    keep_first,
                    max_size,
                    max_tokens,
                    max_event_length,
                    memory,
                })
            }
        })
    }
}

fn check_sizes(
    keep_first: usize,
    max_events: usize,
    max_tokens: Option<usize>,
) -> Result<(), CondenserError> {
    if max_events == 0 || keep_first >= max_events / 2 {
        return Err(CondenserError::Config(format!(
            "keep_first ({keep_first}) must be less than half the event limit ({max_events})"
        )));
    }
    if max_tokens == Some(0) {
        return Err(CondenserError::Config("max_tokens must be positive".into()));
    }
    Ok(())
}

/// Keeps the view as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoOp;

impl Condenser for NoOp {
    fn condense<'a>(&'a mut self, view: View) -> CondenseFuture<'a> {
        Box::pin(std::future::ready(Ok(Condensed::View(view))))
    }
}

/// Forgets the middle of a view that grew over `max_events` events or `max_tokens` estimated
/// tokens (or when a condensation was requested), keeping the first `keep_first` events and the
/// newest ones: at most half of `max_events` in all, and of `max_tokens` estimated tokens.
#[derive(Debug, Clone)]
pub struct RecentEvents {
    /// Events kept at the start.
    pub(crate) keep_first: usize,
    /// Most events before condensing.
    pub(crate) max_events: usize,
    /// Most estimated prompt tokens before condensing.
    pub(crate) max_tokens: Option<usize>,
    /// The rendering the token estimates use.
    pub(crate) memory: ConversationMemory,
}

impl RecentEvents {
    /// The condensation for `view`, if it needs one.
    pub(crate) fn condensation(&self, view: &View) -> Option<Action> {
        if !over_limits(view, &self.memory, self.max_events, self.max_tokens) {
            return None;
        }
        let cut = plan_cut(
            view,
            &self.memory,
            self.keep_first,
            event_target(view, self.max_events),
            self.max_tokens.map(|t| t / 2),
            0,
        )?;
        tracing::info!(forgotten = cut.tail - cut.head, "forgetting old events");
        Some(condensation_action(view, cut, None))
    }
}

impl Condenser for RecentEvents {
    fn condense<'a>(&'a mut self, view: View) -> CondenseFuture<'a> {
        let condensed = match self.condensation(&view) {
            Some(action) => Condensed::Condensation(Box::new(action)),
            None => Condensed::View(view),
        };
        Box::pin(std::future::ready(Ok(condensed)))
    }
}

/// Shows [`MASKED`] instead of the content of observations older than the newest
/// `attention_window` events (summaries excepted). The masked observations keep their tool
/// metadata, so every tool call still has its result.
#[derive(Debug, Clone, Copy)]
pub struct ObservationMasking {
    /// Newest events whose observations stay whole.
    pub(crate) attention_window: usize,
}

impl ObservationMasking {
    /// `view` with its old observations masked.
    pub(crate) fn mask(&self, view: &View) -> View {
        let keep_from = view.len().saturating_sub(self.attention_window);
        let events = view
            .events()
            .iter()
            .enumerate()
            .map(|(i, event)| match event.as_ref() {
                Event::Observation(o)
                    if i < keep_from && !matches!(o.kind, ObservationKind::Condense(_)) =>
                {
                    Arc::new(Event::Observation(Observation {
                        kind: ObservationKind::Condense(EmptyExtras {}),
                        content: MASKED.to_string(),
                        ..o.clone()
                    }))
                }
                _ => event.clone(),
            })
            .collect();
        view.with_events(events)
    }
}

impl Condenser for ObservationMasking {
    fn condense<'a>(&'a mut self, view: View) -> CondenseFuture<'a> {
        Box::pin(std::future::ready(Ok(Condensed::View(self.mask(&view)))))
    }
}

/// Like [`RecentEvents`], but the forgotten events (and the previous summary) are summarised by
/// the LLM, and the summary is shown right after the kept head. The summary is cut to a quarter
/// of `max_tokens` when it is set.
#[derive(Debug, Clone)]
pub struct LlmSummarizing {
    /// The model that summarises.
    pub(crate) llm: Llm,
    /// Events kept at the start, before the summary.
    pub(crate) keep_first: usize,
    /// Most events before condensing.
    pub(crate) max_size: usize,
    /// Most estimated prompt tokens before condensing.
    pub(crate) max_tokens: Option<usize>,
    /// Longest text of one event in the prompt (characters).
    pub(crate) max_event_length: usize,
    /// The rendering the token estimates and event texts use.
    pub(crate) memory: ConversationMemory,
}

/// Which events of a view a rolling condenser keeps: `..head` and `tail..`; it forgets the
/// events between (a previous summary among them is replaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Events kept at the start.
    pub(crate) head: usize,
    /// Index of the first event kept at the end (`len` when none).
    pub(crate) tail: usize,
}

impl LlmSummarizing {
    /// Where to cut `view`, if it needs condensing.
    pub(crate) fn plan(&self, view: &View) -> Option<Cut> {
        if !over_limits(view, &self.memory, self.max_size, self.max_tokens) {
            return None;
        }
        plan_cut(
            view,
            &self.memory,
            self.keep_first,
            event_target(view, self.max_size),
            self.max_tokens.map(|t| t / 2),
            1,
        )
    }

    /// The summarising prompt for the events `cut` forgets.
    pub(crate) fn prompt(&self, view: &View, cut: Cut) -> String {
        let mut prompt = String::from(SUMMARY_INSTRUCTIONS);
        let previous = truncate_content(
            view.summary().unwrap_or_default(),
            Some(self.max_event_length),
        );
        prompt.push_str(&format!(
            "\n\n<PREVIOUS SUMMARY>\n{previous}\n</PREVIOUS SUMMARY>\n\n"
        ));
        for event in &view.events()[cut.head..cut.tail] {
            let Some(id) = event.id() else {
                continue; // the previous summary, already above
            };
            let text = event_text(&self.memory, event);
            let text = truncate_content(&text, Some(self.max_event_length));
            prompt.push_str(&format!("<EVENT id={id}>\n{text}\n</EVENT>\n"));
        }
        prompt.push_str("Now write the summary, following the rules above.");
        prompt
    }

    /// The condensation that replaces the events `cut` forgets with `summary`.
    pub(crate) fn condensation(&self, view: &View, cut: Cut, summary: &str) -> Action {
        let limit = self.max_tokens.map(|t| t / 4 * CHARS_PER_TOKEN);
        let summary = truncate_content(summary.trim(), limit);
        condensation_action(view, cut, Some(summary.into_owned()))
    }

    /// Asks the model for the summary: the one call of this condenser.
    async fn summarize(&self, prompt: String) -> Result<String, CondenserError> {
        let completion = self
            .llm
            .completion(vec![Message::user(prompt)], &[])
            .await?;
        let summary = completion
            .message
            .content
            .as_ref()
            .map(content_text)
            .unwrap_or_default();
        if summary.trim().is_empty() {
            return Err(CondenserError::EmptySummary);
        }
        Ok(summary)
    }
}

impl Condenser for LlmSummarizing {
    fn condense<'a>(&'a mut self, view: View) -> CondenseFuture<'a> {
        Box::pin(async move {
            let Some(cut) = self.plan(&view) else {
                return Ok(Condensed::View(view));
            };
            tracing::info!(forgotten = cut.tail - cut.head, "summarising old events");
            let summary = self.summarize(self.prompt(&view, cut)).await?;
            let action = self.condensation(&view, cut, &summary);
            Ok(Condensed::Condensation(Box::new(action)))
        })
    }
}

/// The summarising instructions (in the spirit of OpenHands' LLM summarising condenser).
pub(crate) const SUMMARY_INSTRUCTIONS: &str = "\
You keep the running memory of an autonomous agent. The oldest events of its session are about \
to leave its context: write the summary that will stand in for them, folding in the previous \
summary if there is one, so that the agent can carry on without them.

Track, concisely, under these headings (leave out those that do not apply):

USER_CONTEXT: the user's requirements, goals and clarifications
TASK_TRACKING: the active tasks with their exact ids and statuses (required when the events track tasks)
COMPLETED: what has been done, with its results
PENDING: what is left to do
CURRENT_STATE: variables, data and other state that matters now

For code, also:
CODE_STATE: files, functions and data structures involved
TESTS: failing cases, error messages, outputs
CHANGES: edits made so far
DEPS: dependencies, imports, external calls
VERSION_CONTROL_STATUS: branch, commits, pull requests

Keep what the agent cannot cheaply find again; drop what does not matter for the task.

Example, for a code task:
USER_CONTEXT: make the CSV export keep leading zeros in ids
COMPLETED: export_row() in export.py writes ids as strings; test_export passes
PENDING: update the changelog, open a pull request
CODE_STATE: export.py: export_row(row, columns)
TESTS: test_export_leading_zeros passed
CHANGES: str(row.id) instead of int(row.id)
DEPS: none changed
VERSION_CONTROL_STATUS: branch fix-leading-zeros, one commit";

/// How many events a condensed view keeps: half the limit, or half the view when a
/// condensation was requested of a smaller one.
fn event_target(view: &View, max_events: usize) -> usize {
    if view.unhandled_condensation_request() {
        (max_events / 2).min(view.len() / 2)
    } else {
        max_events / 2
    }
}

/// Whether a view needs condensing.
fn over_limits(
    view: &View,
    memory: &ConversationMemory,
    max_events: usize,
    max_tokens: Option<usize>,
) -> bool {
    view.unhandled_condensation_request()
        || view.len() > max_events
        || max_tokens.is_some_and(|max| memory.view_tokens(view) > max)
}

/// Where to cut `view`: keep at least `keep_first` events at the start (more when a model
/// response straddles the cut) and, of the newest events, as many as fit in `event_target`
/// events and `token_target` estimated tokens (counting the head, the system prompt and first
/// user message put back in front, and `summary_slots` events for a summary). The tail's cut
/// moves forward (forgetting more) to a point no response straddles, or back when that would
/// forget everything. `None` when nothing would be forgotten.
fn plan_cut(
    view: &View,
    memory: &ConversationMemory,
    keep_first: usize,
    event_target: usize,
    token_target: Option<usize>,
    summary_slots: usize,
) -> Option<Cut> {
    let events = view.events();
    let n = events.len();
    let safe = safe_cuts(view);
    let mut head = keep_first.min(n);
    while !safe[head] {
        head += 1;
    }

    let tail_events = event_target.saturating_sub(head + summary_slots);
    let mut tail = n.saturating_sub(tail_events).max(head);
    if let Some(target) = token_target {
        let head_events = &events[..head];
        let mut fixed: usize = head_events.iter().map(|e| memory.event_tokens(e)).sum();
        if !head_events.iter().any(|e| is_user_message(e)) {
            fixed += view
                .initial_user_event()
                .map_or(0, |e| memory.event_tokens(e));
        }
        let has_system = events.iter().any(
            |e| matches!(e.as_ref(), Event::Action(a) if matches!(a.kind, ActionKind::System(_))),
        );
        if !has_system {
            fixed += memory
                .system_prompt
                .as_deref()
                .map_or(0, |p| 5 + text_tokens(p));
        }
        let mut left = target.saturating_sub(fixed);
        let mut start = n;
        while start > head {
            let cost = memory.event_tokens(&events[start - 1]);
            if cost > left {
                break;
            }
            left -= cost;
            start -= 1;
        }
        tail = tail.max(start);
    }
    let mut cut = tail;
    while cut < n && !safe[cut] {
        cut += 1;
    }
    if cut == n && tail < n {
        // Forgetting up to a safe point would forget every newer event: keep a little more.
        cut = tail;
        while cut > head && !safe[cut] {
            cut -= 1;
        }
    }
    if events[head..cut].iter().all(|e| e.id().is_none()) {
        return None;
    }
    Some(Cut { head, tail: cut })
}

/// `safe[i]`: whether cutting between events `i - 1` and `i` separates no model response from
/// its tool results (for `i` in `0..=len`).
fn safe_cuts(view: &View) -> Vec<bool> {
    let events = view.events();
    let mut spans: HashMap<String, (usize, usize)> = HashMap::new();
    for (i, event) in events.iter().enumerate() {
        let meta = match event.as_ref() {
            Event::Action(a) => a.tool_call_metadata.as_ref(),
            Event::Observation(o) => o.tool_call_metadata.as_ref(),
        };
        if let Some(meta) = meta {
            spans
                .entry(response_key(meta))
                .and_modify(|span| span.1 = i)
                .or_insert((i, i));
        }
    }
    let mut safe = vec![true; events.len() + 1];
    for (first, last) in spans.into_values() {
        for s in &mut safe[first + 1..=last] {
            *s = false;
        }
    }
    safe
}

/// The `condensation` forgetting the events `cut` drops (as an id range: the view is in id
/// order), with `summary` shown at the head's end.
fn condensation_action(view: &View, cut: Cut, summary: Option<String>) -> Action {
    let ids = view.events()[cut.head..cut.tail]
        .iter()
        .filter_map(|e| e.id());
    let (start, end) = ids.fold((None, None), |(lo, hi): (Option<i64>, Option<i64>), id| {
        (
            Some(lo.map_or(id, |l| l.min(id))),
            Some(hi.map_or(id, |h| h.max(id))),
        )
    });
    let summary_offset = summary.as_ref().map(|_| cut.head as i64);
    Action::from(ActionKind::Condensation(CondensationArgs {
        forgotten_event_ids: None,
        forgotten_events_start_id: start,
        forgotten_events_end_id: end,
        summary,
        summary_offset,
    }))
}

/// An event as text for the summarising prompt.
fn event_text(memory: &ConversationMemory, event: &Event) -> String {
    let who = |source: Option<EventSource>| match source {
        Some(EventSource::Agent) => "agent",
        Some(EventSource::User) => "user",
        Some(EventSource::Environment) | None => "environment",
    };
    match event {
        Event::Action(a) => {
            let kind = a.kind.action_type().as_str();
            let body = match &a.kind {
                ActionKind::Run(r) => with_thought(&r.thought, format!("$ {}", r.command)),
                ActionKind::RunIpython(r) => with_thought(&r.thought, r.code.clone()),
                ActionKind::Read(r) => with_thought(&r.thought, r.path.clone()),
                ActionKind::Write(w) => {
                    with_thought(&w.thought, format!("{}\n{}", w.path, w.content))
                }
                ActionKind::Edit(e) => {
                    let mut text = format!("{} {}", e.command, e.path);
                    for (label, value) in [
                        ("file_text", &e.file_text),
                        ("old_str", &e.old_str),
                        ("new_str", &e.new_str),
                    ] {
                        if let Some(value) = value {
                            text.push_str(&format!("\n{label}:\n{value}"));
                        }
                    }
                    with_thought(&e.thought, text)
                }
                ActionKind::Message(m) => m.content.clone(),
                ActionKind::Think(t) => t.thought.clone(),
                ActionKind::Finish(f) => with_thought(&f.thought, f.final_thought.clone()),
                other => serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("args").map(ToString::to_string))
                    .unwrap_or_default(),
            };
            format!("{} action {kind}:\n{body}", who(a.source))
        }
        Event::Observation(o) => format!(
            "{} observation {}:\n{}",
            who(o.source),
            o.kind.type_name(),
            memory.observation_text(o)
        ),
    }
}

fn with_thought(thought: &str, body: String) -> String {
    if thought.trim().is_empty() {
        body
    } else {
        format!("(thought: {thought})\n{body}")
    }
}

#[cfg(test)]
mod tests;
