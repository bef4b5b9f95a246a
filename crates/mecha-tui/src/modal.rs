//! The approval modal: the call with its whole command or diff, scrollable,
//! and yes / no / always, "always" saying what it would cover (the same
//! standing answer the terminal approver offers, from mecha-core). A call
//! that needs a fresh decision (a `prompt` rule, a hook's `ask`, the
//! one-call trifecta) says why and offers no "always".
//!
//! As with the terminal approver, nobody says yes to what they have not
//! seen: the body is wrapped to the box (never cut at its border, see
//! [`crate::body`]), and until every character of it has been on screen,
//! yes and always are refused with a line saying how much is left.
//!
//! `n` asks what the model should do instead ([`crate::instead`]); Esc is a
//! no without a word.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use mecha_core::{Confinement, Offer};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::body::{Body, INDENT};
use crate::escape;
use crate::frame::{self, Move, Scroll};
use crate::instead::Instead;
use crate::theme::Theme;

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// No, and what the model should do instead.
    Instead(String),
    Always,
}

/// One question on screen.
#[derive(Debug)]
pub struct Approval {
    /// The subagent asking, `None` for the run's own agent.
    who: Option<String>,
    tool: String,
    body: Body,
    offer: Offer,
    /// The sandbox the call runs in, if one confines it.
    confined: Option<Confinement>,
    scroll: Scroll,
    /// Set when a yes came before the end was seen.
    unseen_warning: bool,
    /// After `n`: what to do instead, being typed.
    instead: Option<Instead>,
}

impl Approval {
    /// `body`: what the call will do (its command, or the diff of a write).
    pub fn new(who: Option<&str>, tool: &str, body: &str, offer: Offer) -> Self {
        Self {
            who: who.map(str::to_owned),
            tool: tool.to_owned(),
            body: Body::new(body.lines().map(escape::owned).collect()),
            offer,
            confined: None,
            scroll: Scroll::default(),
            unseen_warning: false,
            instead: None,
        }
    }

    /// Says the call runs in `confined`, if a sandbox confines it.
    pub fn confined(mut self, confined: Option<Confinement>) -> Self {
        self.confined = confined;
        self
    }

    /// Whether every character of the body has been on screen.
    fn seen_all(&self) -> bool {
        self.body.seen_all()
    }

    /// A key; `Some` once the person has answered.
    pub fn key(&mut self, key: KeyEvent) -> Option<Answer> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if let Some(instead) = &mut self.instead {
            return instead.key(key);
        }
        let movement = match key.code {
            KeyCode::Esc => return Some(Answer::No),
            KeyCode::Char('n' | 'N') => {
                self.instead = Some(Instead::default());
                return None;
            }
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

    /// A paste is the reason's, once one is asked for.
    pub fn paste(&mut self, text: &str) {
        if let Some(instead) = &mut self.instead {
            instead.paste(text);
        }
    }

    fn unless_unseen(&mut self, answer: Answer) -> Option<Answer> {
        if self.seen_all() {
            return Some(answer);
        }
        self.unseen_warning = true;
        None
    }

    /// The rows the box wants at `width` columns, its borders included:
    /// the whole body and the choices under it.
    pub fn height(&mut self, theme: Theme, width: u16) -> u16 {
        let rows = self.body.wrap(usize::from(frame::inner_width(width)));
        let footer = frame::rows(self.footer(theme, false, width), width);
        u16::try_from(rows)
            .unwrap_or(u16::MAX)
            .saturating_add(footer + self.instead_rows(width) + 2)
    }

    fn instead_rows(&self, width: u16) -> u16 {
        let inner = frame::inner_width(width);
        self.instead
            .as_ref()
            .map_or(0, |instead| instead.height(inner))
    }

    /// Draws the modal as a box filling `area`; where the terminal's
    /// cursor goes, while a reason is typed.
    pub fn render(&mut self, theme: Theme, area: Rect, buf: &mut Buffer) -> Option<Position> {
        // Whether the body fits decides whether the "more below" line is
        // shown, which takes room from the body in turn.
        let fits = self.height(theme, area.width) <= area.height;
        let rows = self.body.len();
        let footer_rows = frame::rows(self.footer(theme, !fits, area.width), area.width);
        let title = match &self.who {
            Some(who) => format!(
                " mecha's subagent `{}` wants to run `{}` ",
                escape::line(who),
                escape::line(&self.tool)
            ),
            None => format!(" mecha wants to run `{}` ", escape::line(&self.tool)),
        };
        let inner = frame::open(area, title, buf);
        let [body, foot, typed] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(footer_rows.min(inner.height)),
            Constraint::Length(self.instead_rows(area.width)),
        ])
        .areas(inner);
        self.scroll.shown(usize::from(body.height), rows);
        let (top, visible) = (self.scroll.top(), self.scroll.visible());
        let lines: Vec<Line<'_>> = (top..top + visible)
            .filter_map(|i| self.body.row(i))
            .map(|(line, text, continued)| {
                let style = diff_style(line, theme);
                let indent = if continued { INDENT } else { "" };
                Line::from(vec![Span::raw(indent), Span::styled(text, style)])
            })
            .collect();
        Paragraph::new(lines).render(body, buf);
        self.body.shown(top, visible);
        Paragraph::new(self.footer(theme, !self.seen_all(), area.width))
            .wrap(Wrap { trim: false })
            .render(foot, buf);
        self.instead
            .as_ref()
            .map(|instead| instead.render(theme, typed, buf))
    }

    /// The lines under the body in a box `width` columns wide; `unseen`:
    /// with the line saying how much is left to see.
    fn footer(&self, theme: Theme, unseen: bool, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if unseen {
            let unseen = self.body.unseen_rows();
            let style = if self.unseen_warning {
                theme.alert()
            } else {
                theme.warn()
            };
            lines.push(Line::styled(
                format!(
                    "{unseen} row(s) not on screen yet: scroll over them (↓ ↑, space, PgUp) \
                     before allowing"
                ),
                style,
            ));
        }
        if let Some(confined) = &self.confined {
            lines.push(Line::styled(
                format!("The call runs {}.", escape::line(&confined.to_string())),
                theme.dim(),
            ));
        }
        if let Offer::Fresh(reason) = &self.offer {
            lines.push(Line::styled(format!("{}.", reason.why()), theme.warn()));
        }
        if self.instead.is_some() {
            lines.push(Instead::asked(theme));
            return lines;
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
        // A row after the first starts under the text of the first choice.
        lines.extend(frame::hanging(choices, frame::inner_width(width), 4));
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
    fn the_box_says_where_the_call_runs() {
        let offer = Offer::for_call("shell", &json!({"command": "ls"}), None);
        let mut m = Approval::new(None, "shell", "  $ ls", offer).confined(Some(Confinement {
            backend: "bwrap".into(),
            network: false,
            allowed_hosts: 0,
        }));
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 10));
        m.render(Theme::new(false), buf.area, &mut buf);
        let shown: String = buf.content().iter().map(|c| c.symbol()).collect();
        assert!(
            shown.contains("The call runs confined: bwrap, no network."),
            "{shown}"
        );
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
        assert_eq!(
            m.key(key(KeyCode::Char('a'))),
            None,
            "the end alone is not the whole"
        );
        m.key(key(KeyCode::Home));
        for _ in 0..100 {
            m.render(Theme::new(false), buf.area, &mut buf);
            m.key(key(KeyCode::PageDown));
        }
        assert_eq!(m.key(key(KeyCode::Char('a'))), Some(Answer::Always));
        assert_eq!(m.key(key(KeyCode::Esc)), Some(Answer::No));
    }

    #[test]
    fn n_asks_what_to_do_instead_and_an_empty_line_is_a_plain_no() {
        let offer = Offer::for_call("shell", &json!({"command": "ls"}), None);
        let mut m = Approval::new(None, "shell", "  $ ls", offer.clone());
        assert_eq!(m.key(key(KeyCode::Char('n'))), None, "a reason is asked");
        for c in "use fd".chars() {
            assert_eq!(m.key(key(KeyCode::Char(c))), None);
        }
        let mut buf = Buffer::empty(Rect::new(0, 0, 60, 12));
        let cursor = m.render(Theme::new(false), buf.area, &mut buf);
        let shown: String = buf.content().iter().map(|c| c.symbol()).collect();
        assert!(shown.contains("What should the model do"), "{shown}");
        assert!(shown.contains("use fd"), "{shown}");
        assert!(cursor.is_some(), "the cursor is in the reason");
        assert_eq!(
            m.key(key(KeyCode::Enter)),
            Some(Answer::Instead("use fd".into()))
        );
        let mut m = Approval::new(None, "shell", "  $ ls", offer);
        m.key(key(KeyCode::Char('n')));
        assert_eq!(m.key(key(KeyCode::Enter)), Some(Answer::No));
    }
}
