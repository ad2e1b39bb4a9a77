//! The text an observation of a kind of its own shows the model: an `error`, a
//! `user_rejected`, a `recall` (the workspace context and the triggered microagents, as the
//! reference's templates say them), and the middle cut of a text over the message limit.

use std::borrow::Cow;
use std::collections::HashSet;

use protocol::observation::RecallExtras;
use sandbox_common::truncate_middle;

/// `error`: the (truncated) text and the reference's closing line.
pub(crate) fn render_error(content: &str, max_chars: Option<usize>) -> String {
    format!(
        "{}\n[Error occurred in processing last action]",
        truncate_content(content, max_chars)
    )
}

/// `user_rejected`: the (truncated) text between the reference's opening and closing lines.
pub(crate) fn render_user_rejected(content: &str, max_chars: Option<usize>) -> String {
    format!(
        "OBSERVATION:\n{}\n[Last action has been rejected by the user]",
        truncate_content(content, max_chars)
    )
}

/// A triggered microagent of a `recall` observation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TriggeredMicroagent<'a> {
    /// Its name.
    pub(crate) name: &'a str,
    /// The word that triggered it.
    pub(crate) trigger: &'a str,
    /// Its knowledge.
    pub(crate) content: &'a str,
}

pub(super) fn microagents(extras: &RecallExtras) -> impl Iterator<Item = TriggeredMicroagent<'_>> {
    extras.microagent_knowledge.iter().map(|m| {
        let field = |key: &str| m.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        TriggeredMicroagent {
            name: field("name"),
            trigger: field("trigger"),
            content: field("content"),
        }
    })
}

/// `recall`: the workspace context (repository, its instructions, runtime hosts, secrets, date,
/// conversation instructions) and the knowledge of triggered microagents not shown before
/// (`seen`: names of microagents of earlier `recall` observations). Each non-empty block is
/// one text part; no parts when there is nothing to say.
pub(crate) fn render_recall(extras: &RecallExtras, seen: &HashSet<String>) -> Vec<String> {
    let mut parts = Vec::new();
    let workspace = extras.recall_type == "workspace_context";
    if workspace {
        let context = render_workspace_context(extras);
        if !context.is_empty() {
            parts.push(context);
        }
    }
    let fresh: Vec<TriggeredMicroagent<'_>> = microagents(extras)
        .filter(|m| workspace || !seen.contains(m.name))
        .collect();
    if !fresh.is_empty() {
        parts.push(render_microagents(&fresh));
    }
    parts
}

/// The workspace context as the reference's `additional_info.j2` renders it (docs/protocol.md
/// §12.5: Jinja's default white space, the result trimmed), or nothing when it would say
/// nothing beyond the runtime block's frame.
fn render_workspace_context(extras: &RecallExtras) -> String {
    let has_repo = !extras.repo_name.is_empty() || !extras.repo_directory.is_empty();
    let has_runtime = !extras.date.is_empty() || !extras.custom_secrets_descriptions.is_empty();
    let has_instructions = !extras.repo_instructions.trim().is_empty();
    let has_conversation = !extras.conversation_instructions.is_empty();
    if !(has_repo || has_runtime || has_instructions || has_conversation) {
        return String::new();
    }
    let mut out = String::new();
    if has_repo {
        out.push_str(&format!(
            "\n<REPOSITORY_INFO>\nAt the user's request, repository {} has been cloned to {} in \
             the current working directory.\n",
            extras.repo_name, extras.repo_directory
        ));
        let branch = &extras.repo_branch;
        if !branch.is_empty() {
            out.push_str(&format!(
                "The repository has been checked out to branch \"{branch}\".\n\nIMPORTANT: You \
                 should work within the current branch \"{branch}\" unless:\n    1. the user \
                 explicitly instructs otherwise\n    2. the current branch is \"main\", \"master\", \
                 or another default branch where direct pushes may be unsafe\n"
            ));
        }
        out.push_str("\n</REPOSITORY_INFO>\n");
    }
    out.push('\n');
    if !extras.repo_instructions.is_empty() {
        out.push_str(&format!(
            "<REPOSITORY_INSTRUCTIONS>\n{}\n</REPOSITORY_INSTRUCTIONS>\n",
            extras.repo_instructions
        ));
    }
    out.push_str("\n<RUNTIME_INFORMATION>\n");
    if !extras.working_dir.is_empty() {
        out.push_str(&format!(
            "\nThe current working directory is {}\n",
            extras.working_dir
        ));
    }
    out.push('\n');
    if !extras.runtime_hosts.is_empty() {
        out.push_str(
            "\nThe user has access to the following hosts for accessing a web application,\neach \
             of which has a corresponding port:\n",
        );
        for (host, port) in &extras.runtime_hosts {
            out.push_str(&format!("* {host} (port {})\n", json_text(port)));
        }
        out.push_str(
            "\nWhen starting a web server, use the corresponding ports. You should also\nset any \
             options to allow iframes and CORS requests, and allow the server to\nbe accessed \
             from any host (e.g. 0.0.0.0).\nFor example, if you are using vite.config.js, you \
             should set server.host and server.allowedHosts to true\n",
        );
    }
    out.push('\n');
    if !extras.additional_agent_instructions.is_empty() {
        out.push_str(&format!("\n{}\n", extras.additional_agent_instructions));
    }
    out.push('\n');
    if !extras.custom_secrets_descriptions.is_empty() {
        out.push_str(
            "\n<CUSTOM_SECRETS>\nYou have access to the following environment variables\n",
        );
        for (name, description) in &extras.custom_secrets_descriptions {
            out.push_str(&format!("\n* **${name}**: {}\n", json_text(description)));
        }
        out.push_str("\n</CUSTOM_SECRETS>\n");
    }
    out.push('\n');
    if !extras.date.is_empty() {
        out.push_str(&format!("\nToday's date is {} (UTC).\n", extras.date));
    }
    out.push_str("\n</RUNTIME_INFORMATION>\n");
    if has_conversation {
        out.push_str(&format!(
            "<CONVERSATION_INSTRUCTIONS>\n{}\n</CONVERSATION_INSTRUCTIONS>\n",
            extras.conversation_instructions
        ));
    }
    out.trim().to_string()
}

/// A JSON value as a template prints it: a string's text, anything else as JSON.
fn json_text(value: &serde_json::Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

/// Triggered microagents as the reference's `microagent_info.j2` renders them.
fn render_microagents(agents: &[TriggeredMicroagent<'_>]) -> String {
    agents
        .iter()
        .map(|m| {
            format!(
                "<EXTRA_INFO>\nThe following information has been included based on a keyword \
                 match for \"{}\".\nIt may or may not be relevant to the user's request.\n\n{}\n\
                 </EXTRA_INFO>",
                m.trigger, m.content
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Cuts the middle out of `content` when it is longer than `max_chars` characters (none: no
/// limit), keeping half of the limit at each end around [`sandbox_common::TRUNCATION_NOTICE`].
pub(crate) fn truncate_content(content: &str, max_chars: Option<usize>) -> Cow<'_, str> {
    match max_chars {
        Some(max) => truncate_middle(content, max),
        None => Cow::Borrowed(content),
    }
}
