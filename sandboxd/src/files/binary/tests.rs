//! Unit tests of `files/binary.rs`.

use super::*;

/// A 1x1 PNG, as the reference fixture's "read png" used.
pub(crate) const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0xDA, 0x63, 0x64, 0x60, 0xF8, 0x5F,
    0x0F, 0x00, 0x02, 0x87, 0x01, 0x80, 0xEB, 0x47, 0xBA, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

#[test]
fn png_jpeg_and_elf_are_binary() {
    assert!(is_binary_bytes(PNG, true));
    assert!(is_binary_bytes(
        b"\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01",
        true
    ));
    assert!(is_binary_bytes(
        b"\x7FELF\x02\x01\x01\x00\x00\x00\x00",
        true
    ));
    assert!(is_binary_bytes(&[1u8, 2, 3, 4, 5, 6, 7, 14, 15, 16], true));
}

#[test]
fn text_in_any_common_encoding_is_not_binary() {
    assert!(!is_binary_bytes(b"", true));
    assert!(!is_binary_bytes(b"echo \"Hello, World!\"\n", true));
    assert!(!is_binary_bytes("日本語のテキストです。".as_bytes(), true));
    let (cp1251, _, _) =
        encoding_rs::WINDOWS_1251.encode("Съешь же ещё этих мягких булок, да выпей чаю. Я рад.\n");
    assert!(cp1251.contains(&0xff));
    assert!(!is_binary_bytes(&cp1251, true));
    let utf16: Vec<u8> = b"\xFF\xFE"
        .iter()
        .copied()
        .chain("hello world\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert!(!is_binary_bytes(&utf16, true));
}

#[test]
fn nul_in_ascii_is_binary_and_cut_utf8_is_text() {
    assert!(is_binary_bytes(b"abc\x00def", true));
    // Mostly multi-byte text cut in the middle of a character at the chunk's end.
    let text = "日本語".repeat(200);
    let cut = &text.as_bytes()[..CHUNK];
    assert!(!is_binary_bytes(cut, false));
}

#[test]
fn files_are_sniffed_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("x.png");
    std::fs::write(&png, PNG).unwrap();
    assert!(is_binary_file(&png));
    let txt = dir.path().join("t.txt");
    std::fs::write(&txt, "text\n").unwrap();
    assert!(!is_binary_file(&txt));
    assert!(!is_binary_file(dir.path()));
    assert!(!is_binary_file(&dir.path().join("missing")));
    assert!(is_binary_file(&dir.path().join("missing.pyc")));
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    assert!(!is_binary_file(&fifo));
}
