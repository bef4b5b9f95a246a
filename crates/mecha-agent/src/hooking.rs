//! The loop's side of the user's hooks: the words they add for the model,
//! each marked as a hook's, and the stop hook's limit. The gate's side is
//! in `gate.rs`.

use mecha_core::{Block, Message, Registry, ToolCall, ToolOutput};

use crate::agent::{Agent, Session};
use crate::events::{Event, EventSink, HookSaid};
use crate::hook::{PromptVerdict, SessionSource};

/// What opens the message that sends the model back to work when a stop
/// hook refused its answer; the hook's reason follows.
pub(crate) const SENT_BACK: &str = "[mecha: a stop hook sends you back to work]";

/// How many times in a row a stop hook may send the model back to work
/// during one prompt; then the answer stands and the run says so.
pub const MAX_SEND_BACKS: u32 = 3;

/// A hook's words as the model sees them: after a line saying which hook
/// wrote them, so nothing a hook adds passes for the user's own or for a
/// tool's result.
fn marked(which: &str, text: &str) -> Block {
    Block::Text {
        text: format!("[mecha: added by a {which}]\n{text}"),
    }
}

/// What a prompt becomes: its text, then what the user attached and the
/// plan mode's note, then what session_start hooks left waiting, then what
/// its user_prompt hooks add; or the reason a hook refused it.
pub(crate) enum Prompt {
    Send(Message),
    Blocked(String),
}

impl Agent {
    /// Runs the session_start hooks; what they add goes with the next
    /// prompt.
    pub async fn start_session(
        &self,
        session: &mut Session,
        source: SessionSource,
        events: &dyn EventSink,
    ) {
        if let Some(hook) = &self.loop_hook {
            let context = hook.session_start(source, events).await;
            session.hook_context.extend(context);
        }
    }

    pub(crate) async fn prompt(
        &self,
        session: &mut Session,
        text: &str,
        events: &dyn EventSink,
    ) -> Prompt {
        let mut message = Message::user_text(text);
        let added = match &self.loop_hook {
            Some(hook) => match hook.user_prompt(text, events).await {
                PromptVerdict::Block(reason) => return Prompt::Blocked(reason),
                PromptVerdict::Send { context } => context,
            },
            None => Vec::new(),
        };
        // What the user attached, then the mode's note: mecha's words,
        // each a block after the typed text, which stays the first.
        let attached = std::mem::take(&mut session.attached);
        message.content.extend(
            attached
                .into_iter()
                .map(|text| Block::Text { text })
                .chain(self.mode_note()),
        );
        let waiting = std::mem::take(&mut session.hook_context);
        message.content.extend(
            (waiting.iter().map(|t| marked("session_start hook", t)))
                .chain(added.iter().map(|t| marked("user_prompt hook", t))),
        );
        Prompt::Send(message)
    }

    /// Asks the stop hooks whether the model's answer ends the prompt;
    /// `Some(reason)` sends it back, at most [`MAX_SEND_BACKS`] times in a
    /// row.
    pub(crate) async fn sent_back(
        &self,
        answer: &str,
        times: &mut u32,
        turn: u32,
        events: &dyn EventSink,
    ) -> Option<String> {
        let hook = self.loop_hook.as_ref()?;
        let reason = hook.stop(answer, *times > 0, events).await?;
        if *times >= MAX_SEND_BACKS {
            events.emit(Event::SendBackLimit {
                turn,
                limit: MAX_SEND_BACKS,
            });
            return None;
        }
        *times += 1;
        events.emit(Event::SentBack {
            turn,
            times: *times,
            reason: reason.clone(),
        });
        Some(reason)
    }

    /// The post_tool hooks' notes on the turn's results, as blocks to go
    /// after them, cut to what the turn's budget has left (`used`: the
    /// bytes the results already take).
    pub(crate) async fn post_tool_notes(
        &self,
        registry: &Registry,
        ran: &[(&ToolCall, &ToolOutput)],
        used: usize,
        events: &dyn EventSink,
    ) -> Vec<Block> {
        let Some(hook) = &self.gate.hook else {
            return Vec::new();
        };
        let notes = ran.iter().filter_map(|(call, output)| {
            let tool = registry.get(&call.name)?;
            Some(async move {
                let notes = hook
                    .post_tool(tool.as_ref(), &call.input, &call.id, output, events)
                    .await;
                (*call, notes)
            })
        });
        let mut room = self.limits.turn_budget.saturating_sub(used);
        let mut blocks = Vec::new();
        for (call, notes) in futures::future::join_all(notes).await {
            let which = format!(
                "post_tool hook, about the result of the `{}` call {}",
                call.name, call.id
            );
            for note in notes {
                blocks.push(marked(&which, &fitted(&note, &mut room)));
            }
        }
        blocks
    }
}

/// `note`, cut to `room` bytes (at a character boundary, saying so), and
/// `room` lessened by what it takes.
fn fitted(note: &str, room: &mut usize) -> String {
    const CUT: &str = "… [cut: the turn's output budget is spent]";
    if note.len() <= *room {
        *room -= note.len();
        return note.to_owned();
    }
    let mut end = room.saturating_sub(CUT.len());
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    *room = 0;
    format!("{}{CUT}", &note[..end])
}

impl Event {
    /// The activity line for a hook's event, for every front end that shows
    /// one (and for a subagent's progress): `None` for any other event.
    pub fn hook_line(&self) -> Option<String> {
        match self {
            Event::Hook {
                event,
                command,
                tool,
                verdict,
                reason,
                context,
                message,
                failure,
                ..
            } => {
                let on = tool
                    .as_ref()
                    .map(|t| format!(" on `{t}`"))
                    .unwrap_or_default();
                let reason = reason.as_deref().unwrap_or_default();
                let said = match (verdict, event.as_str(), failure) {
                    (HookSaid::Pass, _, Some(failure)) => {
                        format!("failed ({failure}), which lets things go on")
                    }
                    (HookSaid::Pass, _, None) => "no objection".to_owned(),
                    (HookSaid::Ask, ..) => format!("asks for a person: {reason}"),
                    (HookSaid::Block, "post_tool", _) => format!("a note for the model: {reason}"),
                    (HookSaid::Block, "stop", _) => format!("sends the model back: {reason}"),
                    (HookSaid::Block, "user_prompt", _) => format!("refused the prompt: {reason}"),
                    (HookSaid::Block, ..) => format!("refused: {reason}"),
                };
                let mut line = format!("hook `{command}` ({event}{on}): {said}");
                if let Some(context) = context {
                    line.push_str(&format!(
                        "; adds {} bytes of context for the model",
                        context.len()
                    ));
                }
                if let Some(message) = message {
                    line.push_str(&format!("; it says: {message}"));
                }
                Some(line)
            }
            Event::SentBack { times, .. } => Some(format!(
                "a stop hook sent the model back to work ({times} of at most \
                 {MAX_SEND_BACKS} in a row)"
            )),
            Event::SendBackLimit { limit, .. } => Some(format!(
                "a stop hook wanted the model back at work after {limit} times in a row, \
                 the most allowed; its last answer stands"
            )),
            _ => None,
        }
    }
}
