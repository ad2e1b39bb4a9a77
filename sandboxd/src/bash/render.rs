//! Renders raw terminal output (bytes read from the PTY) into the text a person would read on the
//! terminal: `\n`-separated lines without escape sequences, with carriage-return, backspace and
//! in-line cursor movement applied, and trailing whitespace removed from each line.
//!
//! The model is one logical line at a time on a terminal [`TERMINAL_COLUMNS`] wide whose long lines
//! wrap and are joined again when read back (like `tmux capture-pane -J`). What is applied:
//!
//! * printable characters overwrite the line at the cursor, one column each (wide and combining
//!   characters are not measured); invalid UTF-8 becomes U+FFFD;
//! * `\n` (and `\r\n`) finishes the line; `\r` returns to the start of the cursor's row, so
//!   `50%\r100%\n` reads `100%`; backspace moves one column left;
//! * `\t` is kept as a tab character occupying one column;
//! * CSI `K` (erase to end of line / from start / whole row), `X` (erase characters),
//!   `P` (delete characters), `@` (insert blanks), `G` and `` ` `` (column absolute),
//!   `C`/`a` (forward) and `D` (back);
//! * everything else is dropped: other C0/C1 controls (BEL, …), SGR colours and every other CSI
//!   sequence, OSC strings (BEL- or ST-terminated), DCS/SOS/PM/APC strings, charset selects,
//!   keypad modes and other ESC sequences. Sequences that move to another row or clear the
//!   screen (cursor up/down/position, `J`, scrolling, alternate screen) are ignored: output
//!   is read as a stream of lines, so a full-screen program's redraws come out as text appended
//!   line by line rather than as its final screen.
//!
//! A line longer than [`MAX_LINE_CHARS`] is broken there, which bounds memory.

use std::fmt;

/// Width of the terminal the PTY reports, in columns; `\r` and column moves act on rows this wide.
const TERMINAL_COLUMNS: usize = 1000;

/// Longest line kept before it is broken into several (a multiple of [`TERMINAL_COLUMNS`]).
const MAX_LINE_CHARS: usize = 1024 * TERMINAL_COLUMNS;

/// A streaming renderer of terminal output into lines.
pub(crate) struct Screen {
    parser: vte::Parser,
    lines: Lines,
}

/// The rendering state driven by the escape-sequence parser.
///
/// The current line is kept as a `String` while it has only been appended to (the common case,
/// and the fast one), and as one char per column once the cursor moved back into it.
#[derive(Debug, Default)]
struct Lines {
    /// The current line while it has only been appended to.
    text: String,
    /// Chars in `text`.
    text_chars: usize,
    /// Whether the current line lives in `cells` instead of `text`.
    in_cells: bool,
    /// The current line, one char per column, once it is edited in place.
    cells: Vec<char>,
    /// Column of the cursor in the current line; may be past its end.
    cursor: usize,
    /// Lines finished since the last [`Screen::take_lines`].
    finished: Vec<String>,
}

impl Screen {
    /// An empty screen, cursor at the first column.
    pub(crate) fn new() -> Self {
        Self {
            parser: vte::Parser::new(),
            lines: Lines::default(),
        }
    }

    /// Feed raw bytes (any chunking: an escape sequence or UTF-8 char may be split across calls).
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.parser.advance(&mut self.lines, bytes);
    }

    /// Take the lines finished (by `\n`) since the last call, each with trailing spaces removed.
    pub(crate) fn take_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines.finished)
    }

    /// The current unfinished line as rendered so far (trailing spaces removed).
    pub(crate) fn partial_line(&self) -> String {
        if self.lines.in_cells {
            render(&self.lines.cells)
        } else {
            self.lines.text.trim_end().to_owned()
        }
    }

    /// Whether the current unfinished line has any content.
    pub(crate) fn has_partial(&self) -> bool {
        if self.lines.in_cells {
            self.lines.cells.iter().any(|c| !c.is_whitespace())
        } else {
            self.lines.text.chars().any(|c| !c.is_whitespace())
        }
    }
}

impl Default for Screen {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Screen")
            .field("line", &self.partial_line())
            .field("cursor", &self.lines.cursor)
            .field("finished", &self.lines.finished.len())
            .finish_non_exhaustive()
    }
}

/// A line's text without trailing whitespace.
fn render(line: &[char]) -> String {
    let end = line
        .iter()
        .rposition(|c| !c.is_whitespace())
        .map_or(0, |last| last + 1);
    line.get(..end).unwrap_or_default().iter().collect()
}

impl Lines {
    /// Column where the cursor's row starts. With the cursor just past a full row (a wrap is
    /// pending, as after printing exactly [`TERMINAL_COLUMNS`] characters) it is still on that row.
    fn row_start(&self) -> usize {
        self.cursor.saturating_sub(1) / TERMINAL_COLUMNS * TERMINAL_COLUMNS
    }

    /// The last column of the cursor's row.
    fn row_last(&self) -> usize {
        self.row_start() + TERMINAL_COLUMNS - 1
    }

    fn finish_line(&mut self) {
        if self.in_cells {
            self.finished.push(render(&self.cells));
            self.cells.clear();
            self.in_cells = false;
        } else {
            self.finished.push(self.text.trim_end().to_owned());
            self.text.clear();
            self.text_chars = 0;
        }
        self.cursor = 0;
    }

    /// Moves the current line into `cells`, for editing in place.
    fn cells(&mut self) -> &mut Vec<char> {
        if !self.in_cells {
            self.cells.clear();
            self.cells.extend(self.text.chars());
            self.text.clear();
            self.text_chars = 0;
            self.in_cells = true;
        }
        &mut self.cells
    }

    /// Writes `c` at `column`, padding with spaces if the line is shorter.
    fn put(&mut self, column: usize, c: char) {
        let cells = self.cells();
        if let Some(slot) = cells.get_mut(column) {
            *slot = c;
        } else {
            cells.resize(column, ' ');
            cells.push(c);
        }
    }

    /// Blanks columns `from..to` (only those that exist).
    fn blank(&mut self, from: usize, to: usize) {
        let cells = self.cells();
        let to = to.min(cells.len());
        if let Some(cells) = cells.get_mut(from..to) {
            cells.fill(' ');
        }
    }

    fn erase_in_line(&mut self, mode: u16) {
        let (start, cursor) = (self.row_start(), self.cursor);
        let row_end = start + TERMINAL_COLUMNS;
        let len = self.cells().len();
        match mode {
            0 if row_end >= len => self.cells.truncate(cursor),
            0 => self.blank(cursor, row_end),
            1 => self.blank(start, cursor + 1),
            2 if row_end >= len => self.cells.truncate(start),
            2 => self.blank(start, row_end),
            _ => {}
        }
    }

    fn csi(&mut self, params: &vte::Params, action: char) {
        // The first parameter, with 0 (or absent) meaning `default`.
        let first = |default: u16| {
            params
                .iter()
                .next()
                .and_then(|p| p.first().copied())
                .filter(|&n| n != 0)
                .unwrap_or(default)
        };
        match action {
            'K' => {
                let mode = params.iter().next().and_then(|p| p.first().copied());
                self.erase_in_line(mode.unwrap_or(0));
            }
            'G' | '`' => {
                let column = usize::from(first(1)) - 1;
                self.cursor = self.row_start() + column.min(TERMINAL_COLUMNS - 1);
            }
            'C' | 'a' => {
                let target = self.cursor + usize::from(first(1));
                self.cursor = target.min(self.row_last());
            }
            'D' => {
                let target = self.cursor.saturating_sub(usize::from(first(1)));
                self.cursor = target.max(self.row_start());
            }
            'X' => {
                let count = usize::from(first(1));
                self.blank(self.cursor, self.cursor + count);
            }
            'P' => {
                let cursor = self.cursor;
                let cells = self.cells();
                let from = cursor.min(cells.len());
                let to = (cursor + usize::from(first(1))).min(cells.len());
                cells.drain(from..to);
            }
            '@' => {
                let cursor = self.cursor;
                let cells = self.cells();
                if cursor < cells.len() {
                    let room = MAX_LINE_CHARS.saturating_sub(cells.len());
                    let count = usize::from(first(1)).min(room);
                    cells.splice(cursor..cursor, std::iter::repeat_n(' ', count));
                }
            }
            _ => {}
        }
    }
}

impl vte::Perform for Lines {
    fn print(&mut self, c: char) {
        if c == '\x7f' {
            return;
        }
        if self.cursor >= MAX_LINE_CHARS {
            self.finish_line();
        }
        if !self.in_cells && self.cursor == self.text_chars {
            self.text.push(c);
            self.text_chars += 1;
        } else {
            self.put(self.cursor, c);
        }
        self.cursor += 1;
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => self.finish_line(),
            b'\r' => self.cursor = self.row_start(),
            0x08 => self.cursor = self.cursor.saturating_sub(1).max(self.row_start()),
            b'\t' => self.print('\t'),
            // The parser reports a stray byte 0x80..=0x9F (invalid UTF-8) like a C1 control.
            0x80..=0x9F => self.print(char::REPLACEMENT_CHARACTER),
            _ => {}
        }
    }

    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        intermediates: &[u8],
        ignore: bool,
        action: char,
    ) {
        if intermediates.is_empty() && !ignore {
            self.csi(params, action);
        }
    }
}

#[cfg(test)]
mod tests;
