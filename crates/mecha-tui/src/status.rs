//! The status line: the model, how much of the context window the
//! conversation fills, the session, the sandbox, and the interlock's state:
//! which legs of the trifecta the conversation holds and what that refuses
//! now. No other harness shows the last, and it is why a send was refused.
//!
//! On a narrow terminal the parts that matter least go first (sandbox,
//! session, model, context); the interlock's part is the last to go and is
//! cut with an ellipsis rather than dropped.

use mecha_core::{ModeSwitch, Taint};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::escape;
use crate::theme::Theme;

/// What the status line shows besides the transcript's own state.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub model: String,
    /// The model's context window, when known.
    pub window: Option<u64>,
    pub session: String,
    /// How tools are confined (`none`, `bwrap`, …).
    pub sandbox: String,
    /// `block_sends_after_private`: any send is refused once private data
    /// is held.
    pub strict_sends: bool,
    /// The session's permission mode, which Shift-Tab cycles and the line
    /// opens with (`None`: not shown).
    pub mode: Option<ModeSwitch>,
}

/// The interlock's state in words, from mecha-core's rule
/// ([`mecha_core::interlock`]): armed refuses every send whose destination
/// the model picks; untrusted content alone makes a call that reads
/// private data and sends ask afresh; the strict setting refuses every
/// send once private data is held.
pub fn interlock_state(taint: Taint, strict_sends: bool) -> (&'static str, bool) {
    match (taint.private_data, taint.untrusted_input) {
        (true, true) => ("private + untrusted: armed, sends refused", true),
        (true, false) if strict_sends => {
            ("private: sends refused (block_sends_after_private)", true)
        }
        (true, false) => ("private data held", false),
        (false, true) => (
            "untrusted content held: read-and-send calls ask afresh",
            false,
        ),
        (false, false) => ("interlock clear", false),
    }
}

/// Draws the status line for `info`, `tokens` of context used and `taint`.
pub fn render(
    info: &RunInfo,
    tokens: u64,
    taint: Taint,
    theme: Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    let area = crate::mode::render(info.mode.as_ref(), theme, area, buf);
    let (state, alarming) = interlock_state(taint, info.strict_sends);
    let interlock_style = if alarming { theme.alert() } else { theme.dim() };
    let context = match info.window {
        Some(window) => format!("{}/{} tokens", thousands(tokens), thousands(window)),
        None => format!("{} tokens", thousands(tokens)),
    };
    // Most important first; parts are dropped from the end until it fits.
    let mut parts: Vec<(String, Style)> = vec![
        (state.to_owned(), interlock_style),
        (context, Style::new()),
        (escape::owned(&info.model), Style::new()),
        (
            format!("session {}", escape::line(&info.session)),
            theme.dim(),
        ),
        (
            format!("sandbox {}", escape::line(&info.sandbox)),
            theme.dim(),
        ),
    ];
    let width = usize::from(area.width);
    while parts.len() > 1 && shown_width(&parts) > width {
        parts.pop();
    }
    // Shown in reading order: model, context, then the rest, with the
    // interlock at the end where the eye lands after the prompt.
    let order: &[usize] = match parts.len() {
        5 => &[2, 1, 3, 4, 0],
        4 => &[2, 1, 3, 0],
        3 => &[2, 1, 0],
        2 => &[1, 0],
        _ => &[0],
    };
    let mut spans = Vec::with_capacity(parts.len() * 2);
    for (n, &i) in order.iter().enumerate() {
        if n > 0 {
            spans.push(Span::styled(" · ", theme.dim()));
        }
        let (text, style) = &parts[i];
        spans.push(Span::styled(text.clone(), *style));
    }
    if shown_width(&parts) > width {
        spans = vec![Span::styled(cut(&parts[0].0, width), parts[0].1)];
    }
    Line::from(spans).style(theme.bar()).render(area, buf);
}

/// The width the parts take with their separators.
fn shown_width(parts: &[(String, Style)]) -> usize {
    parts
        .iter()
        .map(|(t, _)| Span::raw(t.as_str()).width())
        .sum::<usize>()
        + 3 * (parts.len() - 1)
}

/// `text` cut to `width` columns, an ellipsis marking the cut.
fn cut(text: &str, width: usize) -> String {
    if Span::raw(text).width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 1;
    for c in text.chars() {
        let w = Span::raw(c.encode_utf8(&mut [0; 4]).to_owned()).width();
        if used + w > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// 12345 as `12.3k`, 200000 as `200k`: the digits a glance needs.
fn thousands(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..100_000 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{}k", n / 1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_follows_the_interlock_rule() {
        let t = |private_data, untrusted_input| Taint {
            private_data,
            untrusted_input,
        };
        assert!(interlock_state(t(true, true), false).1);
        assert!(
            interlock_state(t(true, true), false)
                .0
                .contains("sends refused")
        );
        assert!(!interlock_state(t(true, false), false).1);
        assert!(
            interlock_state(t(true, false), true)
                .0
                .contains("sends refused")
        );
        assert!(
            interlock_state(t(false, true), false)
                .0
                .contains("ask afresh")
        );
        assert_eq!(
            interlock_state(t(false, false), false),
            ("interlock clear", false)
        );
    }

    #[test]
    fn a_cut_fits_its_width() {
        assert_eq!(cut("private + untrusted", 10), "private +…");
        assert_eq!(cut("abcdefghij", 10), "abcdefghij");
        assert_eq!(cut("short", 10), "short");
        assert_eq!(thousands(12_345), "12.3k");
        assert_eq!(thousands(200_000), "200k");
    }
}
