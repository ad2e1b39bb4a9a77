//! The structural scan: the tokens that start a top-level statement, found from the token
//! stream alone by tracking which constructs are open (`{ }`, `( )`, `if`, loops, `case`,
//! `[[ ]]`) and which operators continue a statement on the next line.

use brush_parser::Token;

use super::lexer::{CasePhase, MAX_NESTING, is_newline};

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

/// Indices of the tokens that start a top-level statement, found structurally (see the module
/// docs). None when nesting goes deeper than [`MAX_NESTING`].
pub(super) fn scan_tokens(tokens: &[Token]) -> Option<Vec<usize>> {
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

#[cfg(test)]
mod tests;
