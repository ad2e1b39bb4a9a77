//! Reading observations: exit codes, error checks, and the text a person (or `sbx`) is shown.

use protocol::{Observation, ObservationKind};

/// Process exit statuses of `sbx`.
pub mod exit_status {
    /// Success.
    pub const SUCCESS: u8 = 0;
    /// Connection or HTTP failure, or an `error` observation.
    pub const FAILURE: u8 = 1;
    /// Bad command line or input.
    pub const USAGE: u8 = 2;
    /// The command did not finish in time (its exit code is −1), as with `timeout(1)`.
    pub const TIMED_OUT: u8 = 124;
}

/// Conveniences on [`Observation`] for callers and tests.
pub trait ObservationExt {
    /// The command's exit code for a `run` observation (−1 while it has not finished, e.g. after
    /// a timeout); `None` for every other type.
    fn exit_code(&self) -> Option<i64>;

    /// Whether this is an `error` observation (a failure inside the action).
    fn is_error(&self) -> bool;

    /// The text as shown to a person: for `run`, `metadata.prefix` + content + `metadata.suffix`
    /// (the suffix holds the exit-code or timeout notice); otherwise the content, or the
    /// message when the content is empty (as for `write`).
    fn display_text(&self) -> String;

    /// The exit status `sbx` uses: for `run`, the command's exit code when it is in 0..=255,
    /// 124 when it did not finish (−1), 1 otherwise; 1 for an `error` observation; 0 otherwise.
    fn cli_status(&self) -> u8;
}

impl ObservationExt for Observation {
    fn exit_code(&self) -> Option<i64> {
        match &self.kind {
            ObservationKind::Run(extras) => Some(extras.metadata.exit_code),
            _ => None,
        }
    }

    fn is_error(&self) -> bool {
        matches!(self.kind, ObservationKind::Error(_))
    }

    fn display_text(&self) -> String {
        match &self.kind {
            ObservationKind::Run(extras) => format!(
                "{}{}{}",
                extras.metadata.prefix, self.content, extras.metadata.suffix
            ),
            _ if self.content.is_empty() => self.message.clone(),
            _ => self.content.clone(),
        }
    }

    fn cli_status(&self) -> u8 {
        match (&self.kind, self.exit_code()) {
            (_, Some(-1)) => exit_status::TIMED_OUT,
            (_, Some(code)) => u8::try_from(code).unwrap_or(exit_status::FAILURE),
            (ObservationKind::Error(_), None) => exit_status::FAILURE,
            (_, None) => exit_status::SUCCESS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(json: &str) -> Observation {
        serde_json::from_str(json).unwrap()
    }

    /// `run ls -l (empty ws)` from the reference exchanges.
    const RUN_OK: &str = r#"{"message": "Command `ls -l` executed with exit code 0.", "observation": "run",
        "content": "total 0", "extras": {"command": "ls -l", "metadata": {"exit_code": 0, "pid": -1,
        "username": "root", "hostname": "sandbox", "working_dir": "/workspace",
        "py_interpreter_path": "/usr/bin/python", "prefix": "",
        "suffix": "\n[The command completed with exit code 0.]"}, "hidden": false}, "success": true}"#;

    /// `run hard timeout 2.5 loop`, shortened suffix.
    const RUN_TIMEOUT: &str = r#"{"message": "x", "observation": "run", "content": "1\n2",
        "extras": {"command": "loop", "metadata": {"exit_code": -1, "pid": -1, "username": null,
        "hostname": null, "working_dir": null, "py_interpreter_path": null, "prefix": "",
        "suffix": "\n[The command timed out after 2.5 seconds.]"}, "hidden": false}, "success": false}"#;

    fn run_with_code(code: i64) -> Observation {
        obs(&RUN_OK.replace("\"exit_code\": 0", &format!("\"exit_code\": {code}")))
    }

    #[test]
    fn run_text_and_status() {
        let ok = obs(RUN_OK);
        assert_eq!(ok.exit_code(), Some(0));
        assert_eq!(
            ok.display_text(),
            "total 0\n[The command completed with exit code 0.]"
        );
        assert_eq!(ok.cli_status(), 0);
        assert!(!ok.is_error());

        let timeout = obs(RUN_TIMEOUT);
        assert_eq!(timeout.exit_code(), Some(-1));
        assert_eq!(timeout.cli_status(), exit_status::TIMED_OUT);

        assert_eq!(run_with_code(127).cli_status(), 127);
        assert_eq!(run_with_code(255).cli_status(), 255);
        assert_eq!(run_with_code(256).cli_status(), 1);
        assert_eq!(run_with_code(-2).cli_status(), 1);
    }

    #[test]
    fn prefix_is_shown_before_the_content() {
        let json = RUN_OK.replace(
            r#""prefix": """#,
            r#""prefix": "[Below is the output of the previous command.]\n""#,
        );
        assert!(
            obs(&json)
                .display_text()
                .starts_with("[Below is the output of the previous command.]\ntotal 0")
        );
    }

    #[test]
    fn error_observation() {
        let err = obs(
            r#"{"message": "ERROR_BINARY_FILE", "observation": "error", "content": "ERROR_BINARY_FILE", "extras": {"error_id": ""}}"#,
        );
        assert!(err.is_error());
        assert_eq!(err.exit_code(), None);
        assert_eq!(err.cli_status(), exit_status::FAILURE);
        assert_eq!(err.display_text(), "ERROR_BINARY_FILE");
    }

    #[test]
    fn write_shows_its_message() {
        let write = obs(
            r#"{"message": "I wrote to the file /workspace/f.txt.", "observation": "write", "content": "", "extras": {"path": "/workspace/f.txt"}}"#,
        );
        assert_eq!(
            write.display_text(),
            "I wrote to the file /workspace/f.txt."
        );
        assert_eq!(write.cli_status(), 0);
    }
}
