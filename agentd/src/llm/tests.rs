//! The LLM client against `testkit::FakeLlm` (real HTTP on 127.0.0.1), the prompted-mode
//! converter, and the settings.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::{FakeLlm, Reply};

use super::config::Price;
use super::*;
use protocol::llm::{FunctionCall, ToolCall, Usage};

/// A small tool list in the shape of CodeAct's.
fn sample_tools() -> Vec<Tool> {
    vec![
        Tool::function(
            "execute_bash",
            "Execute a bash command in the terminal.",
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command to execute."},
                    "is_input": {"type": "string", "description": "Whether the command is input to the running process.", "enum": ["true", "false"]},
                    "timeout": {"type": "number", "description": "Seconds to wait."}
                },
                "required": ["command"]
            }),
        ),
        Tool::function(
            "str_replace_editor",
            "View, create and edit files.",
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command to run.", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                    "path": {"type": "string", "description": "Absolute path to a file or directory."},
                    "file_text": {"type": "string", "description": "Content of the file to create."},
                    "old_str": {"type": "string", "description": "The text to replace."},
                    "new_str": {"type": "string", "description": "The replacement."},
                    "insert_line": {"type": "integer", "description": "Line after which to insert."},
                    "view_range": {"type": "array", "items": {"type": "integer"}, "description": "Lines to view."}
                },
                "required": ["command", "path"]
            }),
        ),
        Tool::function(
            "finish",
            "Signals that the task is done.",
            json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "Final message to the user."}},
                "required": ["message"]
            }),
        ),
        Tool::function("think", "Think out loud.", Value::Null),
    ]
}

fn config(base_url: String) -> LlmConfig {
    let mut config = LlmConfig::new("gpt-4o", base_url);
    config.api_key = Some("sk-test".to_owned());
    config.num_retries = 3;
    config.retry_min_wait = Duration::from_millis(1);
    config.retry_max_wait = Duration::from_millis(20);
    config.retry_multiplier = 0.001;
    config.timeout = Duration::from_secs(10);
    config
}

fn prompted_config(base_url: String) -> LlmConfig {
    let mut config = config(base_url);
    config.model = "qwen2.5-coder-32b-instruct".to_owned();
    config.tool_calling = Some(ToolCalling::Prompted);
    config
}

/// A conversation in native form: a call and its result.
fn history() -> Vec<Message> {
    vec![
        Message::system("You are a helpful assistant."),
        Message::user("List the files."),
        Message {
            tool_calls: Some(vec![ToolCall {
                id: "call_1".to_owned(),
                kind: "function".to_owned(),
                function: FunctionCall {
                    name: "execute_bash".to_owned(),
                    arguments: r#"{"command":"ls"}"#.to_owned(),
                },
            }]),
            ..Message::assistant("Let me look.")
        },
        Message::tool("call_1", "execute_bash", "a.txt\nb.txt"),
        Message::user("Now show them in detail."),
    ]
}

/// Records the retry notices.
fn listener() -> (RetryListener, Arc<Mutex<Vec<RetryNotice>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let listener: RetryListener = Arc::new(move |notice: &RetryNotice| {
        sink.lock().unwrap().push(notice.clone());
    });
    (listener, seen)
}

/// An `Llm` with `config`, and the retry notices it gives.
fn watched(config: LlmConfig) -> (Llm, Arc<Mutex<Vec<RetryNotice>>>) {
    let (listener, seen) = listener();
    (
        Llm::new(config).unwrap().with_retry_listener(listener),
        seen,
    )
}

/// Asserts that the answer's text is `text`.
fn assert_text(completion: &Completion, text: &str) {
    assert_eq!(
        completion.message.content,
        Some(Content::Text(text.to_owned()))
    );
}

fn failed(result: Result<Completion, LlmError>) -> LlmError {
    match result {
        Ok(completion) => panic!("expected an error, got {:?}", completion.message),
        Err(error) => error,
    }
}

#[tokio::test]
async fn native_tool_calls_come_back_with_metrics_and_cost_from_the_price_table() {
    let fake = FakeLlm::start([
        Reply::tool_calls([("execute_bash", json!({"command": "ls -la"}))])
            .with_usage(1000, 50)
            .with_cached_tokens(400),
        Reply::text("All done.").with_usage(2000, 10),
    ])
    .await;
    let mut config = config(fake.base_url());
    config.max_input_tokens = Some(128_000);
    config.prices.insert(
        "gpt-4o".to_owned(),
        Price {
            input_cost_per_token: 2.5e-6,
            output_cost_per_token: 1e-5,
            cache_read_cost_per_token: Some(1.25e-6),
            cache_write_cost_per_token: None,
        },
    );
    let llm = Llm::new(config).unwrap();
    assert_eq!(llm.tool_calling(), ToolCalling::Native);
    let tools = sample_tools();

    let first = llm.completion(history(), &tools).await.unwrap();
    let calls = first.message.tool_calls.as_ref().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.name, "execute_bash");
    assert_eq!(calls[0].id, "call_0_0");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].function.arguments).unwrap(),
        json!({"command": "ls -la"})
    );
    assert_eq!(first.response.choices[0].message, first.message);
    let cost1 = 600.0 * 2.5e-6 + 400.0 * 1.25e-6 + 50.0 * 1e-5;
    let metrics = &first.metrics.to_json();
    assert!((metrics["accumulated_cost"].as_f64().unwrap() - cost1).abs() < 1e-12);
    assert_eq!(metrics["accumulated_token_usage"]["prompt_tokens"], 1000);
    assert_eq!(metrics["accumulated_token_usage"]["cache_read_tokens"], 400);
    assert_eq!(
        metrics["accumulated_token_usage"]["context_window"],
        128_000
    );
    assert_eq!(metrics["token_usages"][0]["response_id"], "chatcmpl-fake-0");
    assert_eq!(metrics["token_usages"][0]["per_turn_token"], 1050);
    assert_eq!(metrics["response_latencies"].as_array().unwrap().len(), 1);

    // A clone shares the metrics; each completion's lists hold only its own call.
    let second = llm.clone().completion(history(), &tools).await.unwrap();
    assert_text(&second, "All done.");
    let cost2 = cost1 + 2000.0 * 2.5e-6 + 10.0 * 1e-5;
    assert!(
        (second.metrics.to_json()["accumulated_cost"]
            .as_f64()
            .unwrap()
            - cost2)
            .abs()
            < 1e-12
    );
    assert_eq!(
        second.metrics.to_json()["accumulated_token_usage"]["prompt_tokens"],
        3000
    );
    assert_eq!(
        second.metrics.to_json()["costs"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        second.metrics.to_json()["token_usages"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let all = llm.metrics();
    assert_eq!(all.token_usages.len(), 2);
    assert!((all.accumulated_cost - cost2).abs() < 1e-12);

    // The request: native tools, the key, temperature 0, messages as given.
    let recorded = fake.recorded();
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(recorded[0].authorization.as_deref(), Some("Bearer sk-test"));
    let request = &recorded[0].body;
    assert_eq!(request["model"], "gpt-4o");
    assert_eq!(request["tools"].as_array().unwrap().len(), 4);
    assert_eq!(request["tool_choice"], "auto");
    assert_eq!(request["temperature"], 0.0);
    assert!(request.get("stop").is_none());
    assert_eq!(request["messages"][3]["role"], "tool");
    assert_eq!(request["messages"][3]["tool_call_id"], "call_1");
}

#[tokio::test]
async fn without_a_price_the_cost_is_the_one_the_server_reports() {
    // OpenRouter reports the cost in `usage.cost`.
    let openrouter = Reply::response(ChatResponse {
        id: "gen-1".to_owned(),
        model: "m".to_owned(),
        created: 0,
        choices: vec![protocol::llm::Choice {
            index: 0,
            message: Message::assistant("hi"),
            finish_reason: Some("stop".to_owned()),
        }],
        usage: Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            total_tokens: 12,
            cost: Some(0.25),
            ..Usage::default()
        }),
    });
    let fake = FakeLlm::start([
        openrouter,
        Reply::text("hi").header("x-litellm-response-cost", "0.5"),
    ])
    .await;
    let llm = Llm::new(config(fake.base_url())).unwrap();
    let first = llm.completion(history(), &[]).await.unwrap();
    assert_eq!(first.metrics.to_json()["accumulated_cost"], 0.25);
    let second = llm.completion(history(), &[]).await.unwrap();
    assert_eq!(second.metrics.to_json()["accumulated_cost"], 0.75);
    assert_eq!(second.metrics.to_json()["costs"][0]["cost"], 0.5);
}

#[tokio::test]
async fn rate_limit_then_success_is_retried_and_the_listener_sees_it() {
    let fake = FakeLlm::start([
        Reply::error(429, "Rate limit reached").retry_after("1"),
        Reply::text("ok"),
    ])
    .await;
    let (llm, seen) = watched(config(fake.base_url()));
    let completion = llm.completion(history(), &[]).await.unwrap();
    assert_text(&completion, "ok");
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(fake.requests()[0], fake.requests()[1]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [RetryNotice {
            attempt: 1,
            max_attempts: 4,
            // Retry-After (1 s) capped at retry_max_wait.
            wait: Duration::from_millis(20),
            error: "RateLimitError: HTTP 429: Rate limit reached".to_owned(),
        }]
    );
}

#[tokio::test]
async fn server_errors_are_retried_num_retries_times_then_fail() {
    let fake = FakeLlm::start([
        Reply::error(500, "boom"),
        Reply::error(503, "overloaded"),
        Reply::error(502, "bad gateway"),
    ])
    .await;
    let mut config = config(fake.base_url());
    config.num_retries = 2;
    let (llm, seen) = watched(config);
    let error = failed(llm.completion(history(), &[]).await);
    assert_eq!(error.kind().name(), "InternalServerError");
    assert_eq!(
        error.to_string(),
        "InternalServerError: HTTP 502: bad gateway (gave up after 3 attempts)"
    );
    assert_eq!(fake.requests().len(), 3);
    let seen = seen.lock().unwrap();
    let attempts: Vec<(u32, u32)> = seen.iter().map(|n| (n.attempt, n.max_attempts)).collect();
    assert_eq!(attempts, [(1, 3), (2, 3)]);
    assert!(seen[1].error.starts_with("ServiceUnavailableError"));
    // Exponential backoff within [min, max]: 1 ms, then 2 ms.
    assert_eq!(seen[0].wait, Duration::from_millis(1));
    assert_eq!(seen[1].wait, Duration::from_millis(2));
}

#[tokio::test]
async fn empty_answers_and_error_objects_in_200s_are_retried() {
    let no_choices = ChatResponse {
        id: "x".to_owned(),
        model: "m".to_owned(),
        created: 0,
        choices: Vec::new(),
        usage: None,
    };
    let fake = FakeLlm::start([
        Reply::response(no_choices),
        Reply::raw(
            200,
            r#"{"error":{"message":"upstream overloaded","code":502}}"#,
        ),
        Reply::text("   "),
        Reply::text("finally"),
    ])
    .await;
    let (llm, seen) = watched(config(fake.base_url()));
    let completion = llm.completion(history(), &[]).await.unwrap();
    assert_text(&completion, "finally");
    let kinds: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|n| n.error.split(':').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "LLMNoResponseError",
            "InternalServerError",
            "LLMNoResponseError"
        ]
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let fake = FakeLlm::start([Reply::error(401, "Incorrect API key provided")]).await;
    let llm = Llm::new(config(fake.base_url())).unwrap();
    let error = failed(llm.completion(history(), &[]).await);
    assert_eq!(
        error.to_string(),
        "AuthenticationError: HTTP 401: Incorrect API key provided"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_full_context_window_is_reported_and_not_retried() {
    let fake = FakeLlm::start([Reply::error(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    )])
    .await;
    let llm = Llm::new(config(fake.base_url())).unwrap();
    let error = failed(llm.completion(history(), &[]).await);
    assert_eq!(error.kind().name(), "ContextWindowExceededError");
    assert!(error.is_context_window_exceeded());
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_retried_then_fails() {
    // A port nothing listens on: bind, note it, close.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let (listener, seen) = listener();
    let mut config = config(format!("http://127.0.0.1:{port}/v1"));
    config.num_retries = 2;
    let llm = Llm::new(config).unwrap().with_retry_listener(listener);
    let error = failed(llm.completion(history(), &[]).await);
    assert_eq!(error.kind().name(), "APIConnectionError");
    assert!(
        error.to_string().contains("gave up after 3 attempts"),
        "{error}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(llm.metrics().token_usages.len(), 0);
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let fake = FakeLlm::start([Reply::text("too late").delay(Duration::from_secs(30))]).await;
    let mut config = config(fake.base_url());
    config.timeout = Duration::from_millis(200);
    config.num_retries = 0;
    let llm = Llm::new(config).unwrap();
    let error = failed(llm.completion(history(), &[]).await);
    assert_eq!(error.kind().name(), "Timeout");
}

#[tokio::test]
async fn prompted_mode_sends_text_and_parses_the_call_back() {
    // The stop word cut the answer before `</function>`.
    let answer = "I will list the files with details.\n<function=execute_bash>\n<parameter=command>ls -la</parameter>\n";
    let fake = FakeLlm::start([Reply::text(answer).with_usage(500, 20)]).await;
    let llm = Llm::new(prompted_config(fake.base_url())).unwrap();
    assert_eq!(llm.tool_calling(), ToolCalling::Prompted);
    let completion = llm.completion(history(), &sample_tools()).await.unwrap();

    let message = &completion.message;
    assert_eq!(message.role, Role::Assistant);
    assert_eq!(
        message.content,
        Some(Content::Text(
            "I will list the files with details.".to_owned()
        ))
    );
    let calls = message.tool_calls.as_ref().unwrap();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].id.starts_with("toolu_"), "{}", calls[0].id);
    assert_eq!(calls[0].function.name, "execute_bash");
    assert_eq!(calls[0].function.arguments, r#"{"command":"ls -la"}"#);
    assert_eq!(&completion.response.choices[0].message, message);
    assert_eq!(
        completion.metrics.to_json()["accumulated_token_usage"]["prompt_tokens"],
        500
    );

    let request = &fake.requests()[0];
    assert!(request.get("tools").is_none());
    assert!(request.get("tool_choice").is_none());
    assert_eq!(request["stop"], json!(["</function"]));
    let messages = request["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "user"]);
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with(
            "You are a helpful assistant.\nYou have access to the following functions:"
        )
    );
    assert!(system.contains("---- BEGIN FUNCTION #1: execute_bash ----"));
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("START OF EXAMPLE")
    );
    assert_eq!(
        messages[2]["content"],
        "Let me look.\n\n<function=execute_bash>\n<parameter=command>ls</parameter>\n</function>"
    );
    assert_eq!(
        messages[3]["content"],
        "EXECUTION RESULT of [execute_bash]:\na.txt\nb.txt"
    );
    assert!(
        messages
            .iter()
            .all(|m| m.get("tool_calls").is_none() && m.get("tool_call_id").is_none())
    );
}

#[tokio::test]
async fn malformed_calls_are_tool_call_format_errors_and_still_counted() {
    let fake = FakeLlm::start([
        Reply::text("<function=rm_rf>\n<parameter=path>/</parameter>\n</function>")
            .with_usage(100, 5),
        Reply::tool_calls_raw([("execute_bash", r#"{"command": "ls"#)]).with_usage(100, 5),
    ])
    .await;
    let llm = Llm::new(prompted_config(fake.base_url())).unwrap();
    let error = failed(llm.completion(history(), &sample_tools()).await);
    assert!(matches!(error, LlmError::ToolCallFormat(_)));
    assert_eq!(
        error.to_string(),
        "Function 'rm_rf' not found in available tools: [execute_bash, str_replace_editor, finish, think]."
    );
    assert_eq!(fake.requests().len(), 1, "a malformed call is not retried");

    let mut native = config(fake.base_url());
    native.model = "gpt-4o".to_owned();
    let native = Llm::new(native).unwrap();
    let error = failed(native.completion(history(), &sample_tools()).await);
    assert_eq!(error.kind().name(), "FunctionCallValidationError");
    assert!(error.to_string().contains("are not valid JSON"), "{error}");
    assert_eq!(llm.metrics().token_usages.len(), 1);
    assert_eq!(native.metrics().token_usages.len(), 1);
}

#[test]
fn malformed_prompted_calls_tell_the_model_what_is_wrong() {
    let tools = sample_tools();
    let cases = [
        (
            "<function=execute_bash>\n<parameter=timeout>5</parameter>\n</function>",
            "Missing required parameters for function 'execute_bash': [command].",
        ),
        (
            "<function=str_replace_editor>\n<parameter=command>delete</parameter>\n<parameter=path>/a</parameter>\n</function>",
            "Parameter 'command' is expected to be one of [view, create, str_replace, insert, undo_edit].",
        ),
        (
            "<function=str_replace_editor>\n<parameter=command>view</parameter>\n<parameter=path>/a</parameter>\n<parameter=insert_line>two</parameter>\n</function>",
            "Parameter 'insert_line' is expected to be an integer.",
        ),
        (
            "<function=execute_bash>\n<parameter=command>ls\n",
            "Parameter 'command' of function 'execute_bash' is not closed: end each value with `</parameter>`.",
        ),
        (
            "<function=execute_bash\n<parameter=command>ls</parameter>",
            "The function call is malformed: `<function=` must be followed by the function name and `>`, e.g. `<function=NAME>`.",
        ),
        (
            "<function=finish>\n<parameter=message>bye</parameter>\n<parameter=mood>happy</parameter>\n</function>",
            "Parameter 'mood' is not allowed for function 'finish'. Allowed parameters: [message].",
        ),
        (
            "<function=execute_bash>\n<parameter=command>ls</parameter>\n<parameter=command>pwd</parameter>\n</function>",
            "Parameter 'command' is given twice in the call to function 'execute_bash'.",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(
            prompted::parse_answer(text, &tools, false),
            Err(message.to_owned()),
            "{text}"
        );
    }
    let cut = prompted::parse_answer(
        "<function=execute_bash>\n<parameter=command>ls",
        &tools,
        true,
    );
    assert!(cut.unwrap_err().contains("was cut off"));
}

#[test]
fn prompted_values_get_the_schema_types() {
    let tools = sample_tools();
    let text = "Let me view it.\n<function=str_replace_editor>\n<parameter=command> view </parameter>\n<parameter=path>/a.py</parameter>\n<parameter=view_range>[1, 20]</parameter>\n<parameter=insert_line>3</parameter>\n<parameter=file_text>\n  indented\nlast line\n\n</parameter>\n</";
    let parsed = prompted::parse_answer(text, &tools, false).unwrap();
    assert_eq!(parsed.content.as_deref(), Some("Let me view it."));
    let call = parsed.call.unwrap();
    let args: Value = serde_json::from_str(&call.function.arguments).unwrap();
    assert_eq!(
        args,
        json!({
            "command": "view",
            "path": "/a.py",
            "view_range": [1, 20],
            "insert_line": 3,
            "file_text": "  indented\nlast line\n"
        })
    );
    // The slip `<parameter=NAME=value</parameter>` is accepted; so is a call without parameters.
    let slip = prompted::parse_answer(
        "<function=execute_bash>\n<parameter=command=pwd</parameter>\n</function>",
        &tools,
        false,
    )
    .unwrap();
    assert_eq!(
        slip.call.unwrap().function.arguments,
        r#"{"command":"pwd"}"#
    );
    let think = prompted::parse_answer("<function=think>\n</function>", &tools, false).unwrap();
    assert_eq!(think.call.unwrap().function.arguments, "{}");
    // No call: the text as it is.
    let plain = prompted::parse_answer("Hello!", &tools, false).unwrap();
    assert_eq!(
        plain,
        prompted::Parsed {
            content: Some("Hello!".to_owned()),
            call: None
        }
    );
}

#[test]
fn a_rendered_call_parses_back_to_the_same_arguments() {
    let tools = sample_tools();
    let args =
        json!({"command": "create", "path": "/w/a.py", "file_text": "def f():\n    return 1\n"});
    let call = ToolCall {
        id: "c".to_owned(),
        kind: "function".to_owned(),
        function: FunctionCall {
            name: "str_replace_editor".to_owned(),
            arguments: args.to_string(),
        },
    };
    let messages = vec![Message {
        tool_calls: Some(vec![call]),
        content: None,
        ..Message::assistant("")
    }];
    let converted = prompted::to_prompted(&messages, &tools, false);
    let Some(Content::Text(text)) = &converted[1].content else {
        panic!("{converted:?}");
    };
    let parsed = prompted::parse_answer(text, &tools, false).unwrap();
    let back: Value = serde_json::from_str(&parsed.call.unwrap().function.arguments).unwrap();
    assert_eq!(back, args);
}

#[test]
fn the_system_prompt_renders_the_tools() {
    insta::assert_snapshot!(prompted::system_suffix(&sample_tools()));
}

#[test]
fn native_messages_convert_to_prompted_ones() {
    let converted = prompted::to_prompted(&history(), &sample_tools(), true);
    let rendered: Vec<String> = converted
        .iter()
        .map(|m| {
            let role = serde_json::to_value(m.role).unwrap();
            let text = match &m.content {
                Some(Content::Text(text)) => text.clone(),
                other => format!("{other:?}"),
            };
            format!("=== {} ===\n{text}", role.as_str().unwrap())
        })
        .collect();
    insta::assert_snapshot!(rendered.join("\n"));
}

#[tokio::test]
async fn completions_are_logged_and_requests_dumped() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let logs = dir.path().join("logs");
    // Numbering continues after earlier dumps.
    std::fs::create_dir_all(&dump).unwrap();
    std::fs::write(dump.join("000007.json"), "{}").unwrap();
    let fake = FakeLlm::start([
        Reply::text("<function=finish>\n<parameter=message>done</parameter>\n</function>"),
        Reply::text("plain"),
    ])
    .await;
    let mut config = prompted_config(fake.base_url());
    config.dump_requests_folder = Some(dump.clone());
    config.log_completions_folder = Some(logs.clone());
    let llm = Llm::new(config).unwrap();
    llm.completion(history(), &sample_tools()).await.unwrap();
    llm.completion(history(), &[]).await.unwrap();

    let requests = fake.requests();
    for (name, sent) in [("000008.json", &requests[0]), ("000009.json", &requests[1])] {
        let dumped: Value =
            serde_json::from_slice(&std::fs::read(dump.join(name)).unwrap()).unwrap();
        assert_eq!(&dumped, sent, "{name}");
    }
    let files = testkit::sorted_paths(&logs);
    assert_eq!(files.len(), 2);
    let first = testkit::read_json(&files[0]);
    assert_eq!(first["messages"], requests[0]["messages"]);
    assert_eq!(first["kwargs"]["stop"], json!(["</function"]));
    assert_eq!(
        first["response"]["choices"][0]["message"]["content"],
        "<function=finish>\n<parameter=message>done</parameter>\n</function>"
    );
    assert_eq!(
        first["fncall_response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "finish"
    );
    assert_eq!(first["fncall_messages"][3]["role"], "tool");
    assert!(first["latency"].as_f64().unwrap() >= 0.0);
    assert!(first["timestamp"].as_f64().unwrap() > 1.0e9);
    let second: Value = serde_json::from_slice(&std::fs::read(&files[1]).unwrap()).unwrap();
    assert!(second.get("fncall_messages").is_none());
    assert!(
        files[0]
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("-000001-qwen2.5-coder-32b-instruct.json")
    );
}

#[tokio::test]
async fn secret_values_are_masked_in_requests_dumps_and_completion_logs() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, logs) = (dir.path().join("dump"), dir.path().join("logs"));
    let fake = FakeLlm::start([Reply::text("they are a.txt\nb.txt")]).await;
    let mut config = config(fake.base_url());
    config.dump_requests_folder = Some(dump.clone());
    config.log_completions_folder = Some(logs.clone());
    let secret = crate::secrets::Secret::new("FILES", "a.txt\nb.txt".into(), "").unwrap();
    let llm = Llm::new(config)
        .unwrap()
        .with_secret_mask(crate::secrets::SecretMask::new(&[secret]));
    llm.completion(history(), &sample_tools()).await.unwrap();
    let sent = fake.requests()[0].to_string();
    assert!(!sent.contains("a.txt\\nb.txt"), "{sent}");
    assert!(sent.contains("<secret_hidden>"), "{sent}");
    let dumped = std::fs::read_to_string(dump.join("000001.json")).unwrap();
    assert!(!dumped.contains("a.txt\\nb.txt") && dumped.contains("<secret_hidden>"));
    // The log holds the model's answer too: masked as well.
    let logged = std::fs::read_to_string(&testkit::sorted_paths(&logs)[0]).unwrap();
    assert!(!logged.contains("a.txt\\nb.txt"), "{logged}");
    assert!(logged.contains("they are <secret_hidden>"), "{logged}");
}

#[test]
fn the_llm_section_parses_and_the_environment_wins() {
    let text = r#"
        model = "openrouter/qwen/qwen3-coder"
        base_url = "https://openrouter.ai/api/v1"
        api_key = "from-file"
        temperature = 0.2
        timeout = 90.5
        num_retries = 2
        retry_min_wait = 0.5
        log_completions_folder = "logs"
        extra_headers = { "X-Title" = "agentd" }
        [prices."qwen3-coder"]
        input_cost_per_token = 2e-7
        output_cost_per_token = 8e-7
    "#;
    let mut config: LlmConfig = toml::from_str(text).unwrap();
    assert_eq!(config.timeout, Duration::from_millis(90_500));
    assert_eq!(config.retry_min_wait, Duration::from_millis(500));
    assert_eq!(config.retry_max_wait, Duration::from_secs(64));
    assert_eq!(config.effective_tool_calling(), ToolCalling::Native);
    assert_eq!(config.price().unwrap().output_cost_per_token, 8e-7);
    assert_eq!(
        config.completions_url(),
        "https://openrouter.ai/api/v1/chat/completions"
    );
    assert!(!format!("{config:?}").contains("from-file"));

    config.apply_vars(|name| match name {
        "LLM_MODEL" => Some("llama3.1:8b".to_owned()),
        "LLM_API_KEY" => Some("from-env".to_owned()),
        "LLM_BASE_URL" => Some(String::new()),
        _ => None,
    });
    assert_eq!(config.model, "llama3.1:8b");
    assert_eq!(config.api_key.as_deref(), Some("from-env"));
    assert_eq!(config.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(config.effective_tool_calling(), ToolCalling::Prompted);

    let defaults: LlmConfig = toml::from_str("").unwrap();
    assert_eq!(defaults.base_url, "https://api.openai.com/v1");
    assert_eq!(defaults.temperature, Some(0.0));
    assert!(
        matches!(Llm::new(defaults), Err(LlmError::Failed { kind, .. }) if kind.name() == "ConfigError")
    );
    assert!(toml::from_str::<LlmConfig>("modle = \"x\"").is_err());
}

#[test]
fn reasoning_models_get_max_completion_tokens_and_no_temperature() {
    let mut config = LlmConfig::new("o3-mini", "http://127.0.0.1:9/v1");
    config.max_output_tokens = Some(1000);
    config.reasoning_effort = Some("high".to_owned());
    let request = Llm::new(config)
        .unwrap()
        .request(&history(), &sample_tools());
    assert_eq!((request.temperature, request.max_tokens), (None, None));
    assert_eq!(request.max_completion_tokens, Some(1000));
    assert_eq!(request.reasoning_effort.as_deref(), Some("high"));
    assert!(request.tools.is_some());
}

#[test]
fn https_endpoints_build_and_bad_urls_are_refused() {
    // The TLS backend (rustls) must be usable without a process-wide provider install.
    let https = Llm::new(LlmConfig::new("gpt-4o", "https://api.openai.com/v1/")).unwrap();
    assert_eq!(https.tool_calling(), ToolCalling::Native);
    let error = Llm::new(LlmConfig::new("gpt-4o", "api.openai.com")).unwrap_err();
    assert_eq!(error.kind().name(), "ConfigError");
}
