//! Unit tests of `client.rs`.

use super::*;

fn client(key: Option<&str>) -> SandboxClient {
    SandboxClient::new("http://127.0.0.1:8000", key.map(str::to_owned)).unwrap()
}

fn assert_method_and_url(request: &reqwest::Request, method: Method, url: &str) {
    assert_eq!(request.url().as_str(), url);
    assert_eq!(request.method(), method);
}

fn body_json(request: &reqwest::Request) -> serde_json::Value {
    let bytes = request.body().and_then(reqwest::Body::as_bytes).unwrap();
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn base_urls_are_normalised() {
    let cases = [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/"),
        ("127.0.0.1:8000", "http://127.0.0.1:8000/"),
        ("localhost", "http://localhost/"),
        ("  http://sandbox:60000  ", "http://sandbox:60000/"),
        ("http://host/prefix", "http://host/prefix/"),
        ("http://host/a/b/", "http://host/a/b/"),
        ("http://[::1]:9000", "http://[::1]:9000/"),
        (
            "https://host/sandboxes/rt-1",
            "https://host/sandboxes/rt-1/",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse_base_url(input).unwrap().as_str(), want, "{input}");
    }
}

#[test]
fn bad_base_urls_are_refused() {
    for input in [
        "",
        "   ",
        "ftp://host",
        "http://",
        "http://host/?x=1",
        "http://host/#frag",
        "http://ho st",
    ] {
        let err = parse_base_url(input).unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidUrl { .. }),
            "{input}: {err}"
        );
        assert!(!err.is_retryable());
    }
    let err = SandboxClient::new("ftp://x", None).unwrap_err();
    assert!(err.to_string().contains("use http, https"), "{err}");
}

#[test]
fn unix_socket_addresses_parse() {
    let cases = [
        ("unix:/run/sbx/s.sock", "/run/sbx/s.sock"),
        ("unix:///run/sbx/s.sock", "/run/sbx/s.sock"),
        ("  UNIX:/a b/s.sock  ", "/a b/s.sock"),
        ("unix:/tmp/odd%20name?#.sock", "/tmp/odd%20name?#.sock"),
    ];
    for (input, want) in cases {
        let target = Target::parse(input).unwrap();
        assert_eq!(target, Target::Unix(PathBuf::from(want)), "{input}");
        assert_eq!(target.to_string(), format!("unix:{want}"));
        assert_eq!(Target::parse(&target.to_string()).unwrap(), target);
    }
    let relative = Target::parse("unix:sock/s.sock").unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(relative, Target::Unix(cwd.join("sock/s.sock")));
    let http: Target = "127.0.0.1:8000".parse().unwrap();
    assert_eq!(http.to_string(), "http://127.0.0.1:8000/");
}

#[test]
fn bad_unix_socket_addresses_are_refused() {
    for (input, reason) in [
        ("unix:", "the Unix socket path is empty"),
        ("unix:   ", "the Unix socket path is empty"),
        ("unix://", "the Unix socket path is empty"),
        ("unix://host/s.sock", "a unix: address has no host"),
        ("unix://s.sock", "a unix: address has no host"),
    ] {
        let err = SandboxClient::new(input, None).unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidUrl { .. }),
            "{input}: {err}"
        );
        assert!(err.to_string().contains(reason), "{input}: {err}");
        assert!(!err.is_retryable());
        let err = parse_base_url(input).unwrap_err();
        assert!(err.to_string().contains(reason), "{input}: {err}");
    }
    // A valid socket address has no HTTP base URL.
    let err = parse_base_url("unix:/tmp/s.sock").unwrap_err();
    assert!(err.to_string().contains("Target::parse"), "{err}");
}

#[test]
fn unix_socket_requests_keep_their_paths() {
    let c = SandboxClient::new("unix:///tmp/sbx/s.sock", Some("k".into())).unwrap();
    assert_eq!(c.base_url().as_str(), "http://sandboxd/");
    assert_eq!(c.target().to_string(), "unix:/tmp/sbx/s.sock");
    let request = c.execute_request(&run_action("ls", None)).unwrap();
    assert_eq!(request.url().as_str(), "http://sandboxd/execute_action");
    let request = c.download_request("/w").unwrap();
    assert_eq!(
        request.url().as_str(),
        "http://sandboxd/download_files?path=%2Fw"
    );
    assert!(format!("{c:?}").contains("unix:/tmp/sbx/s.sock"));
}

/// Waiting for a daemon that has not created its socket yet, or left a stale one, retries
/// like a refused TCP connection, and the error names the socket.
#[tokio::test]
async fn missing_or_stale_unix_socket_is_a_connection_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sock");
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    for path in [missing, stale] {
        let c = SandboxClient::new(&format!("unix:{}", path.display()), None).unwrap();
        let err = c
            .wait_until_alive(Duration::from_millis(50))
            .await
            .unwrap_err();
        let ClientError::NotReady { last, .. } = &err else {
            panic!("unexpected {err}");
        };
        assert!(matches!(**last, ClientError::Connection { .. }), "{last}");
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "http://sandboxd/alive via unix:{}",
                path.display()
            )),
            "{text}"
        );
    }
}

#[test]
fn endpoints_join_under_the_base_path() {
    let c = SandboxClient::new("http://host:1/sandboxes/abc", None).unwrap();
    let request = c.alive_request(ALIVE_TIMEOUT).unwrap();
    assert_eq!(request.url().as_str(), "http://host:1/sandboxes/abc/alive");
    let request = c.execute_request(&run_action("ls", None)).unwrap();
    assert_method_and_url(
        &request,
        Method::POST,
        "http://host:1/sandboxes/abc/execute_action",
    );
}

#[test]
fn key_header_is_sent_only_when_configured() {
    let with_key = client(Some("sekret"));
    for request in [
        with_key.alive_request(ALIVE_TIMEOUT).unwrap(),
        with_key.execute_request(&run_action("ls", None)).unwrap(),
        with_key.list_files_request(None).unwrap(),
        with_key.download_request("/w").unwrap(),
        with_key
            .upload_request("a.txt", b"x".to_vec(), "/w", false)
            .unwrap(),
    ] {
        let value = request.headers().get(API_KEY_HEADER).unwrap();
        assert_eq!(value, "sekret");
        assert!(value.is_sensitive());
    }
    let without = client(None);
    let request = without.execute_request(&run_action("ls", None)).unwrap();
    assert!(request.headers().get(API_KEY_HEADER).is_none());
}

#[test]
fn invalid_key_is_refused() {
    let err = SandboxClient::new("http://h", Some("bad\nkey".into())).unwrap_err();
    assert!(matches!(err, ClientError::InvalidApiKey));
}

#[test]
fn debug_does_not_leak_the_key() {
    let text = format!("{:?}", client(Some("sekret")));
    assert!(!text.contains("sekret"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
}

#[test]
fn execute_body_wraps_the_action() {
    let request = client(None)
        .execute_request(&run_action("echo hi", Some(2.5)))
        .unwrap();
    let body = body_json(&request);
    assert_eq!(body["action"]["action"], "run");
    assert_eq!(body["action"]["args"]["command"], "echo hi");
    assert_eq!(body["action"]["args"]["blocking"], true);
    assert_eq!(body["action"]["timeout"], 2.5);
    assert_eq!(
        request.headers().get("content-type").unwrap(),
        "application/json"
    );
}

#[test]
fn execute_deadline_is_action_timeout_plus_five() {
    let c = client(None);
    let request = c.execute_request(&run_action("x", Some(2.5))).unwrap();
    assert_eq!(request.timeout(), Some(&Duration::from_secs_f64(7.5)));
    let request = c.execute_request(&run_action("x", None)).unwrap();
    assert_eq!(request.timeout(), Some(&Duration::from_secs(125)));
    let mut action = run_action("x", None);
    action.timeout = None;
    let request = c.execute_request(&action).unwrap();
    assert_eq!(request.timeout(), None);
}

#[test]
fn execute_http_timeout_edge_cases() {
    assert_eq!(execute_http_timeout(None), None);
    assert_eq!(
        execute_http_timeout(Some(0.0)),
        Some(Duration::from_secs(5))
    );
    assert_eq!(execute_http_timeout(Some(-1.0)), None);
    assert_eq!(execute_http_timeout(Some(f64::NAN)), None);
    assert_eq!(execute_http_timeout(Some(f64::INFINITY)), None);
    assert_eq!(execute_http_timeout(Some(1e300)), None);
}

#[test]
fn execute_json_sends_the_value_and_reads_its_timeout() {
    let c = client(None);
    let action = serde_json::json!({"action": "nope", "args": {}, "timeout": 1});
    let request = c.execute_json_request(&action).unwrap();
    assert_eq!(body_json(&request), serde_json::json!({ "action": action }));
    assert_eq!(request.timeout(), Some(&Duration::from_secs(6)));
    let request = c
        .execute_json_request(&serde_json::json!({"action": "think"}))
        .unwrap();
    assert_eq!(request.timeout(), None);
}

#[test]
fn run_action_mirrors_the_stock_client() {
    let default = run_action("ls", None);
    assert_eq!(default.timeout, Some(120.0));
    let ActionKind::Run(args) = &default.kind else {
        panic!("not a run action");
    };
    assert!(!args.blocking);
    assert!(!args.is_input);
    let hard = run_action("sleep 3", Some(10.0));
    assert_eq!(hard.timeout, Some(10.0));
    let ActionKind::Run(args) = &hard.kind else {
        panic!("not a run action");
    };
    assert!(args.blocking);
}

#[test]
fn fixed_endpoint_deadlines() {
    let c = client(None);
    assert_eq!(
        c.alive_request(ALIVE_TIMEOUT).unwrap().timeout(),
        Some(&Duration::from_secs(5))
    );
    assert_eq!(
        c.list_files_request(None).unwrap().timeout(),
        Some(&Duration::from_secs(10))
    );
    assert_eq!(
        c.download_request("/w").unwrap().timeout(),
        Some(&Duration::from_secs(30))
    );
    assert_eq!(
        c.upload_request("a", Vec::new(), "/w", false)
            .unwrap()
            .timeout(),
        Some(&Duration::from_secs(300))
    );
}

#[test]
fn list_files_body() {
    let c = client(None);
    let request = c.list_files_request(None).unwrap();
    assert_eq!(body_json(&request), serde_json::json!({}));
    assert_eq!(request.url().as_str(), "http://127.0.0.1:8000/list_files");
    let request = c.list_files_request(Some("/workspace/sub")).unwrap();
    assert_eq!(
        body_json(&request),
        serde_json::json!({"path": "/workspace/sub"})
    );
}

#[test]
fn upload_url_and_form() {
    let c = client(None);
    let request = c
        .upload_request("d.zip", vec![1, 2, 3], "/workspace/my dir/ü&x", true)
        .unwrap();
    assert_eq!(
        request.url().as_str(),
        "http://127.0.0.1:8000/upload_file?destination=%2Fworkspace%2Fmy+dir%2F%C3%BC%26x&recursive=true"
    );
    let pairs: Vec<(String, String)> = request
        .url()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("destination".into(), "/workspace/my dir/ü&x".into()),
            ("recursive".into(), "true".into())
        ]
    );
    let content_type = request.headers().get("content-type").unwrap();
    assert!(
        content_type
            .to_str()
            .unwrap()
            .starts_with("multipart/form-data; boundary="),
        "{content_type:?}"
    );
    let request = c.upload_request("u.txt", vec![1], "/w", false).unwrap();
    assert!(
        request
            .url()
            .as_str()
            .ends_with("?destination=%2Fw&recursive=false")
    );
}

#[test]
fn download_url() {
    let request = client(None).download_request("/workspace/up 2").unwrap();
    assert_method_and_url(
        &request,
        Method::GET,
        "http://127.0.0.1:8000/download_files?path=%2Fworkspace%2Fup+2",
    );
}

#[test]
fn upload_zip_names_end_in_zip() {
    let name = upload_zip_name();
    assert!(
        name.starts_with("sbx-upload-") && name.ends_with(".zip"),
        "{name}"
    );
}

#[tokio::test]
async fn non_recursive_upload_of_a_directory_is_a_local_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = client(None)
        .upload_file(tmp.path(), "/w", false)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Io { .. }), "{err}");
}

/// Loopback only: a port that was just free refuses the connection, so waiting gives up
/// with `NotReady` wrapping a connection error, close to the deadline.
#[tokio::test]
async fn wait_until_alive_gives_up_at_the_deadline() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let c = SandboxClient::new(&format!("127.0.0.1:{port}"), None).unwrap();
    let start = std::time::Instant::now();
    let err = c
        .wait_until_alive(Duration::from_millis(150))
        .await
        .unwrap_err();
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    match &err {
        ClientError::NotReady { last, .. } => {
            assert!(matches!(**last, ClientError::Connection { .. }), "{last}");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.is_retryable());
    let err = c.alive().await.unwrap_err();
    assert!(matches!(err, ClientError::Connection { .. }), "{err}");
    assert!(err.to_string().contains("refused"), "{err}");
}
