//! The quoted parts of a word (`'…'`, `"…"`, `$'…'`) and backticks, for
//! `shell_words`. (A child module of it, kept here beside the rules.)

use super::{End, MAX_DEPTH, Parser, SUBSTITUTED, SimpleCommand, Word};

impl Parser {
    /// `'…'`: everything up to the next `'` is literal.
    pub(super) fn single_quoted(&mut self, text: &mut String) {
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            if c == '\'' {
                return;
            }
            text.push(c);
        }
        self.opaque = true;
    }

    /// `"…"`: literal but for `\`, `$` and backticks.
    pub(super) fn double_quoted(&mut self, w: &mut Word, current: &mut SimpleCommand) {
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                // Inside double quotes a backslash only escapes these; before
                // anything else it is kept.
                '\\' => match self.peek(1) {
                    Some('\n') => {
                        self.opaque = true;
                        self.pos += 2;
                    }
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        w.text.push(next);
                        self.pos += 2;
                    }
                    _ => {
                        w.text.push('\\');
                        self.pos += 1;
                    }
                },
                '`' => {
                    self.pos += 1;
                    self.backticks(w, current, true);
                }
                '$' => self.dollar(w, current, true),
                _ => {
                    w.text.push(c);
                    self.pos += 1;
                }
            }
        }
        self.opaque = true; // unterminated
    }

    /// `$'…'`: backslash escapes, and `\'` does not end it.
    pub(super) fn ansi_c_quoted(&mut self, w: &mut Word) {
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(next) = self.peek(0) else { break };
                    self.pos += 1;
                    let decoded = match next {
                        'a' => '\x07',
                        'b' => '\x08',
                        'e' | 'E' => '\x1b',
                        'f' => '\x0c',
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'v' => '\x0b',
                        '\\' | '\'' | '"' | '?' => next,
                        _ => {
                            // Octal, `\x`, `\u`, `\c`: any character can be
                            // spelt this way, so the word is a wildcard to
                            // forbid rules and the line is opaque.
                            self.opaque = true;
                            w.expands = true;
                            w.text.push('\\');
                            next
                        }
                    };
                    w.text.push(decoded);
                }
                _ => w.text.push(c),
            }
        }
        self.opaque = true; // unterminated
    }

    /// After a backtick: the body up to the closing one, unescaped the way
    /// bash does, then split on its own.
    pub(super) fn backticks(&mut self, w: &mut Word, current: &mut SimpleCommand, in_double: bool) {
        w.expands = true;
        w.text.push_str(SUBSTITUTED);
        current.substitutes = true;
        let mut body = String::new();
        let mut closed = false;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '`' => {
                    closed = true;
                    break;
                }
                '\\' => match self.peek(0) {
                    Some(next @ ('$' | '`' | '\\')) => {
                        body.push(next);
                        self.pos += 1;
                    }
                    Some('"') if in_double => {
                        body.push('"');
                        self.pos += 1;
                    }
                    _ => body.push('\\'),
                },
                _ => body.push(c),
            }
        }
        if !closed || self.depth >= MAX_DEPTH {
            self.opaque = true;
        }
        if self.depth >= MAX_DEPTH {
            return;
        }
        let mut inner = Parser::new(&body, self.depth + 1);
        let mut parts = Vec::new();
        inner.list(&mut parts, End::Eof);
        self.opaque |= inner.opaque;
        self.nested.append(&mut parts);
        self.nested.append(&mut inner.nested);
    }
}
