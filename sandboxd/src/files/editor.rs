//! The `oh_aci` file editor (docs/protocol.md §7): `view`, `create`, `str_replace`, `insert` and
//! `undo_edit` with the reference's validation order, messages, `cat -n` output, per-file undo
//! history and per-file encodings.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use nix::fcntl::OFlag;
use protocol::Observation;
use protocol::action::FileEditArgs;

use super::FileContext;
use super::binary::{is_binary_file, open_regular};
use super::difflib::get_diff;
use super::encoding::{self, DETECTION_SAMPLE, TextEncoding};
use super::listing;
use super::pycompat::{
    PyInt, os_error_message, py_int_list, py_is_absolute, py_parse_int, py_path_join, py_path_str,
    py_splitlines, py_strip, py_suffix, truncate_chars,
};
use crate::observations;

/// Files larger than this are refused (`MAX_FILE_SIZE_MB = 10`).
const MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
/// Output longer than this many characters is clipped (`MAX_RESPONSE_LEN_CHAR`).
const MAX_RESPONSE_CHARS: usize = 16_000;
/// Lines of context around an edit in the snippet (`SNIPPET_CONTEXT_WINDOW`).
const SNIPPET_CONTEXT_WINDOW: i64 = 4;
/// Undo entries kept per file (`max_history_per_file`).
const MAX_HISTORY_PER_FILE: usize = 10;
/// Bytes of undo history kept over all files; past it the oldest entries anywhere go first.
/// The reference keeps its history on disk without a bound; we keep it in memory.
const HISTORY_BUDGET_BYTES: usize = 256 * 1024 * 1024;
/// Encoding cache entries kept before the cache is emptied.
const MAX_CACHED_ENCODINGS: usize = 4096;

/// Document types the reference converts to Markdown for `view` and refuses to edit.
const SUPPORTED_BINARY_EXTENSIONS: [&str; 8] = [
    ".docx", ".xlsx", ".pptx", ".pdf", ".mp3", ".wav", ".m4a", ".flac",
];

/// Appended to file text cut at [`MAX_RESPONSE_CHARS`] before numbering.
pub(crate) const TEXT_FILE_TRUNCATED_NOTICE: &str = "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>";

/// An editor failure; its text follows `ERROR:\n` in the observation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ToolError(String);

type EditorResult<T> = Result<T, ToolError>;

/// `EditorToolParameterInvalidError(parameter, value, hint)`.
fn invalid(parameter: &str, value: impl std::fmt::Display, hint: &str) -> ToolError {
    ToolError(format!("Invalid `{parameter}` parameter: {value}. {hint}"))
}

/// `EditorToolParameterMissingError(command, parameter)`.
fn missing(command: &str, parameter: &str) -> ToolError {
    ToolError(format!(
        "Parameter `{parameter}` is required for command: {command}."
    ))
}

/// What a successful command produced: its output and, for the `diff` extras, the file text
/// before and after.
#[derive(Debug)]
struct EditOutcome {
    output: String,
    old: Option<String>,
    new: Option<String>,
}

impl EditOutcome {
    fn output(output: String) -> Self {
        EditOutcome {
            output,
            old: None,
            new: None,
        }
    }
}

/// A file's decoded text and the encoding to write it back with.
struct FileText {
    text: String,
    encoding: TextEncoding,
}

/// The editor's mutable state.
#[derive(Default)]
struct State {
    /// Undo history per normalised path: `(sequence number, previous text)`, newest last.
    history: HashMap<String, VecDeque<(u64, String)>>,
    history_bytes: usize,
    next_sequence: u64,
    /// Detected encodings by normalised path, valid while the file's mtime is unchanged.
    encodings: HashMap<String, (SystemTime, TextEncoding)>,
}

impl State {
    fn push_history(&mut self, path: &str, text: String) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.history_bytes += text.len();
        let entries = self.history.entry(path.to_owned()).or_default();
        entries.push_back((sequence, text));
        if entries.len() > MAX_HISTORY_PER_FILE
            && let Some((_, dropped)) = entries.pop_front()
        {
            self.history_bytes -= dropped.len();
        }
        while self.history_bytes > HISTORY_BUDGET_BYTES {
            let oldest = self
                .history
                .iter()
                .filter_map(|(key, entries)| entries.front().map(|(seq, _)| (*seq, key.clone())))
                .min();
            let Some((_, key)) = oldest else { break };
            if let Some(entries) = self.history.get_mut(&key) {
                if let Some((_, dropped)) = entries.pop_front() {
                    self.history_bytes -= dropped.len();
                }
                if entries.is_empty() {
                    self.history.remove(&key);
                }
            }
        }
    }

    fn pop_history(&mut self, path: &str) -> Option<String> {
        let entries = self.history.get_mut(path)?;
        let (_, text) = entries.pop_back()?;
        self.history_bytes -= text.len();
        if entries.is_empty() {
            self.history.remove(path);
        }
        Some(text)
    }
}

/// The `oh_aci` editor: per-file undo history (at most 10 entries per file, newest last) and an
/// encoding cache keyed by path and mtime. Methods take `&self`; state sits behind mutexes, and
/// commands that modify files are serialised so that concurrent edits cannot interleave.
pub(crate) struct Editor {
    state: Mutex<State>,
    edits: Mutex<()>,
}

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("Editor");
        // `try_lock`: formatting must not deadlock when the caller holds the state.
        match self.state.try_lock() {
            Ok(state) => out
                .field("files_with_history", &state.history.len())
                .field("history_bytes", &state.history_bytes)
                .field("cached_encodings", &state.encodings.len()),
            Err(_) => out.field("state", &"<locked>"),
        };
        out.finish()
    }
}

impl Default for Editor {
    fn default() -> Self {
        Self::new()
    }
}

/// Locks a mutex, carrying on after a panic elsewhere (the state stays consistent: every
/// update is a single push or pop).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The editor's `insert_line`, after the server's conversion of strings to integers.
fn parse_insert_line(value: Option<&serde_json::Value>) -> Result<Option<PyInt>, String> {
    use serde_json::Value;
    let invalid = |text: &str| format!("Invalid insert_line value: '{text}'. Expected an integer.");
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => py_parse_int(text).map(Some).ok_or_else(|| invalid(text)),
        Some(Value::Number(number)) => {
            if let Some(v) = number.as_i64() {
                Ok(Some(PyInt::Small(v)))
            } else if let Some(v) = number.as_u64() {
                Ok(Some(PyInt::Big(v.to_string())))
            } else {
                // An integral float such as 3.0 is taken as 3; others are refused.
                match number.as_f64() {
                    Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e18 => {
                        Ok(Some(PyInt::Small(f as i64)))
                    }
                    _ => Err(invalid(&number.to_string())),
                }
            }
        }
        Some(other) => Err(invalid(&other.to_string())),
    }
}

/// Number of lines as Python counts them iterating a file (a last line without `\n` counts).
fn count_lines(text: &str) -> i64 {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    let partial = usize::from(!text.is_empty() && !text.ends_with('\n'));
    i64::try_from(newlines + partial).unwrap_or(i64::MAX)
}

/// Lines `first..=last` (1-based) with their terminators, as `read_file(start, end)` returns.
fn line_range(text: &str, first: i64, last: i64) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| {
            let number = i64::try_from(*i).unwrap_or(i64::MAX).saturating_add(1);
            number >= first && number <= last
        })
        .map(|(_, line)| line)
        .collect()
}

/// `_make_output(text, description, first)`: clip, number every `\n`-separated piece
/// `{:6}\t`, wrap in the `cat -n` header.
fn make_output(text: &str, description: &str, first: i64) -> String {
    let text = truncate_chars(text, MAX_RESPONSE_CHARS, TEXT_FILE_TRUNCATED_NOTICE);
    let mut numbered = String::with_capacity(text.len() + text.len() / 8 + 64);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            numbered.push('\n');
        }
        let number = first.saturating_add(i64::try_from(i).unwrap_or(i64::MAX));
        numbered.push_str(&format!("{number:6}\t{line}"));
    }
    format!("Here's the result of running `cat -n` on {description}:\n{numbered}\n")
}

fn is_supported_binary(path: &str) -> bool {
    let suffix = py_suffix(path).to_lowercase();
    SUPPORTED_BINARY_EXTENSIONS.contains(&suffix.as_str())
}

/// `Path.exists()`: follows symlinks; any error counts as "does not exist".
fn exists(path: &str) -> bool {
    fs::metadata(path).is_ok()
}

/// `Path.is_dir()`.
fn is_dir(path: &str) -> bool {
    fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false)
}

impl Editor {
    /// An editor with empty history and caches.
    pub(crate) fn new() -> Self {
        Editor {
            state: Mutex::new(State::default()),
            edits: Mutex::new(()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The `edit` action (all five commands + validation), returning an `edit` observation:
    /// content = output or `ERROR:\n{message}`, `diff` = unified diff of the file before and
    /// after (`""` for `view` and on error).
    pub(crate) fn edit(&self, args: &FileEditArgs, ctx: &FileContext) -> Observation {
        let respond = |content: String, diff: String| {
            observations::edit(
                &args.path,
                content,
                args.old_str.clone(),
                args.new_str.clone(),
                diff,
            )
        };
        if args.impl_source != "oh_aci" {
            return respond(
                format!(
                    "ERROR:\nUnsupported impl_source `{}` for the edit action: sandboxd only runs the `oh_aci` editor.",
                    args.impl_source
                ),
                String::new(),
            );
        }
        let insert_line = match parse_insert_line(args.insert_line.as_ref()) {
            Ok(value) => value,
            Err(message) => return respond(format!("ERROR:\n{message}"), String::new()),
        };
        let request = Request {
            command: &args.command,
            path: &args.path,
            file_text: args.file_text.as_deref(),
            view_range: args.view_range.as_deref(),
            old_str: args.old_str.as_deref(),
            new_str: args.new_str.as_deref(),
            insert_line,
        };
        match self.execute(&request, ctx) {
            Err(ToolError(message)) => {
                let message = super::denied::explain(message, Path::new(&args.path));
                respond(format!("ERROR:\n{message}"), String::new())
            }
            Ok(outcome) if outcome.output.is_empty() => respond(String::new(), String::new()),
            Ok(outcome) => {
                let diff = get_diff(
                    outcome.old.as_deref().unwrap_or(""),
                    outcome.new.as_deref().unwrap_or(""),
                    &args.path,
                );
                respond(outcome.output, diff)
            }
        }
    }

    /// The editor's `view` for a `read` with `impl_source: oh_aci`: the output, or
    /// `ERROR:\n{message}`.
    pub(crate) fn view_for_read(
        &self,
        path: &str,
        view_range: Option<&[i64]>,
        ctx: &FileContext,
    ) -> String {
        let request = Request {
            command: "view",
            path,
            file_text: None,
            view_range,
            old_str: None,
            new_str: None,
            insert_line: None,
        };
        match self.execute(&request, ctx) {
            Ok(outcome) => outcome.output,
            Err(ToolError(message)) => format!("ERROR:\n{message}"),
        }
    }

    /// `OHEditor.__call__`: path validation, then the command.
    fn execute(&self, request: &Request<'_>, ctx: &FileContext) -> EditorResult<EditOutcome> {
        let path = py_path_str(request.path);
        let command = request.command;
        // Commands that may modify files run one at a time, validation included, as every
        // action did in the reference.
        let _guard = (command != "view").then(|| lock(&self.edits));
        validate_path(command, &path, ctx)?;
        match command {
            "view" => self.view(&path, request.view_range),
            "create" => {
                let text = request
                    .file_text
                    .ok_or_else(|| missing(command, "file_text"))?;
                self.create(&path, text, ctx)
            }
            "str_replace" => {
                let old_str = request.old_str.ok_or_else(|| missing(command, "old_str"))?;
                if request.new_str == Some(old_str) {
                    return Err(invalid(
                        "new_str",
                        old_str,
                        "No replacement was performed. `new_str` and `old_str` must be different.",
                    ));
                }
                self.str_replace(&path, old_str, request.new_str.unwrap_or(""))
            }
            "insert" => {
                let line = request
                    .insert_line
                    .as_ref()
                    .ok_or_else(|| missing(command, "insert_line"))?;
                let new_str = request.new_str.ok_or_else(|| missing(command, "new_str"))?;
                self.insert(&path, line, new_str)
            }
            "undo_edit" => self.undo_edit(&path),
            _ => Err(ToolError(format!(
                "Unrecognized command {command}. The allowed commands for the oh_editor tool are: view, create, str_replace, insert, undo_edit"
            ))),
        }
    }

    fn view(&self, path: &str, view_range: Option<&[i64]>) -> EditorResult<EditOutcome> {
        let view_range = view_range.filter(|range| !range.is_empty());
        if is_dir(path) {
            if let Some(range) = view_range {
                return Err(invalid(
                    "view_range",
                    py_int_list(range),
                    "The `view_range` parameter is not allowed when `path` points to a directory.",
                ));
            }
            return listing::view_directory(path)
                .map(EditOutcome::output)
                .map_err(ToolError);
        }

        validate_file(path)?;
        if is_supported_binary(path) {
            return Err(ToolError(format!(
                "Error in converting file to Markdown: converting documents is not supported by sandboxd. Please use Python code to read {path}"
            )));
        }
        let FileText { text, .. } = self.read_text(path)?;
        let Some(range) = view_range else {
            return Ok(EditOutcome::output(make_output(&text, path, 1)));
        };
        let num_lines = count_lines(&text);
        let &[start, end] = range else {
            return Err(invalid(
                "view_range",
                py_int_list(range),
                "It should be a list of two integers.",
            ));
        };
        if start < 1 || start > num_lines {
            return Err(invalid(
                "view_range",
                py_int_list(range),
                &format!(
                    "Its first element `{start}` should be within the range of lines of the file: {}.",
                    py_int_list(&[1, num_lines])
                ),
            ));
        }
        let mut warning = None;
        let end = if end == -1 {
            num_lines
        } else if end > num_lines {
            warning = Some(format!(
                "We only show up to {num_lines} since there're only {num_lines} lines in this file."
            ));
            num_lines
        } else {
            end
        };
        if end < start {
            return Err(invalid(
                "view_range",
                py_int_list(range),
                &format!(
                    "Its second element `{end}` should be greater than or equal to the first element `{start}`."
                ),
            ));
        }
        let selected = line_range(&text, start, end);
        let output = make_output(&py_splitlines(&selected).join("\n"), path, start);
        Ok(EditOutcome::output(match warning {
            Some(warning) => format!("NOTE: {warning}\n{output}"),
            None => output,
        }))
    }

    fn create(&self, path: &str, file_text: &str, ctx: &FileContext) -> EditorResult<EditOutcome> {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(OFlag::O_NONBLOCK.bits())
            .open(path)
            .map_err(|err| write_error(&err, path))?;
        file.write_all(file_text.as_bytes())
            .map_err(|err| write_error(&err, path))?;
        drop(file);
        if let Some((uid, gid)) = ctx.owner {
            // Best effort: the reference leaves created files to the server's user.
            let _ = std::os::unix::fs::chown(path, Some(uid), Some(gid));
        }
        self.state().push_history(path, file_text.to_owned());
        Ok(EditOutcome {
            output: format!("File created successfully at: {path}"),
            old: None,
            new: Some(file_text.to_owned()),
        })
    }

    fn str_replace(&self, path: &str, old_str: &str, new_str: &str) -> EditorResult<EditOutcome> {
        let FileText {
            text: content,
            encoding,
        } = self.read_valid_text(path)?;

        let (mut old_str, mut new_str) = (old_str, new_str);
        let mut occurrences = Occurrences::find(&content, old_str);
        if occurrences.count == 0 {
            // Retry with both strings stripped, as the reference does.
            old_str = py_strip(old_str);
            new_str = py_strip(new_str);
            occurrences = Occurrences::find(&content, old_str);
        }
        let (line, index) = match occurrences.first {
            None => {
                return Err(ToolError(format!(
                    "No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
                )));
            }
            Some(_) if occurrences.count > 1 => {
                return Err(ToolError(format!(
                    "No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines {}. Please ensure it is unique.",
                    py_int_list(&occurrences.lines)
                )));
            }
            Some(first) => first,
        };
        let mut new_content = String::with_capacity(content.len() + new_str.len());
        new_content.push_str(&content[..index]);
        new_content.push_str(new_str);
        new_content.push_str(&content[index + old_str.len()..]);

        write_text(path, &new_content, encoding)?;
        self.state().push_history(path, content.clone());
        // The reference reads the snippet back from the file: a `\r` in `new_str` is a line end
        // by then.
        let reread = encoding::universal_newlines(new_content.clone());

        let start_line = (line - SNIPPET_CONTEXT_WINDOW).max(0);
        let newlines = i64::try_from(new_str.matches('\n').count()).unwrap_or(i64::MAX);
        let end_line = line
            .saturating_add(SNIPPET_CONTEXT_WINDOW)
            .saturating_add(newlines);
        let snippet = line_range(&reread, start_line + 1, end_line);
        let output = format!(
            "The file {path} has been edited. {}Review the changes and make sure they are as expected. Edit the file again if necessary.",
            make_output(&snippet, &format!("a snippet of {path}"), start_line + 1)
        );
        Ok(EditOutcome {
            output,
            old: Some(content),
            new: Some(new_content),
        })
    }

    fn insert(&self, path: &str, insert_line: &PyInt, new_str: &str) -> EditorResult<EditOutcome> {
        let FileText {
            text: content,
            encoding,
        } = self.read_valid_text(path)?;
        let num_lines = count_lines(&content);
        let line = match *insert_line {
            PyInt::Small(line) if (0..=num_lines).contains(&line) => line,
            _ => {
                return Err(invalid(
                    "insert_line",
                    insert_line,
                    &format!(
                        "It should be within the range of allowed values: {}",
                        py_int_list(&[0, num_lines])
                    ),
                ));
            }
        };
        let pieces: Vec<&str> = new_str.split('\n').collect();
        let mut new_content = String::with_capacity(content.len() + new_str.len() + 1);
        let mut lines = content.split_inclusive('\n');
        for current in lines.by_ref().take(usize::try_from(line).unwrap_or(0)) {
            new_content.push_str(current);
        }
        for piece in &pieces {
            new_content.push_str(piece);
            new_content.push('\n');
        }
        for rest in lines {
            new_content.push_str(rest);
        }

        write_text(path, &new_content, encoding)?;
        // The reference reads the new text back from the file (universal newlines).
        let new_content = encoding::universal_newlines(new_content);

        let inserted = i64::try_from(pieces.len()).unwrap_or(i64::MAX);
        let start_line = (line - SNIPPET_CONTEXT_WINDOW).max(0);
        let end_line = (num_lines + inserted).min(line + SNIPPET_CONTEXT_WINDOW + inserted);
        let snippet = line_range(&new_content, start_line + 1, end_line);
        self.state().push_history(path, content.clone());

        let output = format!(
            "The file {path} has been edited. {}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
            make_output(
                &snippet,
                "a snippet of the edited file",
                (line - SNIPPET_CONTEXT_WINDOW + 1).max(1)
            )
        );
        Ok(EditOutcome {
            output,
            old: Some(content),
            new: Some(new_content),
        })
    }

    fn undo_edit(&self, path: &str) -> EditorResult<EditOutcome> {
        let FileText {
            text: current,
            encoding,
        } = self.read_valid_text(path)?;
        let previous = self
            .state()
            .pop_history(path)
            .ok_or_else(|| ToolError(format!("No edit history found for {path}.")))?;
        if let Err(err) = write_text(path, &previous, encoding) {
            // Keep the entry for another try rather than losing it.
            self.state().push_history(path, previous);
            return Err(err);
        }
        let output = format!(
            "Last edit to {path} undone successfully. {}",
            make_output(&previous, path, 1)
        );
        Ok(EditOutcome {
            output,
            old: Some(current),
            new: Some(previous),
        })
    }

    /// [`validate_file`], then [`Self::read_text`]: the text of a file to change.
    fn read_valid_text(&self, path: &str) -> EditorResult<FileText> {
        validate_file(path)?;
        self.read_text(path)
    }

    /// `read_file(path)`: the whole file, decoded with its (cached) encoding, universal newlines
    /// applied. Errors read `Ran into {e} while trying to read {path}`.
    fn read_text(&self, path: &str) -> EditorResult<FileText> {
        let ran_into = |e: String| ToolError(format!("Ran into {e} while trying to read {path}"));
        let file = match open_regular(Path::new(path)) {
            Ok(Some(file)) => file,
            Ok(None) => return Err(not_regular(path)),
            Err(err) => return Err(ran_into(os_error_message(&err, path))),
        };
        let meta = file
            .metadata()
            .map_err(|err| ran_into(os_error_message(&err, path)))?;
        let mut bytes = Vec::new();
        file.take(MAX_FILE_SIZE + 1)
            .read_to_end(&mut bytes)
            .map_err(|err| ran_into(os_error_message(&err, path)))?;
        if bytes.len() as u64 > MAX_FILE_SIZE {
            return Err(too_large(path, bytes.len() as u64));
        }
        let encoding = self.encoding_of(path, meta.modified().ok(), &bytes);
        let text = encoding::decode(&bytes, encoding).map_err(ran_into)?;
        Ok(FileText {
            text: encoding::universal_newlines(text),
            encoding,
        })
    }

    /// The encoding of `path` whose content is `bytes`, cached by path and mtime.
    fn encoding_of(&self, path: &str, mtime: Option<SystemTime>, bytes: &[u8]) -> TextEncoding {
        if let Some(mtime) = mtime
            && let Some(&(cached_mtime, encoding)) = self.state().encodings.get(path)
            && cached_mtime == mtime
        {
            return encoding;
        }
        let sample = &bytes[..bytes.len().min(DETECTION_SAMPLE)];
        let encoding = encoding::detect(sample, bytes.len() <= DETECTION_SAMPLE);
        if let Some(mtime) = mtime {
            let mut state = self.state();
            if state.encodings.len() >= MAX_CACHED_ENCODINGS {
                state.encodings.clear();
            }
            state.encodings.insert(path.to_owned(), (mtime, encoding));
        }
        encoding
    }
}

/// The arguments of one editor call.
struct Request<'a> {
    command: &'a str,
    path: &'a str,
    file_text: Option<&'a str>,
    view_range: Option<&'a [i64]>,
    old_str: Option<&'a str>,
    new_str: Option<&'a str>,
    insert_line: Option<PyInt>,
}

/// `validate_path(command, path)` (`path` already normalised like `str(Path)`).
fn validate_path(command: &str, path: &str, ctx: &FileContext) -> EditorResult<()> {
    if !py_is_absolute(path) {
        let mut hint = "The path should be an absolute path, starting with `/`.".to_owned();
        let suggested = py_path_join(&ctx.initial_dir.to_string_lossy(), path);
        if exists(&suggested) {
            hint.push_str(&format!(" Maybe you meant {suggested}?"));
        }
        return Err(invalid("path", path, &hint));
    }
    let path_exists = exists(path);
    if command == "create" && path_exists {
        return Err(invalid(
            "path",
            path,
            &format!(
                "File already exists at: {path}. Cannot overwrite files using command `create`."
            ),
        ));
    }
    if command != "create" && !path_exists {
        return Err(invalid(
            "path",
            path,
            &format!("The path {path} does not exist. Please provide a valid path."),
        ));
    }
    if command != "view" {
        if is_dir(path) {
            return Err(invalid(
                "path",
                path,
                &format!(
                    "The path {path} is a directory and only the `view` command can be used on directories."
                ),
            ));
        }
        if is_supported_binary(path) {
            return Err(invalid(
                "path",
                path,
                &format!(
                    "The path {path} points to a binary file ({}) and only the `view` command can be used on supported binary files.",
                    py_suffix(path)
                ),
            ));
        }
    }
    Ok(())
}

fn too_large(path: &str, size: u64) -> ToolError {
    ToolError(format!(
        "File validation failed for {path}: File is too large ({:.1}MB). Maximum allowed size is 10MB.",
        size as f64 / 1024.0 / 1024.0
    ))
}

/// Special files (FIFOs, sockets, devices) would block or never end; the reference hangs on a
/// FIFO, we refuse them with a validation error.
fn not_regular(path: &str) -> ToolError {
    ToolError(format!(
        "File validation failed for {path}: The path is not a regular file, so this tool cannot read or edit it."
    ))
}

/// `validate_file(path)`: size (from metadata, without reading), then binary content unless the
/// type is a supported document. Missing paths and directories pass.
fn validate_file(path: &str) -> EditorResult<()> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        return Ok(());
    }
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    if meta.len() > MAX_FILE_SIZE {
        return Err(too_large(path, meta.len()));
    }
    if is_supported_binary(path) {
        return Ok(());
    }
    if is_binary_file(Path::new(path)) {
        return Err(ToolError(format!(
            "File validation failed for {path}: File appears to be binary and this file type cannot be read or edited by this tool."
        )));
    }
    Ok(())
}

/// `Ran into {e} while trying to write to {path}`.
fn write_error(err: &io::Error, path: &str) -> ToolError {
    ToolError(format!(
        "Ran into {} while trying to write to {path}",
        os_error_message(err, path)
    ))
}

/// `write_file(path, text)` for an existing file: encoded first (so an unencodable character
/// leaves the file untouched), then written in place, keeping mode and owner.
fn write_text(path: &str, text: &str, encoding: TextEncoding) -> EditorResult<()> {
    let bytes = encoding::encode(text, encoding)
        .map_err(|e| ToolError(format!("Ran into {e} while trying to write to {path}")))?;
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|err| write_error(&err, path))?;
    file.write_all(&bytes)
        .map_err(|err| write_error(&err, path))
}

/// Literal, non-overlapping matches of a needle as `re.finditer(re.escape(needle))` finds them.
/// An empty needle matches at every position, the end included.
#[derive(Debug, PartialEq, Eq)]
struct Occurrences {
    /// `(1-based line, byte offset)` of the first match.
    first: Option<(i64, usize)>,
    /// Number of matches.
    count: usize,
    /// The distinct lines where matches start, ascending.
    lines: Vec<i64>,
}

impl Occurrences {
    fn find(haystack: &str, needle: &str) -> Self {
        let mut found = Occurrences {
            first: None,
            count: 0,
            lines: Vec::new(),
        };
        let mut line: i64 = 1;
        let mut counted_to = 0;
        for (index, _) in haystack.match_indices(needle) {
            let newlines = haystack.as_bytes()[counted_to..index]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            line += i64::try_from(newlines).unwrap_or(0);
            counted_to = index;
            found.first.get_or_insert((line, index));
            found.count += 1;
            if found.lines.last() != Some(&line) {
                found.lines.push(line);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests;
