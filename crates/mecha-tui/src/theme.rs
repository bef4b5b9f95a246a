//! The screen's styles, in one place, so `NO_COLOR` turns every colour off
//! at once: without colour the styles keep only bold, italic, underline and
//! reverse, which `NO_COLOR` does not forbid and which keep a heading or
//! the selected answer visible.

use ratatui::style::{Color, Modifier, Style};

/// Which styles the screen uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    color: bool,
}

impl Theme {
    /// Colours unless `NO_COLOR` is set to anything but the empty string
    /// (<https://no-color.org>).
    pub fn from_env() -> Self {
        Self::new(std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
    }

    pub const fn new(color: bool) -> Self {
        Self { color }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    /// Mecha's own words around outside text: labels, sizes, fences.
    pub fn dim(self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub fn heading(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// Code, fenced or inline: verbatim text.
    pub fn code(self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn prompt(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn running(self) -> Style {
        self.fg(Color::Blue)
    }

    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    /// A refusal, a failure, an armed interlock.
    pub fn alert(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn added(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn removed(self) -> Style {
        self.fg(Color::Red)
    }

    /// The choice the keys would pick.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn bar(self) -> Style {
        if self.color {
            Style::new().bg(Color::Indexed(236))
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
}
