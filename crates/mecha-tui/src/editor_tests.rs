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

/// The editor drawn at `width` columns and as many rows as it wants: its
/// rows as text, and where the cursor is.
fn drawn(e: &Editor, width: u16) -> (Vec<String>, Position) {
    let height = e.height(width);
    let mut buf = Buffer::empty(Rect::new(0, 0, width, height));
    let cursor = e.render(Theme::new(false), buf.area, &mut buf);
    let rows = (0..height)
        .map(|y| {
            let mut row = String::new();
            let mut x = 0;
            while x < width {
                let symbol = buf[(x, y)].symbol();
                row.push_str(symbol);
                // A wide character covers the cell after it too.
                x += unicode_width::UnicodeWidthStr::width(symbol).max(1) as u16;
            }
            row.trim_end().to_string()
        })
        .collect();
    (rows, cursor)
}

#[test]
fn a_line_wider_than_the_screen_wraps_and_its_end_stays_in_sight() {
    let mut e = Editor::new();
    typed(&mut e, "abcdefghijklmnop");
    let (rows, cursor) = drawn(&e, 8);
    assert_eq!(rows, ["› abcdef", "  ghijkl", "  mnop"]);
    assert_eq!(cursor, Position { x: 6, y: 2 }, "after the p");
    e.key(key(KeyCode::Home));
    for _ in 0..6 {
        e.key(key(KeyCode::Right));
    }
    assert_eq!(drawn(&e, 8).1, Position { x: 2, y: 1 }, "before the g");
}

#[test]
fn a_full_row_puts_the_cursor_on_the_row_below() {
    let mut e = Editor::new();
    typed(&mut e, "abcdef");
    let (rows, cursor) = drawn(&e, 8);
    assert_eq!(rows, ["› abcdef", ""]);
    assert_eq!(cursor, Position { x: 2, y: 1 });
}

#[test]
fn wide_characters_wrap_by_their_cells_and_the_height_is_capped() {
    let mut e = Editor::new();
    typed(&mut e, "漢字漢字");
    assert_eq!(drawn(&e, 7).0, ["› 漢字", "  漢字"], "two cells each");
    e.clear();
    typed(&mut e, &"x".repeat(200));
    assert_eq!(e.height(10), MAX_LINES);
    let (rows, cursor) = drawn(&e, 10);
    assert_eq!(
        cursor.y,
        MAX_LINES - 1,
        "the cursor's row is the last shown"
    );
    assert_eq!(rows[0], "  xxxxxxxx", "scrolled past the first row");
}
