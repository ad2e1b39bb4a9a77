//! Unit tests of `bash/framing.rs`.

use super::*;

fn end_marker(token: &str, fields: &str) -> Vec<u8> {
    format!("\x1b_sbx{token}E{fields}\x1b\\").into_bytes()
}

#[test]
fn splits_output_and_markers_at_any_chunking() {
    let token = "abc123";
    let mut stream = b"hello\r\n".to_vec();
    stream.extend(format!("\x1b_sbx{token}S\x1b\\").bytes());
    stream.extend(b"\x1b[31mred\x1b[0m\r\n");
    stream.extend(end_marker(
        token,
        "0\x1f\x1froot\x1fhost\x1f/tmp\x1f/usr/bin:/bin",
    ));
    stream.extend(b"tail");
    let expected = vec![
        Segment::Output(b"hello\r\n".to_vec()),
        Segment::Started,
        Segment::Output(b"\x1b[31mred\x1b[0m\r\n".to_vec()),
        Segment::Prompt(PromptState {
            exit_code: 0,
            pid: -1,
            username: "root".into(),
            hostname: "host".into(),
            working_dir: "/tmp".into(),
            path: "/usr/bin:/bin".into(),
        }),
        Segment::Output(b"tail".to_vec()),
    ];
    for size in 1..stream.len() {
        let mut framer = Framer::new(token);
        let mut got: Vec<Segment> = Vec::new();
        for chunk in stream.chunks(size) {
            for seg in framer.push(chunk) {
                match (got.last_mut(), seg) {
                    (Some(Segment::Output(a)), Segment::Output(b)) => a.extend(b),
                    (_, seg) => got.push(seg),
                }
            }
        }
        assert_eq!(got, expected, "chunk size {size}");
    }
}

#[test]
fn a_marker_of_another_token_is_plain_output() {
    let mut framer = Framer::new("right");
    let spoof = end_marker("wrong", "0\x1f1\x1fu\x1fh\x1f/\x1f/bin");
    let segs = framer.push(&spoof);
    assert_eq!(segs, vec![Segment::Output(spoof)]);
}

#[test]
fn background_pid_is_parsed() {
    let mut framer = Framer::new("t");
    let segs = framer.push(&end_marker("t", "130\x1f4242\x1fu\x1fh\x1f/w\x1f/bin"));
    let Segment::Prompt(state) = &segs[0] else {
        panic!("{segs:?}")
    };
    assert_eq!((state.exit_code, state.pid), (130, 4242));
}
