//! The conversation server's HTTP API (docs/conversations.md, `openapi.json`) and its web page.
//!
//! Everything under `/api` needs one of the server's keys: `Authorization: Bearer KEY`,
//! `X-Session-API-Key: KEY`, or the query parameter `key` (for the page's `EventSource` and
//! WebSocket, which cannot set headers). The page and the API's description are public.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path as UrlPath, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use protocol::conversation::{
    ConversationList, Done, EventPage, SESSION_API_KEY_HEADER, SendMessage,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::manager::{ConversationError, Conversations};
use super::store::WORKSPACE_DIR;
use crate::serve::auth::{ApiKeys, Caller};
use crate::serve::routes::detail;

/// The web page.
const PAGE: &str = include_str!("page.html");
/// The API's description.
pub(super) const OPENAPI: &str = include_str!("openapi.json");
/// Most events in one page.
const MAX_PAGE: usize = 1000;

/// Every route [`router`] answers, as `(method, path)` in OpenAPI's spelling: a unit test
/// checks that `openapi.json` describes exactly these, and the server's integration test sends
/// each described route to the real server.
#[cfg(test)]
pub(super) const ROUTES: &[(&str, &str)] = &[
    ("get", "/"),
    ("get", "/openapi.json"),
    ("post", "/api/conversations"),
    ("get", "/api/conversations"),
    ("get", "/api/conversations/{id}"),
    ("delete", "/api/conversations/{id}"),
    ("get", "/api/conversations/{id}/events"),
    ("get", "/api/conversations/{id}/events/live"),
    ("get", "/api/conversations/{id}/events/socket"),
    ("post", "/api/conversations/{id}/message"),
    ("post", "/api/conversations/{id}/pause"),
    ("post", "/api/conversations/{id}/resume"),
    ("post", "/api/conversations/{id}/stop"),
    ("post", "/api/conversations/{id}/confirm"),
    ("post", "/api/conversations/{id}/reject"),
    ("get", "/api/conversations/{id}/trajectory"),
    ("get", "/api/conversations/{id}/workspace"),
];

#[derive(Clone)]
pub(super) struct App {
    pub(super) manager: Arc<Conversations>,
    keys: Arc<ApiKeys>,
    max_zip_bytes: u64,
}

type AppState = State<App>;

/// The router with every route of [`ROUTES`].
pub(super) fn router(manager: Arc<Conversations>, max_body: usize) -> Router {
    let app = App {
        keys: Arc::new(ApiKeys::new(manager.api_keys())),
        max_zip_bytes: manager.max_zip_bytes(),
        manager,
    };
    let api = Router::new()
        .route("/api/conversations", post(create).get(list))
        .route("/api/conversations/{id}", get(info).delete(delete))
        .route("/api/conversations/{id}/events", get(events))
        .route("/api/conversations/{id}/events/live", get(super::live::sse))
        .route(
            "/api/conversations/{id}/events/socket",
            get(super::live::socket),
        )
        .route("/api/conversations/{id}/message", post(message))
        // pause, resume, stop, confirm, reject
        .route("/api/conversations/{id}/{request}", post(request))
        .route("/api/conversations/{id}/trajectory", get(trajectory))
        .route("/api/conversations/{id}/workspace", get(workspace))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            authenticate,
        ));
    Router::new()
        .route("/", get(page))
        .route("/openapi.json", get(openapi))
        .merge(api)
        .fallback(|| async { detail(StatusCode::NOT_FOUND, "no such route") })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(app)
}

impl IntoResponse for ConversationError {
    fn into_response(self) -> Response {
        let status = match &self {
            ConversationError::NotFound(_) => StatusCode::NOT_FOUND,
            ConversationError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ConversationError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ConversationError::Conflict(_) => StatusCode::CONFLICT,
            ConversationError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ConversationError::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
            ConversationError::Server(_) | ConversationError::EventLog(_) => {
                // Paths and OS errors go to the log, not to callers.
                tracing::error!(error = %self, "request failed");
                return detail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the conversation server failed; see its log",
                );
            }
        };
        detail(status, self.to_string())
    }
}

#[derive(Deserialize)]
struct KeyQuery {
    key: Option<String>,
}

/// The key of a request: `Authorization: Bearer`, `X-Session-API-Key`, or `?key=`.
fn given_key(headers: &HeaderMap, uri: &axum::http::Uri) -> Option<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(bearer) =
        header(header::AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(bearer.trim().to_string());
    }
    if let Some(key) = header(SESSION_API_KEY_HEADER) {
        return Some(key.to_string());
    }
    let Query(query) = Query::<KeyQuery>::try_from_uri(uri).ok()?;
    query.key
}

async fn authenticate(State(app): AppState, mut request: Request, next: Next) -> Response {
    let given = given_key(request.headers(), request.uri()).unwrap_or_default();
    match app.keys.verify(given.as_bytes()) {
        Some(caller) => {
            http_guard::authenticated(request.extensions());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None => detail(
            StatusCode::UNAUTHORIZED,
            "invalid or missing key (Authorization: Bearer KEY, X-Session-API-Key, or ?key=)",
        ),
    }
}

/// A handler's caller: the key's fingerprint the authentication put on the request.
pub(super) struct CallerFingerprint(pub(super) String);

impl<S: Send + Sync> FromRequestParts<S> for CallerFingerprint {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<CallerFingerprint, Response> {
        parts
            .extensions
            .get::<Caller>()
            .map(|c| CallerFingerprint(c.as_str().to_string()))
            .ok_or_else(|| detail(StatusCode::UNAUTHORIZED, "unauthenticated request"))
    }
}

/// Decodes a JSON body with a precise 422 on mistakes.
fn json<T: DeserializeOwned>(body: &Bytes) -> Result<T, ConversationError> {
    serde_json::from_slice(body)
        .map_err(|e| ConversationError::Unprocessable(format!("invalid body: {e}")))
}

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
        .into_response()
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// What every handler returns: an answer, or the error's status and `{"detail"}`.
type Answer = Result<Response, ConversationError>;

async fn create(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    body: Bytes,
) -> Answer {
    let conversation = app.manager.create(&owner, json(&body)?)?;
    Ok((StatusCode::CREATED, axum::Json(conversation.info())).into_response())
}

async fn list(State(app): AppState, CallerFingerprint(owner): CallerFingerprint) -> Response {
    let results = app.manager.list(&owner).iter().map(|c| c.info()).collect();
    axum::Json(ConversationList { results }).into_response()
}

async fn info(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
) -> Answer {
    Ok(axum::Json(app.manager.get(&owner, &id)?.info()).into_response())
}

async fn delete(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
) -> Answer {
    let conversation = app.manager.get(&owner, &id)?;
    app.manager.delete(&conversation).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct PageQuery {
    #[serde(default = "before_first")]
    after: i64,
    #[serde(default = "default_limit")]
    limit: usize,
}

pub(super) fn before_first() -> i64 {
    -1
}

fn default_limit() -> usize {
    100
}

async fn events(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let Query(query) = query.map_err(|e| ConversationError::BadRequest(e.body_text()))?;
    if query.limit == 0 || query.limit > MAX_PAGE {
        return Err(ConversationError::BadRequest(format!(
            "limit must be between 1 and {MAX_PAGE}"
        )));
    }
    let conversation = app.manager.get(&owner, &id)?;
    let (events, has_more) = super::page(&conversation.stream, query.after, query.limit);
    Ok(axum::Json(EventPage { events, has_more }).into_response())
}

/// Runs one of the requests that change a conversation and answers with [`Done`].
fn change(
    app: &App,
    owner: &str,
    id: &str,
    request: impl FnOnce(
        &Arc<Conversations>,
        &Arc<super::manager::Conversation>,
    ) -> Result<String, ConversationError>,
) -> Answer {
    let conversation = app.manager.get(owner, id)?;
    let message = request(&app.manager, &conversation)?;
    Ok(axum::Json(Done {
        conversation: conversation.info(),
        message,
    })
    .into_response())
}

async fn message(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> Answer {
    let request: SendMessage = json(&body)?;
    change(&app, &owner, &id, |m, c| m.message(c, &request.message))
}

/// `pause`, `resume`, `stop`, `confirm`, `reject`.
async fn request(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath((id, request)): UrlPath<(String, String)>,
) -> Answer {
    match request.as_str() {
        "pause" => change(&app, &owner, &id, |m, c| m.pause(c)),
        "resume" => change(&app, &owner, &id, |m, c| m.resume(c)),
        "stop" => change(&app, &owner, &id, |m, c| m.stop(c)),
        "confirm" => change(&app, &owner, &id, |m, c| m.confirm(c, true)),
        "reject" => change(&app, &owner, &id, |m, c| m.confirm(c, false)),
        _ => Ok(detail(StatusCode::NOT_FOUND, "no such route")),
    }
}

async fn trajectory(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
) -> Answer {
    let conversation = app.manager.get(&owner, &id)?;
    let stream = &conversation.stream;
    let value = crate::trajectory::to_json(&stream.all(), &stream.mask())
        .map_err(|e| ConversationError::Server(super::ServerError::Config(e.to_string())))?;
    Ok((
        [(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"trajectory-{id}.json\""),
        )],
        axum::Json(value),
    )
        .into_response())
}

async fn workspace(
    State(app): AppState,
    CallerFingerprint(owner): CallerFingerprint,
    UrlPath(id): UrlPath<String>,
) -> Answer {
    let conversation = app.manager.get(&owner, &id)?;
    if conversation.meta.runtime == "remote" {
        return Err(ConversationError::Conflict(
            "the workspace of a remote sandbox is not on this host; download it from the sandbox"
                .to_string(),
        ));
    }
    let dir = conversation.dir.join(WORKSPACE_DIR);
    let limit = app.max_zip_bytes;
    let bytes = tokio::task::spawn_blocking(move || zip_dir(&dir, limit))
        .await
        .map_err(|e| ConversationError::Server(super::ServerError::Config(e.to_string())))??;
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"workspace-{id}.zip\""),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `dir` as a zip archive (files and directories; symbolic links are stored as links, never
/// followed), refused once it would pass `limit` bytes of content.
fn zip_dir(dir: &Path, limit: u64) -> Result<Vec<u8>, ConversationError> {
    let failed = |e: &dyn std::fmt::Display| {
        ConversationError::Server(super::ServerError::Io {
            path: dir.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })
    };
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&current)
            .map_err(|e| failed(&e))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(dir) else {
                continue;
            };
            let name = relative.to_string_lossy().to_string();
            let kind = entry.file_type().map_err(|e| failed(&e))?;
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| failed(&e))?;
                zip.add_symlink(name, target.to_string_lossy(), options)
                    .map_err(|e| failed(&e))?;
            } else if kind.is_dir() {
                zip.add_directory(format!("{name}/"), options)
                    .map_err(|e| failed(&e))?;
                pending.push(path);
            } else if kind.is_file() {
                let content = std::fs::read(&path).map_err(|e| failed(&e))?;
                total += content.len() as u64;
                if total > limit {
                    return Err(ConversationError::TooLarge(format!(
                        "the workspace holds more than {limit} bytes; download it from the sandbox instead"
                    )));
                }
                zip.start_file(name, options).map_err(|e| failed(&e))?;
                zip.write_all(&content).map_err(|e| failed(&e))?;
            }
        }
    }
    let cursor = zip.finish().map_err(|e| failed(&e))?;
    Ok(cursor.into_inner())
}
