//! Unit tests of `files/pycompat.rs`.

use super::*;

#[test]
fn strip_matches_python_whitespace() {
    assert_eq!(py_rstrip("a \t\r\x0b\x0c\x1c\x1f\u{a0}\u{3000}"), "a");
    assert_eq!(py_strip("\u{85} x \u{2028}"), "x");
    assert_eq!(
        py_rstrip("a\u{200b}"),
        "a\u{200b}",
        "ZWSP is not whitespace"
    );
}

#[test]
fn splitlines_matches_python() {
    for (text, lines) in [
        ("", &[][..]),
        ("\n", &[""]),
        ("a\nb\n", &["a", "b"]),
        ("a\r\nb\rc\x0cd", &["a", "b", "c", "d"]),
        ("a\n\nb", &["a", "", "b"]),
        ("x\u{2028}y\u{85}", &["x", "y"]),
        ("\r\r\n", &["", ""]),
    ] {
        assert_eq!(py_splitlines(text), lines, "{text:?}");
    }
}

#[test]
fn path_normalisation_matches_pathlib() {
    for (path, normal) in [
        ("", "."),
        (".", "."),
        ("./a//b/./c/", "a/b/c"),
        ("/", "/"),
        ("//", "//"),
        ("///x", "/x"),
        ("//x/", "//x"),
        ("/w/../x", "/w/../x"),
    ] {
        assert_eq!(py_path_str(path), normal, "{path:?}");
    }
    for (base, path, joined) in [
        ("/workspace", ".", "/workspace"),
        ("/workspace/", "a/b", "/workspace/a/b"),
        ("/workspace", "/etc", "/etc"),
        ("/", "x", "/x"),
        ("//", "x", "//x"),
        ("//a", "x", "//a/x"),
        ("", "x", "x"),
        ("/w", "", "/w"),
    ] {
        assert_eq!(
            py_path_join(base, path),
            joined,
            "{base:?} joined with {path:?}"
        );
    }
}

#[test]
fn suffix_matches_pathlib() {
    for (path, suffix) in [
        ("/a/b.PDF", ".PDF"),
        ("/a/.pdf", ""),
        ("/a/b.", ""),
        ("/a.d/b", ""),
        ("/a/b.tar.gz", ".gz"),
    ] {
        assert_eq!(py_suffix(path), suffix, "{path:?}");
    }
}

#[test]
fn int_parsing_matches_python() {
    assert_eq!(py_parse_int(" 12 "), Some(PyInt::Small(12)));
    assert_eq!(py_parse_int("+7"), Some(PyInt::Small(7)));
    assert_eq!(py_parse_int("-0"), Some(PyInt::Small(0)));
    assert_eq!(py_parse_int("007"), Some(PyInt::Small(7)));
    assert_eq!(py_parse_int("1_000"), Some(PyInt::Small(1000)));
    assert_eq!(
        py_parse_int("-99999999999999999999999"),
        Some(PyInt::Big("-99999999999999999999999".to_owned()))
    );
    for bad in [
        "", " ", "1__0", "_1", "1_", "1.0", "abc", "0x10", "--1", "+",
    ] {
        assert_eq!(py_parse_int(bad), None, "{bad:?}");
    }
}

#[test]
fn os_errors_read_like_python() {
    let err = io::Error::from_raw_os_error(2);
    assert_eq!(
        os_error_message(&err, "/x/y"),
        "[Errno 2] No such file or directory: '/x/y'"
    );
    assert_eq!(strerror(13), "Permission denied");
}

#[test]
fn truncation_counts_characters() {
    assert_eq!(truncate_chars("ééé", 2, "<N>"), "éé<N>");
    assert_eq!(truncate_chars("éé", 2, "<N>"), "éé");
    assert_eq!(py_int_list(&[2, -1]), "[2, -1]");
}
