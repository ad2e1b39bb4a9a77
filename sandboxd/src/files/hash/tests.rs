//! Content hashes and the `If-Match` values that name them.

use super::*;

#[test]
fn hashes_bytes_and_parses_tags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, "abc").unwrap();
    let hash = content_hash(&path).unwrap();
    assert_eq!(
        hash,
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(content_hash(dir.path()), None);
    assert_eq!(content_hash(&dir.path().join("missing")), None);
    for given in [
        hash.clone(),
        format!("\"{hash}\""),
        format!("W/\"{}\"", hash.to_uppercase().replace("SHA256", "sha256")),
    ] {
        assert_eq!(parse_expected(&given).unwrap(), hash, "{given}");
    }
    for bad in [
        "",
        "\"abc\"",
        "sha256:12",
        "md5:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    ] {
        assert!(parse_expected(bad).is_err(), "{bad}");
    }
}
