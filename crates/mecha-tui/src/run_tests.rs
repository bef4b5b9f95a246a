#![allow(clippy::unwrap_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mecha_agent::Event;
use ratatui::backend::TestBackend;
use serde_json::json;
use tokio::sync::mpsc::{self, UnboundedSender};

use super::*;
use crate::bridge::Question;
use crate::modal::Answer;
use crate::status::RunInfo;
use crate::theme::Theme;
use mecha_core::Offer;

/// Asks about a `sleep` call, then runs it for ever (until interrupted)
/// or, told no, answers at once.
struct Fake {
    screen: UnboundedSender<ToScreen>,
    answers: Vec<Answer>,
    interrupted: bool,
}

impl Conversation for Fake {
    async fn send(&mut self, _prompt: &str) -> Result<Option<Reply>, String> {
        let input = json!({"command": "sleep 100"});
        let offer = Offer::for_call("shell", &input, None);
        let (question, answer) = Question::new(None, "shell", &input, offer);
        self.screen.send(ToScreen::Ask(question)).unwrap();
        let answer = answer.await.unwrap();
        self.answers.push(answer.clone());
        if answer == Answer::No {
            let text = "fine, not sleeping".into();
            self.screen
                .send(ToScreen::Event(Event::Text { text }))
                .unwrap();
            return Ok(None);
        }
        self.screen
            .send(ToScreen::Event(Event::ToolCall {
                id: "1".into(),
                name: "shell".into(),
                input,
                confined: None,
            }))
            .unwrap();
        std::future::pending().await
    }

    fn interrupted(&mut self) {
        self.interrupted = true;
    }
}

fn keys(typed: &str) -> Vec<TermEvent> {
    typed
        .chars()
        .map(|c| {
            let (code, modifiers) = match c {
                '\n' => (KeyCode::Enter, KeyModifiers::NONE),
                '^' => (KeyCode::Char('c'), KeyModifiers::CONTROL),
                '@' => (KeyCode::Char('g'), KeyModifiers::CONTROL),
                c => (KeyCode::Char(c), KeyModifiers::NONE),
            };
            TermEvent::Key(KeyEvent::new(code, modifiers))
        })
        .collect()
}

/// Runs the loop on `typed` (`^` is Ctrl-C, `@` Ctrl-G, whose editor
/// adds " edited"); the screen at the end.
async fn session(typed: &str) -> (Exit, Fake, String) {
    let (screen, agent) = mpsc::unbounded_channel();
    let (keyboard, terminal_events) = mpsc::unbounded_channel();
    for key in keys(typed) {
        keyboard.send(key).unwrap();
    }
    drop(keyboard);
    let mut fake = Fake {
        screen,
        answers: Vec::new(),
        interrupted: false,
    };
    let mut app = App::new(
        RunInfo::default(),
        Theme::new(false),
        Box::new(|_, input| input.to_string()),
    );
    let mut terminal = Terminal::new(TestBackend::new(60, 12)).unwrap();
    let mut inputs = Inputs {
        agent,
        terminal: terminal_events,
        first: None,
        external_editor: Box::new(|text| Ok(format!("{text} edited"))),
    };
    let exit = drive(&mut terminal, &mut app, &mut fake, &mut inputs)
        .await
        .unwrap();
    let shown = format!("{}", terminal.backend());
    (exit, fake, shown)
}

#[tokio::test]
async fn a_question_is_answered_in_the_modal_and_two_ctrl_c_quit() {
    let (exit, fake, shown) = session("go\nn\n^^").await;
    assert_eq!(exit, Exit::Interrupted);
    assert_eq!(fake.answers, [Answer::No], "the n went to the prompt");
    assert!(shown.contains("fine, not sleeping"), "{shown}");
    assert!(!fake.interrupted);
}

#[tokio::test]
async fn ctrl_c_stops_a_running_turn_and_keeps_it() {
    let (exit, fake, shown) = session("go\ny^^^").await;
    assert_eq!(exit, Exit::Interrupted);
    assert_eq!(fake.answers, [Answer::Yes]);
    assert!(
        fake.interrupted,
        "the conversation was told of the interrupt"
    );
    assert!(shown.contains("interrupted"), "{shown}");
}

#[tokio::test]
async fn ctrl_g_puts_the_editors_text_in_the_prompt() {
    let (_, fake, shown) = session("draft@").await;
    assert!(shown.contains("› draft edited"), "{shown}");
    assert!(fake.answers.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_closed_terminal_ends_the_loop() {
    let (exit, _, _) = session("").await;
    assert_eq!(exit, Exit::Closed);
}
