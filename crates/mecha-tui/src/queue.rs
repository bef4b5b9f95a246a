//! Prompts entered while a turn runs: kept in order and shown above the
//! prompt as queued, each sent as a turn of its own when the one before it
//! ends. Up at an empty prompt takes the last one back to edit (or to drop,
//! with Ctrl-U); a turn that is stopped or fails hands them all back to the
//! prompt, so nothing is sent that the user did not see go.

use std::collections::VecDeque;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use crate::escape;
use crate::theme::Theme;

/// The most queued prompts listed; the rest are counted.
const SHOWN: usize = 3;

#[derive(Debug, Default)]
pub struct PromptQueue {
    prompts: VecDeque<String>,
}

impl PromptQueue {
    pub fn push(&mut self, prompt: String) {
        self.prompts.push_back(prompt);
    }

    /// The oldest, to send now.
    pub fn take_first(&mut self) -> Option<String> {
        self.prompts.pop_front()
    }

    /// The newest, taken back to edit.
    pub fn take_last(&mut self) -> Option<String> {
        self.prompts.pop_back()
    }

    /// All of them, oldest first, one after another as one text.
    pub fn take_all(&mut self) -> Option<String> {
        let all: Vec<String> = self.prompts.drain(..).collect();
        (!all.is_empty()).then(|| all.join("\n"))
    }

    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// Rows the list wants: none when nothing is queued.
    pub fn height(&self) -> u16 {
        match self.prompts.len() {
            0 => 0,
            n if n > SHOWN => SHOWN as u16 + 2,
            n => n as u16 + 1,
        }
    }

    fn lines(&self, theme: Theme) -> Vec<Line<'static>> {
        let mut lines = vec![Line::styled(
            "queued, sent when the turn ends (↑ takes the last back to edit):",
            theme.dim(),
        )];
        for prompt in self.prompts.iter().take(SHOWN) {
            let mut shown = prompt.lines();
            let first = escape::line(shown.next().unwrap_or_default());
            let more = if shown.next().is_some() { " …" } else { "" };
            lines.push(Line::styled(format!("  › {first}{more}"), theme.dim()));
        }
        if self.prompts.len() > SHOWN {
            lines.push(Line::styled(
                format!("  and {} more", self.prompts.len() - SHOWN),
                theme.dim(),
            ));
        }
        lines
    }

    pub fn render(&self, theme: Theme, area: Rect, buf: &mut Buffer) {
        if !self.is_empty() {
            Paragraph::new(self.lines(theme)).render(area, buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_leave_in_order_and_the_last_can_be_taken_back() {
        let mut q = PromptQueue::default();
        assert_eq!(q.height(), 0);
        for p in ["one", "two\nlines", "three", "four"] {
            q.push(p.to_owned());
        }
        assert_eq!(q.height(), 5, "three listed, the rest counted");
        let mut buf = Buffer::empty(Rect::new(0, 0, 70, 5));
        q.render(Theme::new(false), buf.area, &mut buf);
        let shown: String = buf.content().iter().map(|c| c.symbol()).collect();
        assert!(shown.contains("› two …"), "{shown}");
        assert!(shown.contains("and 1 more"), "{shown}");
        assert_eq!(q.take_last().as_deref(), Some("four"));
        assert_eq!(q.take_first().as_deref(), Some("one"));
        assert_eq!(q.take_all().as_deref(), Some("two\nlines\nthree"));
        assert_eq!(q.take_all(), None);
    }
}
