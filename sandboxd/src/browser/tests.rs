use super::*;

#[test]
fn urls_without_a_scheme() {
    let cases = [
        ("http://localhost:8000/a", "http://localhost:8000/a"),
        ("https://example.com", "https://example.com"),
        ("about:blank", "about:blank"),
        ("localhost:8000/x", "http://localhost:8000/x"),
        ("example.com", "http://example.com"),
        ("/workspace/a.html", "file:///workspace/a.html"),
        ("  file:///tmp/x ", "file:///tmp/x"),
    ];
    for (given, want) in cases {
        assert_eq!(normalize_url(given), want, "{given}");
    }
}
