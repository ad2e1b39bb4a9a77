//! The lexer: bash source text → the tokens brush-parser's grammar takes (words, operators,
//! newlines, and each heredoc's body and end tag), with source positions.

use std::sync::Arc;

use brush_parser::{SourcePosition, SourceSpan, Token};

/// Deepest nesting (brackets, braces, parentheses, compound commands) that is handed to the
/// parsers, whose recursion would otherwise overflow a 2 MiB thread stack on hostile input.
pub(super) const MAX_NESTING: usize = 64;

/// The text is not well-formed shell (an unclosed quote, substitution or heredoc, or nesting
/// deeper than [`MAX_NESTING`]); it then counts as one statement.
#[derive(Debug)]
pub(super) struct Malformed;

/// Where [`Lexer::tokens`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
    /// The end of the text.
    End,
    /// The `)` that closes a command substitution whose `$(` was just read.
    CloseParen,
}

/// A heredoc whose body starts after the next newline.
#[derive(Debug)]
struct PendingHeredoc {
    delimiter: Vec<char>,
    strip_tabs: bool,
    /// Where its body and end-tag tokens go: right after the delimiter word, as brush expects.
    insert_at: usize,
}

/// Operators, longest first where one is a prefix of another.
const OPERATORS: [&str; 24] = [
    "&&", "&>>", "&>", "&", "||", "|&", "|", ";;&", ";;", ";&", ";", "<<<", "<<-", "<<", "<&",
    "<>", "<", ">>", ">&", ">|", ">", "(", ")", "\n",
];

/// A bash lexer producing the tokens brush-parser's grammar expects (words, operators, newline
/// operators, and for each heredoc its body and end tag right after its delimiter), with source
/// positions in chars like brush's own tokenizer. It exists because brush's tokenizer can loop
/// forever on some malformed input (e.g. `$(<< |#`); this one always consumes input and bounds its
/// recursion. Unlike brush's, it closes `$( )` correctly around `case` patterns.
#[derive(Debug)]
pub(super) struct Lexer {
    chars: Vec<char>,
    /// Byte offset of each char, plus the text's length.
    byte_offsets: Vec<usize>,
    /// Char index where each line starts.
    line_starts: Vec<usize>,
    pos: usize,
    depth: usize,
}

impl Lexer {
    pub(super) fn new(text: &str) -> Self {
        let mut chars = Vec::with_capacity(text.len());
        let mut byte_offsets = Vec::with_capacity(text.len() + 1);
        let mut line_starts = vec![0];
        for (offset, c) in text.char_indices() {
            chars.push(c);
            byte_offsets.push(offset);
            if c == '\n' {
                line_starts.push(chars.len());
            }
        }
        byte_offsets.push(text.len());
        Self {
            chars,
            byte_offsets,
            line_starts,
            pos: 0,
            depth: 0,
        }
    }

    pub(super) fn byte_offset(&self, char_index: usize) -> Option<usize> {
        self.byte_offsets.get(char_index).copied()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn position(&self, index: usize) -> Arc<SourcePosition> {
        let line = self.line_starts.partition_point(|&start| start <= index);
        let line_start = self
            .line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(0);
        Arc::new(SourcePosition {
            index,
            line,
            column: index - line_start + 1,
        })
    }

    fn span(&self, start: usize, end: usize) -> SourceSpan {
        SourceSpan {
            start: self.position(start),
            end: self.position(end),
        }
    }

    fn text(&self, start: usize, end: usize) -> String {
        self.chars
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .collect()
    }

    /// Tokenizes from the current position to the end, or (inside `$(`) through the closing `)`,
    /// which is consumed but not returned.
    pub(super) fn tokens(&mut self, until: Until) -> Result<Vec<Token>, Malformed> {
        let mut tokens = Vec::new();
        let mut heredocs: Vec<PendingHeredoc> = Vec::new();
        // After `<<`/`<<-`: whether the next word is a delimiter, and if so whether tabs are stripped.
        let mut delimiter_next: Option<bool> = None;
        let mut closer = SubstitutionCloser::default();
        while let Some(c) = self.peek() {
            let start = self.pos;
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ if is_operator_start(c) => {
                    let op = OPERATORS
                        .iter()
                        .find(|op| {
                            op.chars()
                                .enumerate()
                                .all(|(i, c)| self.peek_at(i) == Some(c))
                        })
                        .ok_or(Malformed)?;
                    if delimiter_next.is_some() {
                        return Err(Malformed);
                    }
                    self.pos += op.chars().count();
                    if until == Until::CloseParen && closer.closes(op) {
                        return if heredocs.is_empty() {
                            Ok(tokens)
                        } else {
                            Err(Malformed)
                        };
                    }
                    tokens.push(Token::Operator(
                        (*op).to_owned(),
                        self.span(start, self.pos),
                    ));
                    match *op {
                        "\n" if !heredocs.is_empty() => {
                            self.heredoc_bodies(&mut tokens, &mut heredocs)?;
                        }
                        "<<" | "<<-" => delimiter_next = Some(*op == "<<-"),
                        _ => {}
                    }
                }
                _ => {
                    let word = self.word()?;
                    closer.word(&word);
                    if let Some(strip_tabs) = delimiter_next.take() {
                        heredocs.push(PendingHeredoc {
                            delimiter: heredoc_delimiter(&word),
                            strip_tabs,
                            insert_at: tokens.len() + 1,
                        });
                    }
                    tokens.push(Token::Word(word, self.span(start, self.pos)));
                }
            }
        }
        if until == Until::End && heredocs.is_empty() && delimiter_next.is_none() {
            Ok(tokens)
        } else {
            Err(Malformed)
        }
    }

    /// Reads the bodies of `heredocs`, which start at the current position (just after a
    /// newline), and inserts a body and an end-tag token after each one's delimiter.
    fn heredoc_bodies(
        &mut self,
        tokens: &mut Vec<Token>,
        heredocs: &mut Vec<PendingHeredoc>,
    ) -> Result<(), Malformed> {
        let mut parts = Vec::with_capacity(heredocs.len());
        for heredoc in heredocs.drain(..) {
            let body_start = self.pos;
            loop {
                if self.pos >= self.chars.len() {
                    return Err(Malformed);
                }
                let line_start = self.pos;
                let line_end = self.chars[line_start..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.chars.len(), |n| line_start + n);
                let mut line = self.chars.get(line_start..line_end).unwrap_or_default();
                if heredoc.strip_tabs {
                    while let [first, rest @ ..] = line {
                        if *first != '\t' {
                            break;
                        }
                        line = rest;
                    }
                }
                let is_end = line == heredoc.delimiter.as_slice();
                self.pos = (line_end + 1).min(self.chars.len());
                if is_end {
                    let body = Token::Word(
                        self.text(body_start, line_start),
                        self.span(body_start, line_start),
                    );
                    let tag = Token::Word(
                        self.text(line_start, line_end),
                        self.span(line_start, line_end),
                    );
                    parts.push((heredoc.insert_at, body, tag));
                    break;
                }
            }
        }
        for (at, body, tag) in parts.into_iter().rev() {
            if at > tokens.len() {
                return Err(Malformed);
            }
            tokens.insert(at, tag);
            tokens.insert(at, body);
        }
        Ok(())
    }

    /// Reads one word (the current char starts it), returning its raw text.
    fn word(&mut self) -> Result<String, Malformed> {
        let mut value = String::new();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' => break,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '\\' => self.escaped(&mut value)?,
                '\'' => self.single_quoted(&mut value)?,
                '"' => self.double_quoted(&mut value)?,
                '`' => self.backquoted(&mut value)?,
                '$' => self.dollar(&mut value, false)?,
                '?' | '*' | '+' | '@' | '!' if self.peek_at(1) == Some('(') => {
                    // An extended glob such as `!(*.txt)`.
                    value.push(c);
                    value.push('(');
                    self.pos += 2;
                    self.balanced(&mut value, '(', ')', 1)?;
                }
                _ if is_operator_start(c) => break,
                _ => self.keep(&mut value, c),
            }
        }
        Ok(value)
    }

    /// Keeps `c`, the current char, in `value` and moves past it.
    fn keep(&mut self, value: &mut String, c: char) {
        value.push(c);
        self.pos += 1;
    }

    /// `'…'`, the opening quote being current.
    fn single_quoted(&mut self, value: &mut String) -> Result<(), Malformed> {
        self.keep(value, '\'');
        loop {
            let c = self.peek().ok_or(Malformed)?;
            self.keep(value, c);
            if c == '\'' {
                return Ok(());
            }
        }
    }

    /// `"…"`, the opening quote being current.
    fn double_quoted(&mut self, value: &mut String) -> Result<(), Malformed> {
        self.keep(value, '"');
        loop {
            match self.peek().ok_or(Malformed)? {
                '"' => {
                    self.keep(value, '"');
                    return Ok(());
                }
                '\\' => self.escaped(value)?,
                '`' => self.backquoted(value)?,
                '$' => self.dollar(value, true)?,
                c => self.keep(value, c),
            }
        }
    }

    /// `` `…` ``, the opening backquote being current.
    fn backquoted(&mut self, value: &mut String) -> Result<(), Malformed> {
        self.keep(value, '`');
        self.escaped_until(value, '`')
    }

    /// Reads up to and including `close`, keeping backslash escapes as they are: the rest of a
    /// `` `…` `` or a `$'…'`.
    fn escaped_until(&mut self, value: &mut String, close: char) -> Result<(), Malformed> {
        loop {
            match self.peek().ok_or(Malformed)? {
                '\\' => self.escaped(value)?,
                c => {
                    self.keep(value, c);
                    if c == close {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// A backslash and the char it escapes, both kept; the backslash being current.
    fn escaped(&mut self, value: &mut String) -> Result<(), Malformed> {
        value.push('\\');
        value.push(self.peek_at(1).ok_or(Malformed)?);
        self.pos += 2;
        Ok(())
    }

    /// A `$` and what it introduces: `$( )`, `$(( ))`, `${ }`, `$' '`, `$" "` or a plain `$`.
    fn dollar(&mut self, value: &mut String, in_double_quotes: bool) -> Result<(), Malformed> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Malformed);
        }
        let start = self.pos;
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 3;
                value.push_str("$((");
                self.balanced(value, '(', ')', 2)?;
            }
            Some('(') => {
                self.pos += 2;
                self.tokens(Until::CloseParen)?;
                value.push_str(&self.text(start, self.pos));
            }
            Some('{') => {
                self.pos += 2;
                value.push_str("${");
                self.balanced(value, '{', '}', 1)?;
            }
            Some('\'') if !in_double_quotes => {
                value.push_str("$'");
                self.pos += 2;
                self.escaped_until(value, '\'')?;
            }
            Some('"') if !in_double_quotes => {
                self.keep(value, '$');
                self.double_quoted(value)?;
            }
            _ => self.keep(value, '$'),
        }
        self.depth -= 1;
        Ok(())
    }

    /// Reads up to and including the `close` that brings `depth` to zero, honouring quotes and
    /// substitutions inside.
    fn balanced(
        &mut self,
        value: &mut String,
        open: char,
        close: char,
        mut depth: usize,
    ) -> Result<(), Malformed> {
        loop {
            match self.peek().ok_or(Malformed)? {
                '\\' => self.escaped(value)?,
                '\'' => self.single_quoted(value)?,
                '"' => self.double_quoted(value)?,
                '`' => self.backquoted(value)?,
                '$' => self.dollar(value, false)?,
                c => {
                    self.keep(value, c);
                    if c == open {
                        depth += 1;
                    } else if c == close {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

fn is_operator_start(c: char) -> bool {
    matches!(c, '&' | '|' | ';' | '<' | '>' | '(' | ')' | '\n')
}

/// The text a heredoc ends at: its delimiter word with quotes and backslashes removed.
fn heredoc_delimiter(word: &str) -> Vec<char> {
    word.chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect()
}

/// Decides which `)` closes a command substitution, so that `case` patterns (`a) …;;`) inside
/// it do not.
#[derive(Debug, Default)]
struct SubstitutionCloser {
    depth: usize,
    cases: Vec<CasePhase>,
    word_seen: bool,
}

impl SubstitutionCloser {
    fn word(&mut self, word: &str) {
        let command_position = !self.word_seen;
        self.word_seen = true;
        match (self.cases.last().copied(), word) {
            (Some(CasePhase::Header), "in") => self.set(CasePhase::Pattern),
            (Some(CasePhase::Header), _) => {}
            (Some(CasePhase::Pattern), "esac") => {
                self.cases.pop();
            }
            (Some(CasePhase::Pattern), _) => {}
            (Some(CasePhase::Body), "esac") if command_position => {
                self.cases.pop();
            }
            (_, "case") if command_position => self.cases.push(CasePhase::Header),
            (_, "then" | "do" | "else" | "elif" | "if" | "while" | "until" | "{" | "!")
                if command_position =>
            {
                self.word_seen = false;
            }
            _ => {}
        }
    }

    /// Whether `op` closes the substitution; otherwise updates the state.
    fn closes(&mut self, op: &str) -> bool {
        let top = self.cases.last().copied();
        self.word_seen = false;
        match op {
            "(" if top != Some(CasePhase::Pattern) => self.depth += 1,
            ")" if top == Some(CasePhase::Pattern) => self.set(CasePhase::Body),
            ")" if self.depth == 0 => return true,
            ")" => self.depth -= 1,
            ";;" | ";&" | ";;&" if top == Some(CasePhase::Body) => self.set(CasePhase::Pattern),
            _ => {}
        }
        false
    }

    fn set(&mut self, phase: CasePhase) {
        if let Some(top) = self.cases.last_mut() {
            *top = phase;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CasePhase {
    /// Between `case` and `in`.
    Header,
    /// Reading a pattern list, up to its `)`.
    Pattern,
    /// Reading the commands of one case item.
    Body,
}

pub(super) fn is_newline(token: &Token) -> bool {
    matches!(token, Token::Operator(op, _) if op == "\n")
}

#[cfg(test)]
mod tests;
