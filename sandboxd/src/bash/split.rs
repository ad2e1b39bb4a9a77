//! Splits a bash command into its top-level statements, so that a command holding more than one
//! (`ls\necho hi`) can be refused with the reference's "multiple commands" error (SPEC §4.3 step 2).
//!
//! A *statement* is what bash calls a complete command: the text up to a newline that ends the
//! command at top level. `a && b`, `a; b`, `a | b`, loops, `if`, `case`, functions, subshells,
//! groups, heredocs, quoted newlines and backslash continuations are all one statement.
//!
//! How it works:
//! 1. A command without any newline is one statement; nothing is parsed.
//! 2. A lexer (`Lexer`) does the lexical work (quotes, `$( )`, `${ }`, backquotes, heredoc
//!    bodies, comments, continuations) and yields tokens with source positions, in the form
//!    brush-parser's grammar takes. (brush-parser's own tokenizer produces the same tokens, which a
//!    test checks, but can loop forever on some malformed input such as `$(<< |#`.)
//! 3. A small structural scan over those tokens (`scan_tokens`) finds the newline tokens that end
//!    a statement at top level (not inside `{ }`, `( )`, `if`/`fi`, loops, `case`, `[[ ]]`, and not
//!    after `&&`, `||`, `|` or a function header). If it finds one statement, that is the answer.
//! 4. Otherwise brush-parser's grammar parses the tokens and is the authority on how many
//!    statements there are. The scan's statement starts are used when its count agrees; if not, the
//!    starts come from the syntax tree's source locations.
//! 5. Each statement's text is the source from its first token up to the next statement's first
//!    token, trimmed: like the reference, comments and heredoc bodies that follow a statement stay
//!    with it (`echo a # note\n# more\nls` gives `echo a # note\n# more` and `ls`). Blank and
//!    comment-only lines before the first statement are not part of any statement.
//!
//! Anything that fails to tokenize or parse (an unclosed quote or heredoc, unsupported syntax) is one
//! statement, as in the reference. Unlike the reference's parser (bashlex), constructs such as
//! `case`, `[[ ]]`, `(( ))`, arithmetic `for`, `coproc` and `time` are understood: bashlex fails on
//! them and the reference then sends several statements to bash as one, whose second prompt ends
//! the command early and loses the rest of its output. Pathologically nested input (more than 64
//! levels) is not parsed (the parsers recurse per level), and counts as one statement.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use brush_parser::ast::{self, SourceLocation};
use brush_parser::{ParserOptions, SourcePosition, SourceSpan, Token};

/// The first lines of the reference's error for a command with more than one statement.
const MULTIPLE_COMMANDS_HEADER: &str = "ERROR: Cannot execute multiple commands at once.\n\
     Please run each command separately OR chain them into a single command via && or ;\n\
     Provided commands:";

/// Deepest nesting (brackets, braces, parentheses, compound commands) that is handed to the
/// parsers, whose recursion would otherwise overflow a 2 MiB thread stack on hostile input.
const MAX_NESTING: usize = 64;

/// The top-level statements of `command`, as source slices (trimmed). One element (the whole trimmed text) when parsing fails or when there is at most one statement.
fn split_statements(command: &str) -> Vec<String> {
    let text = command.trim();
    match statement_offsets(text) {
        Some(offsets) if offsets.len() > 1 => offsets
            .iter()
            .enumerate()
            .map(|(k, &start)| {
                let end = offsets.get(k + 1).copied().unwrap_or(text.len());
                text.get(start..end).unwrap_or_default().trim().to_owned()
            })
            .collect(),
        _ => vec![text.to_owned()],
    }
}

/// The reference's error text for more than one statement, or None when there is at most one.
pub(crate) fn multiple_commands_error(command: &str) -> Option<String> {
    let statements = split_statements(command);
    if statements.len() <= 1 {
        return None;
    }
    let mut message = String::from(MULTIPLE_COMMANDS_HEADER);
    for (k, statement) in statements.iter().enumerate() {
        message.push_str(&format!("\n({}) {statement}", k + 1));
    }
    Some(message)
}

/// Byte offsets in `text` where its top-level statements start, or None when `text` is one
/// statement (or cannot be parsed, which counts as one).
fn statement_offsets(text: &str) -> Option<Vec<usize>> {
    if !text.contains('\n') {
        return None;
    }
    let mut lexer = Lexer::new(text);
    let tokens = lexer.tokens(Until::End).ok()?;
    let scanned = scan_tokens(&tokens)?;
    if scanned.len() <= 1 {
        return None;
    }
    let options = ParserOptions::default();
    let program = catch_unwind(AssertUnwindSafe(|| {
        brush_parser::parse_tokens(&tokens, &options)
    }))
    .ok()?
    .ok()?;
    let commands = &program.complete_commands;
    if commands.len() <= 1 {
        return None;
    }
    let starts = if scanned.len() == commands.len() {
        scanned
    } else {
        located_starts(commands, &tokens)
    };
    let offsets: Vec<usize> = starts
        .iter()
        .filter_map(|&i| tokens.get(i))
        .filter_map(|token| lexer.byte_offset(token.location().start.index))
        .collect();
    let ascending = offsets.windows(2).all(|pair| pair[0] < pair[1]);
    (offsets.len() > 1 && ascending).then_some(offsets)
}

/// The text is not well-formed shell (an unclosed quote, substitution or heredoc, or nesting
/// deeper than [`MAX_NESTING`]); it then counts as one statement.
#[derive(Debug)]
struct Malformed;

/// Where [`Lexer::tokens`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
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
struct Lexer {
    chars: Vec<char>,
    /// Byte offset of each char, plus the text's length.
    byte_offsets: Vec<usize>,
    /// Char index where each line starts.
    line_starts: Vec<usize>,
    pos: usize,
    depth: usize,
}

impl Lexer {
    fn new(text: &str) -> Self {
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

    fn byte_offset(&self, char_index: usize) -> Option<usize> {
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
    fn tokens(&mut self, until: Until) -> Result<Vec<Token>, Malformed> {
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
                '\\' => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(next) => {
                        value.push(c);
                        value.push(next);
                        self.pos += 2;
                    }
                    None => return Err(Malformed),
                },
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
                _ => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(value)
    }

    /// `'…'`, the opening quote being current.
    fn single_quoted(&mut self, value: &mut String) -> Result<(), Malformed> {
        value.push('\'');
        self.pos += 1;
        loop {
            let c = self.peek().ok_or(Malformed)?;
            value.push(c);
            self.pos += 1;
            if c == '\'' {
                return Ok(());
            }
        }
    }

    /// `"…"`, the opening quote being current.
    fn double_quoted(&mut self, value: &mut String) -> Result<(), Malformed> {
        value.push('"');
        self.pos += 1;
        loop {
            match self.peek().ok_or(Malformed)? {
                '"' => {
                    value.push('"');
                    self.pos += 1;
                    return Ok(());
                }
                '\\' => {
                    value.push('\\');
                    value.push(self.peek_at(1).ok_or(Malformed)?);
                    self.pos += 2;
                }
                '`' => self.backquoted(value)?,
                '$' => self.dollar(value, true)?,
                c => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// `` `…` ``, the opening backquote being current.
    fn backquoted(&mut self, value: &mut String) -> Result<(), Malformed> {
        value.push('`');
        self.pos += 1;
        loop {
            match self.peek().ok_or(Malformed)? {
                '\\' => {
                    value.push('\\');
                    value.push(self.peek_at(1).ok_or(Malformed)?);
                    self.pos += 2;
                }
                c => {
                    value.push(c);
                    self.pos += 1;
                    if c == '`' {
                        return Ok(());
                    }
                }
            }
        }
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
                value.push('$');
                self.pos += 1;
                value.push('\'');
                self.pos += 1;
                loop {
                    match self.peek().ok_or(Malformed)? {
                        '\\' => {
                            value.push('\\');
                            value.push(self.peek_at(1).ok_or(Malformed)?);
                            self.pos += 2;
                        }
                        c => {
                            value.push(c);
                            self.pos += 1;
                            if c == '\'' {
                                break;
                            }
                        }
                    }
                }
            }
            Some('"') if !in_double_quotes => {
                value.push('$');
                self.pos += 1;
                self.double_quoted(value)?;
            }
            _ => {
                value.push('$');
                self.pos += 1;
            }
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
                '\\' => {
                    value.push('\\');
                    value.push(self.peek_at(1).ok_or(Malformed)?);
                    self.pos += 2;
                }
                '\'' => self.single_quoted(value)?,
                '"' => self.double_quoted(value)?,
                '`' => self.backquoted(value)?,
                '$' => self.dollar(value, false)?,
                c => {
                    value.push(c);
                    self.pos += 1;
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

/// A construct that is open while scanning tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// `( … )`: subshell, process substitution, `(( … ))`, function parentheses; whether a
    /// command may start after the `)`.
    Paren(bool),
    /// `name=( … )`: an array value, made of plain words.
    Array,
    /// `{ … }` group or function body.
    Brace,
    /// `if … fi`.
    If,
    /// `while`/`until`/`for`/`select` … `done`.
    Loop,
    /// `[[ … ]]`.
    Test,
    /// `case … esac`, with where in it we are.
    Case(CasePhase),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CasePhase {
    /// Between `case` and `in`.
    Header,
    /// Reading a pattern list, up to its `)`.
    Pattern,
    /// Reading the commands of one case item.
    Body,
}

fn is_newline(token: &Token) -> bool {
    matches!(token, Token::Operator(op, _) if op == "\n")
}

/// Indices of the tokens that start a top-level statement, found structurally (see the module
/// docs). None when nesting goes deeper than [`MAX_NESTING`].
fn scan_tokens(tokens: &[Token]) -> Option<Vec<usize>> {
    let mut starts = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    // Whether the next word is in command position, where reserved words are recognized.
    let mut command_position = true;
    // Whether a newline here continues the statement (after `&&`, `||`, `|`, a function header).
    let mut continued = false;
    // Whether the next significant token starts a statement.
    let mut at_statement_start = true;
    // Whether the next word names a function (after `function`).
    let mut function_name_next = false;
    // Words still to skip: a redirection target, or a heredoc's delimiter, body and end tag.
    let mut words_to_skip = 0usize;

    for (index, token) in tokens.iter().enumerate() {
        if is_newline(token) {
            words_to_skip = 0;
            if stack.is_empty() && !continued {
                at_statement_start = true;
            }
            command_position = true;
            continue;
        }
        if at_statement_start {
            starts.push(index);
            at_statement_start = false;
        }
        continued = false;
        let top = stack.last().copied();
        match token {
            Token::Operator(op, _) => {
                words_to_skip = 0;
                match op.as_str() {
                    "&&" | "||" | "|" | "|&" => {
                        continued = true;
                        command_position = true;
                    }
                    ";" | "&" => command_position = true,
                    ";;" | ";&" | ";;&" => {
                        if top == Some(Frame::Case(CasePhase::Body)) {
                            set_top(&mut stack, Frame::Case(CasePhase::Pattern));
                        }
                        command_position = true;
                    }
                    "(" => {
                        let previous = index.checked_sub(1).and_then(|i| tokens.get(i));
                        if top == Some(Frame::Case(CasePhase::Pattern)) {
                            // The optional `(` before a case pattern.
                        } else if matches!(previous, Some(Token::Word(w, _)) if w.ends_with('=')) {
                            stack.push(Frame::Array);
                        } else {
                            // After a process substitution `<( … )`, the command goes on as before.
                            let redirected = matches!(previous, Some(Token::Operator(o, _)) if o == "<" || o == ">");
                            stack.push(Frame::Paren(!redirected || command_position));
                            command_position = true;
                        }
                    }
                    ")" => match top {
                        Some(Frame::Case(CasePhase::Pattern)) => {
                            set_top(&mut stack, Frame::Case(CasePhase::Body));
                            command_position = true;
                        }
                        Some(Frame::Array) => {
                            stack.pop();
                            command_position = false;
                        }
                        Some(Frame::Paren(after)) => {
                            stack.pop();
                            // `name ( )` is a function header: its body may follow on a later line.
                            continued = index
                                .checked_sub(1)
                                .and_then(|i| tokens.get(i))
                                .is_some_and(|t| matches!(t, Token::Operator(o, _) if o == "("));
                            command_position = after || continued;
                        }
                        _ => command_position = true,
                    },
                    "<<" | "<<-" => words_to_skip = 3,
                    "<" | ">" | ">>" | "<&" | ">&" | "<>" | ">|" | "&>" | "&>>" | "<<<" => {
                        words_to_skip = 1;
                    }
                    _ => {}
                }
            }
            Token::Word(word, _) => {
                if words_to_skip > 0 {
                    words_to_skip -= 1;
                    continue;
                }
                if function_name_next {
                    function_name_next = false;
                    continued = true;
                    command_position = true;
                    continue;
                }
                match top {
                    Some(Frame::Case(CasePhase::Header)) => {
                        if word == "in" {
                            set_top(&mut stack, Frame::Case(CasePhase::Pattern));
                        }
                        continue;
                    }
                    Some(Frame::Case(CasePhase::Pattern)) => {
                        if word == "esac" {
                            stack.pop();
                            command_position = true;
                        }
                        continue;
                    }
                    Some(Frame::Array) => continue,
                    Some(Frame::Test) => {
                        if word == "]]" {
                            stack.pop();
                            command_position = false;
                        }
                        continue;
                    }
                    _ => {}
                }
                if !command_position {
                    continue;
                }
                match word.as_str() {
                    "{" => stack.push(Frame::Brace),
                    "if" => stack.push(Frame::If),
                    "while" | "until" => stack.push(Frame::Loop),
                    "for" | "select" => {
                        stack.push(Frame::Loop);
                        command_position = false;
                    }
                    "case" => {
                        stack.push(Frame::Case(CasePhase::Header));
                        command_position = false;
                    }
                    "[[" => {
                        stack.push(Frame::Test);
                        command_position = false;
                    }
                    "}" | "fi" | "done" | "esac" => {
                        let expected = match word.as_str() {
                            "}" => Frame::Brace,
                            "fi" => Frame::If,
                            "done" => Frame::Loop,
                            _ => Frame::Case(CasePhase::Body),
                        };
                        if top == Some(expected) {
                            stack.pop();
                        }
                    }
                    "function" => function_name_next = true,
                    "then" | "else" | "elif" | "do" | "!" | "time" | "coproc" | "in" => {}
                    _ => command_position = false,
                }
            }
        }
        if stack.len() > MAX_NESTING {
            return None;
        }
    }
    Some(starts)
}

fn set_top(stack: &mut [Frame], frame: Frame) {
    if let Some(top) = stack.last_mut() {
        *top = frame;
    }
}

/// Statement starts (token indices) from the syntax tree's source locations: each complete
/// command's reported start, moved back to the first token after the preceding newline (the tree
/// omits a leading `!` or `function`). Used only when the structural scan disagrees with the
/// grammar.
fn located_starts(commands: &[ast::CompleteCommand], tokens: &[Token]) -> Vec<usize> {
    let heredoc_parts = heredoc_parts(tokens);
    let mut starts: Vec<usize> = Vec::new();
    for command in commands {
        let Some(anchor) = command.location().map(|span| span.start.index) else {
            continue;
        };
        let Some(mut index) = tokens.iter().enumerate().position(|(i, token)| {
            !is_newline(token)
                && !heredoc_parts.get(i).copied().unwrap_or(false)
                && token.location().start.index >= anchor
        }) else {
            continue;
        };
        while index > 0 && tokens.get(index - 1).is_some_and(|t| !is_newline(t)) {
            index -= 1;
        }
        if starts.last().is_none_or(|&last| last < index) {
            starts.push(index);
        }
    }
    starts
}

/// Marks the tokens that are a heredoc's body and end tag (they come out of source order).
fn heredoc_parts(tokens: &[Token]) -> Vec<bool> {
    let mut parts = vec![false; tokens.len()];
    let mut pending = 0usize;
    for (index, token) in tokens.iter().enumerate() {
        match token {
            Token::Operator(op, _) if op == "<<" || op == "<<-" => pending = 3,
            Token::Operator(..) => pending = 0,
            Token::Word(..) if pending > 0 => {
                // The first word is the delimiter, which is in source order.
                if pending < 3
                    && let Some(part) = parts.get_mut(index)
                {
                    *part = true;
                }
                pending -= 1;
            }
            Token::Word(..) => {}
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(command: &str) -> Vec<String> {
        split_statements(command)
    }

    /// Commands that are one statement: the result is the whole trimmed text.
    #[test]
    fn single_statements() {
        let cases = [
            "ls",
            "ls -la /tmp",
            "a && b",
            "a; b",
            "a | b",
            "a |& b",
            "a &",
            "a & b",
            "cd /tmp && touch test.txt",
            "for i in 1 2; do\n echo $i\ndone",
            "for i in 1 2\ndo\n echo $i\ndone",
            "while true; do\n sleep 1\ndone",
            "until false\ndo\n :\ndone",
            "if [ -f x ]; then\n echo yes\nelif [ -d x ]; then\n echo dir\nelse\n echo no\nfi",
            "case $x in\n a) echo a;;\n (b|c) echo bc;;\n *) echo other\nesac",
            "f() {\n echo\n}",
            "f()\n{\n echo\n}",
            "function f {\n echo\n}",
            "function f\n{\n echo\n}",
            "(cd x\nls)",
            "{ echo a\necho b; }",
            "cat <<EOF\nhello\nworld\nEOF",
            "cat <<-EOF\n\thello\n\tEOF",
            "cat <<'EOF'\n$HOME\nls\nEOF",
            "cat << \"E F\"\nx\nE F",
            "python3 - <<'EOF'\nprint(1)\n\nprint(2)\nEOF",
            "cat <<EOF &&\nbody\nEOF\nls",
            "cat <<EOF | grep x\nx\nEOF",
            "echo a \\\n b",
            "echo \"a\nb\"",
            "echo 'a\nb'",
            "echo $'a\nb'",
            "echo $(\nls\n)",
            "echo `ls\n`",
            "x=$(cat <<EOF\nhi\nEOF\n)",
            "a &&\nb",
            "a ||\n\n# comment\nb",
            "a |\nb",
            "! a |\n b",
            "arr=(1\n2 3)",
            "diff <(ls) <(ls\n)",
            "ls # comment\n",
            "ls\n# trailing comment",
            "echo 'it''s'",
            "echo \"Double quotes \\\"do\\\" escape\"",
            "echo 'Single quotes don\\'t escape'",
            "for i in {1..5}; do echo $i; done",
            "grep 'pattern' file.txt | sort | uniq",
            "echo one\\; two; echo three",
            "echo -e 'hello\nworld\nare\nyou\\n\nthere?'",
            "echo -e 'hello\nworld \"\n'",
            "kubectl apply -f - <<EOF\napiVersion: v1\nkind: Pod\nmetadata:\n  name: busybox-sleep\nspec:\n  containers:\n  - name: busybox\n    image: busybox:1.28\n    args:\n    - sleep\n    - \"1000000\"\nEOF",
            "mkdir -p _modules && \\\nfor month in {01..04}; do\n    for day in {01..05}; do\n        touch \"_modules/2024-${month}-${day}-sample.md\"\n    done\ndone && echo \"created files\"",
            "for file in _modules/*.md; do\n    new_date=$(echo $file | sed -E 's/2024-(01|02|03|04)-/2024-/;s/2024-01/2024-08/')\n    mv \"$file\" \"$new_date\"\ndone && echo \"success\"",
            "ls\n\n\n",
            "\n\n  ls -l  \n\n",
        ];
        for command in cases {
            assert_eq!(split(command), vec![command.trim()], "{command:?}");
            assert_eq!(multiple_commands_error(command), None, "{command:?}");
        }
    }

    /// Text that fails to parse is one statement, like the reference's fallback.
    #[test]
    fn unparsable_text_is_one_statement() {
        let cases = [
            "echo 'unterminated\nls",
            "echo \"unterminated\nls",
            "cat <<EOF\nunterminated heredoc\nls",
            "echo $(unclosed\nls",
            "if true; then\nls",
            "fi\nls",
            "ls )\necho",
            "select x in a b; do\n:\ndone\nls",
        ];
        for command in cases {
            assert_eq!(split(command), vec![command.trim()], "{command:?}");
        }
    }

    /// Constructs bashlex cannot parse are split like any other (the reference would run them
    /// as one and lose the output after the first prompt).
    #[test]
    fn constructs_bashlex_cannot_parse_are_still_split() {
        let cases = [
            "case x in a) ;; esac\nls",
            "[[ -f x ]] && echo y\nls",
            "((i++))\nls",
            "for ((i=0; i<3; i++)); do\n:\ndone\nls",
            "time sleep 1\nls",
            "coproc cat\nls",
            "ls\nif true; then\n  [[ -n x ]]\nfi",
            "ls\nf() {\n  case x in *) ;; esac\n}",
        ];
        for command in cases {
            assert_eq!(split(command).len(), 2, "{command:?}");
        }
    }

    #[test]
    fn empty_command_is_one_empty_statement() {
        assert_eq!(split(""), vec![""]);
        assert_eq!(split("  \n \t "), vec![""]);
        assert_eq!(
            split("# only a comment\n# another"),
            vec!["# only a comment\n# another"]
        );
        assert_eq!(multiple_commands_error(""), None);
    }

    #[test]
    fn multiple_statements() {
        let cases: &[(&str, &[&str])] = &[
            ("ls\necho hi", &["ls", "echo hi"]),
            ("a &\nb", &["a &", "b"]),
            ("a;\nb", &["a;", "b"]),
            ("a; b\nc && d", &["a; b", "c && d"]),
            ("ls # comment\necho hi", &["ls # comment", "echo hi"]),
            ("# leading comment\n\nls\necho hi", &["ls", "echo hi"]),
            (
                "\necho \"Hello\" # This is a comment\n# This is another comment\nls -l\n",
                &[
                    "echo \"Hello\" # This is a comment\n# This is another comment",
                    "ls -l",
                ],
            ),
            (
                "\ncat <<EOF\nmultiline\ntext\nEOF\necho \"Done\"\n",
                &["cat <<EOF\nmultiline\ntext\nEOF", "echo \"Done\""],
            ),
            (
                "\nls -l\n\necho \"Hello\"\n\ncd /tmp\n",
                &["ls -l", "echo \"Hello\"", "cd /tmp"],
            ),
            (
                "\necho \"This is a \\\"quoted\\\" string\"\necho 'This is a '\\''single-quoted'\\'' string'\n",
                &[
                    "echo \"This is a \\\"quoted\\\" string\"",
                    "echo 'This is a '\\''single-quoted'\\'' string'",
                ],
            ),
            (
                "for i in 1; do\n echo\ndone\nls",
                &["for i in 1; do\n echo\ndone", "ls"],
            ),
            ("f() {\n echo\n}\nf", &["f() {\n echo\n}", "f"]),
            ("function f\n{\n :\n}\nf", &["function f\n{\n :\n}", "f"]),
            ("(cd x\nls)\npwd", &["(cd x\nls)", "pwd"]),
            ("{ a; }\nb", &["{ a; }", "b"]),
            ("if a; then b; fi\nls", &["if a; then b; fi", "ls"]),
            (
                "while a\ndo b\ndone >out\nls",
                &["while a\ndo b\ndone >out", "ls"],
            ),
            ("! false\nls", &["! false", "ls"]),
            ("x=1\ny=2", &["x=1", "y=2"]),
            ("arr=(1\n2)\necho", &["arr=(1\n2)", "echo"]),
            ("echo a \\\n b\nc", &["echo a \\\n b", "c"]),
            ("echo \"a\nb\"\nc", &["echo \"a\nb\"", "c"]),
            (
                "a && cat <<EOF\nbody\nEOF\nls",
                &["a && cat <<EOF\nbody\nEOF", "ls"],
            ),
            (
                "cat <<A <<B\na\nA\nb\nB\nls",
                &["cat <<A <<B\na\nA\nb\nB", "ls"],
            ),
            ("cat <<EOF\nEOF\nls", &["cat <<EOF\nEOF", "ls"]),
            ("<<EOF cat\nx\nEOF\nls", &["<<EOF cat\nx\nEOF", "ls"]),
            ("echo é\nécho ü", &["echo é", "écho ü"]),
            ("ls\r\necho hi\r\n", &["ls", "echo hi"]),
            ("echo done fi }\nx", &["echo done fi }", "x"]),
            ("a &&\nb\nc", &["a &&\nb", "c"]),
            ("ls 2>&1 >|x &>y\nb", &["ls 2>&1 >|x &>y", "b"]),
            (
                "echo $(case x in a) echo;; esac)\nls",
                &["echo $(case x in a) echo;; esac)", "ls"],
            ),
            (
                "cat <<EOF\n$(ls)\n)\nEOF\nls",
                &["cat <<EOF\n$(ls)\n)\nEOF", "ls"],
            ),
            (
                "if true; then\n cat <<EOF\n fi\nEOF\nfi\nls",
                &["if true; then\n cat <<EOF\n fi\nEOF\nfi", "ls"],
            ),
            (
                "echo \"$(echo \"a\nb\")\"\nls",
                &["echo \"$(echo \"a\nb\")\"", "ls"],
            ),
            (
                "echo hi # it's a comment\nls",
                &["echo hi # it's a comment", "ls"],
            ),
            ("echo a#b\nls", &["echo a#b", "ls"]),
            ("echo ${a:-$(\nls)}\nb", &["echo ${a:-$(\nls)}", "b"]),
            ("echo $((1 +\n2))\nls", &["echo $((1 +\n2))", "ls"]),
            ("a |&\nb\nc", &["a |&\nb", "c"]),
            ("ls &&\\\n echo\nc", &["ls &&\\\n echo", "c"]),
            ("cat <(ls) if\nb", &["cat <(ls) if", "b"]),
        ];
        for (command, expected) in cases {
            assert_eq!(split(command), *expected, "{command:?}");
        }
    }

    /// The reference's own multi-line test: joined commands come back one by one.
    #[test]
    fn reference_joined_commands_split_back() {
        let commands = [
            "ls -l",
            "echo -e \"hello\nworld\"",
            "echo -e \"hello it\\'s me\"",
            "echo \\\n    -e 'hello' \\\n    -v",
            "echo -e 'hello\\nworld\\nare\\nyou\\nthere?'",
            "echo -e 'hello\nworld\nare\nyou\\n\nthere?'",
            "echo -e 'hello\nworld \"\n'",
            "kubectl apply -f - <<EOF\napiVersion: v1\nkind: Pod\nmetadata:\n  name: busybox-sleep\nspec:\n  containers:\n  - name: busybox\n    image: busybox:1.28\n    args:\n    - sleep\n    - \"1000000\"\nEOF",
            "mkdir -p _modules && \\\nfor month in {01..04}; do\n    for day in {01..05}; do\n        touch \"_modules/2024-${month}-${day}-sample.md\"\n    done\ndone",
        ];
        assert_eq!(split(&commands.join("\n")), commands);
    }

    #[test]
    fn error_text_matches_the_reference() {
        assert_eq!(
            multiple_commands_error("ls\necho hi").as_deref(),
            Some(
                "ERROR: Cannot execute multiple commands at once.\n\
                 Please run each command separately OR chain them into a single command via && or ;\n\
                 Provided commands:\n(1) ls\n(2) echo hi"
            )
        );
        let three = multiple_commands_error("  a\nb &\n\nc  ").unwrap_or_default();
        assert!(
            three.ends_with("Provided commands:\n(1) a\n(2) b &\n(3) c"),
            "{three}"
        );
    }

    /// Nesting beyond the limit is not parsed; at the limit it is, without overflowing a 2 MiB
    /// stack (the default for spawned threads, tokio's included) even in debug builds.
    #[test]
    fn deep_nesting_is_bounded() {
        let depth = MAX_NESTING - 2;
        let mut nested = Vec::new();
        nested.push(format!(
            "{}:{}\nls",
            "{ ".repeat(depth),
            "; }".repeat(depth)
        ));
        nested.push(format!(
            "{}:{}\nls",
            "if a; then ".repeat(depth),
            "; fi".repeat(depth)
        ));
        nested.push(format!(
            "{}:{}\nls",
            "while a; do ".repeat(depth),
            "; done".repeat(depth)
        ));
        nested.push(format!("{}:{}\nls", "( ".repeat(depth), ")".repeat(depth)));
        nested.push(format!(
            "echo {}x{}\nls",
            "$(".repeat(depth),
            ")".repeat(depth)
        ));
        nested.push(format!(
            "{}:{}\nls",
            "for i in 1; do { (if a; then ".repeat(depth / 4),
            "; fi) }; done".repeat(depth / 4)
        ));
        let too_deep = [
            format!("{}:{}\nls", "{ ".repeat(5000), "; }".repeat(5000)),
            format!("{}:{}\nls", "if a; then ".repeat(5000), "; fi".repeat(5000)),
            format!("echo {}x{}\nls", "$(".repeat(50_000), ")".repeat(50_000)),
        ];
        let handle = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let within: Vec<usize> = nested.iter().map(|c| split(c).len()).collect();
                let beyond: Vec<usize> = too_deep.iter().map(|c| split(c).len()).collect();
                (within, beyond)
            });
        let (within, beyond) = handle
            .map(|h| h.join())
            .unwrap_or_else(|e| panic!("spawn: {e}"))
            .unwrap_or_else(|_| panic!("split panicked"));
        assert_eq!(within, vec![2; 6]);
        assert_eq!(beyond, vec![1; 3]);
    }

    /// A small deterministic generator (xorshift64*), so the randomized tests need no crates.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }
    }

    /// A random statement; the flag says whether a heredoc in it needs a newline right after.
    fn statement(rng: &mut Rng, depth: usize) -> (String, bool) {
        let simple = [
            "echo hi",
            "ls -la /tmp",
            "x=1",
            "echo \"a\nb\"",
            "echo 'q\n\nr'",
            "echo $(ls\n)",
            "echo `date`",
            "echo a \\\n  b",
            "arr=(1\n2)",
            "cat <(ls\n)",
            "echo \"it's\" 'say \"x\"'",
            "! false",
            "echo done fi esac } then",
            "grep -E 'a|b' f >out 2>&1",
        ];
        let kind = if depth >= 3 {
            rng.below(2)
        } else {
            rng.below(12)
        };
        match kind {
            0 | 1 => (rng.pick(&simple).to_owned(), false),
            2 => (
                rng.pick(&[
                    "cat <<EOF\nx\n\ny\nEOF",
                    "cat <<-'E'\n\tif\n\tE",
                    "python3 - <<\"PY\"\nprint(1)\nPY",
                ])
                .to_owned(),
                true,
            ),
            3 => {
                let (a, _) = statement(rng, depth + 3);
                let (b, nl) = statement(rng, depth + 1);
                let op = rng.pick(&[
                    " | ", " |\n  ", " && ", " &&\n", " || ", " ||\n\n", "; ", " & ",
                ]);
                // `a | ! b` is not valid shell; `!` only starts a pipeline.
                let b = if op.trim() == "|" && b.starts_with('!') {
                    b[1..].to_owned()
                } else {
                    b
                };
                (format!("{a}{op}{b}"), nl)
            }
            4 => (
                format!("if {}; then\n{}\nfi", simple[0], body(rng, depth)),
                false,
            ),
            5 => (
                format!(
                    "if true\nthen {}\nelse\n{}\nfi",
                    body(rng, depth),
                    body(rng, depth)
                ),
                false,
            ),
            6 => (
                format!("for i in 1 2; do\n{}\ndone", body(rng, depth)),
                false,
            ),
            7 => (
                format!("while false\ndo\n{}\ndone >/dev/null", body(rng, depth)),
                false,
            ),
            8 => (format!("{{\n{}\n}}", body(rng, depth)), false),
            9 => (format!("(\n{}\n)", body(rng, depth)), false),
            10 => (format!("f() {{\n{}\n}}", body(rng, depth)), false),
            _ => (format!("function g\n{{\n{}\n}}", body(rng, depth)), false),
        }
    }

    fn body(rng: &mut Rng, depth: usize) -> String {
        let mut text = String::new();
        let mut after_newline = false;
        for k in 0..1 + rng.below(3) {
            let (s, needs_newline) = statement(rng, depth + 1);
            if k > 0 {
                text.push_str(if after_newline {
                    rng.pick(&["", "\n", "# note\n"])
                } else {
                    rng.pick(&["\n", "\n\n", "; ", "\n# note\n"])
                });
            }
            text.push_str(&s);
            if needs_newline {
                text.push('\n');
            }
            after_newline = needs_newline;
        }
        text
    }

    /// Generated programs split into exactly the statements they were built from.
    #[test]
    fn generated_programs_split_into_their_statements() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2000 {
            let count = 1 + rng.below(4);
            let mut program = String::new();
            let mut expected = Vec::new();
            for k in 0..count {
                if k > 0 {
                    let separator = rng.pick(&["\n", "\n\n", "\n# comment\n", "\n  \n\t"]);
                    program.push_str(separator);
                    if let Some(last) = expected.last_mut() {
                        *last = format!("{last}{separator}").trim().to_owned();
                    }
                }
                let (s, needs_newline) = statement(&mut rng, 0);
                let trailer = rng.pick(&["", " # trailing", ";", " &"]);
                let trailer = if needs_newline { "" } else { trailer };
                program.push_str(&s);
                program.push_str(trailer);
                expected.push(format!("{s}{trailer}").trim().to_owned());
            }
            if count == 1 {
                expected = vec![program.trim().to_owned()];
            }
            assert_eq!(split(&program), expected, "{program:?}");
        }
    }

    fn soup(rng: &mut Rng, pieces: &[&str], max: usize) -> String {
        (0..1 + rng.below(max)).map(|_| rng.pick(pieces)).collect()
    }

    /// Shell-ish fragments for random programs. Heredocs are left out: brush's own tokenizer,
    /// which the lexer is compared with, can loop forever on some heredoc soups.
    const SOUP: [&str; 43] = [
        "a",
        "b",
        " ",
        " ",
        "\n",
        "\n",
        ";",
        "&",
        "&&",
        "|",
        "||",
        "(",
        ")",
        "{ ",
        " }",
        "'q'",
        "\"d\"",
        "\\\n",
        "$(x)",
        "`y`",
        "#c\n",
        "if ",
        "then ",
        "else ",
        "fi",
        "for i in 1; do ",
        "done",
        "while ",
        "do ",
        "function f ",
        "f() ",
        "!",
        ">o",
        "x=(1 2)",
        "é",
        "\"$(c \")\")\"",
        "${v:-'}'}",
        "$((1+(2)))",
        "$'\\''",
        "@(a|b)",
        "2>&1",
        "&>>l",
        "\\;",
    ];

    fn kinds_and_values(tokens: &[Token]) -> Vec<(bool, String)> {
        tokens
            .iter()
            .map(|t| (matches!(t, Token::Operator(..)), t.to_str().to_owned()))
            .collect()
    }

    /// The lexer produces the tokens brush-parser's own tokenizer does, wherever that one succeeds.
    #[test]
    fn lexer_matches_brush_tokenizer() {
        let mut rng = Rng(1234);
        let mut compared = 0;
        let mut inputs: Vec<String> = (0..20_000).map(|_| soup(&mut rng, &SOUP, 24)).collect();
        for _ in 0..2000 {
            inputs.push(statement(&mut rng, 0).0);
        }
        for text in inputs {
            let Ok(expected) = brush_parser::uncached_tokenize_str(&text, &Default::default())
            else {
                continue;
            };
            let Ok(actual) = Lexer::new(&text).tokens(Until::End) else {
                panic!("lexer rejected {text:?}, which brush tokenizes");
            };
            compared += 1;
            let (mut expected, mut actual) =
                (kinds_and_values(&expected), kinds_and_values(&actual));
            // brush gives a heredoc body with `<<-` its tabs stripped, and keeps a
            // backslash-newline inside a word; neither matters to the grammar.
            for (_, value) in expected.iter_mut().chain(actual.iter_mut()) {
                *value = value.replace("\\\n", "").replace('\t', "");
            }
            assert_eq!(actual, expected, "{text:?}");
        }
        assert!(compared > 5000, "only {compared} compared");
    }

    /// Wherever brush-parser's grammar accepts a program, the structural scan finds as many
    /// statements as the grammar does.
    #[test]
    fn scan_agrees_with_the_grammar_on_random_programs() {
        let mut rng = Rng(42);
        let mut compared = 0;
        let mut inputs: Vec<String> = (0..30_000).map(|_| soup(&mut rng, &SOUP, 24)).collect();
        for _ in 0..2000 {
            let mut program = statement(&mut rng, 0).0;
            program.push_str(rng.pick(&["\n", "\n\n#c\n", ";\n", " &\n"]));
            program.push_str(&statement(&mut rng, 0).0);
            inputs.push(program);
        }
        for text in inputs {
            let Ok(tokens) = Lexer::new(&text).tokens(Until::End) else {
                continue;
            };
            let Ok(program) = brush_parser::parse_tokens(&tokens, &ParserOptions::default()) else {
                continue;
            };
            let scanned = scan_tokens(&tokens).map(|s| s.len());
            compared += 1;
            assert_eq!(scanned, Some(program.complete_commands.len()), "{text:?}");
        }
        assert!(compared > 4000, "only {compared} programs parsed");
    }

    /// No input makes the splitter panic or hang, and its output is always well formed.
    #[test]
    fn arbitrary_input_never_panics() {
        let pieces = [
            "a", " ", "\n", ";", "&", "|", "(", ")", "{", "}", "'", "\"", "\\", "$", "`", "<<",
            "<<-", "EOF", "#", "if", "then", "fi", "for", "do", "done", "case", "esac", "in", "))",
            "((", "$(", "${", "[[", "]]", "é", "\t", "\r", "function", "!", "=", ">", "<", "*",
            "\u{0}", "\u{1b}[", "\u{fffd}",
        ];
        let mut rng = Rng(7);
        for round in 0..20_000 {
            let text = if round % 4 == 0 {
                let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                (0..rng.below(40)).map(|_| rng.pick(&pieces)).collect()
            };
            let statements = split(&text);
            assert!(!statements.is_empty());
            if statements.len() > 1 {
                let mut rest = text.as_str();
                for statement in &statements {
                    assert!(!statement.is_empty(), "{text:?}");
                    let at = rest.find(statement.as_str());
                    assert!(at.is_some(), "{statement:?} not in order in {text:?}");
                    rest = &rest[at.unwrap_or_default() + statement.len()..];
                }
            } else {
                assert_eq!(statements, vec![text.trim()]);
            }
        }
    }

    /// A 10 KB command is handled quickly (the budget is 1 ms in release builds; the bound here
    /// only catches gross regressions such as quadratic behaviour, in any build).
    #[test]
    fn large_commands_are_fast() {
        let mut many = String::new();
        let mut loop_body = String::from("for i in 1 2 3; do\n");
        let mut n = 0;
        while many.len() < 10_000 {
            many.push_str(&format!(
                "echo \"line {n}\" | grep -v x && ls /tmp/d{n} >/dev/null\n"
            ));
            loop_body.push_str(&format!(
                "  echo \"line {n}\" | grep -v x && ls /tmp/d{n}\n"
            ));
            n += 1;
        }
        loop_body.push_str("done");
        let heredoc = format!(
            "cat <<'EOF' > file.py\n{}EOF",
            "print('hello world')\n".repeat(500)
        );
        let one_line = many.replace('\n', "; ");
        let cases = [(&many, n), (&loop_body, 1), (&heredoc, 1), (&one_line, 1)];
        let bound = if cfg!(debug_assertions) { 200 } else { 20 };
        for (command, expected) in cases {
            let started = std::time::Instant::now();
            assert_eq!(split(command).len(), expected);
            let elapsed = started.elapsed();
            assert!(
                elapsed.as_millis() < bound,
                "{elapsed:?} for {} bytes",
                command.len()
            );
        }
    }
}
