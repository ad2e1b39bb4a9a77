//! BrowserGym's action language: Python-style calls, found in the text as BrowserGym's lenient
//! (non-strict) parser finds them (anything that is not a well-formed call is ignored), and
//! bound to each function's parameters with Python's rules and messages (`TypeError: ...`).

/// A literal argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Str(String),
    Num(f64),
    Bool(bool),
    None,
    List(Vec<Arg>),
}

impl Arg {
    /// Python's `repr` of the value (for messages).
    pub(crate) fn repr(&self) -> String {
        match self {
            Arg::Str(s) => sandbox_common::py_repr_str(s),
            Arg::Num(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", *n as i64),
            Arg::Num(n) => format!("{n}"),
            Arg::Bool(true) => "True".to_owned(),
            Arg::Bool(false) => "False".to_owned(),
            Arg::None => "None".to_owned(),
            Arg::List(items) => {
                let items: Vec<String> = items.iter().map(Arg::repr).collect();
                format!("[{}]", items.join(", "))
            }
        }
    }
}

/// One call: the function's name, its positional and its keyword arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) args: Vec<Arg>,
    pub(crate) kwargs: Vec<(String, Arg)>,
}

impl Call {
    /// The call as Python source.
    #[cfg(test)]
    pub(crate) fn source(&self) -> String {
        let mut parts: Vec<String> = self.args.iter().map(Arg::repr).collect();
        parts.extend(self.kwargs.iter().map(|(k, v)| format!("{k}={}", v.repr())));
        format!("{}({})", self.name, parts.join(", "))
    }

    /// Binds the arguments to `params` (name, default) as Python would, or says why not in
    /// Python's words.
    pub(crate) fn bind(&self, params: &[(&str, Option<Arg>)]) -> Result<Vec<Arg>, String> {
        let name = &self.name;
        let required = params.iter().filter(|(_, d)| d.is_none()).count();
        if self.args.len() > params.len() {
            let takes = if required == params.len() {
                plural(params.len(), "positional argument")
            } else {
                format!("from {required} to {} positional arguments", params.len())
            };
            let given = self.args.len();
            let were = if given == 1 { "was" } else { "were" };
            return Err(format!(
                "TypeError: {name}() takes {takes} but {given} {were} given"
            ));
        }
        let mut bound: Vec<Option<Arg>> = self.args.iter().cloned().map(Some).collect();
        bound.resize(params.len(), None);
        for (key, value) in &self.kwargs {
            let Some(i) = params.iter().position(|(p, _)| p == key) else {
                return Err(format!(
                    "TypeError: {name}() got an unexpected keyword argument '{key}'"
                ));
            };
            if bound[i].is_some() {
                return Err(format!(
                    "TypeError: {name}() got multiple values for argument '{key}'"
                ));
            }
            bound[i] = Some(value.clone());
        }
        let missing: Vec<String> = params
            .iter()
            .zip(&bound)
            .filter(|((_, default), value)| default.is_none() && value.is_none())
            .map(|((p, _), _)| format!("'{p}'"))
            .collect();
        if !missing.is_empty() {
            let list = match missing.as_slice() {
                [one] => one.clone(),
                [init @ .., last] => format!("{} and {last}", init.join(", ")),
                [] => String::new(),
            };
            return Err(format!(
                "TypeError: {name}() missing {} {}: {list}",
                missing.len(),
                if missing.len() == 1 {
                    "required positional argument"
                } else {
                    "required positional arguments"
                }
            ));
        }
        Ok(bound
            .into_iter()
            .zip(params)
            .map(|(value, (_, default))| value.or_else(|| default.clone()).unwrap_or(Arg::None))
            .collect())
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Every well-formed call in `text`, in order (BrowserGym's `search_string`: the rest of the
/// text is ignored).
pub(crate) fn parse(text: &str) -> Vec<Call> {
    let chars: Vec<char> = text.chars().collect();
    let mut calls = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = (chars[i].is_alphabetic() || chars[i] == '_')
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if starts_word {
            let mut p = Parser {
                chars: &chars,
                pos: i,
            };
            if let Some(call) = p.call() {
                calls.push(call);
                i = p.pos;
                continue;
            }
        }
        // Strings are skipped whole, so that a call inside one is not taken.
        if chars[i] == '"' || chars[i] == '\'' {
            let mut p = Parser {
                chars: &chars,
                pos: i,
            };
            if p.string().is_some() {
                i = p.pos;
                continue;
            }
        }
        i += 1;
    }
    calls
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_ws();
        let start = self.pos;
        if !self.peek().is_some_and(|c| c.is_alphabetic() || c == '_') {
            return None;
        }
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
        }
        Some(self.chars[start..self.pos].iter().collect())
    }

    fn call(&mut self) -> Option<Call> {
        let name = self.ident()?;
        if !self.eat('(') {
            return None;
        }
        let mut call = Call {
            name,
            args: Vec::new(),
            kwargs: Vec::new(),
        };
        if self.eat(')') {
            return Some(call);
        }
        loop {
            let save = self.pos;
            let keyword = self.ident().filter(|_| {
                self.skip_ws();
                self.peek() == Some('=') && self.chars.get(self.pos + 1) != Some(&'=')
            });
            match keyword {
                Some(key) => {
                    self.pos += 1;
                    let value = self.value()?;
                    call.kwargs.push((key, value));
                }
                None => {
                    self.pos = save;
                    if !call.kwargs.is_empty() {
                        return None;
                    }
                    let value = self.value()?;
                    call.args.push(value);
                }
            }
            if self.eat(')') {
                return Some(call);
            }
            if !self.eat(',') {
                return None;
            }
            if self.eat(')') {
                return Some(call);
            }
        }
    }

    fn value(&mut self) -> Option<Arg> {
        self.skip_ws();
        match self.peek()? {
            '"' | '\'' => self.string().map(Arg::Str),
            '[' | '(' => {
                let close = if self.peek() == Some('[') { ']' } else { ')' };
                self.pos += 1;
                let mut items = Vec::new();
                if self.eat(close) {
                    return Some(Arg::List(items));
                }
                loop {
                    items.push(self.value()?);
                    if self.eat(close) {
                        return Some(Arg::List(items));
                    }
                    if !self.eat(',') {
                        return None;
                    }
                    if self.eat(close) {
                        return Some(Arg::List(items));
                    }
                }
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => self.number(),
            _ => match self.ident()?.as_str() {
                "True" => Some(Arg::Bool(true)),
                "False" => Some(Arg::Bool(false)),
                "None" => Some(Arg::None),
                _ => None,
            },
        }
    }

    fn number(&mut self) -> Option<Arg> {
        let start = self.pos;
        if matches!(self.peek(), Some('-' | '+')) {
            self.pos += 1;
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '_'))
        {
            if matches!(self.peek(), Some('e' | 'E'))
                && matches!(self.chars.get(self.pos + 1), Some('-' | '+'))
            {
                self.pos += 1;
            }
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos]
            .iter()
            .filter(|c| **c != '_')
            .collect();
        text.parse::<f64>().ok().map(Arg::Num)
    }

    /// A Python string literal (optionally raw, single, double or triple quoted).
    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        let triple = self.chars.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]);
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let c = self.peek()?;
            if c == quote {
                if !triple {
                    self.pos += 1;
                    return Some(out);
                }
                if self.chars.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]) {
                    self.pos += 3;
                    return Some(out);
                }
            }
            if c == '\n' && !triple {
                return None;
            }
            self.pos += 1;
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = self.peek()?;
            self.pos += 1;
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' => out.push(e),
                '\n' => {}
                'x' | 'u' | 'U' => {
                    let len = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = self.chars.get(self.pos..self.pos + len)?.iter().collect();
                    self.pos += len;
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
