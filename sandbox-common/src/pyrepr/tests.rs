//! Unit tests of `pyrepr.rs`.

use super::*;

#[test]
fn repr_matches_python() {
    for (text, repr) in [
        ("/w/x", "'/w/x'"),
        ("it's", "\"it's\""),
        ("a'b\"c", "'a\\'b\"c'"),
        ("t\tn\n\\\x01\x7fé\u{a0}", "'t\\tn\\n\\\\\\x01\\x7fé\\xa0'"),
        ("\u{feff}\u{1F600}", "'\\ufeff\u{1F600}'"),
    ] {
        assert_eq!(py_repr_str(text), repr, "{text:?}");
    }
}
