//! The approval modal: the call with its whole command or diff, scrollable,
//! and yes / no / always, "always" saying what it would cover (the same
//! standing answer the terminal approver offers, from mecha-core). A call
//! that needs a fresh decision (a `prompt` rule, a hook's `ask`, the
//! one-call trifecta) says why and offers no "always".
//!
//! As with the terminal approver, nobody says yes to what they have not
//! seen: until the body has been scrolled to its end, yes and always are
//! refused with a line saying so.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use mecha_core::Offer;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::escape;
use crate::frame::{self, Move, Scroll};
use crate::theme::Theme;

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    Always,
}

/// One question on screen.
#[derive(Debug)]
pub struct Approval {
    /// The subagent asking, `None` for the run's own agent.
    who: Option<String>,
    tool: String,
    body: Vec<String>,
    offer: Offer,
    scroll: Scroll,
    /// Set when a yes came before the end was seen.
    unseen_warning: bool,
}

impl Approval {
    /// `body`: what the call will do (its command, or the diff of a write).
    pub fn new(who: Option<&str>, tool: &str, body: &str, offer: Offer) -> Self {
        Self {
            who: who.map(str::to_owned),
            tool: tool.to_owned(),
            body: body.lines().map(escape::owned).collect(),
            offer,
            scroll: Scroll::default(),
            unseen_warning: false,
        }
    }

    /// Whether the end of the body has been on screen.
    fn seen_all(&self) -> bool {
        self.scroll.seen_all(self.body.len())
    }

    /// A key; `Some` once the person has answered.
    pub fn key(&mut self, key: KeyEvent) -> Option<Answer> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let movement = match key.code {
            KeyCode::Char('n' | 'N') | KeyCode::Esc => return Some(Answer::No),
            KeyCode::Char('y' | 'Y') => return self.unless_unseen(Answer::Yes),
            KeyCode::Char('a' | 'A') if matches!(self.offer, Offer::Always(_)) => {
                return self.unless_unseen(Answer::Always);
            }
            KeyCode::Down | KeyCode::Char('j') => Move::Down,
            KeyCode::Up | KeyCode::Char('k') => Move::Up,
            KeyCode::PageDown | KeyCode::Char(' ') => Move::PageDown,
            KeyCode::PageUp => Move::PageUp,
            KeyCode::End | KeyCode::Char('G') => Move::End,
            KeyCode::Home | KeyCode::Char('g') => Move::Home,
            _ => return None,
        };
        self.scroll.step(movement, self.body.len());
        None
    }

    fn unless_unseen(&mut self, answer: Answer) -> Option<Answer> {
        if self.seen_all() {
            return Some(answer);
        }
        self.unseen_warning = true;
        None
    }

    /// Draws the modal over the middle of `area`.
    pub fn render(&mut self, theme: Theme, area: Rect, buf: &mut Buffer) {
        let wanted = u16::try_from(self.body.len()).unwrap_or(u16::MAX);
        // Whether the body fits decides whether the "more below" line is
        // shown, which takes room from the body in turn.
        let plain = frame::rows(self.footer(theme, false), area);
        let fits = wanted.saturating_add(plain + 2) <= area.height;
        let footer_rows = if fits {
            plain
        } else {
            frame::rows(self.footer(theme, true), area)
        };
        let title = match &self.who {
            Some(who) => format!(
                " mecha's subagent `{}` wants to run `{}` ",
                escape::line(who),
                escape::line(&self.tool)
            ),
            None => format!(" mecha wants to run `{}` ", escape::line(&self.tool)),
        };
        let inner = frame::open(area, wanted.saturating_add(footer_rows + 2), title, buf);
        let [body, foot] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(footer_rows.min(inner.height)),
        ])
        .areas(inner);
        self.scroll.shown(usize::from(body.height), self.body.len());
        let lines: Vec<Line<'_>> = self
            .body
            .iter()
            .skip(self.scroll.top())
            .take(self.scroll.visible())
            .map(|l| Line::styled(l.as_str(), diff_style(l, theme)))
            .collect();
        Paragraph::new(lines).render(body, buf);
        Paragraph::new(self.footer(theme, !self.seen_all()))
            .wrap(Wrap { trim: false })
            .render(foot, buf);
    }

    /// The lines under the body; `unseen`: with the line saying how much
    /// is left to see.
    fn footer(&self, theme: Theme, unseen: bool) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if unseen {
            let below = self.scroll.below(self.body.len());
            let style = if self.unseen_warning {
                theme.alert()
            } else {
                theme.warn()
            };
            lines.push(Line::styled(
                format!(
                    "{below} more line(s) below: scroll to the end (↓, space, End) before allowing"
                ),
                style,
            ));
        }
        if let Offer::Fresh(reason) = &self.offer {
            lines.push(Line::styled(format!("{}.", reason.why()), theme.warn()));
        }
        let mut choices = vec![
            Span::styled(" y ", theme.selected()),
            Span::raw(" yes   "),
            Span::styled(" n ", theme.selected()),
            Span::raw(" no"),
        ];
        match &self.offer {
            Offer::Always(answer) => {
                choices.push(Span::raw("   "));
                choices.push(Span::styled(" a ", theme.selected()));
                choices.push(Span::raw(format!(
                    " always allow {} in this session",
                    escape::line(&answer.describe())
                )));
            }
            Offer::NoAlways(why) => {
                choices.push(Span::styled(
                    format!("   (no always for this call: {})", escape::line(why)),
                    theme.dim(),
                ));
            }
            Offer::Fresh(_) => {}
        }
        lines.push(Line::from(choices));
        lines
    }
}

/// A diff's added and removed lines in their colours.
fn diff_style(line: &str, theme: Theme) -> Style {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
        theme.dim()
    } else if line.starts_with('+') {
        theme.added()
    } else if line.starts_with('-') {
        theme.removed()
    } else {
        Style::new()
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;
    use serde_json::json;

    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn a_fresh_decision_has_no_always() {
        let mut m = Approval::new(
            None,
            "shell",
            "ls",
            Offer::Fresh(mecha_core::FreshReason::Rule),
        );
        assert_eq!(
            m.key(key(KeyCode::Char('y'))),
            None,
            "a yes before the call was drawn"
        );
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 10));
        m.render(Theme::new(false), buf.area, &mut buf);
        assert_eq!(m.key(key(KeyCode::Char('a'))), None);
        assert_eq!(m.key(key(KeyCode::Char('y'))), Some(Answer::Yes));
    }

    #[test]
    fn yes_waits_until_the_whole_body_was_on_screen() {
        let body: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let offer = Offer::for_call("fs_write", &json!({"path": "a"}), None);
        let mut m = Approval::new(None, "fs_write", &body, offer);
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 20));
        m.render(Theme::new(false), buf.area, &mut buf);
        assert_eq!(m.key(key(KeyCode::Char('y'))), None);
        assert_eq!(m.key(key(KeyCode::Char('a'))), None);
        m.key(key(KeyCode::End));
        m.render(Theme::new(false), buf.area, &mut buf);
        assert_eq!(m.key(key(KeyCode::Char('a'))), Some(Answer::Always));
        assert_eq!(m.key(key(KeyCode::Esc)), Some(Answer::No));
    }
}
