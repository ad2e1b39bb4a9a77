//! The reference's `BrowsingAgent` (`openhands/agenthub/browsing_agent/`): no tools; each step
//! shows the model the goal, BrowserGym's action space, the page's URL and accessibility tree,
//! the previous actions (and, after an error, what went wrong), and reads back one fenced block
//! of BrowserGym calls, run as a `browse_interactive` action. A message to the user
//! (`send_msg_to_user(...)`, or an answer without a block) becomes a `message` action, and the
//! step after it finishes with `outputs {"content": ...}`; more than 5 failed steps end the task.
//!
//! The reference asks the server to stop at `)```` ` and `)\n```` `; here the answer is cut there
//! instead (the same text, whatever the server supports). The tree is the one the observation's
//! text shows (the whole page; the reference's shows the visible part).
//!
//! It runs on its own (`agentd run --agent BrowsingAgent`) or as a delegate of the CodeAct
//! agent (`delegate_to_agent` with `BrowsingAgent`, `[agent] delegation = true`).

use protocol::action::{BrowseInteractiveArgs, FinishArgs, MessageArgs};
use protocol::{Action, ActionKind, Event, EventSource, ObservationKind};

use super::{Agent, AgentError, Step, StepFuture};
use crate::events::EventStream;
use crate::llm::{Llm, Message};
use crate::state::State;

/// Failed steps after which the agent gives up (the reference's limit).
const MAX_ERRORS: u32 = 5;

/// BrowserGym's action space for the `chat`, `bid` and `nav` sets, as the model reads it.
fn action_space() -> String {
    format!(
        "16 different types of actions are available.\n\n\
         send_msg_to_user(text: str)\n    Description: Sends a message to the user.\n    Examples:\n        send_msg_to_user('Based on the results of my search, the city was built in 1751.')\n\n{}\n\
         Multiple actions can be provided at once, but will be executed sequentially without any feedback from the page.\n\
         More than 2-3 actions usually leads to failure or unexpected behavior. Example:\n\
         fill('a12', 'example with \"quotes\"')\nclick('a51')\nclick('48', button='middle', modifiers=['Shift'])\n",
        include_str!("codeact/browser_tool.md").trim_start_matches(
            "The following 15 functions are available. Nothing else is supported.\n\n"
        )
    )
}

fn system_message(goal: &str) -> String {
    format!(
        "# Instructions\nReview the current state of the page and all other information to find the best\n\
         possible next action to accomplish your goal. Your answer will be interpreted\n\
         and executed by a program, make sure to follow the formatting instructions.\n\n\
         ## Goal:\n{goal}\n\n# Action Space\n{}\n",
        action_space()
    )
}

const CONCISE_INSTRUCTION: &str = "\n\nHere is another example with chain of thought of a valid action when providing a concise answer to user:\n\"\nIn order to accomplish my goal I need to send the information asked back to the user. This page list the information of HP Inkjet Fax Machine, which is the product identified in the objective. Its price is $279.49. I will send a message back to user with the answer.\n```send_msg_to_user(\"$279.49\")```\n\"\n";

fn prompt(error_prefix: &str, url: &str, tree: &str, previous: &str) -> String {
    let prompt = format!(
        "{error_prefix}\n\n# Current Page URL:\n{url}\n\n# Current Accessibility Tree:\n{tree}\n\n\
         # Previous Actions\n{previous}\n\n\
         Here is an example with chain of thought of a valid action when clicking on a button:\n\"\n\
         In order to accomplish my goal I need to click on the button with bid 12\n```click(\"12\")```\n\""
    );
    prompt.trim().to_owned() + CONCISE_INSTRUCTION
}

/// The agent.
#[derive(Debug)]
pub struct BrowsingAgent {
    llm: Llm,
    errors: u32,
}

impl BrowsingAgent {
    /// An agent that thinks with `llm`.
    pub fn new(llm: Llm) -> BrowsingAgent {
        BrowsingAgent { llm, errors: 0 }
    }

    async fn next_action(
        &mut self,
        state: &State,
        history: &EventStream,
    ) -> Result<Step, AgentError> {
        let events = history.range(state.start_id, None);
        let mut previous = Vec::new();
        let mut last_browse: Option<&BrowseInteractiveArgs> = None;
        let mut last_observation = None;
        let mut goal = String::new();
        for event in &events {
            match &**event {
                Event::Action(action) => match &action.kind {
                    ActionKind::BrowseInteractive(args) => {
                        previous.push(args.browser_actions.clone());
                        last_browse = Some(args);
                    }
                    ActionKind::Message(args) if action.source == Some(EventSource::Agent) => {
                        // The agent answered: the task is done.
                        let mut outputs = serde_json::Map::new();
                        outputs.insert("content".to_owned(), args.content.clone().into());
                        return Ok(Action::from(ActionKind::Finish(FinishArgs {
                            outputs,
                            ..FinishArgs::default()
                        }))
                        .into());
                    }
                    ActionKind::Message(args) if action.source == Some(EventSource::User) => {
                        goal = args.content.clone();
                    }
                    _ => {}
                },
                Event::Observation(observation) => last_observation = Some(observation),
            }
        }
        if let Some(args) = last_browse.filter(|a| !a.browsergym_send_msg_to_user.is_empty()) {
            return Ok(message(&args.browsergym_send_msg_to_user).into());
        }
        let (mut url, mut tree, mut error_prefix) = (String::new(), String::new(), String::new());
        if let Some(observation) = last_observation
            && let ObservationKind::Browse(extras) = &observation.kind
        {
            if extras.error {
                error_prefix = format!(
                    "IMPORTANT! Last action is incorrect:\n{}\nThink again with the current observation of the page.\n",
                    extras.last_browser_action
                );
                self.errors += 1;
                if self.errors > MAX_ERRORS {
                    return Ok(message("Too many errors encountered. Task failed.").into());
                }
            }
            url = extras.url.clone();
            tree = tree_of(&observation.content).to_owned();
        }
        let messages = vec![
            Message::system(system_message(&goal)),
            Message::user(prompt(&error_prefix, &url, &tree, &previous.join("\n"))),
        ];
        let completion = self
            .llm
            .completion(messages, &[])
            .await
            .map_err(super::codeact::llm_error)?;
        let text = crate::llm::text_of(completion.message.content.as_ref());
        let mut action = parse(&text);
        action.llm_metrics = Some(completion.metrics.to_json());
        Ok(Step {
            action,
            accumulated_cost: Some(completion.metrics.accumulated_cost),
        })
    }
}

fn message(text: &str) -> Action {
    Action::from(ActionKind::Message(MessageArgs {
        content: text.to_owned(),
        ..MessageArgs::default()
    }))
}

/// The tree between the markers of a `browse_interactive` observation's text.
fn tree_of(content: &str) -> &str {
    const BEGIN: &str = "============== BEGIN accessibility tree ==============\n";
    const END: &str = "\n============== END accessibility tree ==============";
    content
        .split_once(BEGIN)
        .and_then(|(_, rest)| rest.split_once(END))
        .map_or("", |(tree, _)| tree)
}

/// The model's answer as an action, as the reference's response parsers read it.
pub(crate) fn parse(answer: &str) -> Action {
    // Where the reference's stop sequences would have ended the answer.
    let mut text = answer.trim().to_owned();
    if let Some(cut) = [")```", ")\n```"].iter().filter_map(|s| text.find(s)).min() {
        text.truncate(cut + 1);
    }
    if !text.contains("```") {
        return browse(
            format!("send_msg_to_user(\"\"\"{text}\"\"\")"),
            text.clone(),
            text,
        );
    }
    if !text.ends_with("```") {
        text.push_str(if text.ends_with(')') { "```" } else { ")```" });
    }
    let parts: Vec<&str> = text.split("```").collect();
    let block = parts.get(1).map_or("", |p| p.trim());
    let (actions, thought) = if block.is_empty() {
        (parts[0].trim(), "")
    } else {
        (block, parts[0].trim())
    };
    let mut to_user = String::new();
    for line in actions.lines().filter(|l| l.contains("send_msg_to_user(")) {
        if let Some(call) = send_msg_argument(line) {
            to_user = call;
        }
    }
    browse(actions.to_owned(), thought.to_owned(), to_user)
}

/// The first argument of a `send_msg_to_user` call on `line`, when it is a string literal.
fn send_msg_argument(line: &str) -> Option<String> {
    let start = line.find("send_msg_to_user(")? + "send_msg_to_user(".len();
    let rest = line[start..].trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let triple: String = std::iter::repeat_n(quote, 3).collect();
    let (body, close) = if rest.starts_with(&triple) {
        (&rest[3..], triple.as_str())
    } else {
        (&rest[1..], &rest[..1])
    };
    body.find(close).map(|end| body[..end].to_owned())
}

fn browse(actions: String, thought: String, to_user: String) -> Action {
    Action::from(ActionKind::BrowseInteractive(BrowseInteractiveArgs {
        browser_actions: actions,
        browsergym_send_msg_to_user: to_user,
        thought,
        ..BrowseInteractiveArgs::default()
    }))
}

impl Agent for BrowsingAgent {
    fn name(&self) -> &str {
        "BrowsingAgent"
    }

    fn step<'a>(&'a mut self, state: &'a State, history: &'a EventStream) -> StepFuture<'a> {
        Box::pin(self.next_action(state, history))
    }

    fn reset(&mut self) {}
}

#[cfg(test)]
mod tests;
