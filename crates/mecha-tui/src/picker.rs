//! A list to pick one item from, in a box above the prompt: what `/skills`
//! and `/resume` show. Up and Down move, Enter picks, Esc closes. An item
//! can carry a note beside its name (why a skill is withheld), and what
//! picking it does: show something (a skill's body), or enter a line as if
//! it had been typed (`/resume ID`). A list that asks a question (what
//! `/rewind` should restore, whether to overwrite files changed since) says
//! what it is about in lines above its items.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use unicode_width::UnicodeWidthChar;

use crate::escape;
use crate::frame;
use crate::theme::Theme;

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickItem {
    pub name: String,
    /// Said beside the name, e.g. `withheld: …`.
    pub note: Option<String>,
    pub description: String,
    pub picked: OnPick,
}

/// What picking an item does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnPick {
    /// Shows this in the transcript.
    Show(String),
    /// Enters this line at the prompt, as if typed.
    Enter(String),
}

/// The list and the item under the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    title: String,
    /// What Enter does, in words for the box's last line.
    enter: String,
    /// What the list is about, above its items (outside text: escaped).
    said: Vec<String>,
    items: Vec<PickItem>,
    selected: usize,
    /// The first item shown.
    scroll: usize,
}

/// What a key did to the list.
#[derive(Debug, PartialEq, Eq)]
pub enum Picked {
    /// Enter on an item: what picking it does.
    Chosen(OnPick),
    Closed,
}

impl Picker {
    /// `title` and `enter` (what picking does: "shows it") are mecha's
    /// own; items' text passes the escaper when drawn.
    pub fn new(title: &str, enter: &str, items: Vec<PickItem>) -> Self {
        Self {
            title: title.to_owned(),
            enter: enter.to_owned(),
            said: Vec::new(),
            items,
            selected: 0,
            scroll: 0,
        }
    }

    /// The same list with `lines` above its items, saying what it is about.
    #[must_use]
    pub fn saying(mut self, lines: Vec<String>) -> Self {
        self.said = lines;
        self
    }

    /// A key; `Some` once the list is done with.
    pub fn key(&mut self, key: KeyEvent) -> Option<Picked> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let last = self.items.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Some(Picked::Closed),
            KeyCode::Enter => {
                return Some(match self.items.get(self.selected) {
                    Some(item) => Picked::Chosen(item.picked.clone()),
                    None => Picked::Closed,
                });
            }
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            _ => {}
        }
        None
    }

    /// The rows the box wants at `width` columns, its borders and its
    /// keys' line included.
    pub fn height(&self, width: u16) -> u16 {
        let items = u16::try_from(self.items.len().max(1)).unwrap_or(u16::MAX);
        items
            .saturating_add(frame::rows(self.said_lines(), width))
            .saturating_add(3)
    }

    /// What the list is about, escaped.
    fn said_lines(&self) -> Vec<Line<'static>> {
        self.said
            .iter()
            .map(|line| Line::raw(escape::owned(line)))
            .collect()
    }

    /// Draws the list as a box filling `area`, the cursor's item always in
    /// view.
    pub fn render(&mut self, theme: Theme, area: Rect, buf: &mut Buffer) {
        let footer = format!("↑↓ move · Enter {} · Esc closes", self.enter);
        let inner = frame::open(area, format!(" {} ", self.title), buf);
        let said_rows = frame::rows(self.said_lines(), area.width);
        // The items keep a row at least: a list nobody can see cannot be
        // picked from.
        let [said, list, foot] = Layout::vertical([
            Constraint::Length(said_rows.min(inner.height.saturating_sub(2))),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        Paragraph::new(self.said_lines())
            .wrap(Wrap { trim: false })
            .render(said, buf);
        let rows = usize::from(list.height).max(1);
        if self.selected < self.scroll {
            self.scroll = self.selected;
        } else if self.selected >= self.scroll + rows {
            self.scroll = self.selected + 1 - rows;
        }
        let lines: Vec<Line<'_>> = if self.items.is_empty() {
            vec![Line::styled("(none)", theme.dim())]
        } else {
            self.items
                .iter()
                .enumerate()
                .skip(self.scroll)
                .take(rows)
                .map(|(i, item)| item_line(item, i == self.selected, theme))
                .map(|line| clipped(line, usize::from(list.width)))
                .collect()
        };
        Paragraph::new(lines).render(list, buf);
        Line::styled(footer, theme.dim()).render(foot, buf);
    }
}

fn item_line(item: &PickItem, selected: bool, theme: Theme) -> Line<'static> {
    let mark = if selected { "› " } else { "  " };
    let name_style = if selected {
        theme.selected()
    } else {
        Default::default()
    };
    let mut spans = vec![
        Span::raw(mark),
        Span::styled(escape::line(&item.name).into_owned(), name_style),
    ];
    if let Some(note) = &item.note {
        spans.push(Span::styled(
            format!("  [{}]", escape::line(note)),
            theme.warn(),
        ));
    }
    if !item.description.is_empty() {
        spans.push(Span::styled(
            format!("  {}", escape::line(&item.description)),
            theme.dim(),
        ));
    }
    Line::from(spans)
}

/// `line` cut to `width` columns, ending in `…` where something was cut:
/// an item is one row, and a narrow screen should show that it goes on.
fn clipped(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let mut room = width.saturating_sub(1);
    let mut spans = Vec::new();
    for span in line.spans {
        let mut kept = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if w > room {
                room = 0;
                break;
            }
            room -= w;
            kept.push(c);
        }
        spans.push(Span::styled(kept, span.style));
        if room == 0 {
            break;
        }
    }
    spans.push(Span::raw("…"));
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn item(name: &str) -> PickItem {
        PickItem {
            name: name.to_owned(),
            note: None,
            description: String::new(),
            picked: OnPick::Show(format!("body of {name}")),
        }
    }

    #[test]
    fn arrows_move_within_the_list_and_enter_picks_the_one_under_the_cursor() {
        let mut picker = Picker::new("skills", "shows it", vec![item("a"), item("b")]);
        assert_eq!(picker.key(key(KeyCode::Up)), None);
        assert_eq!(picker.key(key(KeyCode::Down)), None);
        assert_eq!(picker.key(key(KeyCode::Down)), None);
        assert_eq!(
            picker.key(key(KeyCode::Enter)),
            Some(Picked::Chosen(OnPick::Show("body of b".to_owned())))
        );
        assert_eq!(picker.key(key(KeyCode::Esc)), Some(Picked::Closed));
    }

    #[test]
    fn an_item_wider_than_the_box_ends_in_an_ellipsis() {
        let mut long = item("files and conversation");
        long.description = "both as they were before this prompt".to_owned();
        let mut picker = Picker::new("rewind", "restores it", vec![long, item("cancel")]);
        let area = Rect::new(0, 0, 30, 6);
        let mut buf = Buffer::empty(area);
        picker.render(Theme::new(false), area, &mut buf);
        let row = |y: u16| {
            (0..area.width)
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect::<String>()
        };
        assert!(
            row(1).trim_end_matches([' ', '│']).ends_with('…'),
            "{}",
            row(1)
        );
        assert!(row(1).contains("› files and"), "{}", row(1));
        assert!(!row(2).contains('…'), "a short one is whole: {}", row(2));
    }

    #[test]
    fn enter_on_an_empty_list_closes_it() {
        let mut picker = Picker::new("skills", "shows it", Vec::new());
        assert_eq!(picker.key(key(KeyCode::Enter)), Some(Picked::Closed));
    }
}
