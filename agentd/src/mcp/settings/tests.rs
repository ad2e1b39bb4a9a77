//! Unit tests of `mcp/settings.rs`.

use super::*;

fn section(toml_text: &str) -> McpSection {
    toml::from_str(toml_text).unwrap()
}

#[test]
fn servers_are_named_as_the_reference_names_them() {
    let settings = section(
        r#"
        sse_servers = ["http://127.0.0.1:9000/sse", { url = "https://mcp.example/sse", api_key = "k" }]
        shttp_servers = [{ url = "https://mcp.example/mcp", timeout = 120 }, "http://h/mcp"]
        stdio_servers = [
          { name = "fetch", command = "uvx", args = ["mcp-server-fetch"], env = { LOG = "warn" } },
          { name = "notes", command = "python3", args = "-m notes --dir '/w/my notes' a\\ b", env = "A=1, B=2" },
        ]
        "#,
    )
    .settings()
    .unwrap();
    assert_eq!(settings.sse_servers[1].api_key.as_deref(), Some("k"));
    assert_eq!(
        settings.sse_servers[0].timeout,
        sandbox_common::MCP_REQUEST_TIMEOUT
    );
    assert_eq!(settings.shttp_servers[0].timeout, Duration::from_secs(120));
    assert_eq!(settings.shttp_servers[1].timeout, Duration::from_secs(60));
    let notes = &settings.stdio_servers[1];
    assert_eq!(notes.args, ["-m", "notes", "--dir", "/w/my notes", "a b"]);
    assert_eq!(notes.env["A"], "1");
    assert_eq!(notes.env["B"], "2");
}

#[test]
fn bad_settings_get_the_reference_s_messages() {
    for (text, why) in [
        (r#"sse_servers = [""]"#, "URL cannot be empty"),
        (
            r#"sse_servers = ["localhost:9000"]"#,
            "URL must include a scheme (http:// or https://)",
        ),
        (
            r#"sse_servers = ["http:///sse"]"#,
            "URL must include a valid domain/host",
        ),
        (
            r#"sse_servers = ["ftp://h/sse"]"#,
            "URL scheme must be http, https, ws, or wss",
        ),
        (
            r#"sse_servers = ["http://h/sse", "http://h/sse"]"#,
            "Duplicate MCP server URLs are not allowed",
        ),
        (
            r#"shttp_servers = [{ url = "http://h", timeout = 0 }]"#,
            "Timeout must be positive",
        ),
        (
            r#"shttp_servers = [{ url = "http://h", timeout = 3601 }]"#,
            "Timeout cannot exceed 3600 seconds",
        ),
        (
            r#"stdio_servers = [{ name = "a b", command = "x" }]"#,
            "Server name can only contain letters, numbers, hyphens, and underscores",
        ),
        (
            r#"stdio_servers = [{ name = "a", command = "uvx fetch" }]"#,
            "Command should be a single executable without spaces (use arguments field for parameters)",
        ),
    ] {
        let error = section(text).settings().unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("Invalid MCP configuration: {why}"),
            "{text}"
        );
    }
    assert!(
        toml::from_str::<McpSection>("servers = []").is_err(),
        "unknown keys are refused"
    );
}

#[test]
fn shell_words_split_like_a_shell_without_expanding() {
    assert_eq!(
        split_shell_words(r#"a "b c" 'd "e"' f\ g "h\"i" $HOME"#).unwrap(),
        ["a", "b c", "d \"e\"", "f g", "h\"i", "$HOME"]
    );
    assert!(split_shell_words("'open").is_err());
}
