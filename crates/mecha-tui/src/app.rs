//! The screen's state and what each input does to it: the agent's events
//! and questions from the bridge, keys and pastes from the terminal. Pure:
//! the terminal and the agent's task are [`crate::run`]'s, so every
//! reaction here is tested without either.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use serde_json::Value;

use crate::ask_user::UserQuestion;
use crate::asking::{AskUserModal, Typed};
use crate::bridge::{Question, ToScreen};
use crate::complete::Completion;
use crate::editor::{Edit, Editor};
use crate::modal::{Answer, Approval};
use crate::notify::{Attention, Need};
use crate::picker::{OnPick, Picked, Picker};
use crate::queue::PromptQueue;
use crate::screen::{self, Modal, View};
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
    /// Write the prompt in the user's own editor (Ctrl-G); its text is
    /// the editor's to start from.
    EditExternally,
    /// Leave, as a double Ctrl-C asks.
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
    asking: Option<Asked>,
    /// Questions that came while another was on screen (parallel
    /// subagents, or parallel `ask_user` calls, ask at once), asked in turn.
    queued: VecDeque<Waiting>,
    /// A list on screen (`/skills`), until picked from or closed.
    picking: Option<Picker>,
    /// Prompts entered during a turn, for the turns after it.
    prompts: PromptQueue,
    /// How the user is told the screen needs them.
    attention: Attention,
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
    /// When a key last closed a box (a question, a list): an Esc that
    /// comes right after, a double tap or a key's repeat, is not taken as
    /// a wish to stop the turn.
    box_closed: Option<Instant>,
    /// What Tab completes from (`None`: Tab does nothing).
    pub completion: Option<Completion>,
    /// What the last key had to say under the prompt (see `app_keys.rs`).
    said: Option<String>,
    /// When Esc was pressed at an empty prompt between turns: a second
    /// one soon after opens `/rewind` (see `app_rewind.rs`).
    esc_at: Option<Instant>,
}

/// How long after a box closed an Esc still belongs to it.
const ESC_SETTLES: Duration = Duration::from_millis(500);

impl App {
    pub fn new(info: RunInfo, theme: Theme, preview: Preview) -> Self {
        Self {
            transcript: Transcript::new(),
            editor: Editor::new(),
            info,
            theme,
            preview,
            asking: None,
            queued: VecDeque::new(),
            picking: None,
            prompts: PromptQueue::default(),
            attention: Attention::off(),
            busy: false,
            quit_armed: false,
            scroll_back: 0,
            dirty: true,
            urgent: true,
            box_closed: None,
            completion: None,
            said: None,
            esc_at: None,
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

    /// A second passed: a running call's line says how long it has run.
    pub fn clock_moved(&mut self) {
        if self.transcript.running() {
            self.dirty = true;
        }
    }

    /// Another conversation took this one's place (`/clear`, `/resume`,
    /// `/model`): what the status line says of it.
    pub fn switched(&mut self, info: RunInfo) {
        self.info = info;
        self.dirty = true;
    }

    /// Sends `prompt` as if it had been typed and entered: shown as the
    /// user's, and a turn begins (the prompt given on the command line).
    pub fn send(&mut self, prompt: String) -> Action {
        self.transcript.prompt(&prompt);
        self.start(prompt)
    }

    /// Hands `line` over to be run, with nothing shown for it.
    fn start(&mut self, line: String) -> Action {
        self.busy = true;
        self.scroll_back = 0;
        self.dirty = true;
        Action::Send(line)
    }

    /// Tells the user through `attention` when the screen needs them.
    pub fn notify_by(&mut self, attention: Attention) {
        self.attention = attention;
    }

    /// The turn ended (answered, failed or interrupted); unless another
    /// queued prompt goes on, the user's turn.
    pub fn turn_over(&mut self) {
        self.busy = false;
        self.dirty = true;
        if self.prompts.is_empty() {
            self.attention.needed(Need::TurnDone);
        }
    }

    /// Between turns: the next queued prompt, sent as if entered now. Not
    /// while a list is open (a queued `/resume` opened it): the prompt
    /// waits until the user has picked or closed it, so it goes to the
    /// conversation they chose.
    pub fn next_queued(&mut self) -> Option<String> {
        if self.busy || self.picking.is_some() {
            return None;
        }
        let prompt = self.prompts.take_first()?;
        self.send(prompt.clone());
        Some(prompt)
    }

    /// The turn was stopped or failed: the prompts queued behind it go
    /// back into the prompt, before what is being typed, unsent.
    pub fn turn_cut_short(&mut self) {
        if let Some(queued) = self.prompts.take_all() {
            let draft = self.editor.text().to_owned();
            self.editor.clear();
            self.editor.paste(&queued);
            if !draft.is_empty() {
                self.editor.paste("\n");
                self.editor.paste(&draft);
            }
        }
    }

    /// What the user's editor gave back (Ctrl-G): the prompt's new text,
    /// or why there is none, the prompt left as it was.
    pub fn edited(&mut self, edited: Result<String, String>) {
        self.dirty = true;
        self.urgent = true;
        match edited {
            Ok(text) => {
                self.editor.clear();
                self.editor.paste(&text);
            }
            Err(why) => self.transcript.notice(NoticeKind::Warning, why),
        }
    }

    /// Something from the agent's task.
    pub fn on_agent(&mut self, message: ToScreen) {
        self.dirty = true;
        match message {
            ToScreen::Event(event) => self.transcript.apply(&event),
            ToScreen::Notice(text) => self.transcript.notice(NoticeKind::Warning, text),
            ToScreen::Ask(question) => self.queue(Waiting::Approval(question)),
            ToScreen::AskUser(question) => self.queue(Waiting::User(question)),
        }
    }

    fn queue(&mut self, question: Waiting) {
        self.queued.push_back(question);
        if self.asking.is_none() {
            self.show_next();
        }
    }

    /// Shows the next question someone still waits for: one whose call
    /// was dropped with an interrupted turn has nobody to answer.
    fn show_next(&mut self) {
        while let Some(question) = self.queued.pop_front() {
            self.asking = match question {
                Waiting::Approval(q) if !q.abandoned() => {
                    let body = (self.preview)(&q.tool, &q.input);
                    let modal = Approval::new(q.who.as_deref(), &q.tool, &body, q.offer.clone())
                        .confined(q.confined.clone());
                    Some(Asked::Approval(Box::new(modal), q))
                }
                Waiting::User(q) if !q.abandoned() => Some(Asked::User(
                    AskUserModal::new(q.who.as_deref(), &q.question),
                    q,
                )),
                Waiting::Approval(_) | Waiting::User(_) => continue,
            };
            self.attention.needed(match self.asking {
                Some(Asked::Approval(..)) => Need::Approval,
                _ => Need::Question,
            });
            self.urgent = true;
            return;
        }
    }

    /// Something from the terminal.
    pub fn on_terminal(&mut self, event: TermEvent) -> Action {
        self.dirty = true;
        self.urgent = true;
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
            TermEvent::Paste(text) => {
                match &mut self.asking {
                    None => self.editor.paste(&text),
                    Some(Asked::User(modal, _)) => modal.paste(&text),
                    Some(Asked::Approval(modal, _)) => modal.paste(&text),
                }
                Action::None
            }
            TermEvent::FocusGained => {
                self.attention.focus(true);
                Action::None
            }
            TermEvent::FocusLost => {
                self.attention.focus(false);
                Action::None
            }
            _ => Action::None,
        }
    }

    fn on_key(&mut self, key: KeyEvent) -> Action {
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(asked) = self.asking.take() {
            self.asking = asked.key(key, ctrl_c, &mut self.transcript);
            if ctrl_c {
                // The turn stops, and with it every call still waiting.
                self.queued.clear();
                return Action::Interrupt;
            }
            if self.asking.is_none() {
                self.box_closed = Some(Instant::now());
                self.show_next();
            }
            return Action::None;
        }
        if let Some(picker) = &mut self.picking {
            let picked = if ctrl_c {
                Some(Picked::Closed)
            } else {
                picker.key(key)
            };
            match picked {
                Some(Picked::Chosen(OnPick::Show(text))) => {
                    self.picking = None;
                    self.transcript.notice(NoticeKind::Info, text);
                }
                // Run as if typed, but not shown as typed: the user picked
                // it (each step of `/rewind` is one), and what it does
                // says so itself.
                Some(Picked::Chosen(OnPick::Enter(line))) => {
                    self.picking = None;
                    if self.busy {
                        return self.enter(line);
                    }
                    return self.start(line);
                }
                Some(Picked::Closed) => {
                    self.picking = None;
                    self.box_closed = Some(Instant::now());
                }
                None => {}
            }
            return Action::None;
        }
        if ctrl_c {
            return self.ctrl_c();
        }
        // Esc stops a turn as Ctrl-C does, as in the other harnesses;
        // twice at an empty prompt it opens /rewind (`app_rewind.rs`).
        let settled = self.box_closed.is_none_or(|at| at.elapsed() >= ESC_SETTLES);
        if key.code == KeyCode::Esc && self.busy && settled {
            return Action::Interrupt;
        }
        self.quit_armed = false;
        if let Some(action) = self.esc_twice(key, settled) {
            return action;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if key.code == KeyCode::Char('o') && ctrl {
            self.transcript.toggle_details();
            return Action::None;
        }
        if key.code == KeyCode::Char('g') && ctrl {
            if self.busy {
                self.transcript.notice(
                    NoticeKind::Info,
                    "Ctrl-G opens your editor between turns; Enter queues the prompt for after \
                     this one"
                        .to_owned(),
                );
                return Action::None;
            }
            return Action::EditExternally;
        }
        if key.code == KeyCode::Up
            && self.editor.text().is_empty()
            && let Some(last) = self.prompts.take_last()
        {
            self.editor.paste(&last);
            return Action::None;
        }
        if self.prompt_key(key) {
            return Action::None;
        }
        match key.code {
            KeyCode::PageUp => self.scroll_back = self.scroll_back.saturating_add(10),
            KeyCode::PageDown => self.scroll_back = self.scroll_back.saturating_sub(10),
            _ => {}
        }
        match self.editor.key(key) {
            Edit::Submit(prompt) => self.enter(prompt),
            Edit::Changed | Edit::Ignored => Action::None,
        }
    }

    /// A line entered at the prompt (typed, or picked from a list).
    fn enter(&mut self, line: String) -> Action {
        if self.busy && self.refused_while_busy(&line) {
            return Action::None;
        }
        if self.busy {
            // One turn at a time: the line waits for the turn to end.
            self.prompts.push(line);
            return Action::None;
        }
        self.send(line)
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
                queued: &self.prompts,
                info: &self.info,
                modal: self.asking.as_mut().map(Asked::modal),
                picker: self.picking.as_mut(),
                scroll_back: self.scroll_back,
                theme: self.theme,
                hint: (self.quit_armed)
                    .then_some("press Ctrl-C again to quit")
                    .or(self.said.as_deref()),
            },
        );
    }
}

/// A question on screen, with whoever waits for its answer.
enum Asked {
    /// Boxed: the approval holds its wrapped rows and what was seen.
    Approval(Box<Approval>, Question),
    User(AskUserModal, UserQuestion),
}

impl Asked {
    /// A key; the question still on screen, or `None` once it was answered.
    /// Ctrl-C is a no to an approval and declines the model's question.
    /// What the person said to do instead of a call stays in `transcript`.
    fn key(self, key: KeyEvent, ctrl_c: bool, transcript: &mut Transcript) -> Option<Self> {
        match self {
            Self::Approval(mut modal, question) => {
                let answer = if ctrl_c {
                    Some(Answer::No)
                } else {
                    modal.key(key)
                };
                match answer {
                    Some(answer) => {
                        if let Answer::Instead(instead) = &answer {
                            transcript.notice(
                                NoticeKind::Info,
                                format!("you told the model instead: {instead}"),
                            );
                        }
                        question.answer(answer);
                    }
                    None => return Some(Self::Approval(modal, question)),
                }
            }
            Self::User(mut modal, question) => {
                let reply = if ctrl_c {
                    Some(Typed::Declined)
                } else {
                    modal.key(key)
                };
                match reply {
                    Some(Typed::Answer(answer)) => question.answer(Some(answer)),
                    Some(Typed::Declined) => question.answer(None),
                    None => return Some(Self::User(modal, question)),
                }
            }
        }
        None
    }

    fn modal(&mut self) -> Modal<'_> {
        match self {
            Self::Approval(modal, _) => Modal::Approval(modal),
            Self::User(modal, _) => Modal::AskUser(modal),
        }
    }
}

/// A question waiting for the one on screen to be answered.
enum Waiting {
    Approval(Question),
    User(UserQuestion),
}

#[path = "app_keys.rs"]
mod keys;

#[path = "app_rewind.rs"]
mod rewinding;

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
