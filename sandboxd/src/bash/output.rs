//! The output of one command as the agent sees it: rendered lines, the bounded window kept for
//! observations, the spool file that keeps everything (`spool.rs`), and the reference's size rules (docs/protocol.md §4.6).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::render::Screen;
use super::spool::{Spool, SpoolBudget};
use crate::feed::{Feed, OUTPUT_CAPACITY};

/// Lines kept for an observation, as the reference's tmux history (10 000 + a visible margin).
const MAX_LINES: usize = 10_013;
/// Characters kept for an observation, so that a few huge lines cannot exhaust memory.
const MAX_WINDOW_CHARS: usize = 32 * 1024 * 1024;

/// Output of one command, from its first byte until the agent has seen its end.
#[derive(Debug)]
pub(crate) struct CommandOutput {
    screen: Screen,
    window: VecDeque<String>,
    window_chars: usize,
    /// Whether lines fell out of the window since the last observation.
    overflowed: bool,
    /// The unfinished line as it was shown in the previous observation.
    shown_partial: String,
    spool: Spool,
    /// The rendered lines as they complete, for streams and attached clients.
    live: Arc<Feed>,
}

impl CommandOutput {
    /// Starts collecting; the whole output also goes to `spool_path`, within `budget`.
    pub(crate) fn new(spool_path: PathBuf, budget: SpoolBudget) -> Self {
        CommandOutput {
            screen: Screen::new(),
            window: VecDeque::new(),
            window_chars: 0,
            overflowed: false,
            shown_partial: String::new(),
            spool: Spool::create(spool_path, budget),
            live: Feed::new(OUTPUT_CAPACITY),
        }
    }

    /// Path of the file with the complete output.
    pub(crate) fn spool_path(&self) -> &Path {
        self.spool.path()
    }

    /// Why the file at [`Self::spool_path`] does not hold the whole output, if it does not.
    pub(crate) fn spool_lost(&self) -> Option<&str> {
        self.spool.lost()
    }

    /// The command's live output: its rendered lines as they complete, closed when it ends.
    pub(crate) fn live(&self) -> &Arc<Feed> {
        &self.live
    }

    /// Adds raw terminal bytes.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.screen.feed(bytes);
        for line in self.screen.take_lines() {
            self.push_line(line);
        }
    }

    /// Ends the unfinished line (the command is over).
    pub(crate) fn finish(&mut self) {
        if self.screen.has_partial() {
            self.screen.feed(b"\n");
            for line in self.screen.take_lines() {
                self.push_line(line);
            }
        }
        self.spool.close();
        self.live.close();
    }

    fn push_line(&mut self, line: String) {
        self.spool.write_line(&line);
        self.live.push(format!("{line}\n").as_bytes());
        self.window_chars += line.len();
        self.window.push_back(line);
        while self.window.len() > MAX_LINES || self.window_chars > MAX_WINDOW_CHARS {
            match self.window.pop_front() {
                Some(old) => self.window_chars -= old.len(),
                None => break,
            }
            self.overflowed = true;
        }
    }

    /// Takes what appeared since the previous call: the text, and the number of lines kept when
    /// older lines had to be dropped.
    pub(crate) fn take(&mut self) -> (String, Option<usize>) {
        let mut lines: Vec<String> = self.window.drain(..).collect();
        self.window_chars = 0;
        let partial = self.screen.partial_line();
        if !partial.is_empty() {
            lines.push(partial.clone());
        }
        if !self.shown_partial.is_empty()
            && let Some(first) = lines.first_mut()
            && let Some(rest) = first.strip_prefix(self.shown_partial.as_str())
        {
            *first = rest.to_owned();
        }
        self.shown_partial = partial;
        self.spool.flush();
        let kept = std::mem::take(&mut self.overflowed).then_some(lines.len());
        (lines.join("\n").trim().to_owned(), kept)
    }
}

#[cfg(test)]
mod tests;
