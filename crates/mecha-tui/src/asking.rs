//! The `ask_user` modal: the model's question, wrapped and scrollable
//! (PageUp / PageDown), over a text input for the answer. Enter sends it;
//! Alt-Enter or Ctrl-J starts a new line; Esc declines. The input is the
//! prompt's own [`Editor`], so it edits the same way.
//!
//! The question is the model's text: it passes [`escape`], and one beyond
//! [`MAX_QUESTION_BYTES`] is cut with a line saying so, so a runaway
//! question costs neither the screen nor the time to wrap it.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::editor::{Edit, Editor};
use crate::escape;
use crate::frame::{self, Move, Scroll};
use crate::theme::Theme;

/// The most of a question that is shown.
pub const MAX_QUESTION_BYTES: usize = 16 * 1024;

/// How the person replied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    Answer(String),
    Declined,
}

/// One question on screen, and the answer being typed.
#[derive(Debug)]
pub struct AskUserModal {
    /// Who asks, for the box's title: mecha, or one of its subagents.
    title: String,
    /// The question's lines, escaped, with the cut's note if it was cut.
    question: Vec<String>,
    /// In rows of the question as the last frame wrapped it.
    scroll: Scroll,
    /// Rows the question took at the last frame's width.
    rows: usize,
    input: Editor,
}

impl AskUserModal {
    /// The question of the subagent `who` (`None`: the run's own agent).
    pub fn new(who: Option<&str>, question: &str) -> Self {
        let title = match who {
            Some(who) => format!(" mecha's subagent `{}` asks you ", escape::line(who)),
            None => " the model asks you ".to_owned(),
        };
        let mut end = question.len().min(MAX_QUESTION_BYTES);
        while !question.is_char_boundary(end) {
            end -= 1;
        }
        let mut lines: Vec<String> = question[..end].lines().map(escape::owned).collect();
        if end < question.len() {
            lines.push(format!(
                "[mecha: the question is cut here; it is {} bytes, the first {end} are shown]",
                question.len()
            ));
        }
        Self {
            title,
            question: lines,
            scroll: Scroll::default(),
            rows: 0,
            input: Editor::new(),
        }
    }

    /// The answer typed so far.
    pub fn typed(&self) -> &str {
        self.input.text()
    }

    /// A paste goes into the answer whole.
    pub fn paste(&mut self, text: &str) {
        self.input.paste(text);
    }

    /// A key; `Some` once the person has replied.
    pub fn key(&mut self, key: KeyEvent) -> Option<Typed> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        // Only the page keys scroll: the arrows and Home/End edit the answer.
        let movement = match key.code {
            KeyCode::Esc => return Some(Typed::Declined),
            KeyCode::PageDown => Move::PageDown,
            KeyCode::PageUp => Move::PageUp,
            _ => {
                return match self.input.key(key) {
                    Edit::Submit(answer) => Some(Typed::Answer(answer)),
                    Edit::Changed | Edit::Ignored => None,
                };
            }
        };
        self.scroll.step(movement, self.rows);
        None
    }

    fn lines(&self) -> Vec<Line<'_>> {
        self.question
            .iter()
            .map(|l| Line::raw(l.as_str()))
            .collect()
    }

    /// What a question too long for its box says of the `below` rows
    /// still below it.
    fn note(below: usize) -> String {
        match below {
            0 => "the end of the question: PageUp to scroll back".to_owned(),
            below => format!("{below} more line(s) of the question below: PageDown to read on"),
        }
    }

    fn help(theme: Theme) -> Line<'static> {
        Line::styled(
            "Enter answers · Alt-Enter/Ctrl-J: new line · Esc declines",
            theme.dim(),
        )
    }

    /// The rows the box wants at `width` columns, its borders included:
    /// the whole question, the answer and the keys.
    pub fn height(&mut self, theme: Theme, width: u16) -> u16 {
        self.rows = usize::from(frame::rows(self.lines(), width));
        let below = self.input.height(frame::inner_width(width))
            + frame::rows(vec![Self::help(theme)], width)
            + 2;
        u16::try_from(self.rows)
            .unwrap_or(u16::MAX)
            .saturating_add(below)
    }

    /// Draws the modal as a box filling `area`; returns where the
    /// terminal's cursor goes (in the answer).
    pub fn render(&mut self, theme: Theme, area: Rect, buf: &mut Buffer) -> Position {
        // A question that does not fit gives rows to saying how much of
        // it is below, as many as the longest wording of it takes.
        let note_rows = if self.height(theme, area.width) > area.height {
            frame::rows(vec![Line::raw(Self::note(self.rows))], area.width)
        } else {
            0
        };
        let help = Self::help(theme);
        let help_rows = frame::rows(vec![help.clone()], area.width);
        let input_rows = self.input.height(frame::inner_width(area.width));
        let inner = frame::open(area, self.title.clone(), buf);
        let [question, note, input, foot] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(note_rows),
            Constraint::Length(input_rows),
            Constraint::Length(help_rows),
        ])
        .areas(inner);
        self.scroll.shown(usize::from(question.height), self.rows);
        Paragraph::new(self.lines())
            .wrap(Wrap { trim: false })
            .scroll((u16::try_from(self.scroll.top()).unwrap_or(u16::MAX), 0))
            .render(question, buf);
        if note_rows > 0 {
            Paragraph::new(Line::styled(
                Self::note(self.scroll.below(self.rows)),
                theme.warn(),
            ))
            .wrap(Wrap { trim: false })
            .render(note, buf);
        }
        let cursor = self.input.render(theme, input, buf);
        Paragraph::new(help)
            .wrap(Wrap { trim: false })
            .render(foot, buf);
        cursor
    }
}

#[cfg(test)]
#[path = "asking_tests.rs"]
mod tests;
