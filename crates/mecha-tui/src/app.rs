//! The screen's state and what each input does to it: the agent's events
//! and questions from the bridge, keys and pastes from the terminal. Pure:
//! the terminal and the agent's task are [`crate::run`]'s, so every
//! reaction here is tested without either.

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use serde_json::Value;

use crate::bridge::{Question, ToScreen};
use crate::editor::{Edit, Editor};
use crate::modal::{Answer, Approval};
use crate::picker::{Picked, Picker};
use crate::screen::{self, View};
use crate::status::RunInfo;
use crate::theme::Theme;
use crate::transcript::{NoticeKind, Transcript};

/// What a call's approval shows as its body: the command, or for a file
/// write the diff. The binary knows the tools and passes its own.
pub type Preview = Box<dyn Fn(&str, &Value) -> String + Send>;

/// What the app asks of whoever runs it.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    None,
    /// Run the agent on this prompt.
    Send(String),
    /// Stop the turn that is running.
    Interrupt,
    Quit,
}

/// Everything the screen shows, and the question being asked.
pub struct App {
    pub transcript: Transcript,
    pub editor: Editor,
    pub info: RunInfo,
    theme: Theme,
    preview: Preview,
    /// The question on screen, with the asker waiting for its answer.
    asking: Option<(Approval, Question)>,
    /// Questions that came while another was on screen (parallel
    /// subagents ask at once), asked in turn.
    queued: Vec<Question>,
    /// A list on screen (`/skills`), until picked from or closed.
    picking: Option<Picker>,
    /// A turn is running.
    busy: bool,
    /// Ctrl-C was pressed at an empty prompt; a second one quits.
    quit_armed: bool,
    scroll_back: u16,
    /// Something changed since the last frame.
    dirty: bool,
    /// What changed is a key's doing or a question: drawn at once, not
    /// at the next paced frame (a question's end must be seen before it
    /// can be answered yes).
    urgent: bool,
}

impl App {
    pub fn new(info: RunInfo, theme: Theme, preview: Preview) -> Self {
        Self {
            transcript: Transcript::new(),
            editor: Editor::new(),
            info,
            theme,
            preview,
            asking: None,
            queued: Vec::new(),
            picking: None,
            busy: false,
            quit_armed: false,
            scroll_back: 0,
            dirty: true,
            urgent: true,
        }
    }

    /// Whether a frame is due; true once after each change.
    pub fn take_dirty(&mut self) -> bool {
        self.urgent = false;
        std::mem::replace(&mut self.dirty, false)
    }

    /// Whether the next frame should not wait for its turn.
    pub fn is_urgent(&self) -> bool {
        self.urgent
    }

    /// Whether something changed since the last frame.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    pub fn busy(&self) -> bool {
        self.busy
    }

    /// Another conversation took this one's place (`/clear`, `/resume`,
    /// `/model`): what the status line says of it.
    pub fn switched(&mut self, info: RunInfo) {
        self.info = info;
        self.dirty = true;
    }

    /// The turn ended (answered, failed or interrupted).
    pub fn turn_over(&mut self) {
        self.busy = false;
        self.dirty = true;
    }

    /// Something from the agent's task.
    pub fn on_agent(&mut self, message: ToScreen) {
        self.dirty = true;
        match message {
            ToScreen::Event(event) => self.transcript.apply(&event),
            ToScreen::Notice(text) => self.transcript.notice(NoticeKind::Warning, text),
            ToScreen::Ask(question) => {
                if self.asking.is_some() {
                    self.queued.push(question);
                } else {
                    self.show(question);
                }
            }
        }
    }

    fn show(&mut self, question: Question) {
        let body = (self.preview)(&question.tool, &question.input);
        let modal = Approval::new(
            question.who.as_deref(),
            &question.tool,
            &body,
            question.offer.clone(),
        );
        self.asking = Some((modal, question));
        self.urgent = true;
    }

    /// Something from the terminal.
    pub fn on_terminal(&mut self, event: TermEvent) -> Action {
        self.dirty = true;
        self.urgent = true;
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
            TermEvent::Paste(text) if self.asking.is_none() => {
                self.editor.paste(&text);
                Action::None
            }
            _ => Action::None,
        }
    }

    fn on_key(&mut self, key: KeyEvent) -> Action {
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some((modal, _)) = &mut self.asking {
            // Ctrl-C at a question is a no, and the turn stops too.
            let answer = if ctrl_c {
                Some(Answer::No)
            } else {
                modal.key(key)
            };
            if let Some(answer) = answer {
                if let Some((_, question)) = self.asking.take() {
                    question.answer(answer);
                }
                if !self.queued.is_empty() {
                    let next = self.queued.remove(0);
                    self.show(next);
                }
            }
            return if ctrl_c {
                Action::Interrupt
            } else {
                Action::None
            };
        }
        if let Some(picker) = &mut self.picking {
            let picked = if ctrl_c {
                Some(Picked::Closed)
            } else {
                picker.key(key)
            };
            match picked {
                Some(Picked::Chosen(text)) => {
                    self.picking = None;
                    self.transcript.notice(NoticeKind::Info, text);
                }
                Some(Picked::Closed) => self.picking = None,
                None => {}
            }
            return Action::None;
        }
        if ctrl_c {
            return self.ctrl_c();
        }
        self.quit_armed = false;
        if key.code == KeyCode::Char('o') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.transcript.toggle_details();
            return Action::None;
        }
        match key.code {
            KeyCode::PageUp => self.scroll_back = self.scroll_back.saturating_add(10),
            KeyCode::PageDown => self.scroll_back = self.scroll_back.saturating_sub(10),
            _ => {}
        }
        match self.editor.key(key) {
            Edit::Submit(prompt) if !self.busy => {
                self.busy = true;
                self.scroll_back = 0;
                self.transcript.prompt(&prompt);
                Action::Send(prompt)
            }
            Edit::Submit(prompt) => {
                // One turn at a time: the prompt waits in the editor.
                self.editor.paste(&prompt);
                Action::None
            }
            Edit::Changed | Edit::Ignored => Action::None,
        }
    }

    /// Shows `picker` until something is picked from it or it is closed.
    pub fn pick(&mut self, picker: Picker) {
        self.picking = Some(picker);
        self.dirty = true;
    }

    /// During a turn it stops the turn; at an empty prompt, pressed twice,
    /// it quits; otherwise it clears the prompt.
    fn ctrl_c(&mut self) -> Action {
        if self.busy {
            return Action::Interrupt;
        }
        if !self.editor.text().is_empty() {
            self.editor.clear();
            return Action::None;
        }
        if self.quit_armed {
            return Action::Quit;
        }
        self.quit_armed = true;
        Action::None
    }

    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        screen::draw(
            frame,
            View {
                transcript: &self.transcript,
                editor: &self.editor,
                info: &self.info,
                approval: self.asking.as_mut().map(|(modal, _)| modal),
                picker: self.picking.as_mut(),
                scroll_back: self.scroll_back,
                theme: self.theme,
                hint: self.quit_armed.then_some("press Ctrl-C again to quit"),
            },
        );
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
