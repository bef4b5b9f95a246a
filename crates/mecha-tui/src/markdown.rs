//! The model's answer, markdown, as styled lines.
//!
//! pulldown-cmark (without its HTML writer: a small pull parser with no
//! tree of its own deps) rather than a hand parser: models write nested
//! lists, fences inside lists and emphasis across lines, the edge cases of
//! CommonMark a small parser gets wrong, and an unclosed fence while an
//! answer streams parses as a code block up to the end, as it should.
//! Code blocks keep their text and their fences verbatim, so what is copied
//! from the screen is what the model wrote.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::escape;
use crate::theme::Theme;

/// The end of `text` as lines, at least `wanted` of them when the text has
/// that many: only the blocks after a paragraph break (outside a code
/// fence) that are needed, so an answer still streaming costs a frame what
/// the screen shows of it, not its whole length.
pub fn render_tail(text: &str, theme: Theme, wanted: usize) -> Vec<Line<'static>> {
    for start in block_starts(text).into_iter().rev() {
        let lines = render(&text[start..], theme);
        if start == 0 || lines.len() >= wanted {
            return lines;
        }
    }
    render(text, theme)
}

/// Where each top-level block may start: 0, and after every blank line
/// that is not inside a fenced code block.
fn block_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let mut fenced = false;
    let mut offset = 0;
    let mut blank_before = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if blank_before && !fenced && !line.starts_with([' ', '\t']) {
            starts.push(offset);
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        }
        blank_before = line.trim().is_empty();
        offset += line.len();
    }
    starts
}

/// `text` as lines for the screen; every piece of it through the escaper.
pub fn render(text: &str, theme: Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        lines: Vec::new(),
        line: Vec::new(),
        styles: vec![Style::new()],
        lists: Vec::new(),
        quote: 0,
        code: false,
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

struct Renderer {
    theme: Theme,
    lines: Vec<Line<'static>>,
    /// The line being built.
    line: Vec<Span<'static>>,
    /// Inline styles in force, innermost last.
    styles: Vec<Style>,
    /// Open lists: the next item's number, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// How many block quotes are open.
    quote: usize,
    code: bool,
}

impl Renderer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.code => self.code_text(&text),
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => self.text(&text),
            Event::Code(text) => self.push(escape::owned(&text), self.theme.code()),
            Event::InlineMath(text) | Event::DisplayMath(text) => {
                self.push(escape::owned(&text), self.theme.code());
            }
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.line.push(Span::styled("───", self.theme.dim()));
                self.flush();
            }
            Event::TaskListMarker(done) => {
                self.push(if done { "[x] " } else { "[ ] " }.into(), self.theme.dim());
            }
            Event::FootnoteReference(name) => {
                self.push(format!("[{}]", escape::line(&name)), self.style())
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.block();
                let mut style = self.theme.heading();
                if level == HeadingLevel::H1 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                self.styles.push(style);
            }
            Tag::Paragraph => self.block(),
            Tag::BlockQuote(_) => {
                self.block();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => escape::owned(&lang),
                    CodeBlockKind::Indented => String::new(),
                };
                self.line
                    .push(Span::styled(format!("```{lang}"), self.theme.dim()));
                self.flush();
                self.code = true;
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.block();
                } else {
                    self.flush();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_owned(),
                };
                self.line.push(Span::raw("  ".repeat(depth)));
                self.line.push(Span::styled(marker, self.theme.dim()));
            }
            Tag::Emphasis => self
                .styles
                .push(self.style().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(self.style().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(self.style().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => self
                .styles
                .push(self.style().add_modifier(Modifier::UNDERLINED)),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) | TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::Paragraph => self.flush(),
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                self.code = false;
                self.line.push(Span::styled("```", self.theme.dim()));
                self.flush();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            _ => {}
        }
        if matches!(tag, TagEnd::Heading(_)) {
            self.flush();
        }
    }

    /// A fenced block's text: one line per line, exactly as written.
    fn code_text(&mut self, text: &str) {
        for piece in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            self.line
                .push(Span::styled(escape::owned(piece), self.theme.code()));
            self.flush();
        }
    }

    fn text(&mut self, text: &str) {
        let style = self.style();
        let mut pieces = text.split('\n').peekable();
        while let Some(piece) = pieces.next() {
            if !piece.is_empty() {
                self.push(escape::owned(piece), style);
            }
            if pieces.peek().is_some() {
                self.flush();
            }
        }
    }

    fn push(&mut self, text: String, style: Style) {
        if self.line.is_empty() && self.quote > 0 {
            self.line
                .push(Span::styled("> ".repeat(self.quote), self.theme.dim()));
        }
        self.line.push(Span::styled(text, style));
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    /// A new block starts: a blank line after the one before, outside lists.
    fn block(&mut self) {
        self.flush();
        if self.lists.is_empty() && self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn flush(&mut self) {
        if !self.line.is_empty() {
            self.lines.push(Line::from(std::mem::take(&mut self.line)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Vec<String> {
        render(text, Theme::new(false))
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn the_tail_of_a_long_answer_is_the_end_of_the_whole_and_no_more_than_needed() {
        let md: String = (0..200).map(|i| format!("paragraph {i}\n\n")).collect();
        let whole = plain(&md);
        let tail = texts(&render_tail(&md, Theme::new(false), 5));
        assert!(tail.len() >= 5 && tail.len() < 20, "{}", tail.len());
        assert_eq!(tail[..], whole[whole.len() - tail.len()..]);
    }

    #[test]
    fn the_tail_never_starts_inside_a_fenced_block() {
        let md = "intro\n\n```\ncode one\n\ncode two\n\ncode three\n```\n";
        let tail = texts(&render_tail(md, Theme::new(false), 2));
        // Cut at a blank line in the fence, `code three` would be a
        // paragraph and the closing fence would open a new block.
        assert_eq!(
            tail,
            plain("```\ncode one\n\ncode two\n\ncode three\n```\n")
        );
    }

    #[test]
    fn a_fenced_block_is_kept_verbatim_with_its_fences() {
        let md = "Run:\n\n```sh\nif [ -x a ]; then\n\t*echo* `hi`\nfi\n```\nafter";
        assert_eq!(
            plain(md),
            [
                "Run:",
                "",
                "```sh",
                "if [ -x a ]; then",
                "    *echo* `hi`",
                "fi",
                "```",
                "",
                "after"
            ]
        );
    }

    #[test]
    fn lists_nest_and_number() {
        let md = "1. one\n2. two\n   - inner\n3. three";
        assert_eq!(plain(md), ["1. one", "2. two", "  • inner", "3. three"]);
    }

    #[test]
    fn escapes_in_every_kind_of_text_are_neutralised() {
        let md = "# t\u{1b}[2J\n\n*a\u{1b}]52;c;x\u{7}*\n\n```\n\u{1b}[1A\n```\n\n`\u{202e}x`";
        for line in plain(md) {
            assert!(
                !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{line:?}"
            );
        }
    }

    #[test]
    fn an_unclosed_fence_while_streaming_is_code_to_the_end() {
        assert_eq!(
            plain("```rust\nfn main() {"),
            ["```rust", "fn main() {", "```"]
        );
    }
}
