//! From the model's answer to actions (the reference's `response_to_actions`): each tool call
//! becomes one action carrying [`ToolCallMetadata`] (call id, tool name, the whole response,
//! how many calls it made); the answer's text (and reasoning, where the server gives it apart)
//! becomes the thought of the first action. An answer without tool calls is a message to the
//! user that waits for a reply.
//!
//! A call of one of the run's MCP tools becomes a `call_tool_mcp` action (its arguments as
//! they are: the MCP server checks them), with the reference's `message`. `ReadOnlyAgent`'s
//! and `LocAgent`'s tools have mappings of their own (`read_only_call`, `loc_call`).
//!
//! A call the sandbox cannot run — an unknown tool, arguments that are not a JSON object, a
//! missing or mistyped argument — is an [`AgentError::Malformed`] whose text tells the model
//! what to fix; the controller shows it to the model as an `error` observation.

use std::collections::HashSet;

use protocol::action::{
    BrowseInteractiveArgs, CmdRunArgs, DelegateArgs, EmptyArgs, FileReadArgs, FileReadSource,
    FinishArgs, IPythonRunCellArgs, McpArgs, MessageArgs, TaskTrackingArgs, ThinkArgs,
};
use protocol::llm::{Message, ToolCall};
use protocol::{Action, ActionKind, ToolCallMetadata};
use sandbox_common::{ToolAction, ToolArgs, ToolCallError, sandbox_tool_action};
use serde_json::Value;

use super::tools::{
    BROWSER, DELEGATE, FINISH, GLOB, GREP, REQUEST_CONDENSATION, SECURITY_RISK, TASK_TRACKER,
    THINK, ToolProfile, VIEW,
};
use crate::agent::{AgentError, loc};
use crate::security::Risk;

/// The actions of one model answer, in the order of its tool calls. `model_response` is the
/// response as recorded in each action's metadata; `metrics` (the LLM's figures after the
/// call) goes on the first action only, so a budget counts each call once. `mcp_tools` are
/// the names of the MCP tools the model was offered.
pub(crate) fn response_to_actions(
    message: &Message,
    model_response: &Value,
    metrics: Option<Value>,
    mcp_tools: &HashSet<String>,
    profile: ToolProfile,
) -> Result<Vec<Action>, AgentError> {
    let thought = thought(message);
    let calls = message.tool_calls.as_deref().unwrap_or_default();
    let mut actions = Vec::with_capacity(calls.len().max(1));
    if calls.is_empty() {
        actions.push(Action::from(ActionKind::Message(MessageArgs {
            content: thought,
            wait_for_response: true,
            ..MessageArgs::default()
        })));
    } else {
        let total = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        for (i, call) in calls.iter().enumerate() {
            let mut action = match profile {
                ToolProfile::CodeAct => call_to_action(call, mcp_tools)?,
                ToolProfile::ReadOnly => read_only_call(call)?,
                ToolProfile::Loc => loc_call(call)?,
            };
            if i == 0 && !thought.is_empty() {
                set_thought(&mut action.kind, &thought);
            }
            action.tool_call_metadata = Some(ToolCallMetadata {
                function_name: call.function.name.clone(),
                tool_call_id: call.id.clone(),
                model_response: model_response.clone(),
                total_calls_in_response: total,
            });
            actions.push(action);
        }
    }
    if let Some(first) = actions.first_mut() {
        first.llm_metrics = metrics;
    }
    Ok(actions)
}

/// The answer's reasoning and text, joined.
fn thought(message: &Message) -> String {
    let text = crate::llm::text_of(message.content.as_ref());
    match message.reasoning_content.as_deref().map(str::trim) {
        Some(reasoning) if !reasoning.is_empty() && text.trim().is_empty() => reasoning.to_string(),
        Some(reasoning) if !reasoning.is_empty() => format!("{reasoning}\n\n{text}"),
        _ => text,
    }
}

fn set_thought(kind: &mut ActionKind, thought: &str) {
    let slot = match kind {
        ActionKind::Run(a) => &mut a.thought,
        ActionKind::RunIpython(a) => &mut a.thought,
        ActionKind::Read(a) => &mut a.thought,
        ActionKind::Edit(a) => &mut a.thought,
        ActionKind::Finish(a) => &mut a.thought,
        ActionKind::Mcp(a) => &mut a.thought,
        ActionKind::BrowseInteractive(a) => &mut a.thought,
        // `think` already is a thought: the text before it goes in front.
        ActionKind::Think(a) => {
            a.thought = format!("{thought}\n{}", a.thought);
            return;
        }
        _ => return,
    };
    *slot = thought.to_string();
}

/// One tool call as an action.
fn call_to_action(call: &ToolCall, mcp_tools: &HashSet<String>) -> Result<Action, AgentError> {
    let name = call.function.name.as_str();
    let args = ToolArgs::parse(name, &call.function.arguments).map_err(malformed)?;
    if mcp_tools.contains(name) {
        let arguments = args.into_map();
        let mut action = Action::from(ActionKind::Mcp(McpArgs {
            name: name.to_owned(),
            arguments: arguments.clone(),
            ..McpArgs::default()
        }));
        action.message = Some(crate::mcp::action_message(name, &arguments));
        return Ok(action);
    }
    if let Some(action) = sandbox_tool_action(name, &args) {
        let ToolAction { mut kind, timeout } = action.map_err(malformed)?;
        declare_risk(&mut kind, &args);
        let mut action = Action::from(kind);
        action.timeout = timeout;
        return Ok(action);
    }
    if let Some(kind) = think_or_finish(name, &args) {
        return kind.map(Action::from);
    }
    match name {
        REQUEST_CONDENSATION => {
            let mut action = Action::from(ActionKind::CondensationRequest(EmptyArgs {}));
            action.message =
                Some("Requesting a condensation of the conversation history.".to_string());
            Ok(action)
        }
        TASK_TRACKER => {
            let command = args.required_str("command").map_err(malformed)?;
            let task_list = if command == "plan" {
                crate::tasks::normalize(args.get("task_list")).map_err(AgentError::Malformed)?
            } else {
                Vec::new()
            };
            let message = crate::tasks::message(task_list.len());
            let mut action = Action::from(ActionKind::TaskTracking(TaskTrackingArgs {
                command,
                thought: String::new(),
                task_list,
            }));
            action.message = Some(message);
            Ok(action)
        }
        BROWSER => {
            let mut kind = ActionKind::BrowseInteractive(BrowseInteractiveArgs {
                browser_actions: args.required_str("code").map_err(malformed)?,
                ..BrowseInteractiveArgs::default()
            });
            declare_risk(&mut kind, &args);
            Ok(Action::from(kind))
        }
        DELEGATE => {
            let agent = args.required_str("agent").map_err(malformed)?;
            let task = args.required_str("task").map_err(malformed)?;
            let mut inputs = serde_json::Map::new();
            inputs.insert("task".to_string(), Value::String(task));
            let mut action = Action::from(ActionKind::Delegate(DelegateArgs {
                agent: agent.clone(),
                inputs,
                thought: String::new(),
            }));
            action.message = Some(format!("I'm asking {agent} for help with this task."));
            Ok(action)
        }
        other => Err(not_registered(other, call)),
    }
}

/// The risk the model declares in a call's `security_risk` (required by the schema), set on
/// `kind`. As the reference does it: a call without one keeps the risk unknown; a value that
/// is not one of the levels is logged and leaves it unknown. (A prompted call without one, or
/// with another value, never gets here: the parser refuses it.)
fn declare_risk(kind: &mut ActionKind, args: &ToolArgs<'_>) {
    let Some(value) = args.get(SECURITY_RISK) else {
        return;
    };
    match value.as_str().and_then(Risk::from_label) {
        Some(risk) => kind.set_security_risk(risk.as_i64()),
        None => tracing::warn!(%value, "the model gave an unknown security_risk"),
    }
}

fn think_or_finish(name: &str, args: &ToolArgs<'_>) -> Option<Result<ActionKind, AgentError>> {
    Some(match name {
        THINK => args
            .required_str("thought")
            .map(|thought| ActionKind::Think(ThinkArgs { thought }))
            .map_err(malformed),
        FINISH => args
            .optional_str("message")
            .map(|message| {
                ActionKind::Finish(FinishArgs {
                    final_thought: message.unwrap_or_default(),
                    ..FinishArgs::default()
                })
            })
            .map_err(malformed),
        _ => return None,
    })
}

/// The reference's answer to a call of a tool the agent does not have.
fn not_registered(name: &str, call: &ToolCall) -> AgentError {
    AgentError::Malformed(format!(
        "Tool {name} is not registered. (arguments: {}). Please check the tool name and retry \
         with an existing tool.",
        call.function.arguments
    ))
}

/// A call of `ReadOnlyAgent`'s tools: `view` reads through the editor, `grep` and `glob` are
/// searches whose every argument is shell-quoted (no call can make them write); any other tool
/// is not registered.
fn read_only_call(call: &ToolCall) -> Result<Action, AgentError> {
    let name = call.function.name.as_str();
    let args = ToolArgs::parse(name, &call.function.arguments).map_err(malformed)?;
    if let Some(kind) = think_or_finish(name, &args) {
        return kind.map(Action::from);
    }
    let search = |kind: &str, command: String| {
        // printf, not the reference's echo in double quotes, which would expand `$(...)` of a
        // pattern.
        let header = format!("Below are the execution results of the {kind} command: {command}");
        ActionKind::Run(CmdRunArgs::new(format!(
            "printf '%s\\n\\n' {}; {command}",
            shell_quote(&header)
        )))
    };
    let path = |args: &ToolArgs<'_>| -> Result<String, AgentError> {
        Ok(args
            .optional_str("path")
            .map_err(malformed)?
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| ".".to_string()))
    };
    let kind = match name {
        VIEW => {
            let mut read = FileReadArgs::new(args.required_str("path").map_err(malformed)?);
            read.impl_source = FileReadSource::OhAci;
            read.view_range = match args.get("view_range") {
                None => None,
                Some(range) => Some(
                    range
                        .as_array()
                        .filter(|items| items.len() == 2)
                        .and_then(|items| items.iter().map(Value::as_i64).collect())
                        .ok_or_else(|| {
                            malformed(args.invalid("view_range", "must be two integers"))
                        })?,
                ),
            };
            ActionKind::Read(read)
        }
        GREP => {
            let pattern = shell_quote(&args.required_str("pattern").map_err(malformed)?);
            let include = args.optional_str("include").map_err(malformed)?;
            let dir = shell_quote(&path(&args)?);
            let (rg_glob, grep_include) = match &include {
                Some(glob) => (
                    format!(" --glob {}", shell_quote(glob)),
                    format!(" --include={}", shell_quote(glob)),
                ),
                None => (String::new(), String::new()),
            };
            search(
                "search",
                format!(
                    "{{ if command -v rg >/dev/null; then rg -li -e {pattern} --sortr=modified{rg_glob} {dir}; \
                     else grep -rli{grep_include} -e {pattern} {dir}; fi; }} | head -n 100"
                ),
            )
        }
        GLOB => {
            let pattern = shell_quote(&args.required_str("pattern").map_err(malformed)?);
            let dir = shell_quote(&path(&args)?);
            search(
                "glob",
                format!(
                    "{{ if command -v rg >/dev/null; then rg --files {dir} -g {pattern} --sortr=modified; \
                     else find {dir} -type f -path {pattern} -o -type f -name {pattern}; fi; }} | head -n 100"
                ),
            )
        }
        other => return Err(not_registered(other, call)),
    };
    Ok(Action::from(kind))
}

/// A call of `LocAgent`'s tools: a search is a cell calling the function of that name in the
/// kernel (`agent::loc`), `finish` finishes; any other tool is not registered.
fn loc_call(call: &ToolCall) -> Result<Action, AgentError> {
    let name = call.function.name.as_str();
    if loc::FUNCTIONS.contains(&name) {
        let code = loc::cell_code(name, &call.function.arguments).map_err(malformed)?;
        return Ok(Action::from(ActionKind::RunIpython(
            IPythonRunCellArgs::new(code),
        )));
    }
    let args = ToolArgs::parse(name, &call.function.arguments).map_err(malformed)?;
    match name {
        FINISH => think_or_finish(name, &args)
            .unwrap_or_else(|| Err(not_registered(name, call)))
            .map(Action::from),
        other => Err(not_registered(other, call)),
    }
}

/// `text` as one shell word (Python's `shlex.quote`).
fn shell_quote(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c));
    if safe {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\"'\"'"))
    }
}

fn malformed(error: ToolCallError) -> AgentError {
    AgentError::Malformed(error.0)
}

#[cfg(test)]
mod tests;
