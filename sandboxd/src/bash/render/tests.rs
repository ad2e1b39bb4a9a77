//! Unit tests of `bash/render.rs`.

use super::*;

/// Renders `bytes` fed at once: the finished lines, then the partial line if any.
fn lines(bytes: &[u8]) -> Vec<String> {
    let mut screen = Screen::new();
    screen.feed(bytes);
    let mut lines = screen.take_lines();
    if screen.has_partial() {
        lines.push(screen.partial_line());
    }
    lines
}

fn one(bytes: &[u8]) -> String {
    lines(bytes).join("\n")
}

/// Checks that each input renders as its text, naming the input that does not.
fn assert_renders(cases: &[(&[u8], &str)]) {
    for &(bytes, text) in cases {
        assert_eq!(one(bytes), text, "{:?}", String::from_utf8_lossy(bytes));
    }
}

#[test]
fn plain_text_and_line_endings() {
    assert_eq!(lines(b"hello\nworld\n"), ["hello", "world"]);
    assert_eq!(lines(b"hello\r\nworld\r\n"), ["hello", "world"]);
    assert_eq!(lines(b"a\n\n\nb\n"), ["a", "", "", "b"]);
    assert_eq!(lines(b"no newline"), ["no newline"]);
    assert_eq!(lines(b""), Vec::<String>::new());
}

#[test]
fn carriage_return_overwrites() {
    assert_renders(&[
        (b"50%\r100%\n", "100%"),
        (b"10%\r20%\r30%\r\n", "30%"),
        (b"hello\rab\n", "abllo"),
        (b"progress 1/3\x1b[2K\rprogress 2/3\x1b[2K\rdone\n", "done"),
        (
            b"\x1b[2K\rDownloading 90%\x1b[2K\rDownloaded\r\n",
            "Downloaded",
        ),
    ]);
}

#[test]
fn backspace_moves_left() {
    assert_renders(&[
        (b"ab\x08c\n", "ac"),
        (b"abc\x08\x08\x08\x08\x08X\n", "Xbc"),
        (b"ab\x08\x08\x1b[K\n", ""),
    ]);
}

#[test]
fn erase_in_line() {
    assert_renders(&[
        (b"hello\x1b[3D\x1b[K\n", "he"),
        (b"hello\x1b[3D\x1b[0K\n", "he"),
        (b"hello\x1b[3D\x1b[1K\n", "   lo"),
        (b"hello\x1b[2K\n", ""),
        (b"hello\x1b[2Kworld\n", "     world"),
        (b"hello\x1b[2D\x1b[X\n", "hel o"),
        (b"hello\x1b[4D\x1b[2P\n", "hlo"),
        (b"hello\x1b[4D\x1b[2@\n", "h  ello"),
    ]);
}

#[test]
fn column_moves() {
    assert_renders(&[
        (b"hello\x1b[2Gx\n", "hxllo"),
        (b"hello\x1b[2`x\n", "hxllo"),
        (b"hello\x1b[Gx\n", "xello"),
        (b"ab\x1b[3Cc\n", "ab   c"),
        (b"ab\x1b[Cc\n", "ab c"),
        (b"abc\x1b[2Dx\n", "axc"),
        (b"abc\x1b[99Dx\n", "xbc"),
    ]);
    assert_eq!(one(b"a\x1b[5000Cb\n").len(), TERMINAL_COLUMNS);
}

#[test]
fn tabs_are_kept_and_other_controls_dropped() {
    assert_renders(&[
        (b"a\tb\n", "a\tb"),
        (b"a\x07b\x00c\x0ed\x0fe\x7ff\n", "abcdef"),
        (b"trailing   \t \n", "trailing"),
    ]);
}

#[test]
fn escape_sequences_are_removed() {
    assert_renders(&[
        (
            b"\x1b[31mred\x1b[0m plain \x1b[1;32;40mbold\x1b[m\n",
            "red plain bold",
        ),
        (
            b"\x1b[38;2;255;0;0mtrue\x1b[38:5:196mcolour\x1b[0m\n",
            "truecolour",
        ),
        (b"\x1b]0;window title\x07hello\n", "hello"),
        (b"\x1b]2;title\x1b\\hello\n", "hello"),
        (b"\x1b]8;;http://x.y\x1b\\link\x1b]8;;\x1b\\\n", "link"),
        (b"\x1bPq#0;2;0;0;0#0~~\x1b\\x\n", "x"),
        (b"\x1b_Gf=100;AAAA\x1b\\y\n", "y"),
        (b"\x1b^privacy\x1b\\z\n", "z"),
        (b"\x1bXstring\x1b\\w\n", "w"),
        (b"\x1b(Bok\x1b)0\x1b(0\x1b(B!\n", "ok!"),
        (b"\x1b=\x1b>\x1b7\x1b8\x1bMkeypad\n", "keypad"),
        (b"\x1b[?25l\x1b[?1049h\x1b[?2004hmodes\x1b[?25h\n", "modes"),
        (b"\x1b[H\x1b[2J\x1b[3Jafter clear\n", "after clear"),
    ]);
    assert_eq!(lines(b"a\n\x1b[1Ab\x1b[5;10Hc\n"), ["a", "bc"]);
}

#[test]
fn invalid_utf8_is_replaced() {
    assert_renders(&[
        (b"a\xffb\n", "a\u{FFFD}b"),
        (b"\x80x\n", "\u{FFFD}x"),
        (b"caf\xc3\xa9 \xc3(\n", "caf\u{e9} \u{FFFD}("),
        (b"\xe2\x82\n", "\u{FFFD}"),
        ("日本語 ✓\n".as_bytes(), "日本語 ✓"),
    ]);
}

#[test]
fn partial_line() {
    let mut screen = Screen::new();
    screen.feed(b"first\nEnter name: ");
    assert_eq!(screen.take_lines(), ["first"]);
    assert!(screen.has_partial());
    assert_eq!(screen.partial_line(), "Enter name:");
    assert_eq!(screen.take_lines(), Vec::<String>::new());
    screen.feed(b"\r\x1b[K");
    assert!(!screen.has_partial());
    assert_eq!(screen.partial_line(), "");
    screen.feed(b"   ");
    assert!(!screen.has_partial());
    screen.feed(b"John\r\n");
    assert_eq!(screen.take_lines(), ["   John"]);
    assert!(!screen.has_partial());
    assert!(format!("{screen:?}").starts_with("Screen"));
}

/// `\r` and column moves act on the cursor's 1000-column row, as on the real terminal; the
/// rows of a wrapped line read back as one line.
#[test]
fn long_lines_wrap_at_the_terminal_width() {
    let a = |n: usize| "a".repeat(n);
    assert_eq!(
        one(format!("{}\rb\n", a(1500)).as_bytes()),
        format!("{}b{}", a(1000), a(499))
    );
    assert_eq!(
        one(format!("{}\rb\n", a(1000)).as_bytes()),
        format!("b{}", a(999))
    );
    assert_eq!(
        one(format!("{}\x1b[2K\rnew\n", a(1500)).as_bytes()),
        format!("{}new", a(1000))
    );
    assert_eq!(
        one(format!("{}\x1b[1Gb\n", a(2500)).as_bytes()),
        format!("{}b{}", a(2000), a(499))
    );
}

#[test]
fn overlong_lines_are_broken() {
    let mut screen = Screen::new();
    screen.feed("x".repeat(MAX_LINE_CHARS + 5).as_bytes());
    screen.feed(b"\n");
    let lines = screen.take_lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].len(), MAX_LINE_CHARS);
    assert_eq!(lines[1], "xxxxx");
    // Cursor movement cannot grow a line past the cap either.
    let mut screen = Screen::new();
    for _ in 0..2 * MAX_LINE_CHARS / TERMINAL_COLUMNS {
        screen.feed(b"\x1b[999Cxy");
    }
    let taken = screen.take_lines();
    assert_eq!(taken.len(), 2);
    assert!(
        taken
            .iter()
            .all(|line| line.chars().count() <= MAX_LINE_CHARS)
    );
    assert!(screen.partial_line().chars().count() <= MAX_LINE_CHARS);
}

/// Output split anywhere, even inside an escape sequence or a UTF-8 character, renders the same.
#[test]
fn chunking_does_not_matter() {
    let input: &[u8] =
        b"caf\xc3\xa9 \x1b[31mred\x1b[0m\r\n50%\r100%\nab\x08c\n \x1b]0;t\x07\x1b]2;u\x1b\\\
            x\x1b[2K\rdone\t\xff\xe2\x82\xac\x1bPq\x1b\\\x1b[3Dz\x1b[1Gs\x1b[K\nprompt> ";
    let whole = {
        let mut screen = Screen::new();
        screen.feed(input);
        (screen.take_lines(), screen.partial_line())
    };
    assert_eq!(whole.0, ["caf\u{e9} red", "100%", "ac", "s"]);
    assert_eq!(whole.1, "prompt>");
    let mut screen = Screen::new();
    for byte in input {
        screen.feed(std::slice::from_ref(byte));
    }
    assert_eq!(
        (screen.take_lines(), screen.partial_line()),
        whole,
        "byte by byte"
    );
    for split in 0..=input.len() {
        let mut screen = Screen::new();
        screen.feed(&input[..split]);
        let mut taken = screen.take_lines();
        screen.feed(&input[split..]);
        taken.extend(screen.take_lines());
        assert_eq!((taken, screen.partial_line()), whole, "split at {split}");
    }
}

/// 50 MB of `Line N` lines come out intact (and fast: see the report for release numbers).
#[test]
fn fifty_megabytes_of_lines() {
    let mut input = Vec::with_capacity(50 << 20);
    let mut count = 0usize;
    while input.len() < 50 << 20 {
        count += 1;
        input.extend_from_slice(format!("Line {count}\n").as_bytes());
    }
    let mut screen = Screen::new();
    let mut rendering = std::time::Duration::ZERO;
    let mut total = 0usize;
    for chunk in input.chunks(4096) {
        let started = std::time::Instant::now();
        screen.feed(chunk);
        let lines = screen.take_lines();
        rendering += started.elapsed();
        for line in lines {
            total += 1;
            let number = line
                .strip_prefix("Line ")
                .and_then(|n| n.parse::<usize>().ok());
            assert_eq!(number, Some(total), "{line:?}");
        }
    }
    let elapsed = rendering;
    assert_eq!(total, count);
    assert!(!screen.has_partial());
    let megabytes_per_second = input.len() as f64 / 1e6 / elapsed.as_secs_f64();
    eprintln!(
        "rendered {} bytes in {elapsed:?}: {megabytes_per_second:.0} MB/s",
        input.len()
    );
}

/// Random terminal noise never panics, renders the same however it is chunked, and leaves no
/// escape or control characters (other than tabs) in the text.
#[test]
fn random_output_renders_consistently() {
    let pieces: [&[u8]; 24] = [
        b"a",
        b"xyz ",
        b"\n",
        b"\r",
        b"\r\n",
        b"\x08",
        b"\t",
        b"\x07",
        b"\x1b",
        b"[",
        b"\x1b[",
        b"31m",
        b"65535",
        b";",
        b"K",
        b"2K",
        b"G",
        b"C",
        b"D",
        b"P",
        b"@",
        b"\x1b]0;t\x07",
        b"\xc3\xa9\xff\x80",
        b"\x1bP\x1b\\",
    ];
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..3000 {
        let input: Vec<u8> = (0..next(60))
            .flat_map(|_| pieces[next(pieces.len())].iter().copied())
            .collect();
        let mut whole = Screen::new();
        whole.feed(&input);
        let expected = (whole.take_lines(), whole.partial_line());
        let mut chunked = Screen::new();
        let mut lines = Vec::new();
        let mut rest = input.as_slice();
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(1 + next(rest.len()));
            chunked.feed(chunk);
            lines.extend(chunked.take_lines());
            rest = tail;
        }
        assert_eq!((lines, chunked.partial_line()), expected, "{input:?}");
        for line in expected.0.iter().chain(std::iter::once(&expected.1)) {
            assert!(
                !line.chars().any(|c| c.is_control() && c != '\t'),
                "{line:?} from {input:?}"
            );
        }
    }
}
