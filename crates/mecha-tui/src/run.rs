//! The loop that ties the screen to a conversation: one task draws when
//! something changed, feeds the app the agent's events and questions and
//! the terminal's keys, and drives the running turn, so a question is
//! answered in the same task that waits on the turn and nothing blocks.
//!
//! An interrupted turn is dropped and the conversation rewound to before
//! its prompt, as `mecha chat` does: a turn cut short leaves calls without
//! results, which no API accepts.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use tokio::time::Instant;

use crossterm::event::Event as TermEvent;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::app::{Action, App};
use crate::bridge::ToScreen;
use crate::picker::Picker;
use crate::transcript::NoticeKind;

/// What mecha itself answers to a command typed at the prompt (`/tools`).
#[derive(Debug)]
pub enum Reply {
    /// Text to show in the transcript (escaped when drawn).
    Show(String),
    /// A list to pick from.
    Pick(Picker),
    /// `/rewind` went back to before a prompt: what it did, and, when
    /// the conversation was cut back, the prompt's text (for the editor)
    /// and the conversation as it now stands, told again (for the
    /// transcript, which still showed what was cut).
    Rewound {
        said: String,
        prompt: Option<String>,
        retold: Option<Vec<mecha_agent::Retold>>,
    },
    Quit,
    /// Leave this conversation for another; whoever runs the screen makes
    /// it and drives the same app again.
    Switch(Switch),
}

/// The conversation a [`Reply::Switch`] asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// A new, empty session (`/clear`).
    Fresh,
    /// A stored session, by its id or a unique start of it (`/resume ID`).
    Resume(String),
    /// This session, with another model (`/model NAME`).
    Model(String),
}

/// A conversation the screen can send prompts to.
pub trait Conversation {
    /// Runs one prompt to its end, or answers it if it is a command; the
    /// error says what went wrong. Both run as a turn, so a command that
    /// takes a while (`/compact` asks the model) can be interrupted too.
    fn send(&mut self, input: &str) -> impl Future<Output = Result<Option<Reply>, String>>;
    /// Keeps what a turn the user cut short had done, and tells the model
    /// that it was interrupted.
    fn interrupted(&mut self);
}

/// Runs the user's own editor on a prompt's text (Ctrl-G), the screen
/// suspended meanwhile: the edited text, or a line saying why there is
/// none.
pub type ExternalEditor = Box<dyn FnMut(&str) -> Result<String, String> + Send>;

/// The inputs the loop waits on.
pub struct Inputs {
    pub agent: UnboundedReceiver<ToScreen>,
    pub terminal: UnboundedReceiver<TermEvent>,
    /// A prompt to send before the first key (`mecha "fix the test"`).
    pub first: Option<String>,
    pub external_editor: ExternalEditor,
}

/// What ended the loop.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// The user quit (`/quit`).
    Quit,
    /// The user pressed Ctrl-C twice at an empty prompt.
    Interrupted,
    /// The terminal's events ended (it closed).
    Closed,
    /// The user asked for another conversation.
    Switch(Switch),
}

/// Runs until the user quits; draws only when something changed.
pub async fn drive<B: Backend, C: Conversation>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    conversation: &mut C,
    inputs: &mut Inputs,
) -> Result<Exit, B::Error> {
    let mut next = inputs.first.take().inspect(|prompt| {
        app.send(prompt.clone());
    });
    loop {
        if next.is_none() {
            next = app.next_queued();
        }
        if let Some(prompt) = next.take() {
            if let Some(exit) = turn(terminal, app, conversation, inputs, &prompt).await? {
                return Ok(exit);
            }
            continue;
        }
        draw(terminal, app)?;
        // Biased: the agent's news before the next key, so a key meant for
        // a question never reaches the prompt because it came first.
        let action = tokio::select! {
            biased;
            Some(message) = inputs.agent.recv() => {
                app.on_agent(message);
                Action::None
            }
            event = inputs.terminal.recv() => match event {
                Some(event) => app.on_terminal(event),
                None => return Ok(Exit::Closed),
            },
        };
        match action {
            Action::Send(prompt) => next = Some(prompt),
            Action::Quit => return Ok(Exit::Interrupted),
            Action::EditExternally => {
                let edited = (inputs.external_editor)(app.editor.text());
                // The editor drew over the screen: every cell again, at
                // the size the terminal has now. (`clear` would ask the
                // terminal where its cursor is, and not every one answers.)
                let size = terminal.size()?;
                terminal.resize(Rect::new(0, 0, size.width, size.height))?;
                app.edited(edited);
            }
            Action::None | Action::Interrupt => {}
        }
    }
}

/// One turn, with the screen live while it runs.
async fn turn<B: Backend, C: Conversation>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    conversation: &mut C,
    inputs: &mut Inputs,
    prompt: &str,
) -> Result<Option<Exit>, B::Error> {
    let mut pace = Pace::default();
    let (ended, exit) = {
        let mut send = pin!(conversation.send(prompt));
        loop {
            let later = pace.draw(terminal, app)?;
            tokio::select! {
                biased;
                outcome = &mut send => break (Some(outcome), None),
                () = tokio::time::sleep_until(later.unwrap_or_else(Instant::now)), if later.is_some() => {}
                () = tokio::time::sleep(SECOND), if app.transcript.running() => app.clock_moved(),
                Some(message) = inputs.agent.recv() => app.on_agent(message),
                event = inputs.terminal.recv() => match event.map(|e| app.on_terminal(e)) {
                    Some(Action::Interrupt) => break (None, None),
                    Some(Action::Quit) => break (None, Some(Exit::Interrupted)),
                    None => break (None, Some(Exit::Closed)),
                    Some(Action::None | Action::Send(_) | Action::EditExternally) => {}
                },
            }
        }
    };
    // What the turn said before it ended is shown before what follows.
    while let Ok(message) = inputs.agent.try_recv() {
        app.on_agent(message);
    }
    let exit = match ended {
        Some(Ok(Some(reply))) => answered(app, reply).or(exit),
        Some(Ok(None)) => exit,
        Some(Err(error)) => {
            app.transcript.notice(NoticeKind::Error, error);
            app.turn_cut_short();
            exit
        }
        None => {
            app.turn_cut_short();
            conversation.interrupted();
            app.transcript.interrupted();
            app.transcript.notice(
                NoticeKind::Warning,
                "interrupted: the turn was stopped; what it did so far is kept".to_owned(),
            );
            exit
        }
    };
    app.turn_over();
    draw(terminal, app)?;
    Ok(exit)
}

/// Shows mecha's answer to a command; the exit it asks for, if any.
fn answered(app: &mut App, reply: Reply) -> Option<Exit> {
    match reply {
        Reply::Show(text) => app.transcript.notice(NoticeKind::Info, text),
        Reply::Pick(picker) => app.pick(picker),
        Reply::Rewound {
            said,
            prompt,
            retold,
        } => app.rewound(said, prompt, retold),
        Reply::Quit => return Some(Exit::Quit),
        Reply::Switch(switch) => return Some(Exit::Switch(switch)),
    }
    None
}

/// The shortest time between two frames while a turn runs: a model streams
/// hundreds of deltas a second, and a frame for each would spend a core on
/// drawing what nobody can read that fast.
const FRAME: Duration = Duration::from_millis(33);

/// How often a running call's elapsed time is drawn anew.
const SECOND: Duration = Duration::from_secs(1);

/// When the last frame was drawn.
#[derive(Default)]
struct Pace {
    last: Option<Instant>,
}

impl Pace {
    /// Draws if something changed and a frame is due; `Some`: something
    /// changed, and the frame is due then.
    fn draw<B: Backend>(
        &mut self,
        terminal: &mut Terminal<B>,
        app: &mut App,
    ) -> Result<Option<Instant>, B::Error> {
        if !app.is_dirty() {
            return Ok(None);
        }
        let now = Instant::now();
        if let Some(due) = self.last.map(|last| last + FRAME)
            && now < due
            && !app.is_urgent()
        {
            return Ok(Some(due));
        }
        draw(terminal, app)?;
        self.last = Some(now);
        Ok(None)
    }
}

fn draw<B: Backend>(terminal: &mut Terminal<B>, app: &mut App) -> Result<(), B::Error> {
    if app.take_dirty() {
        terminal.draw(|frame| app.draw(frame))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
