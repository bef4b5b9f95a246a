//! What the two modals share: a bordered box with a cell of padding each
//! side (placed by [`crate::screen`], at the bottom above the prompt), a
//! line of choices wrapped with its continuation indented, and a body
//! scrolled a line or a page at a time that knows how much of it is still
//! below. The approval modal
//! ([`crate::modal`]) and the `ask_user` question ([`crate::asking`]) each
//! decide what goes in the box and which keys scroll it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph, Widget, Wrap};
use unicode_width::UnicodeWidthStr;

/// The columns a box takes besides its text: a border and a cell of
/// padding on each side.
const FRAME_COLUMNS: u16 = 4;

/// The width of the text inside a box `width` columns wide.
pub fn inner_width(width: u16) -> u16 {
    width.saturating_sub(FRAME_COLUMNS).max(1)
}

/// Rows `lines` take wrapped to the inside of a box `width` columns wide.
pub fn rows(lines: Vec<Line<'_>>, width: u16) -> u16 {
    let count = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .line_count(inner_width(width));
    u16::try_from(count).unwrap_or(u16::MAX)
}

/// `spans` as lines of at most `width` columns, broken between words, each
/// line after the first indented by `indent` columns so that it reads as
/// the same choice (a word longer than a line is left to the paragraph's
/// own wrap).
pub fn hanging(spans: Vec<Span<'static>>, width: u16, indent: usize) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut lines = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in spans {
        for word in span.content.split_inclusive(' ') {
            let w = word.trim_end().width();
            if used > indent && used + w > width {
                lines.push(Line::from(std::mem::take(&mut line)));
                line.push(Span::raw(" ".repeat(indent)));
                used = indent;
            }
            used += word.width();
            line.push(Span::styled(word.to_owned(), span.style));
        }
    }
    lines.push(Line::from(line));
    lines
}

/// Clears `area` and draws a bordered box over all of it, titled `title`;
/// returns its inside.
pub fn open(area: Rect, title: String, buf: &mut Buffer) -> Rect {
    let block = Block::bordered()
        .title(title)
        .padding(Padding::horizontal(1));
    let inner = block.inner(area);
    Clear.render(area, buf);
    block.render(area, buf);
    inner
}

/// How a body is scrolled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Down,
    Up,
    PageDown,
    PageUp,
    End,
    Home,
}

/// Where a body of `len` rows is scrolled to, and how many rows of it the
/// last frame had room for.
#[derive(Debug, Default)]
pub struct Scroll {
    /// The first row shown.
    top: usize,
    /// Rows the last frame showed; nothing is seen until a frame drew it.
    visible: usize,
}

impl Scroll {
    pub fn top(&self) -> usize {
        self.top
    }

    pub fn visible(&self) -> usize {
        self.visible
    }

    /// Rows of the `len` below what is shown.
    pub fn below(&self, len: usize) -> usize {
        len.saturating_sub(self.top.saturating_add(self.visible))
    }

    /// Scrolls a body of `len` rows.
    pub fn step(&mut self, movement: Move, len: usize) {
        let page = self.visible.clamp(1, len.max(1));
        let last = len.saturating_sub(page);
        self.top = match movement {
            Move::Down => (self.top + 1).min(last),
            Move::Up => self.top.saturating_sub(1),
            Move::PageDown => (self.top + page).min(last),
            Move::PageUp => self.top.saturating_sub(page),
            Move::End => last,
            Move::Home => 0,
        };
    }

    /// A frame shows `visible` rows of a body of `len`: the scroll stays
    /// within it.
    pub fn shown(&mut self, visible: usize, len: usize) {
        self.visible = visible;
        self.top = self.top.min(len.saturating_sub(visible));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_choice_line_keeps_its_indentation() {
        let spans = vec![
            Span::raw(" a "),
            Span::raw(" always allow every `shell` call whose command starts with `cargo`"),
        ];
        let lines = hanging(spans, 40, 4);
        let texts: Vec<String> = lines.iter().map(ToString::to_string).collect();
        assert!(texts.len() > 1, "{texts:?}");
        assert!(
            texts.iter().all(|t| t.trim_end().width() <= 40),
            "{texts:?}"
        );
        assert!(
            texts[1..]
                .iter()
                .all(|t| t.starts_with("    ") && !t.starts_with("     ")),
            "{texts:?}"
        );
        assert_eq!(texts.concat().split_whitespace().count(), 11);
    }

    #[test]
    fn the_scroll_stays_in_the_body_and_knows_what_is_below() {
        let mut s = Scroll::default();
        assert_eq!(s.below(10), 10, "nothing is seen before a frame");
        s.shown(4, 10);
        assert_eq!(s.below(10), 6);
        s.step(Move::PageDown, 10);
        assert_eq!((s.top(), s.below(10)), (4, 2));
        s.step(Move::End, 10);
        assert_eq!(s.below(10), 0);
        s.step(Move::Down, 10);
        assert_eq!(s.top(), 6, "past the end");
        s.shown(8, 10);
        assert_eq!(s.top(), 2, "a taller frame pulls the scroll back");
        s.step(Move::Home, 10);
        assert_eq!(s.top(), 0);
    }
}
