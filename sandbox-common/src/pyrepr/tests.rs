//! Unit tests of `pyrepr.rs`.

use super::*;

#[test]
fn repr_matches_python() {
    assert_eq!(py_repr_str("/w/x"), "'/w/x'");
    assert_eq!(py_repr_str("it's"), "\"it's\"");
    assert_eq!(py_repr_str("a'b\"c"), "'a\\'b\"c'");
    assert_eq!(
        py_repr_str("t\tn\n\\\x01\x7fé\u{a0}"),
        "'t\\tn\\n\\\\\\x01\\x7fé\\xa0'"
    );
    assert_eq!(py_repr_str("\u{feff}\u{1F600}"), "'\\ufeff\u{1F600}'");
}
