//! Unit tests of `ipython/cell.rs`.

use super::*;
use serde_json::json;

#[test]
fn parts_are_concatenated_in_arrival_order() {
    let mut out = CellOutput::default();
    out.absorb("stream", &json!({"name": "stdout", "text": "a\n"}));
    out.absorb("stream", &json!({"name": "stderr", "text": "b"}));
    out.absorb(
        "execute_result",
        &json!({"data": {"text/plain": "3"}, "execution_count": 1, "metadata": {}}),
    );
    assert_eq!(out.render(), ("a\nb3".to_owned(), None));
}

#[test]
fn no_parts_is_the_no_output_text_but_an_empty_part_is_not() {
    assert_eq!(CellOutput::default().render().0, NO_OUTPUT);
    let mut out = CellOutput::default();
    out.absorb("stream", &json!({"name": "stdout", "text": "\n"}));
    assert_eq!(out.render().0, "\n");
    assert_eq!(final_content("\n", false, "/w", "/p"), "");
}

#[test]
fn png_becomes_a_data_url_and_the_text_is_kept() {
    let mut out = CellOutput::default();
    out.absorb(
        "display_data",
        &json!({"data": {"text/plain": "<Image>", "image/png": "iVBO\n"}, "metadata": {}}),
    );
    assert_eq!(
        out.render(),
        (
            "<Image>".to_owned(),
            Some(vec!["data:image/png;base64,iVBO".to_owned()])
        )
    );
}

#[test]
fn an_error_ends_the_cell() {
    let mut out = CellOutput::default();
    out.absorb("stream", &json!({"name": "stdout", "text": "x\n"}));
    out.absorb(
        "error",
        &json!({"ename": "E", "evalue": "", "traceback": ["\x1b[0;31m---\x1b[0m", "E: boom"]}),
    );
    out.absorb("stream", &json!({"name": "stdout", "text": "late"}));
    assert_eq!(out.render().0, "x\n---\nE: boom");
}

#[test]
fn only_sgr_sequences_of_up_to_three_numbers_are_stripped() {
    for (text, stripped) in [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;31;42mx\x1b[1;2;3;4m", "x\x1b[1;2;3;4m"),
        ("\x1b[mx\x1b[2Ky\x1b[1;m", "\x1b[mx\x1b[2Ky\x1b[1;m"),
        ("é\x1b[01;34mdir\x1b[0m\x1b", "édir\x1b"),
    ] {
        assert_eq!(strip_sgr(text), stripped, "{text:?}");
    }
}

#[test]
fn extra_lines_follow_the_stripped_text() {
    assert_eq!(
        final_content("1\n\n", true, "/workspace", "/usr/bin/python3"),
        "1\n[Jupyter current working directory: /workspace]\n[Jupyter Python interpreter: /usr/bin/python3]"
    );
    assert_eq!(final_content("1 \t\n", false, "/w", "/p"), "1");
}
