#![allow(clippy::unwrap_used)]

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use mecha_agent::Event;
use serde_json::json;

use super::*;
use crate::modal::Offer;

fn app() -> App {
    App::new(
        RunInfo::default(),
        Theme::new(false),
        Box::new(|_, input| input["command"].as_str().unwrap_or_default().to_owned()),
    )
}

fn key(code: KeyCode) -> TermEvent {
    TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl_c() -> TermEvent {
    TermEvent::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.on_terminal(key(KeyCode::Char(c)));
    }
}

#[test]
fn a_prompt_is_sent_once_and_the_next_waits_for_the_turn() {
    let mut a = app();
    typed(&mut a, "hi");
    assert_eq!(
        a.on_terminal(key(KeyCode::Enter)),
        Action::Send("hi".into())
    );
    assert!(a.busy());
    typed(&mut a, "more");
    assert_eq!(a.on_terminal(key(KeyCode::Enter)), Action::None);
    assert_eq!(a.editor.text(), "more", "the prompt stays to send later");
    a.turn_over();
    assert_eq!(
        a.on_terminal(key(KeyCode::Enter)),
        Action::Send("more".into())
    );
}

#[test]
fn ctrl_c_stops_a_turn_and_twice_at_an_empty_prompt_quits() {
    let mut a = app();
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    assert_eq!(a.on_terminal(ctrl_c()), Action::Interrupt);
    a.turn_over();
    typed(&mut a, "draft");
    assert_eq!(a.on_terminal(ctrl_c()), Action::None);
    assert_eq!(a.editor.text(), "", "the first Ctrl-C clears the prompt");
    assert_eq!(a.on_terminal(ctrl_c()), Action::None);
    assert_eq!(a.on_terminal(ctrl_c()), Action::Quit);
}

#[tokio::test]
async fn questions_are_answered_through_the_modal_one_at_a_time() {
    let mut a = app();
    let ask = |cmd: &str| {
        let input = json!({"command": cmd});
        Question::new(
            None,
            "shell",
            &input,
            Offer::for_call("shell", &input, None),
        )
    };
    let (first, first_answer) = ask("ls");
    let (second, second_answer) = ask("git status");
    a.on_agent(ToScreen::Ask(first));
    a.on_agent(ToScreen::Ask(second));
    // Typing goes to the modal, not the prompt.
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(60, 12)).unwrap();
    terminal.draw(|f| a.draw(f)).unwrap();
    a.on_terminal(key(KeyCode::Char('y')));
    assert_eq!(first_answer.await.unwrap(), Answer::Yes);
    assert_eq!(a.editor.text(), "");
    terminal.draw(|f| a.draw(f)).unwrap();
    a.on_terminal(key(KeyCode::Char('n')));
    assert_eq!(second_answer.await.unwrap(), Answer::No);
    a.on_agent(ToScreen::Event(Event::Text { text: "ok".into() }));
    assert_eq!(a.transcript.entries().len(), 1);
}

#[test]
fn frames_are_due_only_after_a_change() {
    let mut a = app();
    assert!(a.take_dirty());
    assert!(!a.take_dirty());
    a.on_agent(ToScreen::Event(Event::Text { text: "x".into() }));
    assert!(a.take_dirty());
    assert!(!a.take_dirty());
}

#[test]
fn ctrl_o_shows_and_hides_every_call_in_full() {
    let mut a = app();
    for id in ["1", "2"] {
        a.on_agent(ToScreen::Event(Event::ToolCall {
            id: id.into(),
            name: "shell".into(),
            input: json!({"command": "ls"}),
        }));
    }
    let ctrl_o = TermEvent::Key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let expanded = |a: &App| {
        a.transcript
            .entries()
            .iter()
            .filter_map(|e| match e {
                crate::transcript::Entry::Tool(tool) => Some(tool.expanded),
                _ => None,
            })
            .collect::<Vec<bool>>()
    };
    assert_eq!(a.on_terminal(ctrl_o.clone()), Action::None);
    assert_eq!(expanded(&a), [true, true]);
    assert!(a.editor.text().is_empty(), "Ctrl-O is not typed");
    a.on_terminal(ctrl_o);
    assert_eq!(expanded(&a), [false, false]);
}
