//! The prompt editor: multi-line text with a cursor, Enter to send, Ctrl-J
//! or Alt-Enter (Shift-Enter where the terminal reports it) for a new line,
//! and the prompts sent before on Up and Down at the first and last lines.
//!
//! A paste arrives as one bracketed-paste event and is inserted whole, line
//! breaks included, so a pasted file is one prompt rather than one prompt
//! per line.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::escape;
use crate::theme::Theme;

/// The most lines of the prompt shown at once; the cursor's stay in view.
pub const MAX_LINES: u16 = 8;

/// The prompt being written and the ones sent before.
#[derive(Debug, Default)]
pub struct Editor {
    text: String,
    /// A byte offset into `text`, on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// Which history entry is shown while browsing (`None`: the draft).
    browsing: Option<usize>,
    /// The unsent prompt, kept while history is browsed.
    draft: String,
}

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
pub enum Edit {
    /// Not the editor's key.
    Ignored,
    Changed,
    /// Enter: the prompt to send (never empty).
    Submit(String),
}

impl Editor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Drops the prompt being written; history stays.
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Inserts a paste as it came, a CRLF or a lone CR as a line break.
    pub fn paste(&mut self, text: &str) {
        self.insert(&text.replace("\r\n", "\n").replace('\r', "\n"));
    }

    pub fn key(&mut self, key: KeyEvent) -> Edit {
        if key.kind == KeyEventKind::Release {
            return Edit::Ignored;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) =>
            {
                self.insert("\n");
            }
            KeyCode::Char('j') if ctrl => self.insert("\n"),
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char(c) if !ctrl => self.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                    self.text.remove(self.cursor);
                }
            }
            KeyCode::Delete if self.cursor < self.text.len() => {
                self.text.remove(self.cursor);
            }
            KeyCode::Left => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            KeyCode::Right => {
                if let Some(c) = self.text[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Up if self.line_start() > 0 => self.vertical(-1),
            KeyCode::Down if self.line_end() < self.text.len() => self.vertical(1),
            KeyCode::Up => self.recall(-1),
            KeyCode::Down => self.recall(1),
            _ => return Edit::Ignored,
        }
        Edit::Changed
    }

    fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    fn submit(&mut self) -> Edit {
        if self.text.trim().is_empty() {
            return Edit::Ignored;
        }
        let sent = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if self.history.last() != Some(&sent) {
            self.history.push(sent.clone());
        }
        Edit::Submit(sent)
    }

    /// Steps through the prompts sent before; past the newest is the draft.
    fn recall(&mut self, step: isize) {
        let at = match (self.browsing, step < 0) {
            (None, true) if !self.history.is_empty() => {
                self.draft = std::mem::take(&mut self.text);
                Some(self.history.len() - 1)
            }
            (None, _) => return,
            (Some(0), true) => Some(0),
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        self.browsing = at;
        self.text = match at {
            Some(i) => self.history[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.cursor = self.text.len();
    }

    /// Moves the cursor a line up or down, to the same column or the
    /// line's end.
    fn vertical(&mut self, step: isize) {
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let start = if step < 0 {
            let above_end = self.line_start() - 1;
            self.text[..above_end].rfind('\n').map_or(0, |i| i + 1)
        } else {
            self.line_end() + 1
        };
        let line = &self.text[start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        let offset = line
            .char_indices()
            .nth(column)
            .map_or(line.len(), |(i, _)| i);
        self.cursor = start + offset;
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Where the word that ends at the cursor starts, and the word (for
    /// Tab's completion).
    pub fn word_before_cursor(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = last_word_start(before);
        (start, &before[start..])
    }

    /// Puts `with` in place of the text from `start` to the cursor, the
    /// cursor after it.
    pub fn replace_before_cursor(&mut self, start: usize, with: &str) {
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }

    /// Rows the editor wants at `width` columns: its lines as they wrap,
    /// up to [`MAX_LINES`].
    pub fn height(&self, width: u16) -> u16 {
        let rows = self.rows(width).len();
        u16::try_from(rows).unwrap_or(MAX_LINES).min(MAX_LINES)
    }

    /// Draws the prompt, its long lines wrapped, scrolled so the cursor's
    /// row shows; returns where the terminal's cursor goes.
    pub fn render(&self, theme: Theme, area: Rect, buf: &mut Buffer) -> Position {
        let rows = self.rows(area.width);
        // The cursor sits on the last row that starts at or before it, so
        // at a wrap it is at the start of the next row, not past the end
        // of this one.
        let row = rows
            .iter()
            .rposition(|r| r.start <= self.cursor)
            .unwrap_or(0);
        let top = row.saturating_sub(usize::from(area.height.saturating_sub(1)));
        let lines: Vec<Line<'_>> = rows
            .iter()
            .skip(top)
            .take(usize::from(area.height))
            .map(|r| {
                let mark = if r.start == 0 { "› " } else { "  " };
                Line::from(vec![
                    Span::styled(mark, theme.prompt()),
                    Span::raw(escape::line(&self.text[r.start..r.end])),
                ])
            })
            .collect();
        Paragraph::new(lines).render(area, buf);
        let start = rows.get(row).map_or(0, |r| r.start);
        let column = MARK + Span::raw(escape::line(&self.text[start..self.cursor])).width();
        Position {
            x: area.x
                + u16::try_from(column)
                    .unwrap_or(u16::MAX)
                    .min(area.width.saturating_sub(1)),
            y: area.y + u16::try_from(row - top).unwrap_or(0),
        }
    }

    /// The text cut into the rows it takes at `width` columns: each line
    /// on its own rows, wrapped at a character when it is wider than what
    /// is left beside the mark (a prompt is not prose; a path or a command
    /// line cut at a space would read no better).
    fn rows(&self, width: u16) -> Vec<Row> {
        let room = usize::from(width).saturating_sub(MARK).max(1);
        let mut rows = Vec::new();
        let mut line_start = 0;
        for line in self.text.split('\n') {
            let mut row = Row {
                start: line_start,
                end: line_start,
            };
            let mut used = 0;
            let mut previous = 0;
            for (i, c) in line.char_indices() {
                let end = i + c.len_utf8();
                // Escaping looks at the character before (a variation
                // selector after a plain letter), so a character's width is
                // what it adds to the one before it.
                let cell = Span::raw(escape::line(&line[previous..end]))
                    .width()
                    .saturating_sub(Span::raw(escape::line(&line[previous..i])).width());
                if used + cell > room && used > 0 {
                    rows.push(row);
                    row = Row {
                        start: line_start + i,
                        end: line_start + i,
                    };
                    used = 0;
                }
                used += cell;
                row.end = line_start + end;
                previous = i;
            }
            let full = used >= room;
            rows.push(row);
            // A cursor after a full row goes on the row below, as the next
            // character will, not on the row's last cell.
            if full && self.cursor == row.end {
                rows.push(Row {
                    start: row.end,
                    end: row.end,
                });
            }
            line_start += line.len() + 1;
        }
        rows
    }
}

/// The columns the prompt mark (`› `) and the indent under it take.
const MARK: usize = 2;

/// One row of the prompt on screen: a byte range of its text.
#[derive(Debug, Clone, Copy)]
struct Row {
    start: usize,
    end: usize,
}

#[cfg(test)]
#[path = "editor_tests.rs"]
mod tests;

/// Where the last word of `text` starts: after its last whitespace.
pub(crate) fn last_word_start(text: &str) -> usize {
    text.rfind(char::is_whitespace).map_or(0, |i| {
        i + text[i..].chars().next().map_or(1, char::len_utf8)
    })
}
