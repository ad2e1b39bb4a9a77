//! Unit tests of `mcp.rs`.

use super::*;

fn server(name: &str, command: &str, env: &[&str]) -> McpStdioServer {
    McpStdioServer {
        name: name.to_owned(),
        command: command.to_owned(),
        args: vec!["-m".to_owned(), "server".to_owned()],
        env: env
            .iter()
            .map(|k| ((*k).to_owned(), "1".to_owned()))
            .collect(),
    }
}

#[test]
fn the_reference_s_rules_with_its_messages() {
    assert_eq!(
        check_stdio_server(&server("fetch-2_b", "uvx", &["A_1", "_x"])),
        Ok(())
    );
    for (bad, why) in [
        (server("", "uvx", &[]), "Server name cannot be empty"),
        (
            server("a b", "uvx", &[]),
            "Server name can only contain letters, numbers, hyphens, and underscores",
        ),
        (server("a", " ", &[]), "Command cannot be empty"),
        (
            server("a", "python -m x", &[]),
            "Command should be a single executable without spaces (use arguments field for parameters)",
        ),
    ] {
        assert_eq!(
            check_stdio_server(&bad),
            Err(McpServerError(why.to_owned()))
        );
    }
    let refused = check_stdio_server(&server("a", "uvx", &["1X"])).unwrap_err();
    assert!(refused.0.contains("\"1X\""), "{refused}");
}

#[test]
fn the_timeout_says_how_long_it_waited_as_the_reference_does() {
    assert_eq!(
        mcp_timeout_message(MCP_REQUEST_TIMEOUT),
        "Timed out while waiting for response to ClientRequest. Waited 30.0 seconds."
    );
}
