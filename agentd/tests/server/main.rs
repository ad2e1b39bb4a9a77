//! `agentd server` end to end: each test starts the real binary on an ephemeral port, with the
//! CodeAct agent against a fake OpenAI-compatible server (testkit's `FakeLlm`) and local
//! sandboxes (the real sandboxd), and talks to it as its users do: REST, WebSocket, SSE.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod page;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use futures_util::StreamExt;
use protocol::conversation::{ConversationInfo, Done, EventPage};
use protocol::{Event, ObservationKind};
use serde_json::{Value, json};
use testkit::{Daemon, FakeLlm, Reply};

const KEY: &str = "key-of-alice";
const OTHER_KEY: &str = "key-of-bob";
/// The longest wait for something the agent does (it steps in milliseconds).
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `agentd server` on a data directory that outlives it (for restarts).
struct Server {
    daemon: Daemon,
    url: String,
    http: reqwest::Client,
}

fn start(data: &Path, fake: &FakeLlm, extra: &[&str]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
    command
        .args(["server", "--listen", "127.0.0.1:0", "--model", "fake-model"])
        .args(["--tool-calling", "native"])
        .args(["--api-key", KEY, "--api-key", OTHER_KEY])
        .arg("--base-url")
        .arg(fake.base_url())
        .arg("--data-dir")
        .arg(data)
        .args(["--runtime", "local"])
        .args(extra)
        .env("AGENTD_SANDBOXD_BIN", testkit::sandboxd_binary("debug"))
        .env("SANDBOXD_PYTHON", "/usr/bin/python3")
        .env("LLM_API_KEY", "k")
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_SERVER_API_KEYS")
        .env_remove("AGENTD_RUNTIME")
        .env_remove("LLM_MODEL")
        .env_remove("LLM_BASE_URL");
    let daemon = Daemon::spawn(&mut command, "agentd server listening on").unwrap();
    let url = daemon.url().to_string();
    Server {
        daemon,
        url,
        http: reqwest::Client::new(),
    }
}

impl Server {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        testkit::status_and_json(request).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, KEY, Some(body))
            .await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.get_as(path, KEY).await
    }

    async fn get_as(&self, path: &str, key: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, key, None).await
    }

    async fn delete(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::DELETE, path, KEY, None).await
    }

    async fn create(&self, task: &str) -> ConversationInfo {
        self.create_with(json!({ "task": task })).await
    }

    /// A conversation created with `body`, which must be accepted.
    async fn create_with(&self, body: Value) -> ConversationInfo {
        let (status, body) = self.post("/api/conversations", body).await;
        assert_eq!(status, 201, "{body}");
        serde_json::from_value(body).unwrap()
    }

    async fn info(&self, id: &str) -> ConversationInfo {
        let (status, body) = self.get(&format!("/api/conversations/{id}")).await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_value(body).unwrap()
    }

    async fn act(&self, id: &str, what: &str) -> Done {
        let (status, body) = self
            .post(&format!("/api/conversations/{id}/{what}"), json!({}))
            .await;
        assert_eq!(status, 200, "{what}: {body}");
        serde_json::from_value(body).unwrap()
    }

    /// Every event, read page by page through REST.
    async fn all_events(&self, id: &str) -> Vec<Event> {
        let mut events: Vec<Event> = Vec::new();
        loop {
            let after = events.last().and_then(Event::id).unwrap_or(-1);
            let (status, body) = self
                .get(&format!(
                    "/api/conversations/{id}/events?after={after}&limit=7"
                ))
                .await;
            assert_eq!(status, 200, "{body}");
            let page: EventPage = serde_json::from_value(body).unwrap();
            let more = page.has_more;
            events.extend(page.events);
            if !more {
                return events;
            }
        }
    }

    /// A WebSocket on the conversation's live events after `after`.
    async fn socket(
        &self,
        id: &str,
        after: i64,
    ) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>
    {
        let url = format!(
            "{}/api/conversations/{id}/events/socket?after={after}&key={KEY}",
            self.url.replacen("http", "ws", 1)
        );
        tokio_tungstenite::connect_async(url).await.unwrap().0
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Reads events from `socket` into `seen` until `done` says so.
async fn read_until(socket: &mut Socket, seen: &mut Vec<Event>, done: impl Fn(&Event) -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while let Some(message) = socket.next().await {
            let message = message.unwrap();
            let tokio_tungstenite::tungstenite::Message::Text(text) = message else {
                continue;
            };
            let event: Event = serde_json::from_str(&text).unwrap();
            let stop = done(&event);
            seen.push(event);
            if stop {
                return;
            }
        }
        panic!("the socket closed");
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "waited too long; events so far: {:#?}",
            seen.iter().map(summary).collect::<Vec<_>>()
        )
    });
}

/// Whether `event` is an observation whose content holds `text`.
fn says(event: &Event, text: &str) -> bool {
    matches!(event, Event::Observation(o) if o.content.contains(text))
}

fn state_is(event: &Event, state: &str) -> bool {
    matches!(event, Event::Observation(o) if matches!(&o.kind,
        ObservationKind::AgentStateChanged(x) if x.agent_state == state))
}

fn summary(event: &Event) -> String {
    format!(
        "{} {} {}",
        event.id().unwrap_or(-1),
        event.type_name(),
        match event {
            Event::Observation(o) => o.content.chars().take(60).collect::<String>(),
            Event::Action(a) => a.message.clone().unwrap_or_default(),
        }
    )
}

fn ids(events: &[Event]) -> Vec<i64> {
    events.iter().filter_map(Event::id).collect()
}

/// The agent of most tests: runs a command, asks its user a question, writes the file the
/// user names, finishes; asked again after that, it finishes at once.
fn talkative_agent() -> Vec<Reply> {
    vec![
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "echo hello-from-the-agent"}),
        )]),
        Reply::text("Which file should I write?"),
        Reply::tool_calls([("execute_bash", json!({"command": "echo kept > notes.txt"}))]),
        Reply::finish("notes.txt is written"),
        Reply::finish("nothing more to do"),
    ]
}

/// The task the talkative agent's conversations are created with (its title).
const TALKATIVE_TASK: &str = "Say hello, then write a file I name.";

/// A server started with `extra` arguments, on a data directory of its own, whose agents talk
/// with the talkative agent's fake model (both live as long as the caller keeps them).
async fn talkative_server(extra: &[&str]) -> (FakeLlm, tempfile::TempDir, Server) {
    let fake = FakeLlm::start(talkative_agent()).await;
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &fake, extra);
    (fake, data, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_talks_with_its_user_live_and_everything_is_kept() {
    let (_fake, data, server) = talkative_server(&[]).await;

    let created = server.create(TALKATIVE_TASK).await;
    let id = created.conversation_id.clone();
    assert_eq!(created.title, TALKATIVE_TASK);
    assert!(
        matches!(
            created.status,
            protocol::conversation::ConversationStatus::Starting
                | protocol::conversation::ConversationStatus::Running
        ),
        "{created:?}"
    );

    // Live, from the start, until the agent asks its question.
    let mut socket = server.socket(&id, -1).await;
    let mut seen = Vec::new();
    read_until(&mut socket, &mut seen, |e| {
        state_is(e, "awaiting_user_input")
    })
    .await;
    let output = seen.iter().find_map(|e| match e {
        Event::Observation(o) if matches!(o.kind, ObservationKind::Run(_)) => {
            Some(o.content.clone())
        }
        _ => None,
    });
    assert!(
        output.is_some_and(|o| o.contains("hello-from-the-agent")),
        "{:#?}",
        seen.iter().map(summary).collect::<Vec<_>>()
    );
    let waiting = server.info(&id).await;
    assert_eq!(waiting.agent_state, "awaiting_user_input");
    assert_eq!(
        waiting.status,
        protocol::conversation::ConversationStatus::Running
    );

    // The socket goes away; the user answers; a new socket from the last id gets the rest.
    drop(socket);
    let last = seen.last().and_then(Event::id).unwrap();
    let done = server.act_message(&id, "notes.txt").await;
    assert_eq!(done.message, "the message was added");
    let mut socket = server.socket(&id, last).await;
    read_until(&mut socket, &mut seen, |e| state_is(e, "finished")).await;

    // Everything exactly once, in order, and the same through REST's pages.
    let stored = server.all_events(&id).await;
    let live_ids = ids(&seen);
    assert_eq!(
        live_ids,
        (0..live_ids.len() as i64).collect::<Vec<_>>(),
        "{live_ids:?}"
    );
    assert_eq!(ids(&stored)[..live_ids.len()], live_ids[..]);
    assert_eq!(
        std::fs::read_to_string(
            data.path()
                .join(format!("conversations/{id}/workspace/notes.txt"))
        )
        .unwrap(),
        "kept\n"
    );

    // Stats, trajectory and workspace.
    let finished = server.info(&id).await;
    assert_eq!(finished.agent_state, "finished");
    assert_eq!(finished.iteration, 4);
    let (status, trajectory) = server
        .get(&format!("/api/conversations/{id}/trajectory"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(trajectory.as_array().unwrap().len(), stored.len());
    let zip = server
        .http
        .get(format!("{}/api/conversations/{id}/workspace", server.url))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(zip.status(), 200);
    let bytes = zip.bytes().await.unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut notes = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("notes.txt").unwrap(), &mut notes).unwrap();
    assert_eq!(notes, "kept\n");

    // A message after the end starts the agent again, which the same socket shows.
    // (Said "starts again", or "added" when the run was still closing its sandbox: the next
    // run takes the message up either way.)
    server.act_message(&id, "Anything else?").await;
    let before = seen.len();
    read_until(&mut socket, &mut seen, |e| state_is(e, "finished")).await;
    assert!(
        seen[before..]
            .iter()
            .any(|e| matches!(e, e if e.type_name() == "finish"))
    );

    // Only its owner sees it; a caller without a key sees nothing.
    let (status, _) = server
        .get_as(&format!("/api/conversations/{id}"), OTHER_KEY)
        .await;
    assert_eq!(status, 404);
    let (status, list) = server.get_as("/api/conversations", OTHER_KEY).await;
    assert_eq!(
        (status, list["results"].as_array().unwrap().len()),
        (200, 0)
    );
    let status = server
        .http
        .get(format!("{}/api/conversations", server.url))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 401);

    // Deleting it ends it and removes it.
    let (status, _) = server.delete(&format!("/api/conversations/{id}")).await;
    assert_eq!(status, 204);
    assert_eq!(server.get(&format!("/api/conversations/{id}")).await.0, 404);
    assert!(!data.path().join(format!("conversations/{id}")).exists());
}

impl Server {
    async fn act_message(&self, id: &str, text: &str) -> Done {
        let (status, body) = self
            .post(
                &format!("/api/conversations/{id}/message"),
                json!({ "message": text }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_value(body).unwrap()
    }
}

/// An agent that runs one slow command after another, for ever (until told to finish by a
/// user message that says "finish").
async fn busy_agent() -> FakeLlm {
    FakeLlm::with_fn(|body, n| {
        let last_user = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        if last_user.contains("please finish") {
            Reply::finish("finished as asked")
        } else {
            Reply::tool_calls([("execute_bash", json!({"command": format!("echo step-{n}")}))])
                .delay(Duration::from_millis(150))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_stop_and_restarts_lose_nothing() {
    let fake = busy_agent().await;
    let data = tempfile::tempdir().unwrap();
    let mut server = start(data.path(), &fake, &[]);
    let id = server.create("Count for ever.").await.conversation_id;

    // Pause once it is busy; resume; stop.
    let mut socket = server.socket(&id, -1).await;
    let mut seen = Vec::new();
    read_until(&mut socket, &mut seen, |e| says(e, "step-2")).await;
    assert_eq!(server.act(&id, "pause").await.message, "pause requested");
    read_until(&mut socket, &mut seen, |e| state_is(e, "paused")).await;
    assert_eq!(server.info(&id).await.agent_state, "paused");
    assert_eq!(server.act(&id, "resume").await.message, "resume requested");
    read_until(&mut socket, &mut seen, |e| state_is(e, "running")).await;
    read_until(&mut socket, &mut seen, |e| says(e, "step-")).await;
    assert_eq!(server.act(&id, "stop").await.message, "stop requested");
    read_until(&mut socket, &mut seen, |e| state_is(e, "stopped")).await;
    // A stopped conversation releases its sandbox; a second stop is refused clearly.
    let stopped = wait_for(&server, &id, |c| {
        c.status == protocol::conversation::ConversationStatus::Stopped
    })
    .await;
    assert_eq!(stopped.agent_state, "stopped");
    let (status, body) = server
        .post(&format!("/api/conversations/{id}/stop"), json!({}))
        .await;
    assert_eq!(status, 409, "{body}");
    drop(socket);

    // A second conversation is running when the server stops: after the restart it goes on.
    let running = server.create("Count again.").await.conversation_id;
    let mut socket = server.socket(&running, -1).await;
    let mut second = Vec::new();
    read_until(&mut socket, &mut second, |e| says(e, "step-")).await;
    drop(socket);
    let before_restart = server.all_events(&id).await;
    server.daemon.terminate(Duration::from_secs(30)).unwrap();
    let server = start(data.path(), &fake, &[]);

    // Nothing lost: the stopped one is as it was, and talking to it starts it again.
    assert_eq!(server.all_events(&id).await, before_restart);
    let listed = server.get("/api/conversations").await.1;
    let listed: BTreeSet<String> = listed["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["conversation_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, BTreeSet::from([id.clone(), running.clone()]));
    server.act_message(&running, "please finish").await;
    let mut socket = server.socket(&running, -1).await;
    let mut after = Vec::new();
    read_until(&mut socket, &mut after, |e| state_is(e, "finished")).await;
    let all = ids(&after);
    assert_eq!(
        all,
        (0..all.len() as i64).collect::<Vec<_>>(),
        "ids are contiguous"
    );
    assert!(after.iter().any(|e| state_is(e, "running")
        && matches!(e, Event::Observation(o) if o.content.is_empty() && matches!(&o.kind, ObservationKind::AgentStateChanged(x) if x.reason.contains("resumed")))));
}

async fn wait_for(
    server: &Server,
    id: &str,
    done: impl Fn(&ConversationInfo) -> bool,
) -> ConversationInfo {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let info = server.info(id).await;
        if done(&info) {
            return info;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited too long: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_conversation_releases_its_sandbox_and_comes_back_on_a_message() {
    let (_fake, data, server) = talkative_server(&["--idle-release", "0.3"]).await;
    let id = server.create(TALKATIVE_TASK).await.conversation_id;
    let released = wait_for(&server, &id, |c| {
        c.agent_state == "awaiting_user_input"
            && c.status == protocol::conversation::ConversationStatus::Stopped
    })
    .await;
    assert_eq!(released.iteration, 2);
    server.act_message(&id, "notes.txt").await;
    let finished = wait_for(&server, &id, |c| c.agent_state == "finished").await;
    assert_eq!(finished.iteration, 4);
    assert!(
        data.path()
            .join(format!("conversations/{id}/workspace/notes.txt"))
            .is_file()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_stream_over_sse_starts_at_its_cursor() {
    let (_fake, _data, server) = talkative_server(&[]).await;
    let id = server.create(TALKATIVE_TASK).await.conversation_id;
    wait_for(&server, &id, |c| c.agent_state == "awaiting_user_input").await;
    let stored = server.all_events(&id).await;
    let response = server
        .http
        .get(format!(
            "{}/api/conversations/{id}/events/live?after=1",
            server.url
        ))
        .bearer_auth(KEY)
        .header("Last-Event-ID", "3")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let want = stored.len() - 4;
    let mut got = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        while got.len() < want {
            text.push_str(&String::from_utf8_lossy(
                &body.next().await.unwrap().unwrap(),
            ));
            while let Some(end) = text.find("\n\n") {
                let frame: String = text.drain(..end + 2).collect();
                let id = frame
                    .lines()
                    .find_map(|l| l.strip_prefix("id: "))
                    .map(|v| v.parse::<i64>().unwrap());
                let data = frame.lines().find_map(|l| l.strip_prefix("data: "));
                if let (Some(id), Some(data)) = (id, data) {
                    let event: Event = serde_json::from_str(data).unwrap();
                    assert_eq!(event.id(), Some(id));
                    got.push(event);
                }
            }
        }
    })
    .await
    .unwrap();
    // Last-Event-ID (3) wins over the smaller cursor (1): events 4 and later.
    assert_eq!(got, stored[4..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_cannot_work_are_refused_precisely() {
    let (_fake, _data, server) = talkative_server(&["--max-iterations", "50"]).await;
    let refused = [
        (json!({"task": "x", "colour": "red"}), 422, "unknown field"),
        (json!({"task": "   "}), 400, "needs a task"),
        (
            json!({"task": "x", "runtime": "moon"}),
            400,
            "unknown runtime",
        ),
        (
            json!({"task": "x", "runtime": "remote"}),
            400,
            "no runtime API service",
        ),
        (
            json!({"task": "x", "agent": "SpyAgent"}),
            400,
            "unknown agent",
        ),
        (
            json!({"task": "x", "max_iterations": 51}),
            400,
            "above this server's limit of 50",
        ),
        (json!({"task": "x", "max_budget": -1}), 400, "positive"),
        (
            json!({"task": "x", "llm": {"temperature": 9}}),
            400,
            "temperature",
        ),
        (
            json!({"task": "x", "repository": "not a repo"}),
            400,
            "repository",
        ),
    ];
    for (body, status, says) in refused {
        let (got, answer) = server.post("/api/conversations", body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(says),
            "{body}: {answer}"
        );
    }
    assert_eq!(
        server.get("/api/conversations").await.1["results"],
        json!([])
    );
    let id = server.create(TALKATIVE_TASK).await.conversation_id;
    wait_for(&server, &id, |c| c.agent_state == "awaiting_user_input").await;
    for (path, status, says) in [
        (
            format!("/api/conversations/{id}/confirm"),
            409,
            "no action waits for confirmation",
        ),
        (
            format!("/api/conversations/{id}/message"),
            422,
            "invalid body",
        ),
        ("/api/conversations/../../etc/message".to_string(), 404, ""),
        (
            "/api/conversations/0123456789abcdef0123456789abcdef/pause".to_string(),
            404,
            "no conversation",
        ),
    ] {
        let (got, answer) = server.post(&path, json!({"text": "hi"})).await;
        assert_eq!(got, status, "{path}: {answer}");
        assert!(answer.to_string().contains(says), "{path}: {answer}");
    }
    let (got, answer) = server
        .get(&format!("/api/conversations/{id}/events?limit=0"))
        .await;
    assert_eq!(
        (got, answer["detail"].as_str().unwrap()),
        (400, "limit must be between 1 and 1000")
    );
    let (got, _) = server
        .get(&format!("/api/conversations/{id}/events?after=abc"))
        .await;
    assert_eq!(got, 400);
    // The description is served, and the page too, without a key.
    let doc = testkit::json_answer(server.http.get(format!("{}/openapi.json", server.url))).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let page = testkit::text_answer(server.http.get(&server.url)).await;
    assert!(page.contains("agentd conversations"));
    // Every described route is served (deletion last).
    let mut routes: Vec<(String, String)> = Vec::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for method in methods.as_object().unwrap().keys() {
            routes.push((method.clone(), path.replace("{id}", &id)));
        }
    }
    routes.sort_by_key(|(method, _)| method == "delete");
    for (method, path) in routes {
        let response = server
            .http
            .request(
                method.to_uppercase().parse().unwrap(),
                format!("{}{path}", server.url),
            )
            .bearer_auth(KEY)
            .json(&json!({"message": "hi"}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert!(![404, 405].contains(&status), "{method} {path}: {status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn risky_actions_wait_for_the_user_who_confirms_one_and_rejects_another() {
    let fake = FakeLlm::start([
        Reply::tool_calls([("execute_bash", json!({"command": "echo confirmed-run"}))]),
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "echo rejected-run > rejected.txt"}),
        )]),
        Reply::finish("done as far as allowed"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &fake, &[]);
    let created = server
        .create_with(json!({"task": "Run two commands.", "confirmation_mode": true}))
        .await;
    let id = created.conversation_id;
    assert!(created.confirmation_mode);
    let mut socket = server.socket(&id, -1).await;
    let mut seen = Vec::new();

    read_until(&mut socket, &mut seen, |e| {
        state_is(e, "awaiting_user_confirmation")
    })
    .await;
    assert_eq!(
        server.act(&id, "confirm").await.message,
        "the action was confirmed"
    );
    read_until(&mut socket, &mut seen, |e| says(e, "confirmed-run")).await;

    read_until(&mut socket, &mut seen, |e| {
        state_is(e, "awaiting_user_confirmation")
    })
    .await;
    assert_eq!(
        server.act(&id, "reject").await.message,
        "the action was rejected"
    );
    read_until(&mut socket, &mut seen, |e| {
        matches!(e, Event::Observation(o) if matches!(o.kind, ObservationKind::UserRejected(_)))
    })
    .await;
    read_until(&mut socket, &mut seen, |e| {
        state_is(e, "finished") || state_is(e, "awaiting_user_input")
    })
    .await;
    if seen
        .last()
        .is_some_and(|e| state_is(e, "awaiting_user_input"))
    {
        server.act_message(&id, "Go on without it.").await;
        read_until(&mut socket, &mut seen, |e| state_is(e, "finished")).await;
    }
    assert!(
        !data
            .path()
            .join(format!("conversations/{id}/workspace/rejected.txt"))
            .exists(),
        "the rejected command ran"
    );
    let (status, body) = server
        .post(&format!("/api/conversations/{id}/confirm"), json!({}))
        .await;
    assert_eq!(status, 409, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docker_conversation_works_in_its_own_container_on_its_workspace() {
    let fake = FakeLlm::start([
        Reply::tool_calls([(
            "execute_bash",
            json!({"command": "echo from-the-container > made.txt && id -u && cat /.dockerenv >/dev/null && echo in-docker"}),
        )]),
        Reply::finish("made.txt is there"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let config = data.path().join("agentd.toml");
    std::fs::write(&config, "[docker]\ndisk = \"none\"\n").unwrap();
    let server = start(data.path(), &fake, &["--config", config.to_str().unwrap()]);
    let id = server
        .create_with(json!({"task": "Make a file.", "runtime": "docker"}))
        .await
        .conversation_id;
    let done = wait_for(&server, &id, |c| {
        c.agent_state == "finished" || c.status == protocol::conversation::ConversationStatus::Error
    })
    .await;
    assert_eq!(done.agent_state, "finished", "{done:?}");
    let output = server
        .all_events(&id)
        .await
        .into_iter()
        .find_map(|e| match e {
            Event::Observation(o) if matches!(o.kind, ObservationKind::Run(_)) => Some(o.content),
            _ => None,
        })
        .unwrap();
    assert!(
        output.contains("1000") && output.contains("in-docker"),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(
            data.path()
                .join(format!("conversations/{id}/workspace/made.txt"))
        )
        .unwrap(),
        "from-the-container\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_conversations_hold_a_sandbox_than_the_server_allows() {
    let (_fake, _data, server) = talkative_server(&["--max-running", "1"]).await;
    let first = server.create(TALKATIVE_TASK).await.conversation_id;
    wait_for(&server, &first, |c| c.agent_state == "awaiting_user_input").await;
    let (status, body) = server
        .post("/api/conversations", json!({"task": "Another."}))
        .await;
    assert_eq!(status, 429, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("1 conversations hold a sandbox"),
        "{body}"
    );
    assert_eq!(
        server.get("/api/conversations").await.1["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    server.act(&first, "stop").await;
    wait_for(&server, &first, |c| {
        c.status == protocol::conversation::ConversationStatus::Stopped
    })
    .await;
    let second = server.create("Another.").await;
    assert_ne!(second.conversation_id, first);
    // The first may not come back while the second holds the only sandbox.
    let (status, body) = server
        .post(
            &format!("/api/conversations/{first}/message"),
            json!({"message": "again"}),
        )
        .await;
    assert_eq!(status, 429, "{body}");
}
