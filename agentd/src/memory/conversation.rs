//! Conversation memory: a [`View`] of events turned into the chat messages the LLM reads
//! (OpenHands V0's `ConversationMemory.process_events`), and the text each observation shows
//! the model (one `render_*` function per kind).
//!
//! The conversation opens with the system message (the history's `system` action, or
//! [`ConversationMemory::system_prompt`] when it has none) and the task's first user message
//! (put back when a condensation forgot it). Then, in order:
//!
//! - an agent action that came from a tool call waits for its results: the assistant message
//!   of its model response (the response's text and *all* its tool calls, rebuilt from
//!   `tool_call_metadata.model_response`, which is decoded once per action and kept while the
//!   action is in view, see `responses.rs`) is emitted once every call of that response has its
//!   result, directly followed by the results (`role=tool`) in the order of the calls, so a
//!   response with calls still running never reaches the model half-answered;
//! - an observation with tool metadata becomes that `role=tool` result; one without becomes a
//!   user message;
//! - `message` actions become user or assistant messages (a user's images as `image_url` parts
//!   when the model has vision); `finish` becomes the assistant's closing text; a user's `run`
//!   becomes "User executed the command"; `system` the system message;
//! - bookkeeping (`recall` actions, agent actions without tool metadata) shows nothing.
//!
//! Finally tool calls and results that lack their counterpart are dropped, and a user message
//! right after another user message gets a blank line in front (the reference does not merge
//! them).

use std::collections::{HashMap, HashSet};

use protocol::llm::{
    ChatResponse, Content, ContentPart, FunctionCall, ImageUrl, Message, Role, ToolCall,
};
use protocol::observation::{BrowserOutputExtras, IPythonRunCellExtras};
use protocol::{
    Action, ActionKind, Event, EventSource, Observation, ObservationKind, ToolCallMetadata,
};
use sandbox_common::{MAX_OBSERVATION_CHARS, render_edit, render_ipython, render_run};

use super::render::{
    microagents, render_error, render_recall, render_user_rejected, truncate_content,
};
use super::responses::DecodedResponses;
use super::tokens;
use super::view::{View, is_user_message};

/// The longest observation text (in characters) put in a message by default; longer ones lose
/// their middle. The same limit as sandboxd's cut of command output.
pub(crate) const DEFAULT_MAX_MESSAGE_CHARS: usize = MAX_OBSERVATION_CHARS;

/// The line that stands for an MCP tool's image when the model has no vision.
const MCP_IMAGE_LINE: &str = "[An image the tool returned; this model cannot see images]";

/// Turns events into messages.
#[derive(Debug, Clone)]
pub(crate) struct ConversationMemory {
    /// Whether the model takes images: user images and IPython plots become `image_url` parts.
    pub(crate) vision: bool,
    /// The longest observation text put in a message; `None`: no limit.
    pub(crate) max_message_chars: Option<usize>,
    /// The system prompt, for a history without a `system` action.
    pub(crate) system_prompt: Option<String>,
    /// The model responses of the last view's tool calls, decoded once.
    responses: DecodedResponses,
}

impl Default for ConversationMemory {
    fn default() -> Self {
        ConversationMemory {
            vision: false,
            max_message_chars: Some(DEFAULT_MAX_MESSAGE_CHARS),
            system_prompt: None,
            responses: DecodedResponses::default(),
        }
    }
}

/// Where an action goes in the conversation.
enum ActionRoute {
    /// A message, now.
    Now(Message),
    /// The assistant message of model response `key`, once all its calls have results.
    Pending { key: String, message: Message },
    /// Nothing.
    Skip,
}

impl ConversationMemory {
    /// The messages for `view`, ready for [`crate::llm::Llm::completion`].
    pub(crate) fn process_events(&self, view: &View) -> Vec<Message> {
        self.responses.retain_view(view.events());
        let mut events: Vec<&Event> = view.iter().collect();
        let has_system = events.iter().any(|e| is_system(e));
        let mut messages = Vec::with_capacity(events.len() + 2);
        if !has_system {
            match &self.system_prompt {
                Some(prompt) => messages.push(Message::system(prompt.clone())),
                None => tracing::debug!("no system message for the conversation"),
            }
        }
        let first_after_system = usize::from(events.first().is_some_and(|e| is_system(e)));
        let opens_with_user = events
            .get(first_after_system)
            .is_some_and(|e| is_user_message(e));
        match view.initial_user_event() {
            Some(initial) if !opens_with_user => {
                tracing::debug!("putting the initial user message back after the system message");
                events.insert(first_after_system, initial);
            }
            _ => {}
        }

        let mut pending: Vec<(String, Message)> = Vec::new();
        let mut results: HashMap<String, Message> = HashMap::new();
        let mut seen_microagents: HashSet<String> = HashSet::new();
        for event in events {
            let mut new = Vec::new();
            match event {
                Event::Action(action) => match self.action_route(action) {
                    ActionRoute::Now(message) => new.push(message),
                    ActionRoute::Pending { key, message } => {
                        // A later action of the same response replaces the copy (same content).
                        match pending.iter_mut().find(|(k, _)| *k == key) {
                            Some(slot) => slot.1 = message,
                            None => pending.push((key, message)),
                        }
                    }
                    ActionRoute::Skip => {}
                },
                Event::Observation(observation) => {
                    let Some(message) = self.observation_message(observation, &seen_microagents)
                    else {
                        continue;
                    };
                    if let ObservationKind::Recall(extras) = &observation.kind {
                        seen_microagents.extend(microagents(extras).map(|m| m.name.to_string()));
                    }
                    match &observation.tool_call_metadata {
                        Some(meta) => {
                            results
                                .insert(meta.tool_call_id.clone(), as_tool_result(message, meta));
                        }
                        None => new.push(message),
                    }
                }
            }
            pending.retain(|(_, assistant)| {
                let calls = assistant.tool_calls.as_deref().unwrap_or_default();
                if !calls.iter().all(|c| results.contains_key(&c.id)) {
                    return true;
                }
                new.push(assistant.clone());
                // Chat APIs take images only from the user: a result's images follow the
                // response's results in a user message of their own.
                let mut images = Vec::new();
                for result in calls.iter().filter_map(|c| results.remove(&c.id)) {
                    let (result, moved) = without_images(result);
                    images.extend(moved);
                    new.push(result);
                }
                if !images.is_empty() {
                    let mut parts = vec![ContentPart::Text {
                        text: TOOL_IMAGES.to_string(),
                    }];
                    parts.extend(images);
                    new.push(Message {
                        content: Some(Content::Parts(parts)),
                        ..Message::user("")
                    });
                }
                false
            });
            messages.extend(new);
        }
        if !pending.is_empty() {
            tracing::debug!(
                responses = pending.len(),
                "model responses still waiting for tool results are left out"
            );
        }
        separate_user_messages(drop_unmatched_tool_calls(messages))
    }

    /// The estimated tokens `event` adds to a conversation on its own (see [`tokens`]): an
    /// upper bound, since every action of a model response is charged the whole assistant
    /// message. Condensers add these up to decide what to keep.
    pub(crate) fn event_tokens(&self, event: &Event) -> usize {
        // One token of slack for the blank line between consecutive user messages.
        1 + match event {
            Event::Action(action) => match self.action_route(action) {
                ActionRoute::Now(message) | ActionRoute::Pending { message, .. } => {
                    tokens::message_tokens(&message)
                }
                ActionRoute::Skip => 0,
            },
            Event::Observation(observation) => {
                match self.observation_message(observation, &HashSet::new()) {
                    Some(message) => match &observation.tool_call_metadata {
                        Some(meta) => tokens::message_tokens(&as_tool_result(message, meta)),
                        None => tokens::message_tokens(&message),
                    },
                    None => 0,
                }
            }
        }
    }

    /// The estimated tokens of the conversation [`Self::process_events`] makes of `view`.
    pub(crate) fn view_tokens(&self, view: &View) -> usize {
        tokens::estimate_tokens(&self.process_events(view))
    }

    fn action_route(&self, action: &Action) -> ActionRoute {
        let from_user = action.source == Some(EventSource::User);
        match (&action.kind, &action.tool_call_metadata) {
            (ActionKind::System(args), _) => {
                ActionRoute::Now(Message::system(args.content.clone()))
            }
            (ActionKind::Message(args), _) => {
                let role = if from_user {
                    Role::User
                } else {
                    Role::Assistant
                };
                let mut parts = vec![Part::Text(args.content.clone())];
                let images = args.image_urls.iter().flatten().filter(|u| valid_url(u));
                if self.vision {
                    for (i, url) in images.enumerate() {
                        if from_user {
                            parts.push(Part::Text(format!("Image {}:", i + 1)));
                        }
                        parts.push(Part::Image(url.clone()));
                    }
                }
                ActionRoute::Now(message(role, parts))
            }
            (ActionKind::Finish(args), meta) => {
                let role = if from_user {
                    Role::User
                } else {
                    Role::Assistant
                };
                let mut text = args.thought.clone();
                if let Some(response) = meta.as_ref().and_then(|m| self.responses.get(action, m)) {
                    let content = response_text(&response);
                    if !content.is_empty() && content != text {
                        text = if text.is_empty() {
                            content
                        } else {
                            format!("{text}\n{content}")
                        };
                    }
                }
                if text.trim().is_empty() {
                    text = args.final_thought.clone();
                }
                ActionRoute::Now(Message::text(role, text))
            }
            (ActionKind::Run(args), None) if from_user => ActionRoute::Now(Message::user(format!(
                "User executed the command:\n{}",
                args.command
            ))),
            (ActionKind::Recall(_) | ActionKind::Reject(_), _) => ActionRoute::Skip,
            (_, Some(meta)) => {
                let response = self.responses.get(action, meta);
                let (key, message) = assistant_message(meta, response.as_deref());
                ActionRoute::Pending { key, message }
            }
            (kind, None) => {
                tracing::debug!(
                    action = kind.action_type().as_str(),
                    "an action without tool metadata is not shown to the model"
                );
                ActionRoute::Skip
            }
        }
    }

    /// The message an observation makes (user form), or `None` when it shows nothing.
    fn observation_message(
        &self,
        observation: &Observation,
        seen_microagents: &HashSet<String>,
    ) -> Option<Message> {
        let max = self.max_message_chars;
        let content = observation.content.as_str();
        let parts = match &observation.kind {
            ObservationKind::Run(extras) => {
                let text = render_run(extras, content);
                let text = if observation.tool_call_metadata.is_none() {
                    format!("\nObserved result of command executed by user:\n{text}")
                } else {
                    text
                };
                vec![Part::Text(truncate_content(&text, max).into_owned())]
            }
            ObservationKind::RunIpython(extras) => self.ipython_parts(extras, content),
            ObservationKind::Mcp(_) => self.mcp_parts(content),
            ObservationKind::Browse(extras) => self.browse_parts(extras, content),
            ObservationKind::Read(_) => vec![Part::Text(content.to_string())],
            ObservationKind::Edit(extras) => {
                vec![Part::Text(
                    truncate_content(&render_edit(extras, content), max).into_owned(),
                )]
            }
            ObservationKind::Error(_) => vec![Part::Text(render_error(content, max))],
            ObservationKind::UserRejected(_) => {
                vec![Part::Text(render_user_rejected(content, max))]
            }
            ObservationKind::Write(_)
            | ObservationKind::TaskTracking(_)
            | ObservationKind::Think(_)
            | ObservationKind::Success(_)
            | ObservationKind::Condense(_) => {
                vec![Part::Text(truncate_content(content, max).into_owned())]
            }
            ObservationKind::Recall(extras) => render_recall(extras, seen_microagents)
                .into_iter()
                .map(Part::Text)
                .collect(),
            // The reference: the delegate's `content` output if it has one, else the summary.
            ObservationKind::Delegate(extras) => {
                let text = match extras.outputs.get("content") {
                    Some(serde_json::Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => content.to_string(),
                };
                vec![Part::Text(truncate_content(&text, max).into_owned())]
            }
            ObservationKind::AgentStateChanged(_) | ObservationKind::Null(_) => Vec::new(),
        };
        if parts.is_empty() {
            return None;
        }
        Some(message(Role::User, parts))
    }

    /// `browse`: the page's text; after `browse_interactive`, with vision, the set-of-marks
    /// screenshot (else the plain one) as the reference's `enable_som_visual_browsing` shows it.
    fn browse_parts(&self, extras: &BrowserOutputExtras, content: &str) -> Vec<Part> {
        let text = truncate_content(content, self.max_message_chars).into_owned();
        let image = [&extras.set_of_marks, &extras.screenshot]
            .into_iter()
            .find(|u| !u.is_empty());
        match image {
            Some(url) if self.vision && extras.trigger_by_action == "browse_interactive" => {
                let text = format!(
                    "{text}Image: Current webpage screenshot (Note that only visible portion of webpage is present in the screenshot. However, the Accessibility tree contains information from the entire webpage.)\n"
                );
                self.with_images(text, std::slice::from_ref(url))
            }
            _ => vec![Part::Text(text)],
        }
    }

    fn ipython_parts(&self, extras: &IPythonRunCellExtras, content: &str) -> Vec<Part> {
        let text = truncate_content(&render_ipython(content), self.max_message_chars).into_owned();
        let urls = extras.image_urls.as_deref().unwrap_or_default();
        self.with_images(text, urls)
    }

    /// `mcp`: the result's text, not its JSON (the reference shows the model the JSON, images
    /// in base64 included); its images as parts of their own when the model has vision, else
    /// a line each.
    fn mcp_parts(&self, content: &str) -> Vec<Part> {
        let read = crate::mcp::read_content(content);
        let mut text = truncate_content(&read.text, self.max_message_chars).into_owned();
        if !self.vision {
            for _ in &read.images {
                text.push_str(&format!("\n{MCP_IMAGE_LINE}"));
            }
        }
        self.with_images(text, &read.images)
    }

    /// `text` with the valid `urls` as image parts when the model has vision, and a note on
    /// those that are not valid.
    fn with_images(&self, mut text: String, urls: &[String]) -> Vec<Part> {
        if !self.vision || urls.is_empty() {
            return vec![Part::Text(text)];
        }
        let valid: Vec<&String> = urls.iter().filter(|u| valid_url(u)).collect();
        let invalid = urls.len() - valid.len();
        if valid.is_empty() {
            text.push_str(&format!(
                "\n\nNote: none of the {} image(s) of this output could be shown (empty or \
                 invalid). Use another way to look at the visual result.",
                urls.len()
            ));
        } else if invalid > 0 {
            text.push_str(&format!(
                "\n\nNote: {invalid} image(s) of this output were empty or invalid and are not \
                 shown. Use another way to look at them if they matter."
            ));
        }
        std::iter::once(Part::Text(text))
            .chain(valid.into_iter().map(|u| Part::Image(u.clone())))
            .collect()
    }

    /// The text an observation shows the model, images left out: for summaries and logs.
    pub(crate) fn observation_text(&self, observation: &Observation) -> String {
        self.observation_message(observation, &HashSet::new())
            .and_then(|m| m.content)
            .map(|c| content_text(&c))
            .unwrap_or_default()
    }
}

/// A piece of message content before it becomes [`Content`].
enum Part {
    Text(String),
    Image(String),
}

/// A message of `parts`: plain text when there are no images (text parts joined by a
/// newline), the parts otherwise.
fn message(role: Role, parts: Vec<Part>) -> Message {
    let content = if parts.iter().all(|p| matches!(p, Part::Text(_))) {
        let texts: Vec<String> = parts
            .into_iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t),
                Part::Image(_) => None,
            })
            .collect();
        Content::Text(texts.join("\n"))
    } else {
        Content::Parts(
            parts
                .into_iter()
                .map(|p| match p {
                    Part::Text(text) => ContentPart::Text { text },
                    Part::Image(url) => ContentPart::ImageUrl {
                        image_url: ImageUrl { url },
                    },
                })
                .collect(),
        )
    };
    Message {
        content: Some(content),
        ..Message::text(role, "")
    }
}

/// `message` (user form) as the result of the tool call `meta`.
fn as_tool_result(message: Message, meta: &ToolCallMetadata) -> Message {
    Message {
        role: Role::Tool,
        tool_call_id: Some(meta.tool_call_id.clone()),
        name: Some(meta.function_name.clone()),
        ..message
    }
}

/// What introduces the images of tool results, moved to a user message.
pub(crate) const TOOL_IMAGES: &str = "Images shown by the tool results above:";

/// A message without its image parts (its text parts joined), and the images.
fn without_images(message: Message) -> (Message, Vec<ContentPart>) {
    let Some(Content::Parts(parts)) = &message.content else {
        return (message, Vec::new());
    };
    if !parts
        .iter()
        .any(|p| matches!(p, ContentPart::ImageUrl { .. }))
    {
        return (message, Vec::new());
    }
    let (images, texts): (Vec<ContentPart>, Vec<ContentPart>) = parts
        .iter()
        .cloned()
        .partition(|p| matches!(p, ContentPart::ImageUrl { .. }));
    let text = texts
        .into_iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text),
            ContentPart::ImageUrl { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (
        Message {
            content: Some(Content::Text(text)),
            ..message
        },
        images,
    )
}

fn valid_url(url: &str) -> bool {
    !url.trim().is_empty()
}

fn is_system(event: &Event) -> bool {
    matches!(event, Event::Action(a) if matches!(a.kind, ActionKind::System(_)))
}

/// The text of a response's first choice, trimmed of nothing.
fn response_text(response: &ChatResponse) -> String {
    response
        .choices
        .first()
        .and_then(|c| c.message.content.as_ref())
        .map(content_text)
        .unwrap_or_default()
}

/// The text of a content: its text, or its text parts joined by newlines.
pub(crate) fn content_text(content: &Content) -> String {
    content.text_joined("\n")
}

/// The key of the model response behind a tool call: its id, or the call's id when the
/// response has none. Every action of one response, and every result, has the same key.
pub(crate) fn response_key(meta: &ToolCallMetadata) -> String {
    match meta.model_response.get("id").and_then(|id| id.as_str()) {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => meta.tool_call_id.clone(),
    }
}

/// The key of the model response behind a tool call ([`response_key`]) and the assistant
/// message that made the call: the text of `response` (the call's decoded model response),
/// when it has any, and all its tool calls.
fn assistant_message(
    meta: &ToolCallMetadata,
    response: Option<&ChatResponse>,
) -> (String, Message) {
    let own_call = || ToolCall {
        id: meta.tool_call_id.clone(),
        kind: "function".to_string(),
        function: FunctionCall {
            name: meta.function_name.clone(),
            arguments: "{}".to_string(),
        },
    };
    let Some(response) = response else {
        let message = Message {
            content: None,
            tool_calls: Some(vec![own_call()]),
            ..Message::assistant("")
        };
        return (response_key(meta), message);
    };
    let text = response_text(response);
    let mut calls = response
        .choices
        .first()
        .and_then(|c| c.message.tool_calls.clone())
        .unwrap_or_default();
    if !calls.iter().any(|c| c.id == meta.tool_call_id) {
        tracing::warn!(call = %meta.tool_call_id, "the model response does not hold the action's tool call");
        calls.push(own_call());
    }
    let key = response_key(meta);
    let message = Message {
        content: (!text.trim().is_empty()).then_some(Content::Text(text)),
        tool_calls: Some(calls),
        ..Message::assistant("")
    };
    (key, message)
}

/// Keeps tool results whose call is in an assistant message, and tool calls that have a
/// result (an assistant message left without calls and without text is dropped).
fn drop_unmatched_tool_calls(messages: Vec<Message>) -> Vec<Message> {
    let call_ids: HashSet<String> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter().flatten().map(|c| c.id.clone()))
        .collect();
    let result_ids: HashSet<String> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    messages
        .into_iter()
        .filter_map(|mut m| match m.role {
            Role::Tool => match &m.tool_call_id {
                Some(id) if !call_ids.contains(id) => None,
                _ => Some(m),
            },
            Role::Assistant if m.tool_calls.is_some() => {
                let calls = m.tool_calls.take().unwrap_or_default();
                let total = calls.len();
                let kept: Vec<ToolCall> = calls
                    .into_iter()
                    .filter(|c| result_ids.contains(&c.id))
                    .collect();
                if kept.is_empty() && total > 0 {
                    return None;
                }
                m.tool_calls = Some(kept);
                Some(m)
            }
            _ => Some(m),
        })
        .collect()
}

/// Puts a blank line in front of a user message that follows another user message.
fn separate_user_messages(mut messages: Vec<Message>) -> Vec<Message> {
    let mut previous = None;
    for message in &mut messages {
        let role = message.role;
        if role == Role::User && previous == Some(Role::User) {
            match &mut message.content {
                Some(Content::Text(text)) => text.insert_str(0, "\n\n"),
                Some(Content::Parts(parts)) => {
                    if let Some(ContentPart::Text { text }) = parts
                        .iter_mut()
                        .find(|p| matches!(p, ContentPart::Text { .. }))
                    {
                        text.insert_str(0, "\n\n");
                    }
                }
                None => {}
            }
        }
        previous = Some(role);
    }
    messages
}

#[cfg(test)]
pub(crate) mod tests;
