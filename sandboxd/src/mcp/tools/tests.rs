//! Unit tests of `mcp/tools.rs`.

use protocol::CmdOutputMetadata;
use protocol::observation::{CmdOutputExtras, ErrorExtras, IPythonRunCellExtras};

use super::*;

fn text_of(result: &CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .map(|block| {
            serde_json::to_value(block).unwrap()["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn a_command_reads_as_the_agent_reads_it_and_an_error_is_a_tool_error() {
    let run = Observation::new(
        ObservationKind::Run(CmdOutputExtras {
            command: "false".into(),
            metadata: CmdOutputMetadata {
                exit_code: 1,
                working_dir: Some("/w".into()),
                ..CmdOutputMetadata::default()
            },
            hidden: false,
            full_output_path: None,
        }),
        "nope",
    );
    let result = observation_result(run);
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        text_of(&result),
        ["nope\n[Current working directory: /w]\n[Command finished with exit code 1]"]
    );

    let error = Observation::new(ObservationKind::Error(ErrorExtras::default()), "bad");
    assert_eq!(observation_result(error).is_error, Some(true));
}

#[test]
fn a_cell_s_images_are_image_blocks() {
    let cell = Observation::new(
        ObservationKind::RunIpython(IPythonRunCellExtras {
            code: "plot()".into(),
            image_urls: Some(vec![
                "data:image/png;base64,iVBORw0KGgo=".into(),
                "junk".into(),
            ]),
        }),
        "![image](data:image/png;base64,iVBORw0KGgo=)",
    );
    let result = observation_result(cell);
    assert_eq!(result.content.len(), 2, "the bad URL is left out");
    let image = serde_json::to_value(&result.content[1]).unwrap();
    assert_eq!(image["type"], "image");
    assert_eq!(image["mimeType"], "image/png");
    assert_eq!(image["data"], "iVBORw0KGgo=");
    assert_eq!(text_of(&result)[0], sandbox_common::IPYTHON_IMAGE_LINE);
}

#[test]
fn only_full_output_files_are_read_and_by_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out-1.txt");
    let lines: Vec<String> = (1..=10).map(|n| n.to_string()).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let text = read_lines(dir.path(), &file, 3, 5).unwrap();
    assert_eq!(
        text,
        format!("[Lines 3-5 of 10 of {}]\n3\n4\n5", file.display())
    );
    let past = read_lines(dir.path(), &file, 20, 30).unwrap();
    assert!(
        past.contains("has 10 lines; none from line 20 on"),
        "{past}"
    );

    let elsewhere = tempfile::NamedTempFile::new().unwrap();
    let refused = read_lines(dir.path(), elsewhere.path(), 1, 5).unwrap_err();
    assert!(
        refused.to_string().contains("is not a full-output file"),
        "{refused}"
    );
}
