//! Unit tests of `transfer/mod.rs`.

use std::fs;
use std::io;

use super::test_support::{tree, zip_of};
use super::*;

#[test]
fn zip_tree_then_upload_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(src.join("a/b")).unwrap();
    fs::write(src.join("a/b/c.txt"), "deep").unwrap();
    fs::write(src.join("top.bin"), [0_u8, 159, 146, 150]).unwrap();
    let zip = zip_of(&src).unwrap();
    let dest = tmp.path().join("dest");
    store_upload(&dest, "x.zip", io::Cursor::new(&zip), true, None).unwrap();
    assert_eq!(tree(&dest), ["a/", "a/b/", "a/b/c.txt", "top.bin"]);
    assert_eq!(
        fs::read(dest.join("top.bin")).unwrap(),
        [0_u8, 159, 146, 150]
    );
}
