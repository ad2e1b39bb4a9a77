//! Unit tests of `files/encoding.rs`.

use super::*;

#[test]
fn detects_utf8_boms_and_legacy() {
    assert_eq!(detect(b"hello", true), TextEncoding::Utf8);
    assert_eq!(detect("h\u{e9}llo".as_bytes(), true), TextEncoding::Utf8);
    assert_eq!(detect(b"\xEF\xBB\xBFx", true), TextEncoding::Utf8Sig);
    assert_eq!(detect(b"\xFF\xFEx\x00", true), TextEncoding::Utf16Le);
    assert_eq!(detect(b"\xFE\xFF\x00x", true), TextEncoding::Utf16Be);
    // A UTF-8 sequence cut by the sample's end is still UTF-8 when the file goes on.
    assert_eq!(detect(b"ab\xC3", false), TextEncoding::Utf8);
    let (cp1251, _, _) = encoding_rs::WINDOWS_1251
        .encode("Привет, мир! Это тестовый файл в кодировке windows-1251.\n");
    assert_eq!(
        detect(&cp1251, true),
        TextEncoding::Legacy(encoding_rs::WINDOWS_1251)
    );
}

#[test]
fn garbage_is_not_a_legacy_encoding() {
    assert_eq!(confident_legacy(b"\x01\x02\x81\x82\x00", true), None);
    assert_eq!(confident_legacy(b"plain ascii", true), None);
}

#[test]
fn decode_errors_read_like_python() {
    for (bytes, error) in [
        (
            &b"ab\xff"[..],
            "'utf-8' codec can't decode byte 0xff in position 2: invalid start byte",
        ),
        (
            b"\xe2\x28\xa1",
            "'utf-8' codec can't decode byte 0xe2 in position 0: invalid continuation byte",
        ),
        (
            b"x\xe2\x82\x28",
            "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte",
        ),
        (
            b"x\xe2\x82",
            "'utf-8' codec can't decode bytes in position 1-2: unexpected end of data",
        ),
    ] {
        assert_eq!(
            decode(bytes, TextEncoding::Utf8),
            Err(error.into()),
            "{bytes:?}"
        );
    }
}

#[test]
fn round_trips_every_encoding() {
    let text = "Привет\nмир\n";
    for enc in [
        TextEncoding::Utf8,
        TextEncoding::Utf8Sig,
        TextEncoding::Utf16Le,
        TextEncoding::Utf16Be,
        TextEncoding::Legacy(encoding_rs::WINDOWS_1251),
        TextEncoding::Legacy(encoding_rs::KOI8_U),
    ] {
        let bytes = encode(text, enc).unwrap();
        assert_eq!(decode(&bytes, enc).unwrap(), text, "{enc:?}");
    }
    assert_eq!(
            encode("a\u{2603}", TextEncoding::Legacy(encoding_rs::WINDOWS_1251)),
            Err("'charmap' codec can't encode character '\\u2603' in position 1: character maps to <undefined>".into())
        );
}

#[test]
fn universal_newlines_translate_cr() {
    assert_eq!(universal_newlines("a\r\nb\rc\n\r".into()), "a\nb\nc\n\n");
    assert_eq!(universal_newlines("plain\n".into()), "plain\n");
}
