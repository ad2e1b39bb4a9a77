//! Unit tests of the `sbx` CLI.

use super::*;
use clap::CommandFactory;

#[test]
fn cli_definition_is_valid() {
    Cli::command().debug_assert();
}

#[test]
fn run_arguments() {
    let cli = Cli::try_parse_from(["sbx", "run", "sleep 3", "--timeout", "10"]).unwrap();
    match cli.command {
        Command::Run {
            command, timeout, ..
        } => {
            assert_eq!(command, "sleep 3");
            assert_eq!(timeout, Some(10.0));
        }
        other => panic!("{other:?}"),
    }
    assert!(Cli::try_parse_from(["sbx", "run", ""]).is_ok());
}

#[test]
fn write_needs_exactly_one_source() {
    assert!(Cli::try_parse_from(["sbx", "write", "/f"]).is_err());
    assert!(
        Cli::try_parse_from(["sbx", "write", "/f", "--content", "a", "--from-file", "b"]).is_err()
    );
    assert!(Cli::try_parse_from(["sbx", "write", "/f", "--content", "a"]).is_ok());
}

#[test]
fn edit_view_range_takes_two_numbers() {
    let cli =
        Cli::try_parse_from(["sbx", "edit", "/f", "view", "--view-range", "2", "-1"]).unwrap();
    match cli.command {
        Command::Edit {
            view_range,
            command,
            ..
        } => {
            assert_eq!(view_range, Some(vec![2, -1]));
            assert_eq!(command.wire_name(), "view");
        }
        other => panic!("{other:?}"),
    }
    let cli = Cli::try_parse_from(["sbx", "edit", "/f", "str_replace"]).unwrap();
    assert!(matches!(
        cli.command,
        Command::Edit {
            command: EditCommand::StrReplace,
            ..
        }
    ));
}

#[test]
fn usage_errors_exit_with_two() {
    let err = anyhow::Error::from(UsageError("x".into()));
    assert_eq!(error_status(&err), 2);
    let err = anyhow::Error::from(ClientError::InvalidApiKey);
    assert_eq!(error_status(&err), 2);
    let err = anyhow::Error::from(ClientError::from_http(
        403,
        br#"{"detail":"Invalid API Key"}"#,
    ));
    assert_eq!(error_status(&err), 1);
}

#[test]
fn bytes_are_humanised() {
    assert_eq!(human_bytes(512), "512 B");
    assert_eq!(human_bytes(1536), "1.5 KiB");
    assert_eq!(human_bytes(398_721_024), "380.2 MiB");
}
