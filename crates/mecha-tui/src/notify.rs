//! Telling the terminal that the screen needs the user: a call waits for
//! approval, the model asks something, or a turn ended while the terminal
//! was not in focus (as the terminal reports it, focus reporting on). A
//! bell (BEL) by default, which every terminal and tmux understand; or an
//! OSC 9 desktop notification with a line saying why (iTerm2, WezTerm,
//! kitty, Windows Terminal, Ghostty); or nothing.
//!
//! The notification's text is mecha's own, never the model's: what goes
//! into an escape sequence is not outside text.

use serde::Deserialize;

/// How the user is told (`[tui] notify`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    #[default]
    Bel,
    Osc9,
    Off,
}

impl Notify {
    /// The setting's own spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bel => "bel",
            Self::Osc9 => "osc9",
            Self::Off => "off",
        }
    }
}

/// Why the screen needs the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Approval,
    Question,
    /// Only said while the terminal is out of focus.
    TurnDone,
}

impl Need {
    fn says(self) -> &'static str {
        match self {
            Self::Approval => "mecha: a call waits for your approval",
            Self::Question => "mecha: the model asks you something",
            Self::TurnDone => "mecha: the turn is done",
        }
    }
}

/// Where the notification's bytes go: the terminal.
pub type Bell = Box<dyn FnMut(&str) + Send>;

/// How to tell the user, and whether the terminal has the focus.
pub struct Attention {
    how: Notify,
    /// Until the terminal says otherwise, it is taken to be in focus.
    focused: bool,
    bell: Bell,
}

impl std::fmt::Debug for Attention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attention")
            .field("how", &self.how)
            .field("focused", &self.focused)
            .finish_non_exhaustive()
    }
}

impl Attention {
    pub fn new(how: Notify, bell: Bell) -> Self {
        Self {
            how,
            focused: true,
            bell,
        }
    }

    /// Nobody is told anything (a screen not on a terminal).
    pub fn off() -> Self {
        Self::new(Notify::Off, Box::new(|_| {}))
    }

    /// The terminal gained (`true`) or lost the focus.
    pub fn focus(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// The screen needs the user for `need`.
    pub fn needed(&mut self, need: Need) {
        if need == Need::TurnDone && self.focused {
            return;
        }
        match self.how {
            Notify::Bel => (self.bell)("\u{7}"),
            Notify::Osc9 => (self.bell)(&format!("\u{1b}]9;{}\u{7}", need.says())),
            Notify::Off => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn told(how: Notify) -> (Attention, Arc<Mutex<String>>) {
        let written = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&written);
        let bell: Bell = Box::new(move |bytes| sink.lock().unwrap().push_str(bytes));
        (Attention::new(how, bell), written)
    }

    #[test]
    fn a_finished_turn_is_told_only_out_of_focus() {
        let (mut a, written) = told(Notify::Bel);
        a.needed(Need::TurnDone);
        assert_eq!(*written.lock().unwrap(), "");
        a.needed(Need::Approval);
        assert_eq!(*written.lock().unwrap(), "\u{7}");
        a.focus(false);
        a.needed(Need::TurnDone);
        assert_eq!(*written.lock().unwrap(), "\u{7}\u{7}");
    }

    #[test]
    fn osc9_says_why_and_off_says_nothing() {
        let (mut a, written) = told(Notify::Osc9);
        a.needed(Need::Question);
        assert_eq!(
            *written.lock().unwrap(),
            "\u{1b}]9;mecha: the model asks you something\u{7}"
        );
        let (mut a, written) = told(Notify::Off);
        a.focus(false);
        a.needed(Need::TurnDone);
        a.needed(Need::Approval);
        assert_eq!(*written.lock().unwrap(), "");
    }
}
