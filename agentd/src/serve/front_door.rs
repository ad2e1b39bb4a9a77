//! The front door: each sandbox's HTTP API (and its WebSockets) under the service's own
//! address, at `/sandboxes/{runtime_id}/...`, the URL the runtime API hands out when the front
//! door is on. Sandboxes on other nodes are not reachable on published host ports; the service
//! reaches them (the backend's URL) and callers reach only the service, over TLS when it has a
//! certificate.
//!
//! The per-sandbox session key stays sandboxd's to check: requests are forwarded with their
//! headers, and a request with the right `X-Session-API-Key` only moves its connection to the
//! authenticated budget (`http_guard::authenticated`). A paused sandbox is answered 503 here (a
//! frozen sandboxd would never answer); an unknown runtime 404.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use hyper_util::rt::TokioIo;
use protocol::api::ErrorResponse;

use super::{SandboxService, auth};

/// The path prefix of the front door.
pub(super) const PREFIX: &str = "/sandboxes";

/// Deadline for connecting to a sandboxd.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers of one hop, never forwarded (RFC 9110 §7.6.1), and `host`, which is the target's.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::HOST,
];

/// The front door's HTTP client (one for every forwarded request).
pub(super) fn client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        // A sandboxd answers as it answers: redirects are the caller's to follow.
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// The routes of the front door (no API key: the session key is sandboxd's check).
pub(super) fn router() -> axum::Router<Arc<SandboxService>> {
    axum::Router::new()
        .route(
            &format!("{PREFIX}/{{runtime_id}}"),
            axum::routing::any(root),
        )
        .route(
            &format!("{PREFIX}/{{runtime_id}}/{{*rest}}"),
            axum::routing::any(forward),
        )
}

fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    let body = ErrorResponse {
        detail: text.into(),
        errors: None,
    };
    (status, axum::Json(body)).into_response()
}

async fn root(
    State(service): State<Arc<SandboxService>>,
    Path(runtime_id): Path<String>,
    request: Request,
) -> Response {
    proxy(&service, &runtime_id, "", request).await
}

async fn forward(
    State(service): State<Arc<SandboxService>>,
    Path((runtime_id, rest)): Path<(String, String)>,
    request: Request,
) -> Response {
    proxy(&service, &runtime_id, &rest, request).await
}

/// Forwards `request` to path `/{rest}` of sandbox `runtime_id`'s sandboxd.
async fn proxy(
    service: &SandboxService,
    runtime_id: &str,
    rest: &str,
    request: Request,
) -> Response {
    let Some(entry) = service.front(runtime_id) else {
        return detail(StatusCode::NOT_FOUND, format!("no runtime {runtime_id}"));
    };
    let given = request
        .headers()
        .get("x-session-api-key")
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if auth::same_key(given, &entry.claim.session_api_key) {
        http_guard::authenticated(request.extensions());
    }
    if entry.paused {
        return detail(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("runtime {runtime_id} is paused; resume it first"),
        );
    }
    let Ok(base) = reqwest::Url::parse(&entry.container.local_url) else {
        tracing::error!(%runtime_id, url = %entry.container.local_url, "a sandbox the front door cannot reach (not HTTP)");
        return detail(StatusCode::BAD_GATEWAY, "the sandbox cannot be reached");
    };
    let mut target = base;
    target.set_path(&format!("/{rest}"));
    target.set_query(request.uri().query());
    let result = if is_upgrade(request.headers()) {
        upgrade(target, request).await
    } else {
        plain(service.front_client(), target, request).await
    };
    result.unwrap_or_else(|e| {
        tracing::warn!(%runtime_id, error = %e, "the front door cannot reach a sandbox");
        detail(StatusCode::BAD_GATEWAY, "the sandbox did not answer")
    })
}

/// Whether a request asks for a protocol upgrade (a WebSocket).
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// `headers` without those of one hop (and without those the `Connection` header names).
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let mut kept = headers.clone();
    for name in HOP_BY_HOP.iter().chain(std::iter::once(&header::UPGRADE)) {
        kept.remove(name);
    }
    for name in named {
        kept.remove(name.as_str());
    }
    kept
}

/// Forwards a request and streams the answer back, both bodies as they come.
async fn plain(
    http: &reqwest::Client,
    target: reqwest::Url,
    request: Request,
) -> Result<Response, String> {
    let (parts, body) = request.into_parts();
    let stream = body.into_data_stream();
    let sent = http
        .request(parts.method, target)
        .headers(end_to_end(&parts.headers))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let mut response = Response::builder().status(sent.status());
    if let Some(headers) = response.headers_mut() {
        *headers = end_to_end(sent.headers());
    }
    let body = Body::from_stream(sent.bytes_stream().map_err(std::io::Error::other));
    response.body(body).map_err(|e| e.to_string())
}

/// Forwards an upgrade request over a connection of its own; once the sandbox switches
/// protocols, the two upgraded connections are joined until either side closes.
async fn upgrade(target: reqwest::Url, mut request: Request) -> Result<Response, String> {
    let host = target.host_str().ok_or("no host")?.to_string();
    let port = target.port_or_known_default().ok_or("no port")?;
    let stream = tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    .map_err(|_| "connecting timed out".to_string())?
    .map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "a forwarded upgrade connection ended");
        }
    });
    let path_and_query = match target.query() {
        Some(query) => format!("{}?{query}", target.path()),
        None => target.path().to_string(),
    };
    let mut outgoing = hyper::Request::builder()
        .method(request.method().clone())
        .uri(path_and_query);
    if let Some(headers) = outgoing.headers_mut() {
        *headers = end_to_end(request.headers());
        for name in [header::CONNECTION, header::UPGRADE] {
            if let Some(value) = request.headers().get(&name) {
                headers.insert(name, value.clone());
            }
        }
        let authority = format!("{host}:{port}");
        headers.insert(
            header::HOST,
            HeaderValue::from_str(&authority).map_err(|e| e.to_string())?,
        );
    }
    let outgoing = outgoing
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| e.to_string())?;
    let from_caller = hyper::upgrade::on(&mut request);
    let mut answer = sender
        .send_request(outgoing)
        .await
        .map_err(|e| e.to_string())?;
    let status = answer.status();
    let mut response = Response::builder().status(status);
    if let Some(headers) = response.headers_mut() {
        *headers = answer.headers().clone();
    }
    if status == StatusCode::SWITCHING_PROTOCOLS {
        let from_sandbox = hyper::upgrade::on(&mut answer);
        tokio::spawn(async move {
            match tokio::try_join!(from_caller, from_sandbox) {
                Ok((caller, sandbox)) => {
                    let (mut caller, mut sandbox) = (TokioIo::new(caller), TokioIo::new(sandbox));
                    let _ = tokio::io::copy_bidirectional(&mut caller, &mut sandbox).await;
                }
                Err(e) => tracing::debug!(error = %e, "an upgrade did not complete"),
            }
        });
        return response.body(Body::empty()).map_err(|e| e.to_string());
    }
    let body = Body::new(answer.into_body());
    response.body(body).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
