//! Saying no with a reason: after `n` in the approval box, a line to type
//! what the model should do instead. Enter sends it with the refusal; an
//! empty Enter, or Esc, is a plain no. The input is the prompt's own
//! [`Editor`], so it edits (and takes a paste) the same way.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::Line;

use crate::editor::{Edit, Editor};
use crate::modal::Answer;
use crate::theme::Theme;

/// What the box asks once the person said no.
pub const ASKED: &str = "declined. What should the model do instead? Enter sends it with the \
                         refusal; Enter on an empty line or Esc just refuses";

/// The reason being typed.
#[derive(Debug, Default)]
pub struct Instead {
    input: Editor,
}

impl Instead {
    /// A key; `Some` once the refusal is complete.
    pub fn key(&mut self, key: KeyEvent) -> Option<Answer> {
        let plain_enter = key.code == KeyCode::Enter
            && !key
                .modifiers
                .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
        if key.code == KeyCode::Esc || (plain_enter && self.input.text().trim().is_empty()) {
            return Some(Answer::No);
        }
        match self.input.key(key) {
            Edit::Submit(instead) => Some(Answer::Instead(instead)),
            Edit::Changed | Edit::Ignored => None,
        }
    }

    pub fn paste(&mut self, text: &str) {
        self.input.paste(text);
    }

    /// The line saying what is asked.
    pub fn asked(theme: Theme) -> Line<'static> {
        Line::styled(ASKED, theme.warn())
    }

    /// Rows the input wants at `width` columns.
    pub fn height(&self, width: u16) -> u16 {
        self.input.height(width)
    }

    /// Draws the input; where the terminal's cursor goes.
    pub fn render(&self, theme: Theme, area: Rect, buf: &mut Buffer) -> Position {
        self.input.render(theme, area, buf)
    }
}
