//! The runtime API over HTTP: authenticate (`X-API-Key`), decode, hand to the
//! [`SandboxService`], encode. The only module of `serve` that touches HTTP.
//!
//! Every endpoint but `GET /alive` (the service's own liveness) needs one of the service's
//! keys; a missing or wrong key is answered 401. Sessions and runtimes of other keys are
//! answered 404, as if they did not exist.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Multipart, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use protocol::api::ErrorResponse;
use protocol::runtime_api::{RegistryPrefixResponse, RuntimeIdRequest, StartRequest};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::auth::Caller;
use super::builds::BuildRequest;
use super::{SandboxService, ServeError};

/// Most requests handled at once.
const MAX_CONCURRENT_REQUESTS: usize = 256;

type Service = State<Arc<SandboxService>>;

/// The router with every endpoint; bodies above `max_body` bytes are refused (413).
pub(crate) fn router(service: Arc<SandboxService>, max_body: usize) -> Router {
    let max_build = service.max_build_bytes();
    let protected = Router::new()
        .route("/start", post(start))
        .route("/stop", post(stop))
        .route("/pause", post(pause))
        .route("/resume", post(resume))
        .route("/sessions/{sid}", get(session))
        .route("/runtime/{id}", get(runtime))
        .route("/runtimes", get(list))
        .route("/registry_prefix", get(registry_prefix))
        .route("/image_exists", get(image_exists))
        .route(
            "/build",
            post(build).layer(DefaultBodyLimit::max(max_build)),
        )
        .route("/build_status", get(build_status))
        .route_layer(middleware::from_fn_with_state(
            service.clone(),
            authenticate,
        ));
    Router::new()
        .route("/alive", get(alive))
        .merge(protected)
        .merge(super::front_door::router())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(tower::limit::ConcurrencyLimitLayer::new(
            MAX_CONCURRENT_REQUESTS,
        ))
        .with_state(service)
}

/// An error answer: `{"detail": text}` with `status` (both of agentd's servers answer so).
pub(crate) fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    let body = ErrorResponse {
        detail: text.into(),
        errors: None,
    };
    (status, axum::Json(body)).into_response()
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        match self {
            ServeError::BadRequest(text) => detail(StatusCode::BAD_REQUEST, text),
            ServeError::Unprocessable(text) => detail(StatusCode::UNPROCESSABLE_ENTITY, text),
            ServeError::NotFound(text) => detail(StatusCode::NOT_FOUND, text),
            ServeError::Conflict(text) | ServeError::Unsupported(text) => {
                detail(StatusCode::CONFLICT, text)
            }
            ServeError::Forbidden(text) => detail(StatusCode::FORBIDDEN, text),
            other => {
                // Details (engine messages, paths) go to the log, not to callers.
                tracing::error!(error = %other, "request failed");
                detail(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the sandbox service failed; see its log",
                )
            }
        }
    }
}

async fn authenticate(
    State(service): Service,
    headers: HeaderMap,
    mut request: Request,
    next: Next,
) -> Response {
    let given = headers
        .get("x-api-key")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    match service.keys().verify(given) {
        Some(owner) => {
            http_guard::authenticated(request.extensions());
            request.extensions_mut().insert(owner);
            next.run(request).await
        }
        None => detail(StatusCode::UNAUTHORIZED, "Invalid or missing X-API-Key"),
    }
}

/// A handler's `Caller` argument: the owner the authentication put on the request.
impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ServeError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Caller, ServeError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ServeError::Internal("unauthenticated request".to_string()))
    }
}

/// Decodes a JSON body with a precise 422 on mistakes.
fn json<T: DeserializeOwned>(body: &Bytes) -> Result<T, ServeError> {
    serde_json::from_slice(body)
        .map_err(|e| ServeError::Unprocessable(format!("invalid body: {e}")))
}

async fn alive() -> Response {
    axum::Json(serde_json::json!({"status": "ok"})).into_response()
}

async fn not_found() -> Response {
    detail(StatusCode::NOT_FOUND, "Not Found")
}

async fn start(State(service): Service, owner: Caller, body: Bytes) -> Response {
    let request: StartRequest = match json(&body) {
        Ok(request) => request,
        Err(e) => return e.into_response(),
    };
    respond(service.start(&owner, request).await)
}

async fn by_id(service: Arc<SandboxService>, owner: Caller, body: Bytes, call: Call) -> Response {
    let request: RuntimeIdRequest = match json(&body) {
        Ok(request) => request,
        Err(e) => return e.into_response(),
    };
    let id = &request.runtime_id;
    respond(match call {
        Call::Stop => service.stop(&owner, id).await,
        Call::Pause => service.pause(&owner, id).await,
        Call::Resume => service.resume(&owner, id).await,
    })
}

/// The calls that take a `{"runtime_id"}` body.
#[derive(Debug, Clone, Copy)]
enum Call {
    Stop,
    Pause,
    Resume,
}

async fn stop(State(service): Service, owner: Caller, body: Bytes) -> Response {
    by_id(service, owner, body, Call::Stop).await
}

async fn pause(State(service): Service, owner: Caller, body: Bytes) -> Response {
    by_id(service, owner, body, Call::Pause).await
}

async fn resume(State(service): Service, owner: Caller, body: Bytes) -> Response {
    by_id(service, owner, body, Call::Resume).await
}

async fn session(State(service): Service, owner: Caller, Path(sid): Path<String>) -> Response {
    respond(service.session(&owner, &sid).await)
}

async fn runtime(State(service): Service, owner: Caller, Path(id): Path<String>) -> Response {
    respond(service.runtime_status(&owner, &id).await)
}

async fn list(State(service): Service, owner: Caller) -> Response {
    axum::Json(service.list(&owner)).into_response()
}

async fn registry_prefix(State(service): Service) -> Response {
    axum::Json(RegistryPrefixResponse {
        registry_prefix: service.registry_prefix().to_string(),
    })
    .into_response()
}

#[derive(Debug, Deserialize)]
struct ImageQuery {
    image: String,
}

async fn image_exists(
    State(service): Service,
    query: Result<Query<ImageQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    match query {
        Ok(Query(query)) => respond(service.image_exists(&query.image).await),
        Err(_) => detail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the query parameter image is required",
        ),
    }
}

/// `POST /build`: the multipart form of OpenHands' `RemoteRuntimeBuilder`.
async fn build(
    State(service): Service,
    owner: Caller,
    form: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Response {
    let request = match form {
        Ok(form) => build_request(form).await,
        Err(e) => Err(ServeError::BadRequest(format!(
            "a multipart form is expected: {e}"
        ))),
    };
    respond(match request {
        Ok(request) => service.build(&owner, request).await,
        Err(e) => Err(e),
    })
}

/// Reads the fields `context`, `target_image` and `tags` (others are refused).
async fn build_request(mut form: Multipart) -> Result<BuildRequest, ServeError> {
    let bad = |e: axum::extract::multipart::MultipartError| {
        ServeError::BadRequest(format!("cannot read the form: {}", e.body_text()))
    };
    let mut request = BuildRequest::default();
    while let Some(field) = form.next_field().await.map_err(bad)? {
        match field.name().unwrap_or_default() {
            "context" => request.context = field.bytes().await.map_err(bad)?.to_vec(),
            "target_image" => request.target_image = field.text().await.map_err(bad)?,
            "tags" => request.tags.push(field.text().await.map_err(bad)?),
            other => {
                return Err(ServeError::BadRequest(format!(
                    "unknown form field {other:?} (expected context, target_image, tags)"
                )));
            }
        }
    }
    if request.target_image.is_empty() {
        return Err(ServeError::BadRequest(
            "target_image is required".to_string(),
        ));
    }
    if request.context.is_empty() {
        return Err(ServeError::BadRequest("context is required".to_string()));
    }
    Ok(request)
}

#[derive(Debug, Deserialize)]
struct BuildQuery {
    build_id: String,
}

async fn build_status(
    State(service): Service,
    owner: Caller,
    query: Result<Query<BuildQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return detail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the query parameter build_id is required",
        );
    };
    respond(service.build_status(&owner, &query.build_id))
}

fn respond<T: serde::Serialize>(result: Result<T, ServeError>) -> Response {
    match result {
        Ok(body) => axum::Json(body).into_response(),
        Err(e) => e.into_response(),
    }
}
