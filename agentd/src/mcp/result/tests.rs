//! Unit tests of `mcp/result.rs`.

use serde_json::json;

use super::*;

#[test]
fn a_result_is_written_as_python_s_json_dumps_writes_it() {
    let result = json!({"content": [{"type": "text", "text": "hi é"}], "isError": false});
    assert_eq!(
        result_content(&result),
        "{\"meta\": null, \"content\": [{\"type\": \"text\", \"text\": \"hi \\u00e9\", \"annotations\": null, \"meta\": null}], \"structuredContent\": null, \"isError\": false}"
    );
    assert_eq!(
        error_content("Tool \"x\" timed out after 60.0 seconds"),
        "{\"isError\": true, \"error\": \"Tool \\\"x\\\" timed out after 60.0 seconds\", \"content\": []}"
    );
}

#[test]
fn the_model_reads_text_and_gets_the_images_apart() {
    let content = result_content(&json!({
        "content": [
            {"type": "text", "text": "a plot:"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///w/a.txt", "text": "body"}}
        ],
        "isError": false
    }));
    let read = read_content(&content);
    assert_eq!(read.text, "a plot:\n[Resource file:///w/a.txt]\nbody");
    assert_eq!(read.images, ["data:image/png;base64,iVBO"]);

    let failed = read_content(&error_content("No MCP clients found"));
    assert_eq!(
        failed.text,
        "The MCP tool call failed: No MCP clients found"
    );
    let tool_error = read_content(&result_content(
        &json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
    ));
    assert_eq!(tool_error.text, "The MCP tool reported an error:\nboom");
    assert_eq!(read_content("not json").text, "not json");
}

#[test]
fn the_action_message_shows_the_arguments_as_a_python_dict() {
    let Value::Object(args) =
        json!({"text": "it's", "n": 2, "ok": true, "none": null, "l": ["a\nb"]})
    else {
        panic!()
    };
    assert_eq!(
        action_message("echo", &args),
        "I am interacting with the MCP server with name:\n```\necho\n```\nand arguments:\n```\n{'l': ['a\\nb'], 'n': 2, 'none': None, 'ok': True, 'text': \"it's\"}\n```"
    );
}
