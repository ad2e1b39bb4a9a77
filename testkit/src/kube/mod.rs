//! [`FakeKube`]: a fake Kubernetes API server at the wire, for the tests of agentd's kubernetes
//! backend (no control plane can run here). A real HTTP server on 127.0.0.1:0 that speaks the
//! few endpoints the backend uses — pods (create, get, list and watch with label and field
//! selectors and `resourceVersion`, merge-patch with the optimistic concurrency of a
//! `metadata.resourceVersion`, delete) and network policies (create, delete, and deleted with
//! the pod that owns them, as the garbage collector does) — keeps its objects in memory with
//! resource versions, and records every request so that tests can check them against the
//! API's schemas ([`check_requests`], [`validate_manifests`]).
//!
//! Its kubelet ([`kubelet`]) runs each pod as a real sandboxd on this machine, behind a pod IP
//! of its own in 127.0.0.0/8 at the pod's sandboxd port, and makes the pod `Running` and ready
//! once sandboxd listens.

mod check;
mod kubelet;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

pub use check::{KUBERNETES_VERSION, Problems, check_requests, validate_manifests};

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query's parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    pub content_type: Option<String>,
    /// The JSON body, if there was one.
    pub body: Option<Value>,
    /// The status the fake answered.
    pub status: u16,
}

impl Recorded {
    /// The value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The kinds of object the fake keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Pod,
    NetworkPolicy,
}

/// A change to an object, as a watch sends it.
#[derive(Debug, Clone)]
struct Event {
    kind: Kind,
    namespace: String,
    /// `ADDED`, `MODIFIED`, `DELETED`.
    change: &'static str,
    object: Value,
    version: u64,
}

/// The objects, their versions, and what was asked.
#[derive(Debug, Default)]
struct Cluster {
    /// The last resource version given out.
    version: u64,
    objects: BTreeMap<(Kind, String, String), Value>,
    /// Every change, oldest first: watches start from any version.
    history: Vec<Event>,
    requests: Vec<Recorded>,
    /// Claim patches refused for an older resource version.
    conflicts: usize,
}

/// What the fake's objects are at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Pods, by name (every namespace).
    pub pods: BTreeMap<String, Value>,
    /// Network policies, by name.
    pub policies: BTreeMap<String, Value>,
    /// Patches refused with 409 for an older resource version.
    pub conflicts: usize,
}

impl Snapshot {
    /// The pods that are running and ready.
    pub fn ready_pods(&self) -> Vec<&Value> {
        self.pods
            .values()
            .filter(|p| p["status"]["phase"] == "Running" && p["status"]["podIP"].is_string())
            .collect()
    }
}

#[derive(Debug)]
struct Shared {
    cluster: Mutex<Cluster>,
    /// Every change, for watches.
    changes: broadcast::Sender<Event>,
    /// Bumped on every change, for [`FakeKube::wait_until`].
    bumped: watch::Sender<u64>,
    kubelet: kubelet::Kubelet,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a change of `object` (its resource version set here) and tells the watches.
    fn change(
        &self,
        cluster: &mut Cluster,
        kind: Kind,
        namespace: &str,
        change: &'static str,
        mut object: Value,
    ) -> Value {
        cluster.version += 1;
        let version = cluster.version;
        object["metadata"]["resourceVersion"] = json!(version.to_string());
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = (kind, namespace.to_string(), name);
        if change == "DELETED" {
            cluster.objects.remove(&key);
        } else {
            cluster.objects.insert(key, object.clone());
        }
        let event = Event {
            kind,
            namespace: namespace.to_string(),
            change,
            object: object.clone(),
            version,
        };
        cluster.history.push(event.clone());
        let _ = self.changes.send(event);
        self.bumped.send_modify(|v| *v += 1);
        object
    }
}

/// The fake API server; see the module documentation. Its server and every sandboxd its
/// kubelet runs stop when it is dropped.
#[derive(Debug)]
pub struct FakeKube {
    url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeKube {
    /// Starts the fake on 127.0.0.1:0; its kubelet runs pods as `sandboxd` (the binary's
    /// path) in temporary directories.
    pub async fn start(sandboxd: PathBuf) -> FakeKube {
        let (changes, _) = broadcast::channel(1024);
        let (bumped, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            cluster: Mutex::default(),
            changes,
            bumped,
            kubelet: kubelet::Kubelet::new(sandboxd),
        });
        let state = shared.clone();
        let app = axum::Router::new().fallback(move |method, uri, headers, body| {
            handle(state.clone(), method, uri, headers, body)
        });
        let (addr, server) = crate::loopback::serve_on_loopback("the fake API server", app).await;
        FakeKube {
            url: format!("http://{addr}"),
            shared,
            server,
        }
    }

    /// The API server's URL (`--k8s-api-server`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port the kubelet serves every pod's sandboxd at (`--k8s-sandboxd-port`): free on
    /// its pod addresses.
    pub fn sandboxd_port(&self) -> u16 {
        self.shared.kubelet.port()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// The objects now.
    pub fn snapshot(&self) -> Snapshot {
        let cluster = self.shared.lock();
        let of = |kind: Kind| {
            cluster
                .objects
                .iter()
                .filter(|((k, _, _), _)| *k == kind)
                .map(|((_, _, name), o)| (name.clone(), o.clone()))
                .collect()
        };
        Snapshot {
            pods: of(Kind::Pod),
            policies: of(Kind::NetworkPolicy),
            conflicts: cluster.conflicts,
        }
    }

    /// Waits (on the fake's changes, no polling) until `done` holds of its objects; panics
    /// naming `what` after `within`.
    pub async fn wait_until(
        &self,
        what: &str,
        within: Duration,
        mut done: impl FnMut(&Snapshot) -> bool,
    ) -> Snapshot {
        let mut bumped = self.shared.bumped.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            bumped.borrow_and_update();
            let snapshot = self.snapshot();
            if done(&snapshot) {
                return snapshot;
            }
            match tokio::time::timeout_at(deadline, bumped.changed()).await {
                Ok(Ok(())) => {}
                _ => panic!("timed out after {within:?} waiting for {what}: {snapshot:#?}"),
            }
        }
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.server.abort();
        self.shared.kubelet.stop_all();
    }
}

/// A `Status` answer.
fn status(code: StatusCode, reason: &str, message: impl Into<String>) -> (StatusCode, Value) {
    (
        code,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message.into(), "reason": reason, "code": code.as_u16(),
        }),
    )
}

/// The query's parameters, percent-decoded.
fn query_pairs(uri: &Uri) -> Vec<(String, String)> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `object` matches a label selector of `k=v` terms (and `k` for presence).
fn labels_match(object: &Value, selector: Option<&str>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return true;
    };
    let labels = &object["metadata"]["labels"];
    selector.split(',').all(|term| match term.split_once('=') {
        Some((k, v)) => labels[k.trim_end_matches('=')] == v,
        None => labels.get(term).is_some(),
    })
}

/// Whether `object` matches a field selector (`metadata.name=`, `metadata.namespace=`).
fn fields_match(object: &Value, selector: Option<&str>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return true;
    };
    selector.split(',').all(|term| match term.split_once('=') {
        Some(("metadata.name", v)) => object["metadata"]["name"] == v,
        Some(("metadata.namespace", v)) => object["metadata"]["namespace"] == v,
        _ => false,
    })
}

/// RFC 7386: `patch` merged into `target`.
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (k, v) in fields {
                if v.is_null() {
                    if let Some(t) = target.as_object_mut() {
                        t.remove(k);
                    }
                } else {
                    merge(&mut target[k.as_str()], v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// What a path names: a collection of `kind` in a namespace, or one object of it.
fn route(path: &str) -> Option<(Kind, String, Option<String>)> {
    let rest = path
        .strip_prefix("/api/v1/namespaces/")
        .map(|r| (r, Kind::Pod, "pods"))
        .or_else(|| {
            path.strip_prefix("/apis/networking.k8s.io/v1/namespaces/")
                .map(|r| (r, Kind::NetworkPolicy, "networkpolicies"))
        })?;
    let (rest, kind, plural) = rest;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [ns, p] if *p == plural => Some((kind, ns.to_string(), None)),
        [ns, p, name] if *p == plural => Some((kind, ns.to_string(), Some(name.to_string()))),
        _ => None,
    }
}

async fn handle(
    shared: Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = query_pairs(&uri);
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let parsed: Option<Value> = (!body.is_empty())
        .then(|| serde_json::from_slice(&body).ok())
        .flatten();
    let mut recorded = Recorded {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: query.clone(),
        content_type,
        body: parsed.clone(),
        status: 0,
    };
    let watching = param("watch").as_deref() == Some("true");
    let answer = match route(uri.path()) {
        None => Err(status(StatusCode::NOT_FOUND, "NotFound", "no such path")),
        Some((kind, ns, None)) if method == Method::GET && watching => {
            recorded.status = 200;
            shared.lock().requests.push(recorded);
            return watch_response(&shared, kind, &ns, &param);
        }
        Some((kind, ns, None)) if method == Method::GET => Ok(list(&shared, kind, &ns, &param)),
        Some((kind, ns, None)) if method == Method::POST => create(&shared, kind, &ns, parsed),
        Some((kind, ns, Some(name))) if method == Method::GET => {
            let cluster = shared.lock();
            cluster
                .objects
                .get(&(kind, ns, name.clone()))
                .cloned()
                .ok_or_else(|| {
                    status(
                        StatusCode::NOT_FOUND,
                        "NotFound",
                        format!("{name} not found"),
                    )
                })
        }
        Some((Kind::Pod, ns, Some(name))) if method == Method::PATCH => patch(
            &shared,
            &ns,
            &name,
            recorded.content_type.as_deref(),
            parsed,
        ),
        Some((kind, ns, Some(name))) if method == Method::DELETE => {
            delete(&shared, kind, &ns, &name)
        }
        Some(_) => Err(status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "not served by the fake",
        )),
    };
    let (code, value) = match answer {
        Ok(value) => (StatusCode::OK, value),
        Err((code, value)) => (code, value),
    };
    recorded.status = code.as_u16();
    shared.lock().requests.push(recorded);
    (code, axum::Json(value)).into_response()
}

fn list(shared: &Shared, kind: Kind, ns: &str, param: &impl Fn(&str) -> Option<String>) -> Value {
    let cluster = shared.lock();
    let (labels, fields) = (param("labelSelector"), param("fieldSelector"));
    let items: Vec<Value> = cluster
        .objects
        .iter()
        .filter(|((k, n, _), o)| {
            *k == kind
                && n == ns
                && labels_match(o, labels.as_deref())
                && fields_match(o, fields.as_deref())
        })
        .map(|(_, o)| o.clone())
        .collect();
    let list_kind = match kind {
        Kind::Pod => "PodList",
        Kind::NetworkPolicy => "NetworkPolicyList",
    };
    json!({
        "kind": list_kind,
        "apiVersion": if kind == Kind::Pod { "v1" } else { "networking.k8s.io/v1" },
        "metadata": {"resourceVersion": cluster.version.to_string()},
        "items": items,
    })
}

fn create(
    shared: &Arc<Shared>,
    kind: Kind,
    ns: &str,
    body: Option<Value>,
) -> Result<Value, (StatusCode, Value)> {
    let Some(mut object) = body.filter(Value::is_object) else {
        return Err(status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "no JSON object",
        ));
    };
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        return Err(status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "metadata.name: Required value",
        ));
    }
    let mut cluster = shared.lock();
    if cluster
        .objects
        .contains_key(&(kind, ns.to_string(), name.clone()))
    {
        return Err(status(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{name} already exists"),
        ));
    }
    let uid = format!("uid-{}-{}", ns, cluster.version + 1);
    object["metadata"]["uid"] = json!(uid);
    object["metadata"]["namespace"] = json!(ns);
    object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    if kind == Kind::Pod {
        object["status"] = json!({"phase": "Pending"});
    }
    let created = shared.change(&mut cluster, kind, ns, "ADDED", object);
    drop(cluster);
    if kind == Kind::Pod {
        shared
            .kubelet
            .run(shared.clone(), ns.to_string(), created.clone());
    }
    Ok(created)
}

fn patch(
    shared: &Shared,
    ns: &str,
    name: &str,
    content_type: Option<&str>,
    body: Option<Value>,
) -> Result<Value, (StatusCode, Value)> {
    if content_type != Some("application/merge-patch+json") {
        return Err(status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!("the fake takes merge patches only, not {content_type:?}"),
        ));
    }
    let Some(patch) = body else {
        return Err(status(StatusCode::BAD_REQUEST, "BadRequest", "no patch"));
    };
    let mut cluster = shared.lock();
    let key = (Kind::Pod, ns.to_string(), name.to_string());
    let Some(mut object) = cluster.objects.get(&key).cloned() else {
        return Err(status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("pods \"{name}\" not found"),
        ));
    };
    if let Some(wanted) = patch["metadata"]["resourceVersion"].as_str()
        && object["metadata"]["resourceVersion"] != wanted
    {
        cluster.conflicts += 1;
        return Err(status(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on pods \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        ));
    }
    merge(&mut object, &patch);
    Ok(shared.change(&mut cluster, Kind::Pod, ns, "MODIFIED", object))
}

fn delete(shared: &Shared, kind: Kind, ns: &str, name: &str) -> Result<Value, (StatusCode, Value)> {
    let mut cluster = shared.lock();
    let key = (kind, ns.to_string(), name.to_string());
    let Some(object) = cluster.objects.get(&key).cloned() else {
        return Err(status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{name} not found"),
        ));
    };
    let deleted = shared.change(&mut cluster, kind, ns, "DELETED", object);
    if kind == Kind::Pod {
        // The garbage collector: what the pod owns goes with it.
        let uid = deleted["metadata"]["uid"].clone();
        let owned: Vec<Value> = cluster
            .objects
            .iter()
            .filter(|((_, n, _), o)| {
                n == ns
                    && o["metadata"]["ownerReferences"]
                        .as_array()
                        .is_some_and(|owners| owners.iter().any(|r| r["uid"] == uid))
            })
            .map(|(_, o)| o.clone())
            .collect();
        for object in owned {
            shared.change(&mut cluster, Kind::NetworkPolicy, ns, "DELETED", object);
        }
        drop(cluster);
        shared.kubelet.stop(name);
    }
    Ok(deleted)
}

/// A watch: the changes after `resourceVersion` (every object now for none or `0`), then each
/// change as it happens, one JSON line each, until `timeoutSeconds`.
fn watch_response(
    shared: &Shared,
    kind: Kind,
    ns: &str,
    param: &impl Fn(&str) -> Option<String>,
) -> Response {
    let (labels, fields) = (param("labelSelector"), param("fieldSelector"));
    let timeout = param("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(290u64);
    let from = param("resourceVersion").unwrap_or_default();
    let (past, live) = {
        let cluster = shared.lock();
        let live = shared.changes.subscribe();
        let past: Vec<Event> = match from.parse::<u64>() {
            Ok(version) if version > 0 => cluster
                .history
                .iter()
                .filter(|e| e.version > version)
                .cloned()
                .collect(),
            _ => cluster
                .objects
                .iter()
                .filter(|((k, n, _), _)| *k == kind && n == ns)
                .map(|((k, n, _), o)| Event {
                    kind: *k,
                    namespace: n.clone(),
                    change: "ADDED",
                    object: o.clone(),
                    version: 0,
                })
                .collect(),
        };
        (past, live)
    };
    let ns = ns.to_string();
    let wanted = move |e: &Event| {
        e.kind == kind
            && e.namespace == ns
            && labels_match(&e.object, labels.as_deref())
            && fields_match(&e.object, fields.as_deref())
    };
    let line = |e: &Event| {
        let mut text = json!({"type": e.change, "object": e.object}).to_string();
        text.push('\n');
        Ok::<_, std::io::Error>(Bytes::from(text))
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    let past: Vec<_> = past.iter().filter(|e| wanted(e)).map(line).collect();
    let live = futures_util::stream::unfold(live, move |mut live| {
        let wanted = wanted.clone();
        async move {
            loop {
                match tokio::time::timeout_at(deadline, live.recv()).await {
                    Ok(Ok(event)) if wanted(&event) => return Some((line(&event), live)),
                    Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
                    Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => return None,
                }
            }
        }
    });
    let stream = futures_util::StreamExt::chain(futures_util::stream::iter(past), live);
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
