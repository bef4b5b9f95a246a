//! What `/rewind` shows: the turns with the files each changed, what to
//! put back of the one picked, and the question before files changed
//! outside the session are overwritten.

#![allow(clippy::unwrap_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mecha_tui::queue::PromptQueue;
use mecha_tui::rewind::{self, Restore, TurnRow};
use mecha_tui::{Editor, OnPick, Picked, Picker, RunInfo, Theme, Transcript, View, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn rows() -> Vec<TurnRow> {
    vec![
        TurnRow {
            number: 1,
            prompt: "write the notes".into(),
            changed: "notes.md".into(),
            files: true,
            cut: false,
        },
        TurnRow {
            number: 2,
            prompt: "tidy with the shell".into(),
            changed: "a.txt, gone.txt, run.sh".into(),
            files: true,
            cut: false,
        },
        TurnRow {
            number: 3,
            prompt: "what changed?".into(),
            changed: "no files changed".into(),
            files: false,
            cut: false,
        },
    ]
}

/// One frame with `picker` open over a short conversation.
fn shown(picker: &mut Picker) -> String {
    let mut transcript = Transcript::new();
    transcript.prompt("what changed?");
    let info = RunInfo {
        model: "claude-sonnet-4-5".into(),
        window: Some(200_000),
        sandbox: "bwrap".into(),
        ..RunInfo::default()
    };
    let mut terminal = Terminal::new(TestBackend::new(80, 16)).unwrap();
    terminal
        .draw(|frame| {
            draw(
                frame,
                View {
                    transcript: &transcript,
                    editor: &Editor::new(),
                    queued: &PromptQueue::default(),
                    info: &info,
                    modal: None,
                    picker: Some(picker),
                    scroll_back: 0,
                    theme: Theme::new(false),
                    hint: None,
                },
            );
        })
        .unwrap();
    terminal.backend().to_string()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn the_turns_newest_first_with_the_files_each_changed() {
    let mut list = rewind::turns(&rows());
    list.key(key(KeyCode::Down));
    insta::assert_snapshot!(shown(&mut list));
    assert_eq!(
        list.key(key(KeyCode::Enter)),
        Some(Picked::Chosen(OnPick::Enter("/rewind 2".into())))
    );
}

#[test]
fn what_to_restore_of_a_turn_files_and_conversation_first() {
    let mut choice = rewind::choices(&rows()[1]);
    insta::assert_snapshot!(shown(&mut choice));
    assert_eq!(
        choice.key(key(KeyCode::Enter)),
        Some(Picked::Chosen(OnPick::Enter("/rewind 2 both".into())))
    );
}

#[test]
fn a_turn_that_changed_no_files_offers_only_the_conversation() {
    let mut choice = rewind::choices(&rows()[2]);
    let screen = shown(&mut choice);
    assert!(screen.contains("only the conversation can go"), "{screen}");
    assert!(!screen.contains("files only"), "{screen}");
    assert_eq!(
        choice.key(key(KeyCode::Enter)),
        Some(Picked::Chosen(OnPick::Enter(
            "/rewind 3 conversation".into()
        )))
    );
}

#[test]
fn files_changed_since_are_listed_and_no_is_the_default() {
    let mut asked = rewind::conflicts(1, Restore::Both, &["a.txt".into(), "notes.md".into()]);
    insta::assert_snapshot!(shown(&mut asked));
    assert!(matches!(
        asked.key(key(KeyCode::Enter)),
        Some(Picked::Chosen(OnPick::Show(_)))
    ));
    asked.key(key(KeyCode::Down));
    assert_eq!(
        asked.key(key(KeyCode::Enter)),
        Some(Picked::Chosen(OnPick::Enter("/rewind 1 both force".into())))
    );
}
