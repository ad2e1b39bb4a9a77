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
mod tests;
