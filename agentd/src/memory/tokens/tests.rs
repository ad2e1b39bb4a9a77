//! Unit tests of `memory/tokens.rs`.

use protocol::llm::{FunctionCall, ImageUrl, ToolCall};

use super::*;

#[test]
fn text_costs_a_token_per_four_characters_plus_the_overhead() {
    assert_eq!(message_tokens(&Message::user("")), MESSAGE_OVERHEAD);
    assert_eq!(message_tokens(&Message::user("abcd")), MESSAGE_OVERHEAD + 1);
    assert_eq!(
        message_tokens(&Message::user("abcde")),
        MESSAGE_OVERHEAD + 2
    );
    assert_eq!(
        message_tokens(&Message::user("éééé")),
        MESSAGE_OVERHEAD + 1,
        "characters"
    );
}

#[test]
fn images_cost_a_fixed_amount_and_tool_calls_count() {
    let image = Message {
        content: Some(Content::Parts(vec![
            ContentPart::Text {
                text: "abcd".into(),
            },
            ContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: format!("data:image/png;base64,{}", "A".repeat(10_000)),
                },
            },
        ])),
        ..Message::user("")
    };
    assert_eq!(message_tokens(&image), MESSAGE_OVERHEAD + 1 + IMAGE_TOKENS);
    let call = Message {
        content: None,
        tool_calls: Some(vec![ToolCall {
            id: "call".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "bash".into(),
                arguments: "{\"a\": 1}".into(),
            },
        }]),
        ..Message::assistant("")
    };
    assert_eq!(message_tokens(&call), MESSAGE_OVERHEAD + 1 + 1 + 2);
    assert_eq!(
        estimate_tokens(&[image.clone(), call.clone()]),
        message_tokens(&image) + message_tokens(&call)
    );
}
