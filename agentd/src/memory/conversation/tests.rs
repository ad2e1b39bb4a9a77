//! Tests of the conversation memory: ordering, tool pairing, vision, rendering.

use protocol::action::{
    CmdRunArgs, FinishArgs, IPythonRunCellArgs, MessageArgs, SystemMessageArgs,
};
use protocol::llm::{Content, ContentPart, Message, Role};
use protocol::observation::{
    CmdOutputExtras, CmdOutputMetadata, EmptyExtras, ErrorExtras, FileEditExtras,
    IPythonRunCellExtras, RecallExtras,
};
use protocol::{Action, ActionKind, EventSource, Observation, ObservationKind, ToolCallMetadata};
use serde_json::json;

use super::*;
use crate::events::EventStream;
use crate::memory::View;
use sandbox_common::TRUNCATION_NOTICE;

pub(crate) fn response(
    id: &str,
    text: Option<&str>,
    calls: &[(&str, &str, &str)],
) -> serde_json::Value {
    json!({
        "id": id,
        "model": "test-model",
        "created": 0,
        "choices": [{
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": text,
                "tool_calls": calls.iter().map(|(id, name, args)| json!({
                    "id": id, "type": "function", "function": {"name": name, "arguments": args}
                })).collect::<Vec<_>>(),
            },
        }],
    })
}

pub(crate) fn metadata(response: &serde_json::Value, call: &str, name: &str) -> ToolCallMetadata {
    ToolCallMetadata {
        function_name: name.to_string(),
        tool_call_id: call.to_string(),
        model_response: response.clone(),
        total_calls_in_response: response["choices"][0]["message"]["tool_calls"]
            .as_array()
            .map_or(1, |c| c.len() as u32),
    }
}

pub(crate) fn system() -> Action {
    Action::from(ActionKind::System(SystemMessageArgs {
        content: "You are a careful agent.".into(),
        ..SystemMessageArgs::default()
    }))
}

pub(crate) fn message(text: &str) -> Action {
    Action::from(ActionKind::Message(MessageArgs {
        content: text.into(),
        ..MessageArgs::default()
    }))
}

pub fn run(command: &str, meta: Option<ToolCallMetadata>) -> Action {
    Action {
        tool_call_metadata: meta,
        ..Action::from(ActionKind::Run(CmdRunArgs::new(command)))
    }
}

pub(crate) fn run_extras(command: &str, exit_code: i64) -> CmdOutputExtras {
    CmdOutputExtras {
        command: command.into(),
        metadata: CmdOutputMetadata {
            exit_code,
            working_dir: Some("/workspace".into()),
            ..CmdOutputMetadata::default()
        },
        hidden: false,
        full_output_path: None,
    }
}

pub(crate) fn run_output(
    command: &str,
    content: &str,
    meta: Option<ToolCallMetadata>,
    cause: Option<i64>,
) -> Observation {
    Observation {
        tool_call_metadata: meta,
        cause,
        ..Observation::new(ObservationKind::Run(run_extras(command, 0)), content)
    }
}

fn text(message: &Message) -> &str {
    match &message.content {
        Some(Content::Text(text)) => text,
        other => panic!("not plain text: {other:?}"),
    }
}

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

/// A stream opening with the system prompt and the task.
fn opened() -> EventStream {
    let stream = EventStream::in_memory();
    stream.add(system(), EventSource::Agent).unwrap();
    stream
        .add(message("Fix the build."), EventSource::User)
        .unwrap();
    stream
}

fn messages_of(stream: &EventStream, memory: &ConversationMemory) -> Vec<Message> {
    memory.process_events(&View::from_events(&stream.all()))
}

/// A response with two calls, its actions, and the results of the calls in `answered`, in that
/// order.
fn two_calls(stream: &EventStream, answered: &[&str]) {
    let r = response(
        "resp-1",
        Some("Looking around."),
        &[
            ("call-a", "execute_bash", r#"{"command": "ls"}"#),
            ("call-b", "execute_bash", r#"{"command": "pwd"}"#),
        ],
    );
    let a = stream
        .add(
            run("ls", Some(metadata(&r, "call-a", "execute_bash"))),
            EventSource::Agent,
        )
        .unwrap();
    let b = stream
        .add(
            run("pwd", Some(metadata(&r, "call-b", "execute_bash"))),
            EventSource::Agent,
        )
        .unwrap();
    for call in answered {
        let (command, output, cause) = match *call {
            "call-a" => ("ls", "Cargo.toml\nsrc", a.id()),
            _ => ("pwd", "/workspace", b.id()),
        };
        stream
            .add(
                run_output(
                    command,
                    output,
                    Some(metadata(&r, call, "execute_bash")),
                    cause,
                ),
                EventSource::Environment,
            )
            .unwrap();
    }
}

#[test]
fn system_and_initial_user_message_come_first() {
    let stream = opened();
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(roles(&messages), [Role::System, Role::User]);
    assert_eq!(text(&messages[0]), "You are a careful agent.");
    assert_eq!(text(&messages[1]), "Fix the build.");

    // No system action: the configured prompt.
    let bare = EventStream::in_memory();
    bare.add(message("Fix the build."), EventSource::User)
        .unwrap();
    let memory = ConversationMemory {
        system_prompt: Some("configured".into()),
        ..ConversationMemory::default()
    };
    let messages = messages_of(&bare, &memory);
    assert_eq!(roles(&messages), [Role::System, Role::User]);
    assert_eq!(text(&messages[0]), "configured");
}

#[test]
fn a_forgotten_first_user_message_is_put_back_after_the_system_message() {
    let stream = opened();
    stream
        .add(
            Action::from(ActionKind::Condensation(
                protocol::action::CondensationArgs {
                    forgotten_event_ids: Some(vec![1]),
                    summary: Some("Earlier: nothing much.".into()),
                    summary_offset: Some(1),
                    ..Default::default()
                },
            )),
            EventSource::Agent,
        )
        .unwrap();
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(roles(&messages), [Role::System, Role::User, Role::User]);
    assert_eq!(text(&messages[1]), "Fix the build.");
    assert_eq!(text(&messages[2]), "\n\nEarlier: nothing much.");
}

#[test]
fn a_response_with_two_calls_is_sent_once_both_results_are_in_followed_by_them_in_call_order() {
    let stream = opened();
    // The results arrive in the opposite order of the calls.
    two_calls(&stream, &["call-b", "call-a"]);
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(
        roles(&messages),
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool
        ]
    );
    let assistant = &messages[2];
    assert_eq!(text(assistant), "Looking around.");
    let calls: Vec<&str> = assistant
        .tool_calls
        .iter()
        .flatten()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(calls, ["call-a", "call-b"]);
    assert_eq!(messages[3].tool_call_id.as_deref(), Some("call-a"));
    assert_eq!(messages[3].name.as_deref(), Some("execute_bash"));
    assert!(text(&messages[3]).starts_with("Cargo.toml\nsrc"));
    assert_eq!(messages[4].tool_call_id.as_deref(), Some("call-b"));
}

#[test]
fn a_response_whose_second_result_is_missing_is_not_sent_yet() {
    let stream = opened();
    two_calls(&stream, &["call-a"]);
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(
        roles(&messages),
        [Role::System, Role::User],
        "no call, no orphan result"
    );
}

#[test]
fn observations_without_tool_metadata_are_user_messages() {
    let stream = opened();
    let cmd = stream.add(run("make", None), EventSource::User).unwrap();
    stream
        .add(
            run_output("make", "ok", None, cmd.id()),
            EventSource::Environment,
        )
        .unwrap();
    stream
        .add(
            Observation::new(ObservationKind::Error(ErrorExtras::default()), "boom"),
            EventSource::Environment,
        )
        .unwrap();
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(
        roles(&messages),
        [Role::System, Role::User, Role::User, Role::User, Role::User]
    );
    assert_eq!(text(&messages[2]), "\n\nUser executed the command:\nmake");
    assert_eq!(
        text(&messages[3]),
        "\n\n\nObserved result of command executed by user:\nok\n[Current working directory: \
         /workspace]\n[Command finished with exit code 0]"
    );
    assert_eq!(
        text(&messages[4]),
        "\n\nboom\n[Error occurred in processing last action]"
    );
}

const PNG: &str = "data:image/png;base64,iVBORw0KGgo=";

fn with_images(stream: &EventStream) {
    let user = Action::from(ActionKind::Message(MessageArgs {
        content: "What is in these?".into(),
        image_urls: Some(vec!["https://example.com/a.png".into(), PNG.into()]),
        ..MessageArgs::default()
    }));
    stream.add(user, EventSource::User).unwrap();
    let r = response(
        "resp-plot",
        None,
        &[("call-plot", "execute_ipython_cell", r#"{"code": "plot()"}"#)],
    );
    let meta = metadata(&r, "call-plot", "execute_ipython_cell");
    let cell = Action {
        tool_call_metadata: Some(meta.clone()),
        ..Action::from(ActionKind::RunIpython(IPythonRunCellArgs::new("plot()")))
    };
    let cell = stream.add(cell, EventSource::Agent).unwrap();
    let output = Observation {
        tool_call_metadata: Some(meta),
        cause: cell.id(),
        ..Observation::new(
            ObservationKind::RunIpython(IPythonRunCellExtras {
                code: "plot()".into(),
                image_urls: Some(vec![PNG.into(), "  ".into()]),
            }),
            format!("Figure\n![image]({PNG})\n[Jupyter current working directory: /workspace]"),
        )
    };
    stream.add(output, EventSource::Environment).unwrap();
}

#[test]
fn images_are_parts_with_vision_and_left_out_without() {
    let stream = opened();
    with_images(&stream);
    let view = View::from_events(&stream.all());

    let blind = ConversationMemory::default().process_events(&view);
    assert_eq!(text(&blind[2]), "\n\nWhat is in these?");
    assert_eq!(blind[4].role, Role::Tool);
    assert_eq!(
        text(&blind[4]),
        "Figure\n![image](data:image/png;base64, ...) already displayed to user\n\
         [Jupyter current working directory: /workspace]"
    );

    let seeing = ConversationMemory {
        vision: true,
        ..ConversationMemory::default()
    }
    .process_events(&view);
    let image = |url: &str| ContentPart::ImageUrl {
        image_url: protocol::llm::ImageUrl { url: url.into() },
    };
    let part = |text: &str| ContentPart::Text { text: text.into() };
    assert_eq!(
        seeing[2].content,
        Some(Content::Parts(vec![
            part("\n\nWhat is in these?"),
            part("Image 1:"),
            image("https://example.com/a.png"),
            part("Image 2:"),
            image(PNG),
        ]))
    );
    // Chat APIs refuse images in tool messages (regression: OpenAI answered 400): the result
    // keeps its text, and its one valid image follows in a user message.
    assert_eq!(seeing[4].role, Role::Tool);
    assert!(text(&seeing[4]).ends_with("1 image(s) of this output were empty or invalid and are not shown. Use another way to look at them if they matter."));
    assert_eq!(seeing[5].role, Role::User);
    assert_eq!(
        seeing[5].content,
        Some(Content::Parts(vec![
            part(crate::memory::conversation::TOOL_IMAGES),
            image(PNG)
        ]))
    );
    assert_eq!(seeing.len(), 6);
}

#[test]
fn the_agents_finish_is_its_closing_text() {
    let stream = opened();
    let r = response(
        "resp-end",
        Some("All done."),
        &[("call-f", "finish", r#"{"message": "done"}"#)],
    );
    let finish = Action {
        tool_call_metadata: Some(metadata(&r, "call-f", "finish")),
        ..Action::from(ActionKind::Finish(FinishArgs {
            final_thought: "The build is fixed.".into(),
            thought: "All done.".into(),
            ..FinishArgs::default()
        }))
    };
    stream.add(finish, EventSource::Agent).unwrap();
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(messages[2].role, Role::Assistant);
    assert_eq!(text(&messages[2]), "All done.");
    assert_eq!(messages[2].tool_calls, None);
}

#[test]
fn long_observations_lose_their_middle() {
    let long = format!("{}{}", "a".repeat(60), "b".repeat(60));
    assert_eq!(truncate_content(&long, None), long);
    assert_eq!(truncate_content(&long, Some(200)), long);
    assert_eq!(
        truncate_content(&long, Some(20)),
        format!("{}{TRUNCATION_NOTICE}{}", "a".repeat(10), "b".repeat(10))
    );
    assert_eq!(
        truncate_content("ééééé", Some(2)),
        format!("é{TRUNCATION_NOTICE}é")
    );
}

#[test]
fn microagent_knowledge_is_shown_once() {
    let stream = opened();
    let knowledge = |recall_type: &str| {
        Observation::new(
            ObservationKind::Recall(RecallExtras {
                recall_type: recall_type.into(),
                microagent_knowledge: vec![json!({
                    "name": "git", "trigger": "commit", "content": "Sign your commits."
                })],
                ..RecallExtras::default()
            }),
            "",
        )
    };
    stream
        .add(knowledge("knowledge"), EventSource::Environment)
        .unwrap();
    stream
        .add(knowledge("knowledge"), EventSource::Environment)
        .unwrap();
    let messages = messages_of(&stream, &ConversationMemory::default());
    assert_eq!(messages.len(), 3, "{messages:#?}");
    insta::assert_snapshot!(text(&messages[2]).trim_start());
}

/// The reference's templates (`additional_info.j2`, `microagent_info.j2`) rendered by Jinja2
/// 3.1 for the same values: the texts must be the same, white space included.
#[test]
fn workspace_context_and_knowledge_render_as_the_references_templates() {
    let runtime_only = RecallExtras {
        recall_type: "workspace_context".into(),
        date: "2025-01-02".into(),
        working_dir: "/workspace".into(),
        ..RecallExtras::default()
    };
    assert_eq!(
        render_recall(&runtime_only, &Default::default()),
        [
            "<RUNTIME_INFORMATION>\n\nThe current working directory is /workspace\n\n\n\n\n\nToday's date is 2025-01-02 (UTC).\n\n</RUNTIME_INFORMATION>"
        ]
    );
    let full = RecallExtras {
        recall_type: "workspace_context".into(),
        repo_name: "owner/repo".into(),
        repo_directory: "repo".into(),
        repo_branch: "main".into(),
        repo_instructions: "Use cargo.\n\nRun tests.".into(),
        runtime_hosts: serde_json::from_value(
            json!({"http://localhost:12000": 12000, "http://localhost:12001": 12001}),
        )
        .unwrap(),
        additional_agent_instructions: "Be nice.".into(),
        date: "2025-01-02".into(),
        custom_secrets_descriptions: serde_json::from_value(
            json!({"API_TOKEN": "the staging token", "DB": "db password"}),
        )
        .unwrap(),
        conversation_instructions: "Open a PR when done.".into(),
        working_dir: "/workspace".into(),
        microagent_knowledge: vec![
            json!({"name": "a", "trigger": "git", "content": "Use git."}),
            json!({"name": "b", "trigger": "npm", "content": "Use npm.\nCarefully."}),
        ],
    };
    assert_eq!(
        render_recall(&full, &Default::default()),
        [
            "<REPOSITORY_INFO>\nAt the user's request, repository owner/repo has been cloned to repo in the current working directory.\nThe repository has been checked out to branch \"main\".\n\nIMPORTANT: You should work within the current branch \"main\" unless:\n    1. the user explicitly instructs otherwise\n    2. the current branch is \"main\", \"master\", or another default branch where direct pushes may be unsafe\n\n</REPOSITORY_INFO>\n\n<REPOSITORY_INSTRUCTIONS>\nUse cargo.\n\nRun tests.\n</REPOSITORY_INSTRUCTIONS>\n\n<RUNTIME_INFORMATION>\n\nThe current working directory is /workspace\n\n\nThe user has access to the following hosts for accessing a web application,\neach of which has a corresponding port:\n* http://localhost:12000 (port 12000)\n* http://localhost:12001 (port 12001)\n\nWhen starting a web server, use the corresponding ports. You should also\nset any options to allow iframes and CORS requests, and allow the server to\nbe accessed from any host (e.g. 0.0.0.0).\nFor example, if you are using vite.config.js, you should set server.host and server.allowedHosts to true\n\n\nBe nice.\n\n\n<CUSTOM_SECRETS>\nYou have access to the following environment variables\n\n* **$API_TOKEN**: the staging token\n\n* **$DB**: db password\n\n</CUSTOM_SECRETS>\n\n\nToday's date is 2025-01-02 (UTC).\n\n</RUNTIME_INFORMATION>\n<CONVERSATION_INSTRUCTIONS>\nOpen a PR when done.\n</CONVERSATION_INSTRUCTIONS>",
            "<EXTRA_INFO>\nThe following information has been included based on a keyword match for \"git\".\nIt may or may not be relevant to the user's request.\n\nUse git.\n</EXTRA_INFO>\n\n<EXTRA_INFO>\nThe following information has been included based on a keyword match for \"npm\".\nIt may or may not be relevant to the user's request.\n\nUse npm.\nCarefully.\n</EXTRA_INFO>"
        ]
    );
    let repo_without_branch = RecallExtras {
        recall_type: "workspace_context".into(),
        repo_name: "owner/repo".into(),
        repo_directory: "repo".into(),
        repo_instructions: "Instr".into(),
        date: "2025-01-02".into(),
        ..RecallExtras::default()
    };
    assert_eq!(
        render_recall(&repo_without_branch, &Default::default()),
        [
            "<REPOSITORY_INFO>\nAt the user's request, repository owner/repo has been cloned to repo in the current working directory.\n\n</REPOSITORY_INFO>\n\n<REPOSITORY_INSTRUCTIONS>\nInstr\n</REPOSITORY_INSTRUCTIONS>\n\n<RUNTIME_INFORMATION>\n\n\n\n\n\nToday's date is 2025-01-02 (UTC).\n\n</RUNTIME_INFORMATION>"
        ]
    );
    // Nothing to say (no date, secrets, repository or instructions): no message at all.
    let empty = RecallExtras {
        recall_type: "workspace_context".into(),
        working_dir: "/workspace".into(),
        ..RecallExtras::default()
    };
    assert!(render_recall(&empty, &Default::default()).is_empty());
}

#[test]
fn rendered_run_with_prefix_suffix_working_dir_interpreter_and_exit_code() {
    let mut extras = run_extras("python3 long.py", 1);
    extras.metadata.prefix = "[Below is the output of the previous command.]\n".into();
    extras.metadata.suffix =
        "\n[The command has no new output after 10 seconds. You may wait longer to see additional output by sending empty command '', send other commands to interact with the current process, send keys to interrupt/kill the command, or use the timeout parameter in execute_bash for future commands.]".into();
    extras.metadata.py_interpreter_path = Some("/usr/bin/python".into());
    insta::assert_snapshot!(render_run(
        &extras,
        "Traceback (most recent call last):\nValueError"
    ));

    // A command still running: no exit code line, no empty lines for unknowns.
    let mut running = run_extras("sleep 100", -1);
    running.metadata.working_dir = None;
    assert_eq!(render_run(&running, "partial"), "partial");
}

#[test]
fn rendered_ipython_edit_and_error() {
    insta::assert_snapshot!(
        "ipython",
        render_ipython(&format!(
            "Out[1]: 42\n![image]({PNG})\n[Jupyter current working directory: /workspace]\n\
             [Jupyter Python interpreter: /usr/bin/python3]"
        ))
    );
    let edit = FileEditExtras {
        path: "/workspace/app.py".into(),
        prev_exist: false,
        old_content: Some("x = 1".into()),
        new_content: Some("x = 2".into()),
        impl_source: "oh_aci".into(),
        diff: Some("--- \n+++ \n@@ -1 +1 @@\n-x = 1\n+x = 2\n".into()),
        diff_cache: None,
    };
    let edited = "The file /workspace/app.py has been edited. Here's the result of running `cat -n` \
                  on a snippet of /workspace/app.py:\n     1\tx = 2\nReview the changes and make sure \
                  they are as expected. Edit the file again if necessary.";
    insta::assert_snapshot!("edit", render_edit(&edit, edited));
    insta::assert_snapshot!(
        "error",
        render_error("File not found: /workspace/missing.py", None)
    );
}

/// A small session, as the model sees it.
#[test]
fn a_small_conversation() {
    let stream = opened();
    two_calls(&stream, &["call-a", "call-b"]);
    let r = response(
        "resp-2",
        None,
        &[("call-c", "think", r#"{"thought": "The build needs make."}"#)],
    );
    let meta = metadata(&r, "call-c", "think");
    let think = stream
        .add(
            Action {
                tool_call_metadata: Some(meta.clone()),
                ..Action::from(ActionKind::Think(protocol::action::ThinkArgs {
                    thought: "The build needs make.".into(),
                }))
            },
            EventSource::Agent,
        )
        .unwrap();
    stream
        .add(
            Observation {
                tool_call_metadata: Some(meta),
                cause: think.id(),
                ..Observation::new(
                    ObservationKind::Think(EmptyExtras {}),
                    "Your thought has been logged.",
                )
            },
            EventSource::Environment,
        )
        .unwrap();
    stream
        .add(message("Shall I go on?"), EventSource::Agent)
        .unwrap();
    stream.add(message("Yes."), EventSource::User).unwrap();
    let messages = messages_of(&stream, &ConversationMemory::default());
    insta::assert_snapshot!(serde_json::to_string_pretty(&messages).unwrap());
}

#[test]
fn event_tokens_bound_the_conversations_estimate() {
    let stream = opened();
    two_calls(&stream, &["call-b", "call-a"]);
    with_images(&stream);
    let memory = ConversationMemory::default();
    let view = View::from_events(&stream.all());
    let sum: usize = view.iter().map(|e| memory.event_tokens(e)).sum();
    assert!(
        memory.view_tokens(&view) <= sum,
        "{} > {sum}",
        memory.view_tokens(&view)
    );
}

/// A step must not re-parse the history's model responses: each tool-call action's response
/// is decoded when it first comes into view, kept across steps (the same decoded value), and
/// dropped once a condensation forgets the action.
#[test]
fn model_responses_are_decoded_once_and_kept_while_in_view() {
    let stream = opened();
    let first = response("r1", Some("listing"), &[("c1", "execute_bash", "{}")]);
    let ls = stream
        .add(
            run("ls", Some(metadata(&first, "c1", "execute_bash"))),
            EventSource::Agent,
        )
        .unwrap();
    stream
        .add(
            run_output(
                "ls",
                "a b",
                Some(metadata(&first, "c1", "execute_bash")),
                ls.id(),
            ),
            EventSource::Environment,
        )
        .unwrap();
    let memory = ConversationMemory::default();
    let before = messages_of(&stream, &memory);
    assert_eq!(memory.responses.len(), 1);
    let Event::Action(action) = &*ls else {
        panic!("not an action")
    };
    let meta = action.tool_call_metadata.as_ref().unwrap();
    let kept = memory.responses.get(action, meta).unwrap();

    let second = response("r2", None, &[("c2", "execute_bash", "{}")]);
    stream
        .add(
            run("pwd", Some(metadata(&second, "c2", "execute_bash"))),
            EventSource::Agent,
        )
        .unwrap();
    let after = messages_of(&stream, &memory);
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(memory.responses.len(), 2);
    assert!(std::sync::Arc::ptr_eq(
        &kept,
        &memory.responses.get(action, meta).unwrap()
    ));

    // Forgotten by a condensation: no longer kept.
    stream
        .add(
            Action::from(ActionKind::Condensation(
                protocol::action::CondensationArgs {
                    forgotten_event_ids: Some(vec![ls.id().unwrap()]),
                    ..Default::default()
                },
            )),
            EventSource::Agent,
        )
        .unwrap();
    messages_of(&stream, &memory);
    assert_eq!(memory.responses.len(), 1);
}
