//! Unit tests of `mcp/sse.rs`.

use super::*;

#[test]
fn events_are_cut_at_blank_lines_in_any_chunking() {
    let stream = b": ping\r\nevent: endpoint\r\ndata: /messages/?session_id=1\r\n\r\ndata: {\"a\":\ndata: 1}\n\n";
    for split in [1, 3, stream.len()] {
        let mut parser = EventParser::default();
        let mut events = Vec::new();
        for chunk in stream.chunks(split) {
            parser.push(chunk).unwrap();
            while let Some(event) = parser.next_event().unwrap() {
                events.push(event);
            }
        }
        assert_eq!(
            events,
            [
                Event {
                    name: "endpoint".into(),
                    data: "/messages/?session_id=1".into()
                },
                Event {
                    name: "message".into(),
                    data: "{\"a\":\n1}".into()
                },
            ],
            "chunks of {split}"
        );
    }
}

#[test]
fn an_endless_event_is_refused() {
    let mut parser = EventParser::default();
    let line = format!("data: {}\n", "x".repeat(1024 * 1024));
    let refused = (0..20).find_map(|_| {
        parser
            .push(line.as_bytes())
            .err()
            .or_else(|| parser.next_event().err())
    });
    assert!(refused.is_some());
}
