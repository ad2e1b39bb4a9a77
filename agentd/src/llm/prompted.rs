//! Prompted tool calling (OpenHands' fn-call converter), for models without native tool
//! calling: native messages are turned into plain chat, and the model's text answer back into
//! a native tool call, so the agent is the same in both modes.
//!
//! The text format is the one models tuned on OpenHands trajectories speak:
//!
//! - the tools are described at the end of the system prompt (`---- BEGIN FUNCTION #1: NAME
//!   ----` blocks), followed by the format's instructions;
//! - a call is `<function=NAME>`, then one `<parameter=ARG>value</parameter>` per argument
//!   (multi-line values start and end with a newline), then `</function>`; the request stops
//!   at `</function` (a stop word), so a missing closing tag is normal;
//! - a tool result is a user message starting `EXECUTION RESULT of [NAME]:\n`;
//! - the first user message can carry a worked example, framed by `START OF EXAMPLE` /
//!   `NEW TASK DESCRIPTION` markers (our own example, built from the tools present).
//!
//! Consecutive user messages (a tool result followed by a user message) stay separate
//! messages, as in the reference.

use std::collections::HashMap;

use protocol::llm::{Content, ContentPart, FunctionCall, Message, Role, Tool, ToolCall};
use serde_json::{Map, Value};

/// The stop words of a prompted request.
pub(crate) const STOP_WORDS: &[&str] = &["</function"];

const FORMAT_INSTRUCTIONS: &str = "If you choose to call a function ONLY reply in the following format with NO suffix:

<function=example_function_name>
<parameter=example_parameter_1>value_1</parameter>
<parameter=example_parameter_2>
This is the value for the second parameter
that can span
multiple lines
</parameter>
</function>

<IMPORTANT>
Reminder:
- Function calls MUST follow the specified format, start with <function= and end with </function>
- Required parameters MUST be specified
- Only call one function at a time
- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after.
- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls
</IMPORTANT>
";

const EXAMPLE_START: &str =
    "Here's a running example of how to perform a task with the provided tools.

--------------------- START OF EXAMPLE ---------------------

USER: Write a Python script that prints the first ten Fibonacci numbers, and run it.

";

const EXAMPLE_END: &str = "
--------------------- END OF EXAMPLE ---------------------

Do NOT assume the environment is the same as in the example above.

--------------------- NEW TASK DESCRIPTION ---------------------
";

/// Appended to the first user message after the task when the example is given.
pub(crate) const EXAMPLE_SUFFIX: &str = "
--------------------- END OF NEW TASK DESCRIPTION ---------------------

PLEASE follow the format strictly! PLEASE EMIT ONE AND ONLY ONE FUNCTION CALL PER MESSAGE.
";

const FIB_V1: &str = "a, b = 0, 1\nfor _ in range(10):\n    print(a)\n    a, b = b, a + b\n";

/// The tools' descriptions, as the reference renders them.
pub(crate) fn describe_tools(tools: &[Tool]) -> String {
    let mut out = String::new();
    for (i, tool) in tools.iter().enumerate() {
        let function = &tool.function;
        let n = i + 1;
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "---- BEGIN FUNCTION #{n}: {} ----\n",
            function.name
        ));
        out.push_str(&format!("Description: {}\n", function.description));
        if function.parameters.is_object() {
            out.push_str("Parameters:\n");
            let required = required(&function.parameters);
            for (j, (name, info)) in properties(&function.parameters).iter().enumerate() {
                let status = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let mut description = info
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("No description provided")
                    .to_owned();
                if let Some(values) = info.get("enum").and_then(Value::as_array) {
                    let values: Vec<String> =
                        values.iter().map(|v| format!("`{}`", plain(v))).collect();
                    description.push_str(&format!("\nAllowed values: [{}]", values.join(", ")));
                }
                out.push_str(&format!(
                    "  ({}) {name} ({}, {status}): {description}\n",
                    j + 1,
                    type_name(info)
                ));
            }
        } else {
            out.push_str("No parameters are required for this function.\n");
        }
        out.push_str(&format!("---- END FUNCTION #{n} ----\n"));
    }
    out
}

/// What is appended to the system prompt: the tools and the format's instructions.
pub(crate) fn system_suffix(tools: &[Tool]) -> String {
    format!(
        "\nYou have access to the following functions:\n\n{}\n\n{FORMAT_INSTRUCTIONS}",
        describe_tools(tools)
    )
}

/// The worked example for the first user message, or `None` when none of the tools it
/// shows (`execute_bash`, `str_replace_editor`, `finish`) is present.
pub(crate) fn in_context_example(tools: &[Tool]) -> Option<String> {
    let find = |name: &str| tools.iter().find(|t| t.function.name == name);
    let bash = find("execute_bash");
    let editor = find("str_replace_editor");
    let finish = find("finish");
    if bash.is_none() && editor.is_none() && finish.is_none() {
        return None;
    }
    let mut out = EXAMPLE_START.to_owned();
    let mut turn = |tool: Option<&Tool>, say: &str, args: &[(&str, &str)], result: &str| {
        if let Some((tool, args)) = tool.and_then(|t| Some((t, example_args(t, args)?))) {
            out.push_str(&format!("ASSISTANT: {say}\n"));
            out.push_str(&render_call(&tool.function.name, &args));
            out.push_str(&format!(
                "\n\nUSER: EXECUTION RESULT of [{}]:\n{result}\n\n",
                tool.function.name
            ));
        }
    };
    turn(
        bash,
        "Let me look at the working directory first:",
        &[("command", "pwd && ls")],
        "/workspace\nopenhands@runtime:~/workspace$",
    );
    turn(
        editor,
        "Let me create the script:",
        &[
            ("command", "create"),
            ("path", "/workspace/fib.py"),
            ("file_text", FIB_V1),
        ],
        "File created successfully at: /workspace/fib.py",
    );
    turn(
        bash,
        "Now let me run it:",
        &[("command", "python3 /workspace/fib.py")],
        "0\n1\n1\n2\n3\n5\n8\n13\n21\n34\n[The command completed with exit code 0.]",
    );
    turn(
        editor,
        "The numbers are correct. Let me print them on one line instead:",
        &[
            ("command", "str_replace"),
            ("path", "/workspace/fib.py"),
            ("old_str", "    print(a)"),
            ("new_str", "    print(a, end=' ')"),
        ],
        "The file /workspace/fib.py has been edited. Review the changes and make sure they are as expected.",
    );
    turn(
        bash,
        "Let me run it again:",
        &[("command", "python3 /workspace/fib.py")],
        "0 1 1 2 3 5 8 13 21 34 \n[The command completed with exit code 0.]",
    );
    let done = "I wrote /workspace/fib.py, which prints the first ten Fibonacci numbers on one line, and ran it.";
    if let Some((finish, args)) =
        finish.and_then(|t| Some((t, example_args(t, &[("message", done)])?)))
    {
        out.push_str("ASSISTANT: The script prints the first ten Fibonacci numbers.\n");
        out.push_str(&render_call(&finish.function.name, &args));
        out.push('\n');
    }
    out.push_str(EXAMPLE_END);
    Some(out)
}

/// The example's arguments for `tool`, plus required enum parameters the example does not
/// set (their first value), so the example never shows a call the parser would refuse; `None`
/// (skip the turn) when the tool lacks one of the example's parameters or requires one the
/// example cannot fill.
fn example_args(tool: &Tool, args: &[(&str, &str)]) -> Option<Vec<(String, Value)>> {
    let props = properties(&tool.function.parameters);
    let has = |name: &str| props.is_empty() || props.iter().any(|(p, _)| p.as_str() == name);
    if !args.iter().all(|(name, _)| has(name)) {
        return None;
    }
    let mut out: Vec<(String, Value)> = args
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Value::String((*value).to_owned())))
        .collect();
    for name in required(&tool.function.parameters) {
        if out.iter().any(|(n, _)| n == name) {
            continue;
        }
        let first = props
            .iter()
            .find(|(p, _)| p.as_str() == name)
            .and_then(|(_, info)| info.get("enum"))
            .and_then(Value::as_array)
            .and_then(|values| values.first())?;
        out.push((name.to_owned(), first.clone()));
    }
    Some(out)
}

/// Renders one call in the text format.
fn render_call(name: &str, args: &[(String, Value)]) -> String {
    let mut out = format!("<function={name}>\n");
    for (param, value) in args {
        out.push_str(&format!("<parameter={param}>"));
        match value {
            Value::String(text) if text.contains('\n') => {
                out.push('\n');
                out.push_str(text);
                out.push('\n');
            }
            other => out.push_str(&plain(other)),
        }
        out.push_str("</parameter>\n");
    }
    out.push_str("</function>");
    out
}

/// A native tool call in the text format; arguments that are not a JSON object are shown as
/// they are, in one `arguments` parameter.
fn render_tool_call(call: &ToolCall) -> String {
    let args: Vec<(String, Value)> = match serde_json::from_str::<Value>(&call.function.arguments) {
        Ok(Value::Object(map)) => map.into_iter().collect(),
        _ => vec![(
            "arguments".to_owned(),
            Value::String(call.function.arguments.clone()),
        )],
    };
    render_call(&call.function.name, &args)
}

/// Turns native messages into prompted ones: the tools appended to the system message (one is
/// added if there is none), the example around the first user message, assistant tool calls
/// as text, tool results as `EXECUTION RESULT of [NAME]:` user messages.
pub(crate) fn to_prompted(messages: &[Message], tools: &[Tool], example: bool) -> Vec<Message> {
    let suffix = system_suffix(tools);
    let example = if example {
        in_context_example(tools)
    } else {
        None
    };
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !messages.iter().any(|m| m.role == Role::System) {
        out.push(Message::system(suffix.trim_start()));
    }
    let mut first_user = true;
    for message in messages {
        match message.role {
            Role::System => {
                let mut content = content_of(message);
                append_text(&mut content, &suffix);
                out.push(plain_message(Role::System, content));
            }
            Role::User => {
                let mut content = content_of(message);
                if first_user {
                    first_user = false;
                    if let Some(example) = &example {
                        wrap_first_text(&mut content, example, EXAMPLE_SUFFIX);
                    }
                }
                out.push(plain_message(Role::User, content));
            }
            Role::Assistant => {
                let calls = message.tool_calls.as_deref().unwrap_or_default();
                for call in calls {
                    names.insert(&call.id, &call.function.name);
                }
                let mut content = content_of(message);
                if !calls.is_empty() {
                    let rendered: Vec<String> = calls.iter().map(render_tool_call).collect();
                    append_call_text(&mut content, &rendered.join("\n\n"));
                }
                out.push(plain_message(Role::Assistant, content));
            }
            Role::Tool => {
                let name = message
                    .name
                    .as_deref()
                    .or_else(|| {
                        message
                            .tool_call_id
                            .as_deref()
                            .and_then(|id| names.get(id).copied())
                    })
                    .unwrap_or("function");
                let prefix = format!("EXECUTION RESULT of [{name}]:\n");
                let mut content = content_of(message);
                prepend_text(&mut content, &prefix);
                out.push(plain_message(Role::User, content));
            }
        }
    }
    out
}

/// A copy of `message`'s content; an empty text when it has none.
fn content_of(message: &Message) -> Content {
    message
        .content
        .clone()
        .unwrap_or(Content::Text(String::new()))
}

fn plain_message(role: Role, content: Content) -> Message {
    Message {
        content: Some(content),
        ..Message::text(role, "")
    }
}

fn append_text(content: &mut Content, text: &str) {
    match content {
        Content::Text(t) => t.push_str(text),
        Content::Parts(parts) => match parts.last_mut() {
            Some(ContentPart::Text { text: t }) => t.push_str(text),
            _ => parts.push(ContentPart::Text {
                text: text.to_owned(),
            }),
        },
    }
}

/// An assistant's text, a blank line, the call; leading whitespace removed.
fn append_call_text(content: &mut Content, call: &str) {
    match content {
        Content::Text(t) => *t = format!("{t}\n\n{call}").trim_start().to_owned(),
        Content::Parts(parts) => match parts.last_mut() {
            Some(ContentPart::Text { text }) => {
                *text = format!("{text}\n\n{call}").trim_start().to_owned();
            }
            _ => parts.push(ContentPart::Text {
                text: call.to_owned(),
            }),
        },
    }
}

fn prepend_text(content: &mut Content, prefix: &str) {
    match content {
        Content::Text(t) => t.insert_str(0, prefix),
        Content::Parts(parts) => {
            let first_text = parts.iter_mut().find_map(|p| match p {
                ContentPart::Text { text } => Some(text),
                ContentPart::ImageUrl { .. } => None,
            });
            match first_text {
                Some(text) => text.insert_str(0, prefix),
                None => parts.insert(
                    0,
                    ContentPart::Text {
                        text: prefix.to_owned(),
                    },
                ),
            }
        }
    }
}

fn wrap_first_text(content: &mut Content, before: &str, after: &str) {
    match content {
        Content::Text(t) => *t = format!("{before}{t}{after}"),
        Content::Parts(parts) => match parts.first_mut() {
            Some(ContentPart::Text { text }) => *text = format!("{before}{text}{after}"),
            _ => {
                parts.insert(
                    0,
                    ContentPart::Text {
                        text: before.to_owned(),
                    },
                );
                parts.push(ContentPart::Text {
                    text: after.to_owned(),
                });
            }
        },
    }
}

/// A prompted answer, parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    /// The text before the call (all of it when there is no call); `None` when empty.
    pub(crate) content: Option<String>,
    /// The call, with a generated id and JSON arguments typed by the tool's schema.
    pub(crate) call: Option<ToolCall>,
}

/// Parses the model's text answer. `truncated`: the answer ended because it hit the output
/// token limit (`finish_reason` `length`), so an unclosed call is cut off, not stopped by the
/// stop word. Errors are messages for the model.
pub(crate) fn parse_answer(text: &str, tools: &[Tool], truncated: bool) -> Result<Parsed, String> {
    const OPEN: &str = "<function=";
    const CLOSE: &str = "</function>";
    let Some(start) = text.find(OPEN) else {
        return Ok(Parsed {
            content: Some(text.to_owned()).filter(|t| !t.trim().is_empty()),
            call: None,
        });
    };
    let before = text[..start].trim();
    let rest = &text[start + OPEN.len()..];
    let name_end = rest
        .find(['>', '\n'])
        .filter(|&i| rest[i..].starts_with('>'))
        .ok_or_else(|| {
            "The function call is malformed: `<function=` must be followed by the function name and `>`, e.g. `<function=NAME>`.".to_owned()
        })?;
    let name = rest[..name_end].trim();
    let after_name = &rest[name_end + 1..];
    let body = match after_name.find(CLOSE) {
        Some(end) => &after_name[..end],
        None if truncated => {
            return Err(format!(
                "Your function call to '{name}' was cut off: the answer reached the output token limit before `</function>`. Make the call shorter (for example, create a large file in several steps)."
            ));
        }
        // Stopped by the stop word `</function`: the closing tag is missing, or partly there.
        None => strip_partial_close(after_name),
    };
    let tool = tools
        .iter()
        .find(|t| t.function.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = tools.iter().map(|t| t.function.name.as_str()).collect();
            format!(
                "Function '{name}' not found in available tools: [{}].",
                names.join(", ")
            )
        })?;
    let arguments = parse_parameters(body, tool)?;
    let call = ToolCall {
        id: unique_call_id(),
        kind: "function".to_owned(),
        function: FunctionCall {
            name: name.to_owned(),
            arguments: Value::Object(arguments).to_string(),
        },
    };
    Ok(Parsed {
        content: Some(before.to_owned()).filter(|t| !t.is_empty()),
        call: Some(call),
    })
}

/// Removes a trailing `</`, `</function` or the like that the server left before stopping.
fn strip_partial_close(body: &str) -> &str {
    let trimmed = body.trim_end();
    for cut in (2..=10).rev() {
        if let Some(partial) = "</function>".get(..cut)
            && let Some(stripped) = trimmed.strip_suffix(partial)
        {
            return stripped;
        }
    }
    body
}

fn parse_parameters(body: &str, tool: &Tool) -> Result<Map<String, Value>, String> {
    const OPEN: &str = "<parameter=";
    const CLOSE: &str = "</parameter>";
    let function = &tool.function.name;
    let props = properties(&tool.function.parameters);
    let mut args = Map::new();
    let mut rest = body;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let name_len = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        // `<parameter=NAME>value` or the slip `<parameter=NAME=value`.
        let value_start = match after[name_len..].chars().next() {
            Some('>' | '=') if !name.is_empty() => name_len + 1,
            _ => {
                return Err(format!(
                    "A parameter of function '{function}' is malformed: write `<parameter=NAME>value</parameter>`."
                ));
            }
        };
        let value_text = &after[value_start..];
        let end = value_text.find(CLOSE).ok_or_else(|| {
            format!(
                "Parameter '{name}' of function '{function}' is not closed: end each value with `</parameter>`."
            )
        })?;
        let raw = &value_text[..end];
        rest = &value_text[end + CLOSE.len()..];
        let schema = props
            .iter()
            .find(|(p, _)| p.as_str() == name)
            .map(|(_, info)| *info);
        if !props.is_empty() && schema.is_none() {
            let allowed: Vec<&str> = props.iter().map(|(p, _)| p.as_str()).collect();
            return Err(format!(
                "Parameter '{name}' is not allowed for function '{function}'. Allowed parameters: [{}].",
                allowed.join(", ")
            ));
        }
        if args.contains_key(name) {
            return Err(format!(
                "Parameter '{name}' is given twice in the call to function '{function}'."
            ));
        }
        let value = convert(name, raw, schema)?;
        args.insert(name.to_owned(), value);
    }
    let missing: Vec<&str> = required(&tool.function.parameters)
        .into_iter()
        .filter(|name| !args.contains_key(*name))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "Missing required parameters for function '{function}': [{}].",
            missing.join(", ")
        ));
    }
    Ok(args)
}

/// A parameter's text as the JSON value its schema asks for, checked against its `enum`.
fn convert(name: &str, raw: &str, schema: Option<&Value>) -> Result<Value, String> {
    let text = raw.strip_prefix('\n').unwrap_or(raw);
    let text = text.strip_suffix('\n').unwrap_or(text);
    let trimmed = text.trim();
    let kind = schema.map_or("string", type_name);
    let value = match kind {
        "integer" => trimmed
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("Parameter '{name}' is expected to be an integer."))?,
        "number" => trimmed
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("Parameter '{name}' is expected to be a number."))?,
        "boolean" => match trimmed.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => {
                return Err(format!(
                    "Parameter '{name}' is expected to be a boolean (true or false)."
                ));
            }
        },
        "array" => match serde_json::from_str(trimmed) {
            Ok(Value::Array(items)) => Value::Array(items),
            _ => {
                return Err(format!(
                    "Parameter '{name}' is expected to be an array (JSON)."
                ));
            }
        },
        "object" => match serde_json::from_str(trimmed) {
            Ok(Value::Object(map)) => Value::Object(map),
            _ => {
                return Err(format!(
                    "Parameter '{name}' is expected to be an object (JSON)."
                ));
            }
        },
        _ => Value::String(text.to_owned()),
    };
    if let Some(allowed) = schema.and_then(|s| s.get("enum")).and_then(Value::as_array) {
        let matches = |v: &Value| match (v, &value) {
            (Value::String(a), Value::String(b)) => a == b.trim(),
            (a, b) => a == b,
        };
        if !allowed.iter().any(matches) {
            let allowed: Vec<String> = allowed.iter().map(plain).collect();
            return Err(format!(
                "Parameter '{name}' is expected to be one of [{}].",
                allowed.join(", ")
            ));
        }
        if let Value::String(s) = &value {
            return Ok(Value::String(s.trim().to_owned()));
        }
    }
    Ok(value)
}

/// A fresh id for a parsed call (`toolu_` and 16 hex digits). It only needs to be unique
/// within a run (it pairs a call with its result), not secret: from the OS's random source, or,
/// when that has none (logged), from the clock's nanoseconds.
pub(crate) fn unique_call_id() -> String {
    let hex = sandbox_common::random_hex(8).unwrap_or_else(|error| {
        tracing::warn!(%error, "no random bytes for a tool call id; using the clock");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{:016x}", nanos as u64)
    });
    format!("toolu_{hex}")
}

/// A schema's properties, in the schema's order.
/// A schema's properties: the required ones first, in the order `required` lists them, then
/// the others by name. (JSON objects here keep no key order, and a model reads `command` and
/// `path` before the optional arguments more easily than in alphabetical order.)
fn properties(parameters: &Value) -> Vec<(&String, &Value)> {
    let Some(props) = parameters.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required = required(parameters);
    let mut ordered: Vec<(&String, &Value)> = required
        .iter()
        .filter_map(|name| props.get_key_value(*name))
        .collect();
    ordered.extend(
        props
            .iter()
            .filter(|(name, _)| !required.contains(&name.as_str())),
    );
    ordered
}

fn required(parameters: &Value) -> Vec<&str> {
    parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A property's type: `type`, or the first non-null one of a list; `string` when absent.
fn type_name(info: &Value) -> &str {
    match info.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    }
}

/// A JSON value as text in the prompt: strings without quotes, the rest as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
