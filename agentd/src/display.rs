//! How events look on a terminal: one readable block per event, for `agentd run`'s live
//! progress (`--json` prints the events themselves instead).

use protocol::{ActionKind, Event, EventSource, ObservationKind};

/// The longest observation text shown; the rest is summarised (the full text is in the
/// session's event log).
const MAX_SHOWN: usize = 2_000;

/// The most lines of a cell's code shown; a longer one (a cell that defines a whole module,
/// say) shows its first and last lines, the whole code being in the event log.
const MAX_CODE_LINES: usize = 30;

/// One event as a person reads it: `#ID source  what`, then indented detail lines.
pub fn render(event: &Event) -> String {
    let id = event
        .id()
        .map_or_else(|| "-".to_string(), |i| i.to_string());
    let source = match event.source() {
        Some(EventSource::Agent) => "agent",
        Some(EventSource::User) => "user",
        Some(EventSource::Environment) => "env",
        None => "?",
    };
    let (head, body) = match event {
        Event::Action(a) => {
            let thought = thought(&a.kind);
            let (mut head, body) = action(&a.kind);
            if let Some(note) = confirmation_note(a) {
                head.push_str(&note);
            }
            let body = match thought {
                Some(t) if !t.is_empty() => format!("({t})\n{body}"),
                _ => body,
            };
            (head, body)
        }
        Event::Observation(o) => {
            let head = match &o.kind {
                ObservationKind::Run(extras) => format!("run → exit {}", extras.metadata.exit_code),
                ObservationKind::AgentStateChanged(extras) if extras.reason.is_empty() => {
                    format!("state → {}", extras.agent_state)
                }
                ObservationKind::AgentStateChanged(extras) => {
                    format!("state → {} ({})", extras.agent_state, extras.reason)
                }
                ObservationKind::Mcp(extras) => format!("mcp {}", extras.name),
                other => other.type_name().to_string(),
            };
            let body = match &o.kind {
                ObservationKind::Mcp(_) => crate::mcp::read_content(&o.content).text,
                _ => o.content.clone(),
            };
            (head, shorten(&body))
        }
    };
    let mut out = format!("#{id:<4} {source:<5} {head}");
    for line in body.lines() {
        out.push_str("\n        ");
        out.push_str(line);
    }
    out
}

/// ` [risk high, awaiting confirmation]`: what a runnable action's risk and confirmation
/// state say, when they say something.
fn confirmation_note(action: &protocol::Action) -> Option<String> {
    use protocol::action::ConfirmationState;
    if !action.kind.is_runnable() {
        return None;
    }
    let risk = action
        .kind
        .security_risk()
        .filter(|r| *r >= 0)
        .map(|r| format!("risk {}", crate::security::Risk::from_i64(r).as_str()));
    let state = match action.confirmation_state() {
        ConfirmationState::Confirmed => None,
        ConfirmationState::AwaitingConfirmation => Some("awaiting confirmation".to_string()),
        ConfirmationState::Rejected => Some("rejected".to_string()),
    };
    let parts: Vec<String> = risk.into_iter().chain(state).collect();
    (!parts.is_empty()).then(|| format!(" [{}]", parts.join(", ")))
}

fn action(kind: &ActionKind) -> (String, String) {
    match kind {
        ActionKind::Run(a) => ("run".into(), format!("$ {}", a.command)),
        ActionKind::RunIpython(a) => ("run_ipython".into(), shorten_code(&a.code)),
        ActionKind::Read(a) => (format!("read {}", a.path), String::new()),
        ActionKind::Write(a) => (format!("write {}", a.path), shorten(&a.content)),
        ActionKind::Edit(a) => (format!("edit {} {}", a.command, a.path), String::new()),
        ActionKind::Message(m) => ("message".into(), m.content.clone()),
        ActionKind::Finish(f) => ("finish".into(), f.final_thought.clone()),
        ActionKind::Mcp(m) => (
            format!("mcp {}", m.name),
            shorten(&serde_json::Value::Object(m.arguments.clone()).to_string()),
        ),
        other => (other.action_type().as_str().to_string(), String::new()),
    }
}

fn thought(kind: &ActionKind) -> Option<&str> {
    match kind {
        ActionKind::Run(a) => Some(&a.thought),
        ActionKind::RunIpython(a) => Some(&a.thought),
        ActionKind::Think(a) => Some(&a.thought),
        ActionKind::Finish(a) => Some(&a.thought),
        ActionKind::Mcp(a) => Some(&a.thought),
        _ => None,
    }
}

/// `code` as it is, or its first 20 and last 10 lines around a note of how many are left out.
fn shorten_code(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    if lines.len() <= MAX_CODE_LINES {
        return code.to_string();
    }
    let (head, tail) = (MAX_CODE_LINES * 2 / 3, MAX_CODE_LINES / 3);
    format!(
        "{}\n[… {} more lines in the event log]\n{}",
        lines[..head].join("\n"),
        lines.len() - head - tail,
        lines[lines.len() - tail..].join("\n")
    )
}

fn shorten(text: &str) -> String {
    let text = text.trim_end();
    if text.len() <= MAX_SHOWN {
        return text.to_string();
    }
    let mut cut = MAX_SHOWN;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[… {} more characters in the event log]",
        &text[..cut],
        text.len() - cut
    )
}

#[cfg(test)]
mod tests;
