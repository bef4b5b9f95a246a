//! What the two modals share: a bordered box (placed by [`crate::screen`],
//! at the bottom above the prompt), and a body scrolled a line or a page at
//! a time that knows how much of it is still below. The approval modal
//! ([`crate::modal`]) and the `ask_user` question ([`crate::asking`]) each
//! decide what goes in the box and which keys scroll it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

/// Rows `lines` take wrapped to the inside of a box `width` columns wide.
pub fn rows(lines: Vec<Line<'_>>, width: u16) -> u16 {
    let inner_width = width.saturating_sub(2).max(1);
    let count = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .line_count(inner_width);
    u16::try_from(count).unwrap_or(u16::MAX)
}

/// Clears `area` and draws a bordered box over all of it, titled `title`;
/// returns its inside.
pub fn open(area: Rect, title: String, buf: &mut Buffer) -> Rect {
    let block = Block::bordered().title(title);
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
