//! The output of one command as the agent sees it: rendered lines, the bounded window kept for
//! observations, the spool file that keeps everything, and the reference's size rules (docs/protocol.md §4.6).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::render::Screen;

/// Lines kept for an observation, as the reference's tmux history (10 000 + a visible margin).
const MAX_LINES: usize = 10_013;
/// Characters kept for an observation, so that a few huge lines cannot exhaust memory.
const MAX_WINDOW_CHARS: usize = 32 * 1024 * 1024;
/// Bytes written to one spool file before it stops growing.
const MAX_SPOOL_BYTES: u64 = 512 * 1024 * 1024;

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
}

impl CommandOutput {
    /// Starts collecting; the whole output also goes to `spool_path`.
    pub(crate) fn new(spool_path: PathBuf) -> Self {
        CommandOutput {
            screen: Screen::new(),
            window: VecDeque::new(),
            window_chars: 0,
            overflowed: false,
            shown_partial: String::new(),
            spool: Spool::create(spool_path),
        }
    }

    /// Path of the file with the complete output.
    pub(crate) fn spool_path(&self) -> &Path {
        &self.spool.path
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
        self.spool.flush();
    }

    fn push_line(&mut self, line: String) {
        self.spool.write_line(&line);
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

/// The append-only file with a command's complete rendered output.
#[derive(Debug)]
struct Spool {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    written: u64,
}

impl Spool {
    fn create(path: PathBuf) -> Self {
        let file = match File::create(&path) {
            Ok(f) => Some(BufWriter::new(f)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot create the output file");
                None
            }
        };
        Spool {
            path,
            file,
            written: 0,
        }
    }

    fn write_line(&mut self, line: &str) {
        let Some(file) = &mut self.file else { return };
        if self.written >= MAX_SPOOL_BYTES {
            return;
        }
        self.written += line.len() as u64 + 1;
        let result = if self.written >= MAX_SPOOL_BYTES {
            writeln!(
                file,
                "{line}\n[sandboxd: output beyond {MAX_SPOOL_BYTES} bytes was not kept]"
            )
        } else {
            writeln!(file, "{line}")
        };
        if let Err(e) = result {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the output file");
            self.file = None;
        }
    }

    fn flush(&mut self) {
        if let Some(file) = &mut self.file {
            let _ = file.flush();
        }
    }
}

#[cfg(test)]
mod tests;
