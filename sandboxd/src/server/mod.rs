//! HTTP routes: authenticate, decode the request into a protocol type, hand it to the executor
//! or the transfer helpers, encode the answer. Status codes and `detail` texts are the
//! reference's (docs/protocol.md §2, §8).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use protocol::action::ActionKind;
use protocol::api::{
    AliveResponse, ConfigureRequest, CreateShellRequest, ErrorResponse, KillAllResponse,
    McpStdioServer, ServerInfo, ShellInfo, SignalRequest, SignalResponse, UpdateMcpServerResponse,
    UploadResponse,
};
use protocol::api::{IDEMPOTENCY_KEY_HEADER, IF_MATCH_HEADER};
use protocol::{Action, ActionType};
use serde::Deserialize;
use serde_json::Value;
use std::future::Future;

use crate::executor::{Conditions, Executor, Refused};
use crate::feed::Tap;
use crate::processes::SignalError;
use crate::shells::ShellRefusal;
use crate::sysinfo::{self, CpuMeter};
use crate::transfer::{self, TransferError};
use idempotency::{Answer, Claim, Idempotency};

mod idempotency;
mod mcp;
mod stream;
mod terminal;

/// The OpenAPI document served at `/openapi.json`.
const OPENAPI: &str = include_str!("../../openapi.json");

/// Shared state of the handlers.
#[derive(Debug)]
struct AppState {
    executor: Arc<Executor>,
    api_key: Option<String>,
    started: Instant,
    last_action: Mutex<Instant>,
    cpu: CpuMeter,
    /// The idempotency keys seen and their answers.
    idempotency: Arc<Idempotency>,
}

/// Limits of the HTTP layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Largest JSON body.
    pub(crate) max_body_bytes: usize,
    /// Largest upload.
    pub(crate) max_upload_bytes: usize,
}

/// The router with every endpoint.
pub(crate) fn router(executor: Executor, api_key: Option<String>, limits: Limits) -> Router {
    let executor = Arc::new(executor);
    let state = Arc::new(AppState {
        executor: executor.clone(),
        api_key,
        started: Instant::now(),
        last_action: Mutex::new(Instant::now()),
        cpu: CpuMeter::default(),
        idempotency: Arc::default(),
    });
    let protected = Router::new()
        .route("/execute_action", post(execute_action))
        .route("/execute_action/stream", post(stream::execute_stream))
        .route("/shells/{id}/attach", get(stream::attach))
        .route("/shells", get(list_shells).post(create_shell))
        .route("/terminals", get(terminal::list).post(terminal::create))
        .route("/terminals/{id}", axum::routing::delete(terminal::close))
        .route("/terminals/{id}/ws", get(terminal::socket))
        .route("/shells/{id}", axum::routing::delete(close_shell))
        .route("/list_files", post(list_files))
        .route("/download_files", get(download_files))
        .route("/vscode/connection_token", get(vscode_token))
        .route("/update_mcp_server", post(update_mcp_server))
        .route("/processes/kill_all", post(kill_all))
        .route("/processes", get(list_processes))
        .route("/processes/{pid}/signal", post(signal_process))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .merge(mcp::routes(&executor, limits.max_body_bytes))
        .merge(
            Router::new()
                .route("/upload_file", post(upload_file))
                .layer(DefaultBodyLimit::max(limits.max_upload_bytes)),
        )
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    Router::new()
        .route("/alive", get(alive))
        .route("/server_info", get(server_info))
        .route("/openapi.json", get(openapi))
        .merge(protected)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// A configuration handed to the waiting main task, with where it says when it has applied
/// it (the answer to `/configure` waits for that, so that a caller who got it finds sandboxd
/// ready, or restarting with it).
pub(crate) type Configuration = (ConfigureRequest, tokio::sync::oneshot::Sender<()>);

/// What the configure endpoint hands to the waiting main task (once).
type Configured = Mutex<Option<tokio::sync::oneshot::Sender<Configuration>>>;

/// The router of the pre-started mode (`--await-configuration`): `POST /configure` with
/// `key` as `X-Session-API-Key` validates the arguments and hands the request to `configured`;
/// everything else answers 503 (not ready), `/alive` included.
pub(crate) fn configure_router(
    key: String,
    configured: tokio::sync::oneshot::Sender<Configuration>,
) -> Router {
    let state = Arc::new((key, Mutex::new(Some(configured))));
    Router::new()
        .route("/configure", post(configure))
        .fallback(awaiting_configuration)
        .layer(DefaultBodyLimit::max(1024 * 1024))
        .with_state(state)
}

async fn awaiting_configuration() -> Response {
    detail(
        StatusCode::SERVICE_UNAVAILABLE,
        "sandboxd is awaiting its configuration",
    )
}

async fn configure(
    State(state): State<Arc<(String, Configured)>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (key, configured) = &*state;
    if !has_session_key(&headers, key) {
        return detail(StatusCode::FORBIDDEN, "Invalid API Key");
    }
    http_guard::authenticated(&extensions);
    let request: ConfigureRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return detail(StatusCode::UNPROCESSABLE_ENTITY, format!("bad body: {e}")),
    };
    let argv = std::iter::once("sandboxd".to_string()).chain(request.args.iter().cloned());
    let parsed = <crate::Cli as clap::Parser>::try_parse_from(argv)
        .and_then(|cli| crate::Cli::check_env(&request.env).map(|()| cli));
    match parsed {
        Ok(cli) if cli.await_configuration => {
            return detail(
                StatusCode::BAD_REQUEST,
                "the configuration cannot ask to await another one",
            );
        }
        Ok(_) => {}
        Err(e) => {
            return detail(
                StatusCode::BAD_REQUEST,
                format!("invalid sandboxd arguments: {}", e.render()),
            );
        }
    }
    let sender = configured.lock().ok().and_then(|mut s| s.take());
    let (applied, done) = tokio::sync::oneshot::channel();
    match sender.map(|sender| sender.send((request, applied))) {
        Some(Ok(())) => {
            // Applied in place (sandboxd now serves its actions), or about to restart with it.
            let _ = done.await;
            (
                StatusCode::OK,
                axum::Json(serde_json::json!({"status": "configuring"})),
            )
                .into_response()
        }
        _ => detail(StatusCode::CONFLICT, "sandboxd is already configured"),
    }
}

fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    let body = ErrorResponse {
        detail: text.into(),
        errors: None,
    };
    (status, axum::Json(body)).into_response()
}

/// The reference wraps every failure of these endpoints as a 500 whose detail carries the code.
fn internal(text: impl Into<String>) -> Response {
    detail(StatusCode::INTERNAL_SERVER_ERROR, text)
}

async fn not_found() -> Response {
    detail(StatusCode::NOT_FOUND, "Not Found")
}

async fn method_not_allowed() -> Response {
    detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
}

async fn authenticate(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    if let Some(expected) = &state.api_key
        && !has_key(&headers, expected)
    {
        return detail(StatusCode::FORBIDDEN, "Invalid API Key");
    }
    http_guard::authenticated(request.extensions());
    next.run(request).await
}

/// Whether `headers` carry `key` as `X-Session-API-Key` (compared in constant time).
fn has_session_key(headers: &HeaderMap, key: &str) -> bool {
    let given = headers
        .get("x-session-api-key")
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    constant_time_eq(given, key.as_bytes())
}

/// Whether the request carries the session key: as `X-Session-API-Key`, or as
/// `Authorization: Bearer KEY` (what MCP hosts send; the reference's MCP proxy takes it too).
fn has_key(headers: &HeaderMap, key: &str) -> bool {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
    has_session_key(headers, key)
        || bearer.is_some_and(|given| constant_time_eq(given, key.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 200 when actions can run; 503 with the reason when an actor cannot serve them (a shell
/// that cannot start), so that clients and hosts see a broken sandbox as one.
async fn alive(State(state): State<Arc<AppState>>) -> Response {
    alive_response(state.executor.health())
}

fn alive_response(health: Result<(), String>) -> Response {
    match health {
        Ok(()) => axum::Json(AliveResponse {
            status: "ok".to_owned(),
        })
        .into_response(),
        Err(why) => detail(StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

/// `POST /processes/kill_all`: kills every process the agent started except the shells and
/// the kernel (the recovery from a runaway process tree; see `crate::agent_procs`).
async fn kill_all(State(state): State<Arc<AppState>>) -> axum::Json<KillAllResponse> {
    // Inline, not on a blocking thread: a fork bomb may have taken every pid a new thread
    // needs, and the scan takes milliseconds.
    let killed = state.executor.kill_all();
    tracing::info!(killed, "killed the agent's processes");
    axum::Json(KillAllResponse { killed })
}

/// `GET /processes`: the sandbox's processes (its shells and kernel, and what the agent
/// started), never sandboxd itself.
async fn list_processes(State(state): State<Arc<AppState>>) -> Response {
    let executor = state.executor.clone();
    match tokio::task::spawn_blocking(move || executor.processes()).await {
        Ok(list) => axum::Json(list).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "listing processes failed");
            internal("Internal server error: listing processes failed")
        }
    }
}

/// `POST /processes/{pid}/signal`: sends a signal to one of the sandbox's processes, or with
/// `tree` to it and all its descendants; answers who got it.
async fn signal_process(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(pid): axum::extract::Path<String>,
    body: Bytes,
) -> Response {
    let Ok(pid) = pid.parse::<u32>() else {
        return detail(
            StatusCode::BAD_REQUEST,
            format!("{pid:?} is not a process id"),
        );
    };
    let request: SignalRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return invalid_request(format!("bad signal request: {e}")),
    };
    // Inline, like kill_all: a runaway tree may hold every pid a new thread needs.
    match state.executor.signal(pid, &request.signal, request.tree) {
        Ok(signaled) => axum::Json(SignalResponse { signaled }).into_response(),
        Err(e @ SignalError::UnknownSignal(_)) => detail(StatusCode::BAD_REQUEST, e.to_string()),
        Err(e @ SignalError::NotFound(_)) => detail(StatusCode::NOT_FOUND, e.to_string()),
    }
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn server_info(State(state): State<Arc<AppState>>) -> axum::Json<ServerInfo> {
    let idle = state
        .last_action
        .lock()
        .map(|t| t.elapsed().as_secs_f64())
        .unwrap_or_default();
    let dir = state.executor.working_dir().to_path_buf();
    let resources = sysinfo::resources(&state.cpu, &dir);
    axum::Json(ServerInfo {
        uptime: state.started.elapsed().as_secs_f64(),
        idle_time: idle,
        resources,
        app_ports: sysinfo::app_ports(),
    })
}

/// Why an `/execute_action` body is not an executable action.
#[derive(Debug, thiserror::Error, PartialEq)]
enum ActionError {
    /// The body holds an observation (or something else that is no action).
    #[error("400: Invalid action type")]
    NotAnAction,
    /// The `action` type is unknown.
    #[error("'action['action']='{0}'' is not defined. Available actions: {list}", list = available_actions())]
    Undefined(String),
    /// A known type that sandboxd does not execute (`think`, `finish`, `message`, ...).
    #[error("'ActionExecutor' object has no attribute '{0}'")]
    NotExecutable(String),
    /// The arguments do not fit the type.
    #[error("action={0} has the wrong arguments: {1}")]
    WrongArguments(String, String),
}

fn available_actions() -> String {
    let names: Vec<String> = ActionType::ALL
        .iter()
        .map(|t| format!("'{}'", t.as_str()))
        .collect();
    format!("[{}]", names.join(", "))
}

/// Decodes the `action` member of an `/execute_action` body.
fn decode_action(value: Value) -> Result<Action, ActionError> {
    let Value::Object(mut map) = value else {
        return Err(ActionError::NotAnAction);
    };
    let name = match map.get("action") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(ActionError::Undefined(other.to_string())),
        None => return Err(ActionError::NotAnAction),
    };
    let Some(kind) = ActionType::ALL.into_iter().find(|t| t.as_str() == name) else {
        return Err(ActionError::Undefined(name));
    };
    // Runnable, except `call_tool_mcp`: the host calls MCP tools itself (see `is_runnable`);
    // the stdio servers it runs here are reached through `/mcp/proxy`.
    if !kind.is_runnable() || kind == ActionType::Mcp {
        return Err(ActionError::NotExecutable(name));
    }
    if matches!(map.get("args"), None | Some(Value::Null)) {
        map.insert("args".to_owned(), Value::Object(serde_json::Map::new()));
    }
    let value = Value::Object(map);
    serde_json::from_value(value.clone())
        .map_err(|e| ActionError::WrongArguments(value.to_string(), e.to_string()))
}

fn invalid_request(errors: String) -> Response {
    let body = ErrorResponse {
        detail: "Invalid request parameters".to_owned(),
        errors: Some(errors),
    };
    (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(body)).into_response()
}

/// One `/execute_action` request, decoded: the action and what the request asks beside it.
#[derive(Debug)]
struct ActionRequest {
    action: Action,
    conditions: Conditions,
    /// `Idempotency-Key`, checked.
    key: Option<String>,
    /// What a repeated key must repeat: the body and the conditions.
    fingerprint: [u8; 32],
}

impl ActionRequest {
    /// Decodes the body and the headers; `Err` is the answer that refuses them.
    fn decode(endpoint: &str, headers: &HeaderMap, body: &[u8]) -> Result<Self, Box<Response>> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| Box::new(invalid_request(format!("body is not valid JSON: {e}"))))?;
        let Value::Object(mut map) = value else {
            return Err(Box::new(invalid_request(
                "body must be a JSON object with an `action` member".to_owned(),
            )));
        };
        let Some(action) = map.remove("action") else {
            return Err(Box::new(invalid_request(
                "field `action` is required".to_owned(),
            )));
        };
        let action = decode_action(action)
            .map_err(|e| Box::new(internal(format!("Internal server error: {e}"))))?;
        let shell = match map.remove("shell") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => {
                return Err(Box::new(invalid_request(
                    "field `shell` must be a shell id".to_owned(),
                )));
            }
        };
        let if_match = match headers.get(IF_MATCH_HEADER) {
            None => None,
            Some(value) => {
                let value = value.to_str().unwrap_or_default();
                Some(
                    crate::files::parse_expected(value)
                        .map_err(|e| Box::new(detail(StatusCode::BAD_REQUEST, e)))?,
                )
            }
        };
        if if_match.is_some() && !matches!(action.kind, ActionKind::Write(_) | ActionKind::Edit(_))
        {
            return Err(Box::new(detail(
                StatusCode::BAD_REQUEST,
                "If-Match applies to `write` and `edit` actions only",
            )));
        }
        let key = match headers.get(IDEMPOTENCY_KEY_HEADER) {
            None => None,
            Some(value) => Some(
                idempotency::check_key(value.as_bytes())
                    .map_err(|e| Box::new(detail(StatusCode::BAD_REQUEST, e)))?,
            ),
        };
        let fingerprint = idempotency::fingerprint(
            endpoint,
            &[body, if_match.as_deref().unwrap_or_default().as_bytes()],
        );
        Ok(ActionRequest {
            action,
            conditions: Conditions { if_match, shell },
            key,
            fingerprint,
        })
    }
}

/// Runs `action` and makes its answer: the observation (with the file's content hash as
/// `ETag`), or 412 when a condition failed.
async fn answer_action(
    state: &AppState,
    action: Action,
    conditions: Conditions,
    tap: Option<Tap>,
) -> Answer {
    if let Ok(mut last) = state.last_action.lock() {
        *last = Instant::now();
    }
    let executed = state.executor.execute_with(action, conditions, tap).await;
    if let Ok(mut last) = state.last_action.lock() {
        *last = Instant::now();
    }
    match executed {
        Ok(executed) => Answer {
            status: StatusCode::OK.as_u16(),
            etag: executed.content_hash.map(|h| format!("\"{h}\"")),
            body: json_bytes(&executed.observation),
        },
        Err(refused) => Answer {
            status: match refused {
                Refused::Precondition(_) => StatusCode::PRECONDITION_FAILED,
                Refused::Shell(_) => StatusCode::NOT_FOUND,
            }
            .as_u16(),
            etag: None,
            body: json_bytes(&ErrorResponse {
                detail: refused.to_string(),
                errors: None,
            }),
        },
    }
}

fn json_bytes(value: &impl serde::Serialize) -> Bytes {
    match serde_json::to_vec(value) {
        Ok(bytes) => Bytes::from(bytes),
        Err(e) => {
            tracing::error!(error = %e, "cannot encode an answer");
            Bytes::from_static(b"{\"detail\":\"cannot encode the answer\"}")
        }
    }
}

fn answer_response(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        answer.body,
    )
        .into_response();
    if let Some(etag) = answer.etag.and_then(|e| HeaderValue::from_str(&e).ok()) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// Runs `make` once for `key` (see [`idempotency`]): in a task of its own, so that it ends
/// and is remembered even when this request's client is gone; a repeated key waits for the
/// first answer. `Err` is the refusal of a key reused with another request (status and
/// detail).
async fn once<F>(
    state: &Arc<AppState>,
    key: Option<String>,
    fingerprint: [u8; 32],
    make: F,
) -> Result<Answer, (StatusCode, String)>
where
    F: Future<Output = Answer> + Send + 'static,
{
    let Some(key) = key else {
        return Ok(make.await);
    };
    match state.idempotency.claim(key, fingerprint) {
        Claim::Mismatch => Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            "this Idempotency-Key was already used with a different request".to_owned(),
        )),
        Claim::Replay(answer) => idempotency::wait(answer).await.ok_or_else(|| {
            (
                StatusCode::CONFLICT,
                "the first request with this Idempotency-Key failed without an answer; send it again".to_owned(),
            )
        }),
        Claim::Run(pending) => {
            let task = tokio::spawn(async move {
                let answer = make.await;
                pending.finish(answer.clone());
                answer
            });
            task.await.map_err(|e| {
                tracing::error!(error = %e, "an action task failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal server error: the action failed unexpectedly".to_owned(),
                )
            })
        }
    }
}

async fn execute_action(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = match ActionRequest::decode("/execute_action", &headers, &body) {
        Ok(request) => request,
        Err(refusal) => return *refusal,
    };
    let run = {
        let state = state.clone();
        async move { answer_action(&state, request.action, request.conditions, None).await }
    };
    match once(&state, request.key, request.fingerprint, run).await {
        Ok(answer) => answer_response(answer),
        Err((status, text)) => detail(status, text),
    }
}

/// `GET /shells`: every shell, the default one first.
async fn list_shells(State(state): State<Arc<AppState>>) -> axum::Json<Vec<ShellInfo>> {
    axum::Json(state.executor.shells().list())
}

/// `POST /shells`: starts a named shell (201 with its description).
async fn create_shell(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let request: CreateShellRequest = if body.is_empty() {
        CreateShellRequest::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(e) => return invalid_request(format!("bad shell request: {e}")),
        }
    };
    match state.executor.shells().create(request).await {
        Ok(info) => (StatusCode::CREATED, axum::Json(info)).into_response(),
        Err(refusal) => shell_refusal(&refusal),
    }
}

/// `DELETE /shells/{id}`: closes a named shell, killing what runs in it.
async fn close_shell(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match state.executor.shells().close(&id) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refusal) => shell_refusal(&refusal),
    }
}

fn shell_refusal(refusal: &ShellRefusal) -> Response {
    let status = match refusal {
        ShellRefusal::Invalid(_) => StatusCode::BAD_REQUEST,
        ShellRefusal::Conflict(_) => StatusCode::CONFLICT,
        ShellRefusal::Unknown(_) => StatusCode::NOT_FOUND,
        ShellRefusal::Start(e) => {
            tracing::error!(error = %e, "a shell did not start");
            StatusCode::INTERNAL_SERVER_ERROR
        }
    };
    detail(status, refusal.to_string())
}

/// Runs blocking transfer work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TransferError> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(internal(e.to_string())),
        Err(e) => {
            tracing::error!(error = %e, "transfer task failed");
            Err(internal(
                "An unexpected error occurred. Please try again later.",
            ))
        }
    }
}

async fn list_files(State(state): State<Arc<AppState>>, body: Bytes) -> axum::Json<Vec<String>> {
    let path = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(map)) => match map.get("path") {
            Some(Value::String(p)) => Some(p.clone()),
            Some(Value::Null) | None => None,
            Some(_) => return axum::Json(Vec::new()),
        },
        _ if body.is_empty() => None,
        _ => return axum::Json(Vec::new()),
    };
    let base = state.executor.working_dir().to_path_buf();
    let dir = match path {
        Some(p) => base.join(p),
        None => base,
    };
    let names = tokio::task::spawn_blocking(move || transfer::list_files(&dir))
        .await
        .unwrap_or_default();
    axum::Json(names)
}

#[derive(Debug, Deserialize)]
struct UploadQuery {
    #[serde(default = "root")]
    destination: String,
    #[serde(default)]
    recursive: Option<String>,
}

fn root() -> String {
    "/".to_owned()
}

async fn upload_file(
    State(state): State<Arc<AppState>>,
    Query(query): Query<UploadQuery>,
    mut multipart: Multipart,
) -> Response {
    let recursive = query
        .recursive
        .as_deref()
        .is_some_and(|r| r.eq_ignore_ascii_case("true") || r == "1");
    if !Path::new(&query.destination).is_absolute() {
        return internal("400: Destination must be an absolute path");
    }
    let mut field = loop {
        match multipart.next_field().await {
            Ok(Some(field)) if field.name() == Some("file") => break field,
            Ok(Some(_)) => continue,
            Ok(None) => return invalid_request("multipart field `file` is required".to_owned()),
            Err(e) => return detail(e.status(), e.body_text()),
        }
    };
    let filename = field.file_name().unwrap_or("upload").to_owned();
    let destination = PathBuf::from(&query.destination);
    let owner = state.executor.owner();
    let spool = {
        let (destination, name) = (destination.clone(), filename.clone());
        match blocking(move || transfer::upload_spool(&destination, &name, recursive, owner)).await
        {
            Ok(spool) => spool,
            Err(response) => return response,
        }
    };
    // Streamed to disk as it arrives (the body limit still applies): never whole in memory.
    let mut spool = tokio::fs::File::from_std(spool);
    loop {
        match field.chunk().await {
            Ok(Some(chunk)) => {
                if let Err(e) = tokio::io::AsyncWriteExt::write_all(&mut spool, &chunk).await {
                    return internal(TransferError::Io(e).to_string());
                }
            }
            Ok(None) => break,
            Err(e) => return detail(e.status(), e.body_text()),
        }
    }
    if let Err(e) = tokio::io::AsyncWriteExt::flush(&mut spool).await {
        return internal(TransferError::Io(e).to_string());
    }
    let spool = spool.into_std().await;
    let name = filename.clone();
    if let Err(response) =
        blocking(move || transfer::store_upload(&destination, &name, spool, recursive, owner)).await
    {
        return response;
    }
    axum::Json(UploadResponse {
        filename,
        destination: query.destination,
        recursive,
    })
    .into_response()
}

#[derive(Debug, Deserialize)]
struct DownloadQuery {
    path: String,
}

async fn download_files(Query(query): Query<DownloadQuery>) -> Response {
    let path = PathBuf::from(&query.path);
    if !path.is_absolute() {
        return internal("400: Path must be an absolute path");
    }
    let name = path.file_name().map_or_else(
        || "download".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let zipped = blocking(move || {
        let mut file = tempfile::tempfile()?;
        transfer::zip_tree(&path, &mut file)?;
        use std::io::Seek;
        file.rewind()?;
        Ok(file)
    })
    .await;
    let file = match zipped {
        Ok(f) => tokio::fs::File::from_std(f),
        Err(response) => return response,
    };
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
    let disposition = format!("attachment; filename=\"{}.zip\"", name.replace('"', ""));
    let mut response = Response::new(body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

async fn vscode_token() -> axum::Json<Value> {
    axum::Json(serde_json::json!({ "token": null }))
}

/// `POST /update_mcp_server`: the list of stdio MCP servers the sandbox runs (see
/// `crate::mcp::McpServers::update`). A bad list is a 400 that says which entry and why
/// (the reference answers a bad entry with a bare 500); servers that do not start are named in
/// `router_error_log`.
async fn update_mcp_server(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let servers = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(servers)) => servers,
        _ => {
            return detail(
                StatusCode::BAD_REQUEST,
                "Request must be a list of MCP tools to sync",
            );
        }
    };
    let servers: Vec<McpStdioServer> = match serde_json::from_value(Value::Array(servers)) {
        Ok(servers) => servers,
        Err(e) => {
            return detail(
                StatusCode::BAD_REQUEST,
                format!("Invalid MCP server entry: {e}"),
            );
        }
    };
    match state.executor.update_mcp_servers(servers).await {
        Ok(router_error_log) => axum::Json(UpdateMcpServerResponse {
            detail: "MCP server updated successfully".to_owned(),
            router_error_log,
        })
        .into_response(),
        Err(e) => detail(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

#[cfg(test)]
mod tests;
