#![allow(clippy::unwrap_used)]

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use mecha_agent::{Event, Retold};
use serde_json::json;

use super::*;
use crate::ask_user::UserQuestion;
use crate::picker::PickItem;
use crate::rewind::REWIND;
use mecha_core::Offer;

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
fn a_prompt_entered_during_a_turn_is_queued_and_sent_when_it_ends() {
    let mut a = app();
    typed(&mut a, "hi");
    assert_eq!(
        a.on_terminal(key(KeyCode::Enter)),
        Action::Send("hi".into())
    );
    assert!(a.busy());
    for prompt in ["more", "and mroe"] {
        typed(&mut a, prompt);
        assert_eq!(a.on_terminal(key(KeyCode::Enter)), Action::None);
    }
    assert_eq!(a.editor.text(), "", "queued, not left in the prompt");
    // Up takes the last one back to edit, and Enter queues it again.
    a.on_terminal(key(KeyCode::Up));
    assert_eq!(a.editor.text(), "and mroe");
    a.on_terminal(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "and more");
    a.on_terminal(key(KeyCode::Enter));
    a.turn_over();
    assert_eq!(a.next_queued().as_deref(), Some("more"));
    assert!(a.busy(), "the queued prompt is a turn of its own");
    a.turn_over();
    assert_eq!(a.next_queued().as_deref(), Some("and more"));
    a.turn_over();
    assert_eq!(a.next_queued(), None);
}

#[test]
fn a_turn_cut_short_hands_the_queue_back_to_the_prompt_unsent() {
    let mut a = app();
    typed(&mut a, "hi");
    a.on_terminal(key(KeyCode::Enter));
    typed(&mut a, "later");
    a.on_terminal(key(KeyCode::Enter));
    typed(&mut a, "draft");
    a.turn_cut_short();
    a.turn_over();
    assert_eq!(a.editor.text(), "later\ndraft");
    assert_eq!(a.next_queued(), None);
}

#[test]
fn ctrl_g_asks_for_the_editor_between_turns_and_a_failure_keeps_the_prompt() {
    let mut a = app();
    typed(&mut a, "draft");
    let ctrl_g = || TermEvent::Key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::CONTROL));
    assert_eq!(a.on_terminal(ctrl_g()), Action::EditExternally);
    a.edited(Err("no editor".into()));
    assert_eq!(a.editor.text(), "draft");
    a.edited(Ok("from the editor".into()));
    assert_eq!(a.editor.text(), "from the editor");
    a.on_terminal(key(KeyCode::Enter));
    assert_eq!(a.on_terminal(ctrl_g()), Action::None, "not during a turn");
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

#[test]
fn esc_stops_a_turn_and_at_the_prompt_stops_nothing() {
    let mut a = app();
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::None);
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::Interrupt);
}

#[test]
fn an_esc_right_after_one_that_declined_a_question_does_not_stop_the_turn() {
    let mut a = app();
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    let (asked, _answer) = UserQuestion::new(None, "which colour?");
    a.on_agent(ToScreen::AskUser(asked));
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::None, "declined");
    assert_eq!(
        a.on_terminal(key(KeyCode::Esc)),
        Action::None,
        "a double tap is not a stop"
    );
    std::thread::sleep(ESC_SETTLES);
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::Interrupt);
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
    a.on_terminal(key(KeyCode::Esc));
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
            confined: None,
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

fn draw(a: &mut App) {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(60, 12)).unwrap();
    terminal.draw(|f| a.draw(f)).unwrap();
}

#[test]
fn the_models_question_takes_the_keys_and_enter_answers_it() {
    let mut a = app();
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    typed(&mut a, "draft");
    let (asked, mut answer) = UserQuestion::new(None, "which colour?");
    a.on_agent(ToScreen::AskUser(asked));
    draw(&mut a);
    typed(&mut a, "blux");
    a.on_terminal(key(KeyCode::Backspace));
    a.on_terminal(TermEvent::Paste("e\nish".into()));
    assert_eq!(a.on_terminal(key(KeyCode::Enter)), Action::None);
    assert_eq!(answer.try_recv().unwrap().as_deref(), Some("blue\nish"));
    assert_eq!(a.editor.text(), "draft", "the answer went to the prompt");
    // Gone: keys are the prompt's again.
    typed(&mut a, "!");
    assert_eq!(a.editor.text(), "draft!");
}

#[test]
fn esc_declines_the_models_question() {
    let mut a = app();
    let (asked, mut answer) = UserQuestion::new(None, "which colour?");
    a.on_agent(ToScreen::AskUser(asked));
    typed(&mut a, "bl");
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::None);
    assert_eq!(answer.try_recv().unwrap(), None);
}

#[test]
fn ctrl_c_at_the_models_question_declines_it_and_stops_the_turn() {
    let mut a = app();
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    let (first, mut first_answer) = UserQuestion::new(None, "which colour?");
    let (second, mut second_answer) = UserQuestion::new(None, "which size?");
    a.on_agent(ToScreen::AskUser(first));
    a.on_agent(ToScreen::AskUser(second));
    assert_eq!(a.on_terminal(ctrl_c()), Action::Interrupt);
    assert_eq!(first_answer.try_recv().unwrap(), None);
    assert_eq!(
        second_answer.try_recv(),
        Err(tokio::sync::oneshot::error::TryRecvError::Closed),
        "the queued question still waits for an answer"
    );
    // The queued one went with the turn: keys reach the prompt.
    a.turn_over();
    typed(&mut a, "next");
    assert_eq!(a.editor.text(), "next");
}

#[test]
fn approvals_and_the_models_questions_queue_in_the_order_they_came() {
    let mut a = app();
    let input = json!({"command": "ls"});
    let (approval, mut approved) = Question::new(
        None,
        "shell",
        &input,
        Offer::for_call("shell", &input, None),
    );
    let (first, mut first_answer) = UserQuestion::new(None, "which colour?");
    let (second, mut second_answer) = UserQuestion::new(None, "which size?");
    a.on_agent(ToScreen::AskUser(first));
    a.on_agent(ToScreen::Ask(approval));
    a.on_agent(ToScreen::AskUser(second));
    draw(&mut a);
    typed(&mut a, "y");
    a.on_terminal(key(KeyCode::Enter));
    assert_eq!(first_answer.try_recv().unwrap().as_deref(), Some("y"));
    draw(&mut a);
    a.on_terminal(key(KeyCode::Char('y')));
    assert_eq!(approved.try_recv().unwrap(), Answer::Yes);
    typed(&mut a, "large");
    a.on_terminal(key(KeyCode::Enter));
    assert_eq!(second_answer.try_recv().unwrap().as_deref(), Some("large"));
}

#[test]
fn a_question_whose_call_was_dropped_is_not_shown() {
    let mut a = app();
    let (first, _first_answer) = UserQuestion::new(None, "which colour?");
    let (gone, gone_answer) = UserQuestion::new(None, "which size?");
    a.on_agent(ToScreen::AskUser(first));
    a.on_agent(ToScreen::AskUser(gone));
    drop(gone_answer);
    a.on_terminal(key(KeyCode::Esc));
    typed(&mut a, "prompt");
    assert_eq!(a.editor.text(), "prompt", "a dead question took the keys");
}

#[test]
fn picking_an_item_that_enters_a_line_runs_it_without_showing_it_as_typed() {
    let mut a = app();
    let item = |name: &str| PickItem {
        name: name.into(),
        note: None,
        description: String::new(),
        picked: OnPick::Enter(format!("/resume {name}")),
    };
    a.pick(Picker::new(
        "sessions",
        "resumes it",
        vec![item("a"), item("b")],
    ));
    a.on_terminal(key(KeyCode::Down));
    assert_eq!(
        a.on_terminal(key(KeyCode::Enter)),
        Action::Send("/resume b".into())
    );
    assert!(a.busy());
    assert!(
        !crate::history::plain(&a.transcript).contains("/resume b"),
        "a picked line is not shown as typed"
    );
}

#[test]
fn esc_twice_at_an_empty_prompt_opens_rewind_and_an_esc_that_stopped_a_turn_is_not_the_first() {
    let mut a = app();
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::Interrupt);
    a.turn_over();
    assert_eq!(
        a.on_terminal(key(KeyCode::Esc)),
        Action::None,
        "the stop was not a first tap"
    );
    assert_eq!(
        a.on_terminal(key(KeyCode::Esc)),
        Action::Send(REWIND.into())
    );
    a.turn_over();
    // A key between the two, or a draft in the prompt, is no double tap.
    a.on_terminal(key(KeyCode::Esc));
    a.on_terminal(key(KeyCode::Left));
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::None);
    typed(&mut a, "draft");
    a.on_terminal(key(KeyCode::Esc));
    assert_eq!(a.on_terminal(key(KeyCode::Esc)), Action::None);
    assert_eq!(a.editor.text(), "draft");
}

#[test]
fn rewind_is_refused_while_a_turn_runs_and_not_queued() {
    let mut a = app();
    typed(&mut a, "x");
    a.on_terminal(key(KeyCode::Enter));
    typed(&mut a, "/rewind 1");
    assert_eq!(a.on_terminal(key(KeyCode::Enter)), Action::None);
    a.turn_over();
    assert_eq!(a.next_queued(), None, "it waits for no turn");
    let said = format!("{:?}", a.transcript.entries().last());
    assert!(said.contains("Let it end, or stop it with Esc"), "{said}");
}

#[test]
fn a_rewound_conversation_puts_its_prompt_back_in_the_editor() {
    let mut a = app();
    a.rewound("cut".into(), Some("write the notes\nin full".into()), None);
    assert_eq!(a.editor.text(), "write the notes\nin full");
    a.rewound("files only".into(), None, None);
    assert_eq!(a.editor.text(), "write the notes\nin full", "left alone");
}

#[test]
fn a_rewound_conversation_is_shown_as_it_now_stands() {
    let mut a = app();
    for prompt in ["first prompt", "second prompt"] {
        a.transcript.prompt(prompt);
    }
    let texts = |a: &App| format!("{:?}", a.transcript.entries());
    assert!(texts(&a).contains("second prompt"));
    let told = vec![Retold::Prompt("first prompt".into())];
    a.rewound(
        "cut to 1 message".into(),
        Some("second prompt".into()),
        Some(told),
    );
    let shown = texts(&a);
    assert!(shown.contains("first prompt"), "{shown}");
    assert!(
        !shown.contains("second prompt"),
        "what was cut is gone: {shown}"
    );
    assert!(shown.contains("cut to 1 message"), "{shown}");
    // A rewind of the files alone leaves the transcript as it was.
    a.rewound("files only".into(), None, None);
    assert!(texts(&a).contains("first prompt"));
}
