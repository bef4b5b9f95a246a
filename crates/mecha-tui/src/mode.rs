//! The permission mode on the screen: Shift-Tab cycles it (ask →
//! accept-edits → plan, through mecha-core's [`ModeSwitch::cycle`], the
//! same switch the gate and the approver read), and the status line opens
//! with the mode in force when it is not the default `ask`, so a mode
//! that lets more run unasked, or plans, is never a guess.

use mecha_core::{ModeSwitch, PermissionMode};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::theme::Theme;

/// The status line's first words for `mode`, spelt as `/mode` and
/// `--permission-mode` spell it.
pub fn label(mode: PermissionMode) -> String {
    format!("mode {}", mode.as_str())
}

/// Draws the mode's label at the start of `area` (nothing in `ask`, or
/// when the run has no switch); the rest of `area`, for the other parts.
pub fn render(switch: Option<&ModeSwitch>, theme: Theme, area: Rect, buf: &mut Buffer) -> Rect {
    let mode = switch.map_or(PermissionMode::Ask, ModeSwitch::get);
    let style = match mode {
        PermissionMode::Ask => return area,
        PermissionMode::ReadOnly => theme.dim(),
        PermissionMode::AcceptEdits | PermissionMode::Plan | PermissionMode::Allow => theme.warn(),
    };
    let spans = vec![
        Span::styled(label(mode), style),
        Span::styled(" · ", theme.dim()),
    ];
    let line = Line::from(spans).style(theme.bar());
    let width = u16::try_from(line.width())
        .unwrap_or(u16::MAX)
        .min(area.width);
    line.render(Rect { width, ..area }, buf);
    Rect {
        x: area.x + width,
        width: area.width - width,
        ..area
    }
}

/// Shift-Tab: the switch moved to the next mode; `Err` says why it
/// cannot (a read-only run).
pub fn cycle(switch: Option<&ModeSwitch>) -> Result<PermissionMode, String> {
    switch.map_or_else(
        || Err("this screen has no permission mode to change".to_owned()),
        ModeSwitch::cycle,
    )
}
