//! Where each part goes: the transcript above, the prompt editor below it,
//! the status line at the bottom, and a question (an approval, or the
//! model's `ask_user`) or a list to pick from in a box between the
//! transcript and the prompt, as in the other harnesses: the transcript
//! shrinks to make room, so the prompt and the call being asked about stay
//! in view above the box. Nothing is drawn here; each part draws itself.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::Widget;

use crate::asking::AskUserModal;
use crate::editor::Editor;
use crate::history;
use crate::modal::Approval;
use crate::picker::Picker;
use crate::queue::PromptQueue;
use crate::status::{self, RunInfo};
use crate::theme::Theme;
use crate::transcript::Transcript;

/// A question over the screen.
#[derive(Debug)]
pub enum Modal<'a> {
    /// May this call run?
    Approval(&'a mut Approval),
    /// The model asks (`ask_user`); the answer is typed in it.
    AskUser(&'a mut AskUserModal),
}

/// Everything one frame shows.
#[derive(Debug)]
pub struct View<'a> {
    pub transcript: &'a Transcript,
    pub editor: &'a Editor,
    /// Prompts waiting for the running turn to end, listed above the prompt.
    pub queued: &'a PromptQueue,
    pub info: &'a RunInfo,
    /// The question being asked, if one is.
    pub modal: Option<Modal<'a>>,
    /// A list to pick from (under a question, if both are up).
    pub picker: Option<&'a mut Picker>,
    /// Lines scrolled back from the transcript's end.
    pub scroll_back: u16,
    pub theme: Theme,
    /// A line of mecha's own in place of the status line's (e.g. "press
    /// Ctrl-C again to quit").
    pub hint: Option<&'a str>,
}

/// Draws one frame.
pub fn draw(frame: &mut Frame<'_>, mut view: View<'_>) {
    let area = frame.area();
    let editor_rows = view.editor.height(area.width);
    let queued_rows = view.queued.height();
    // The rows above the prompt, which the transcript and a box share.
    let above = area.height.saturating_sub(editor_rows + queued_rows + 1);
    let wanted = match (&mut view.modal, &view.picker) {
        (Some(Modal::Approval(approval)), _) => approval.height(view.theme, area.width),
        (Some(Modal::AskUser(asking)), _) => asking.height(view.theme, area.width),
        (None, Some(picker)) => picker.height(area.width),
        (None, None) => 0,
    };
    let boxed = wanted.min(above - transcript_kept(above));
    let [transcript, boxed, queued, editor, status_line] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(boxed),
        Constraint::Length(queued_rows),
        Constraint::Length(editor_rows),
        Constraint::Length(1),
    ])
    .areas(area);
    let buf = frame.buffer_mut();
    history::render(
        view.transcript,
        view.theme,
        view.scroll_back,
        transcript,
        buf,
    );
    view.queued.render(view.theme, queued, buf);
    let cursor = view.editor.render(view.theme, editor, buf);
    match view.hint {
        Some(hint) => Line::styled(hint, view.theme.warn()).render(status_line, buf),
        None => status::render(
            view.info,
            view.transcript.context_tokens(),
            view.transcript.taint(),
            view.theme,
            status_line,
            buf,
        ),
    }
    match (view.modal, view.picker) {
        (Some(Modal::Approval(approval)), _) => {
            if let Some(cursor) = approval.render(view.theme, boxed, frame.buffer_mut()) {
                frame.set_cursor_position(cursor);
            }
        }
        (Some(Modal::AskUser(asking)), _) => {
            let cursor = asking.render(view.theme, boxed, frame.buffer_mut());
            frame.set_cursor_position(cursor);
        }
        (None, Some(picker)) => picker.render(view.theme, boxed, frame.buffer_mut()),
        (None, None) => frame.set_cursor_position(cursor),
    }
}

/// The rows of `above` the transcript keeps however tall a box is: on a
/// tall screen the last few (the prompt and the call's line), on a short
/// one none, since a box left no row for its body would show nothing.
fn transcript_kept(above: u16) -> u16 {
    (above / 8).min(3)
}
