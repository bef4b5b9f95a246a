use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn typed(editor: &mut Editor, text: &str) {
    for c in text.chars() {
        editor.key(key(KeyCode::Char(c)));
    }
}

#[test]
fn enter_submits_and_ctrl_j_or_alt_enter_break_the_line() {
    let mut e = Editor::new();
    typed(&mut e, "one");
    assert_eq!(
        e.key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL)),
        Edit::Changed
    );
    typed(&mut e, "two");
    e.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    typed(&mut e, "three");
    assert_eq!(
        e.key(key(KeyCode::Enter)),
        Edit::Submit("one\ntwo\nthree".into())
    );
    assert_eq!(e.text(), "");
    assert_eq!(
        e.key(key(KeyCode::Enter)),
        Edit::Ignored,
        "an empty prompt is not sent"
    );
}

#[test]
fn a_paste_with_line_breaks_stays_one_prompt() {
    let mut e = Editor::new();
    let pasted: String = (0..500).map(|i| format!("line {i}\r\n")).collect();
    e.paste(&pasted);
    let Edit::Submit(sent) = e.key(key(KeyCode::Enter)) else {
        panic!("Enter did not submit");
    };
    assert_eq!(sent.lines().count(), 500);
    assert!(!sent.contains('\r'));
}

#[test]
fn up_and_down_walk_history_and_keep_the_draft() {
    let mut e = Editor::new();
    for p in ["first", "second"] {
        typed(&mut e, p);
        e.key(key(KeyCode::Enter));
    }
    typed(&mut e, "draft");
    e.key(key(KeyCode::Up));
    assert_eq!(e.text(), "second");
    e.key(key(KeyCode::Up));
    e.key(key(KeyCode::Up));
    assert_eq!(e.text(), "first");
    e.key(key(KeyCode::Down));
    assert_eq!(e.text(), "second");
    e.key(key(KeyCode::Down));
    assert_eq!(e.text(), "draft");
}

#[test]
fn up_and_down_move_between_lines_before_reaching_history() {
    let mut e = Editor::new();
    typed(&mut e, "old");
    e.key(key(KeyCode::Enter));
    e.paste("abcdef\nxy");
    e.key(key(KeyCode::Up));
    typed(&mut e, "!");
    assert_eq!(e.text(), "ab!cdef\nxy", "the cursor kept its column");
    e.key(key(KeyCode::Down));
    typed(&mut e, "?");
    assert_eq!(e.text(), "ab!cdef\nxy?");
}

#[test]
fn editing_respects_multibyte_characters() {
    let mut e = Editor::new();
    typed(&mut e, "héé");
    e.key(key(KeyCode::Left));
    e.key(key(KeyCode::Backspace));
    typed(&mut e, "→");
    assert_eq!(e.text(), "h→é");
}
