//! Test helpers shared by the workspace's tests: [`Daemon`], a server process a test starts (see
//! [`daemon`]), where agentd's tests find sandboxd and the base image ([`binaries`]), real MCP
//! peers on the official Python SDK ([`python_mcp`]), a fake Kubernetes API server whose pods are
//! real sandboxds, with the API's schemas to check requests against ([`kube`]), a headless
//! Chromium driven over DevTools for web pages ([`chromium`]), the browser tests' site and bids
//! ([`browsing`]), a request sent and its answer read in one call ([`http`]: [`json_answer`],
//! [`status_and_json`]...), the benchmarks' statistics ([`bench`]), and [`FakeLlm`], which fakes
//! an LLM at the wire: a real HTTP server on `127.0.0.1:0` that speaks OpenAI's
//! `POST /v1/chat/completions` (also `/chat/completions`), answers each request with the next
//! scripted [`Reply`] (or asks a closure), and records every request so tests can assert on what
//! the client sent.
//!
//! ```no_run
//! # async fn demo() {
//! use testkit::{FakeLlm, Reply};
//! let fake = FakeLlm::start([
//!     Reply::error(429, "slow down").retry_after("1"),
//!     Reply::tool_calls([("execute_bash", serde_json::json!({"command": "ls"}))]),
//!     Reply::text("done").with_usage(1200, 30),
//! ])
//! .await;
//! let base_url = fake.base_url(); // http://127.0.0.1:PORT/v1
//! // ... point the client under test at base_url ...
//! assert_eq!(fake.requests().len(), 3);
//! # }
//! ```
//!
//! Filled in when a reply is served (unless it came from [`Reply::response`], served as is):
//! the response `id` (`chatcmpl-fake-N`), `model` (the request's), `created`, tool-call ids
//! (`call_N_I`: request `N`, call `I`, both from 0), and a plausible `usage` (prompt tokens ≈
//! request bytes / 4, completion tokens ≈ answer bytes / 4) unless [`Reply::with_usage`] set it.
//! When the script is exhausted and there is no responder, the server answers 500 with a body
//! that says so, so a test that makes one call too many fails loudly.

pub mod bench;
pub mod binaries;
pub mod browsing;
pub mod chromium;
pub mod connections;
pub mod daemon;
pub mod files;
pub mod fuzz;
pub mod http;
pub mod kube;
mod loopback;
pub mod python_mcp;
mod venv;

pub use binaries::{base_image, sandboxd_binary};
pub use browsing::{Site, bid_of, copy_site};
pub use chromium::Chromium;
pub use connections::{assert_closed, hold_connections};
pub use daemon::Daemon;
pub use files::{read_json, sorted_paths};
pub use http::{json_answer, status_and_json, status_and_text, text_answer};
pub use kube::FakeKube;
pub use python_mcp::{
    McpClient, McpTransport, http_server, mcp_python, result_text, stdio_server, wheelhouse,
};

/// The start command line OpenHands' `RemoteRuntime` sends in a runtime API `/start` (docs/protocol.md
/// §1.1, §9): the interpreter prefix, the server module, port 60000, `/workspace`, the
/// `plugins` (if any), user `openhands` (1000), no browser.
pub fn reference_start_command(plugins: &[&str]) -> Vec<String> {
    let mut command: Vec<&str> = vec![
        "/openhands/micromamba/bin/micromamba",
        "run",
        "-n",
        "openhands",
        "poetry",
        "run",
        "python",
        "-u",
        "-m",
        "openhands.runtime.action_execution_server",
        "60000",
        "--working-dir",
        "/workspace",
    ];
    if !plugins.is_empty() {
        command.push("--plugins");
        command.extend(plugins);
    }
    command.extend([
        "--username",
        "openhands",
        "--user-id",
        "1000",
        "--no-enable-browser",
    ]);
    command.into_iter().map(str::to_owned).collect()
}

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
pub use protocol::llm::{ChatResponse, Message, Usage};
use protocol::llm::{Choice, Content, FunctionCall, PromptTokensDetails, ToolCall};
use serde_json::Value;

/// A closure that answers request number `n` (from 0) given its JSON body.
type Responder = Box<dyn FnMut(&Value, usize) -> Reply + Send>;

/// A scripted answer of the [`FakeLlm`].
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    body: ReplyBody,
    headers: Vec<(String, String)>,
    delay: Option<Duration>,
    usage: Option<Usage>,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    /// A chat response to complete (ids, model, usage) when served.
    Chat(ChatResponse),
    /// A chat response served exactly as given.
    Exact(ChatResponse),
    /// Any body, as is (JSON content type).
    Raw(String),
}

impl Reply {
    /// A 200 answer whose assistant message is `message` (`finish_reason` `tool_calls` if it
    /// calls tools, else `stop`).
    pub fn message(message: Message) -> Reply {
        let finish = if message.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) {
            "tool_calls"
        } else {
            "stop"
        };
        Reply {
            status: 200,
            body: ReplyBody::Chat(ChatResponse {
                id: String::new(),
                model: String::new(),
                created: 0,
                choices: vec![Choice {
                    index: 0,
                    message,
                    finish_reason: Some(finish.to_owned()),
                }],
                usage: None,
            }),
            headers: Vec::new(),
            delay: None,
            usage: None,
        }
    }

    /// A 200 answer with assistant text.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::message(Message::assistant(text))
    }

    /// A 200 answer that calls tools: `(name, arguments)` pairs, the arguments a JSON object
    /// (serialised as the `arguments` string). Ids are generated when served.
    pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, Value)>) -> Reply {
        Reply::tool_calls_raw(
            calls
                .into_iter()
                .map(|(name, args)| (name, args.to_string())),
        )
    }

    /// A 200 answer that calls the agent's `finish` tool with `message`: the task is done.
    pub fn finish(message: &str) -> Reply {
        Reply::tool_calls([("finish", serde_json::json!({ "message": message }))])
    }

    /// Like [`Reply::tool_calls`] with the `arguments` strings as given (they need not be
    /// valid JSON: for malformed-call tests).
    pub fn tool_calls_raw<N: Into<String>, A: Into<String>>(
        calls: impl IntoIterator<Item = (N, A)>,
    ) -> Reply {
        let calls = calls
            .into_iter()
            .map(|(name, arguments)| ToolCall {
                id: String::new(),
                kind: "function".to_owned(),
                function: FunctionCall {
                    name: name.into(),
                    arguments: arguments.into(),
                },
            })
            .collect();
        Reply::message(Message {
            content: None,
            tool_calls: Some(calls),
            ..Message::assistant("")
        })
    }

    /// A whole response, served exactly as given (nothing filled in).
    pub fn response(response: ChatResponse) -> Reply {
        Reply {
            status: 200,
            body: ReplyBody::Exact(response),
            headers: Vec::new(),
            delay: None,
            usage: None,
        }
    }

    /// An error answer in OpenAI's shape, `{"error": {"message", "type", "code"}}`, the type
    /// chosen from the status (`rate_limit_error`, `invalid_request_error`...).
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            _ => "server_error",
        };
        let body = serde_json::json!({
            "error": {"message": message.into(), "type": kind, "code": status}
        });
        Reply::raw(status, body.to_string())
    }

    /// Any status and body, as is (served with a JSON content type).
    pub fn raw(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: ReplyBody::Raw(body.into()),
            headers: Vec::new(),
            delay: None,
            usage: None,
        }
    }

    /// Adds a `Retry-After` header (seconds, as the server would write them).
    pub fn retry_after(self, seconds: &str) -> Reply {
        self.header("retry-after", seconds)
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Waits this long before answering (to exercise the client's timeout; the wait ends
    /// when the test's runtime shuts down).
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    /// Reports these token counts instead of the estimated ones.
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Reply {
        let cached = self.cached_tokens();
        self.usage = Some(Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: cached,
            ..Usage::default()
        });
        self
    }

    /// Reports `cached` of the prompt tokens as read from the provider's cache.
    pub fn with_cached_tokens(mut self, cached: u64) -> Reply {
        let usage = self.usage.get_or_insert_with(Usage::default);
        usage.prompt_tokens_details = Some(PromptTokensDetails {
            cached_tokens: cached,
        });
        self
    }

    fn cached_tokens(&self) -> Option<PromptTokensDetails> {
        self.usage
            .as_ref()
            .and_then(|u| u.prompt_tokens_details.clone())
    }
}

/// One request the [`FakeLlm`] received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path (`/v1/chat/completions`).
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The body as JSON (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
}

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    responder: Option<Responder>,
    recorded: Vec<Recorded>,
}

type Shared = Arc<Mutex<Script>>;

/// A fake OpenAI-compatible server on `127.0.0.1` (see the module docs). Dropping it stops
/// the server.
#[derive(Debug)]
pub struct FakeLlm {
    addr: SocketAddr,
    script: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("replies", &self.replies.len())
            .field("responder", &self.responder.is_some())
            .field("recorded", &self.recorded.len())
            .finish()
    }
}

impl FakeLlm {
    /// Starts a server that answers with `replies`, in order.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> FakeLlm {
        let script = Script {
            replies: replies.into_iter().collect(),
            ..Script::default()
        };
        FakeLlm::serve(script).await
    }

    /// Starts a server that answers request `n` (from 0) with `responder(&body, n)`; replies
    /// added with [`FakeLlm::push`] are served first.
    pub async fn with_fn(
        responder: impl FnMut(&Value, usize) -> Reply + Send + 'static,
    ) -> FakeLlm {
        let script = Script {
            responder: Some(Box::new(responder)),
            ..Script::default()
        };
        FakeLlm::serve(script).await
    }

    async fn serve(script: Script) -> FakeLlm {
        let script: Shared = Arc::new(Mutex::new(script));
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .fallback(no_route)
            .with_state(script.clone());
        let (addr, server) = loopback::serve_on_loopback("FakeLlm", app).await;
        FakeLlm {
            addr,
            script,
            server,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL to configure the client with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Adds a reply at the end of the script.
    pub fn push(&self, reply: Reply) {
        lock(&self.script).replies.push_back(reply);
    }

    /// The bodies of the requests received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.script)
            .recorded
            .iter()
            .map(|r| r.body.clone())
            .collect()
    }

    /// The requests received so far, with path and `Authorization` header.
    pub fn recorded(&self) -> Vec<Recorded> {
        lock(&self.script).recorded.clone()
    }

    /// How many scripted replies are still unserved.
    pub fn remaining(&self) -> usize {
        lock(&self.script).replies.len()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn lock(script: &Shared) -> MutexGuard<'_, Script> {
    // A panicking responder poisons the lock; the script itself is still usable.
    script
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn chat(State(script): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body).into_owned();
    let json: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    let (n, reply) = {
        let mut script = lock(&script);
        let n = script.recorded.len();
        script.recorded.push(Recorded {
            path: uri.path().to_owned(),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body: json.clone(),
        });
        let reply = match script.replies.pop_front() {
            Some(reply) => Some(reply),
            None => script.responder.as_mut().map(|f| f(&json, n)),
        };
        (n, reply)
    };
    let Some(reply) = reply else {
        let error = serde_json::json!({"error": {
            "message": format!("FakeLlm: script exhausted, no reply for request {n}"),
            "type": "fake_llm_script_exhausted",
        }});
        return (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response();
    };
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    render(reply, &json, body.len(), n)
}

async fn no_route(uri: Uri) -> Response {
    let error = serde_json::json!({"error": {
        "message": format!("FakeLlm: no route for {}", uri.path()),
        "type": "not_found_error",
    }});
    (StatusCode::NOT_FOUND, error.to_string()).into_response()
}

fn render(reply: Reply, request: &Value, request_bytes: usize, n: usize) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match reply.body {
        ReplyBody::Raw(text) => text,
        ReplyBody::Exact(response) => serde_json::to_string(&response).unwrap_or_default(),
        ReplyBody::Chat(mut response) => {
            complete(&mut response, reply.usage, request, request_bytes, n);
            serde_json::to_string(&response).unwrap_or_default()
        }
    };
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            headers.append(name, value);
        }
    }
    response
}

/// Fills in what a real server would: ids, model, time, usage.
fn complete(
    response: &mut ChatResponse,
    usage: Option<Usage>,
    request: &Value,
    request_bytes: usize,
    n: usize,
) {
    response.id = format!("chatcmpl-fake-{n}");
    response.model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake")
        .to_owned();
    response.created = 1_700_000_000 + i64::try_from(n).unwrap_or(0);
    let mut answer_bytes = 0;
    for choice in &mut response.choices {
        if let Some(Content::Text(text)) = &choice.message.content {
            answer_bytes += text.len();
        }
        for (i, call) in choice.message.tool_calls.iter_mut().flatten().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{n}_{i}");
            }
            answer_bytes += call.function.name.len() + call.function.arguments.len();
        }
    }
    let estimate = |bytes: usize| u64::try_from(bytes / 4 + 1).unwrap_or(u64::MAX);
    let mut usage = usage.unwrap_or_default();
    if usage.prompt_tokens == 0 && usage.completion_tokens == 0 {
        usage.prompt_tokens = estimate(request_bytes);
        usage.completion_tokens = estimate(answer_bytes);
    }
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    response.usage = Some(usage);
}

#[cfg(test)]
mod tests;
