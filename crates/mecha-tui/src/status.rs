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
    /// The MCP servers in words (`mcp 3 (1 remote)`), empty when none is
    /// configured: a remote server's calls leave the machine, so the line
    /// says one is in play.
    pub servers: String,
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
    // Most important first, each with its place in reading order (model,
    // context, session, sandbox, then the interlock, where the eye lands
    // after the prompt); parts are dropped from the end until it fits, and
    // a part with nothing to say (no model named) is no part at all. What
    // confines the calls outranks the session's id, which leaving prints.
    let mut parts: Vec<(String, Style, u8)> = vec![
        (state.to_owned(), interlock_style, 5),
        (context, Style::new(), 1),
        (escape::owned(&info.model), Style::new(), 0),
        (
            format!("sandbox {}", escape::line(&info.sandbox)),
            theme.dim(),
            3,
        ),
        (
            format!("session {}", escape::line(&info.session)),
            theme.dim(),
            2,
        ),
        (escape::line(&info.servers).into_owned(), theme.dim(), 4),
    ];
    if info.model.is_empty() {
        parts.retain(|(_, _, place)| *place != 0);
    }
    if info.session.is_empty() {
        parts.retain(|(_, _, place)| *place != 2);
    }
    if info.servers.is_empty() {
        parts.retain(|(_, _, place)| *place != 4);
    }
    let width = usize::from(area.width);
    while parts.len() > 1 && shown_width(&parts) > width {
        parts.pop();
    }
    if shown_width(&parts) > width {
        let (text, style, _) = &parts[0];
        Line::from(Span::styled(cut(text, width), *style))
            .style(theme.bar())
            .render(area, buf);
        return;
    }
    parts.sort_by_key(|(_, _, place)| *place);
    let mut spans = Vec::with_capacity(parts.len() * 2);
    for (n, (text, style, _)) in parts.into_iter().enumerate() {
        if n > 0 {
            spans.push(Span::styled(" · ", theme.dim()));
        }
        spans.push(Span::styled(text, style));
    }
    Line::from(spans).style(theme.bar()).render(area, buf);
}

/// The width the parts take with their separators.
fn shown_width(parts: &[(String, Style, u8)]) -> usize {
    parts
        .iter()
        .map(|(t, _, _)| Span::raw(t.as_str()).width())
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

/// 12345 as `12.3k`, 200000 as `200k`, a million as `1M`: the digits a
/// glance needs.
fn thousands(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..100_000 => format!("{:.1}k", n as f64 / 1000.0),
        100_000..1_000_000 => format!("{}k", n / 1000),
        _ => match (n / 1_000_000, n / 100_000 % 10) {
            (whole, 0) => format!("{whole}M"),
            (whole, tenth) => format!("{whole}.{tenth}M"),
        },
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
        assert_eq!(thousands(1_000_000), "1M");
        assert_eq!(thousands(1_500_000), "1.5M");
    }

    fn shown(info: &RunInfo, taint: Taint, width: u16) -> String {
        let mut buf = Buffer::empty(Rect::new(0, 0, width, 1));
        render(info, 0, taint, Theme::new(false), buf.area, &mut buf);
        let row: String = buf.content().iter().map(|c| c.symbol()).collect();
        row.trim_end().to_owned()
    }

    #[test]
    fn no_model_leaves_no_separator_and_a_narrow_line_keeps_the_interlock() {
        let mut info = RunInfo {
            window: Some(1_000_000),
            session: "20261204-013936-cbb84e".into(),
            sandbox: "none".into(),
            ..RunInfo::default()
        };
        assert_eq!(
            shown(&info, Taint::default(), 100),
            "0/1M tokens · session 20261204-013936-cbb84e · sandbox none · interlock clear"
        );
        info.servers = "mcp 3 (1 remote)".into();
        assert_eq!(
            shown(&info, Taint::default(), 120),
            "0/1M tokens · session 20261204-013936-cbb84e · sandbox none · mcp 3 (1 remote) · \
             interlock clear"
        );
        assert_eq!(
            shown(&info, Taint::default(), 90),
            "0/1M tokens · session 20261204-013936-cbb84e · sandbox none · interlock clear",
            "the servers go first"
        );
        info.model = "claude-sonnet-4-5".into();
        let armed = Taint {
            private_data: true,
            untrusted_input: true,
        };
        assert_eq!(
            shown(&info, armed, 60),
            "0/1M tokens · private + untrusted: armed, sends refused",
            "the model and the rest went first"
        );
    }
}
