//! Unit tests of `render.rs`.

use protocol::CmdOutputMetadata;

use super::*;

#[test]
fn a_cut_run_output_names_the_file_with_the_whole_output() {
    let mut extras = CmdOutputExtras {
        command: "seq 100000".into(),
        metadata: CmdOutputMetadata {
            exit_code: 0,
            ..Default::default()
        },
        hidden: false,
        full_output_path: Some("/tmp/sandboxd/out-1.txt".into()),
    };
    assert_eq!(
        render_run(
            &extras,
            "1\n[... Observation truncated due to length ...]\n100000"
        ),
        "1\n[... Observation truncated due to length ...]\n100000\n\
         [Command finished with exit code 0]\n\
         [The whole output is in the file /tmp/sandboxd/out-1.txt]"
    );
    extras.metadata.prefix = "[Previous command outputs are truncated. Showing the last 10 \
         lines of the output below.]\n"
        .into();
    assert!(render_run(&extras, "99991").ends_with("/tmp/sandboxd/out-1.txt]"));
    // Nothing was cut: the file is not worth a line.
    extras.metadata.prefix.clear();
    assert!(!render_run(&extras, "short").contains("whole output"));
}
