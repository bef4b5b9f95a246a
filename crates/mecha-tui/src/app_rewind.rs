//! The screen's side of `/rewind` (what it lists and restores is the
//! binary's): Esc twice at an empty prompt between turns opens it, as in
//! Claude Code; it is refused while a turn runs, since the turn is still
//! changing the files and the conversation it would put back; and after a
//! conversation was cut back, that prompt's text waits in the editor to be
//! changed and sent again, and the transcript shows the conversation as
//! it now stands.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use mecha_agent::Retold;

use super::{Action, App};
use crate::rewind::REWIND;
use crate::transcript::{NoticeKind, Transcript};

/// How soon the second Esc must follow the first.
const ESC_TWICE: Duration = Duration::from_millis(800);

impl App {
    /// Esc at an empty prompt between turns: the first says what a second
    /// does, the second opens `/rewind`. `settled`: the Esc is not the tail
    /// of one that closed a box. `None`: the key is not one of these.
    pub(super) fn esc_twice(&mut self, key: KeyEvent, settled: bool) -> Option<Action> {
        let armed = self.esc_at.take();
        if key.code != KeyCode::Esc || self.busy || !self.editor.text().is_empty() || !settled {
            return None;
        }
        if armed.is_some_and(|at| at.elapsed() < ESC_TWICE) {
            self.said = None;
            return Some(self.enter(REWIND.to_owned()));
        }
        self.esc_at = Some(Instant::now());
        self.said = Some("press Esc again to rewind to before an earlier prompt".to_owned());
        Some(Action::None)
    }

    /// Whether `line`, entered while a turn runs, is refused rather than
    /// queued: a rewind would race the turn for the files.
    pub(super) fn refused_while_busy(&mut self, line: &str) -> bool {
        if line.split_whitespace().next() != Some(REWIND) {
            return false;
        }
        self.transcript.notice(
            NoticeKind::Warning,
            "/rewind waits for no turn: this one is still changing the files and the \
             conversation. Let it end, or stop it with Esc, then /rewind"
                .to_owned(),
        );
        true
    }

    /// A `/rewind` was done: what it did is said, and after a cut of the
    /// conversation, the transcript shows the conversation as it now
    /// stands (`retold`; the interlock's taint stays, as the session's
    /// does, and the context's size is the last kept turn's)
    /// and the prompt it took out goes back in the editor, to be edited
    /// and sent again.
    pub fn rewound(&mut self, said: String, prompt: Option<String>, retold: Option<Vec<Retold>>) {
        if let Some(told) = retold {
            let taint = self.transcript.taint();
            self.transcript = Transcript::new();
            self.transcript.begin_conversation(taint);
            self.transcript.retold(told);
        }
        self.transcript.notice(NoticeKind::Info, said);
        if let Some(prompt) = prompt {
            self.editor.clear();
            self.editor.paste(&prompt);
        }
        self.dirty = true;
        self.urgent = true;
    }
}
