#![allow(clippy::unwrap_used)]

use crossterm::event::KeyModifiers;

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn typed(m: &mut AskUserModal, text: &str) {
    for c in text.chars() {
        assert_eq!(m.key(key(KeyCode::Char(c))), None);
    }
}

/// The screen's rows, as text.
fn drawn(m: &mut AskUserModal, width: u16, height: u16) -> Vec<String> {
    let mut buf = Buffer::empty(Rect::new(0, 0, width, height));
    m.render(Theme::new(false), buf.area, &mut buf);
    (0..height)
        .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

#[test]
fn typing_backspace_and_a_new_line_make_the_answer_enter_sends() {
    let mut m = AskUserModal::new(None, "which colour?");
    typed(&mut m, "blux");
    m.key(key(KeyCode::Backspace));
    typed(&mut m, "e");
    m.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    typed(&mut m, "or");
    m.key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL));
    typed(&mut m, "green");
    assert_eq!(m.typed(), "blue\nor\ngreen");
    assert_eq!(
        m.key(key(KeyCode::Enter)),
        Some(Typed::Answer("blue\nor\ngreen".into()))
    );
}

#[test]
fn enter_with_nothing_typed_sends_nothing_and_esc_declines() {
    let mut m = AskUserModal::new(None, "which colour?");
    assert_eq!(m.key(key(KeyCode::Enter)), None);
    typed(&mut m, "half");
    assert_eq!(m.key(key(KeyCode::Esc)), Some(Typed::Declined));
}

#[test]
fn a_paste_is_part_of_the_answer() {
    let mut m = AskUserModal::new(None, "the config?");
    m.paste("a = 1\r\nb = 2");
    assert_eq!(
        m.key(key(KeyCode::Enter)),
        Some(Typed::Answer("a = 1\nb = 2".into()))
    );
}

#[test]
fn a_long_question_scrolls_by_page_and_says_what_is_below() {
    let question: String = (1..=50).map(|i| format!("point {i}\n")).collect();
    let mut m = AskUserModal::new(None, &question);
    let rows = drawn(&mut m, 40, 12);
    let text = rows.join("\n");
    assert!(text.contains("point 1 "), "{text}");
    // Wrapped inside the box's padding, not cut at its border.
    assert!(text.contains("more line(s) of the question"), "{text}");
    assert!(text.contains("below: PageDown to read on"), "{text}");
    assert!(!text.contains("point 50"), "{text}");
    for _ in 0..20 {
        m.key(key(KeyCode::PageDown));
    }
    let text = drawn(&mut m, 40, 12).join("\n");
    assert!(text.contains("point 50"), "{text}");
    assert!(text.contains("the end of the question"), "{text}");
    // The page keys scrolled; nothing was typed.
    assert_eq!(m.typed(), "");
}

#[test]
fn a_huge_question_is_cut_with_a_note_and_escapes_are_shown_not_obeyed() {
    let question = format!(
        "\u{1b}[2J\u{1b}]52;c;cGF5bG9hZA==\u{7}{}",
        "é".repeat(20_000)
    );
    let m = AskUserModal::new(None, &question);
    let shown: usize = m.question.iter().map(String::len).sum();
    assert!(shown < MAX_QUESTION_BYTES + 200, "{shown}");
    let last = m.question.last().unwrap();
    assert!(
        last.contains(&format!("it is {} bytes", question.len())),
        "{last}"
    );
    assert!(
        m.question.iter().all(|l| !l.contains('\u{1b}')),
        "an escape reached a cell"
    );
    assert!(m.question[0].starts_with("\\u{1b}[2J"), "{}", m.question[0]);
}

#[test]
fn the_box_names_the_subagent_that_asks() {
    let mut m = AskUserModal::new(Some("researcher"), "which file?");
    let rows = drawn(&mut m, 60, 10);
    assert!(
        rows.iter()
            .any(|r| r.contains("mecha's subagent `researcher` asks you")),
        "{rows:#?}"
    );
    let mut own = AskUserModal::new(None, "which file?");
    assert!(
        drawn(&mut own, 60, 10)
            .iter()
            .any(|r| r.contains(" the model asks you "))
    );
}
