//! A stored conversation told again the way the loop told it while it ran:
//! the prompts a person typed, and the events it emitted for the rest
//! (the answer's text, each call and its result, each request's usage, a
//! compaction, what the interlock came to hold, a skill's narrowing), so a front end that draws events draws a resumed session
//! with the same code as a live one. What the loop wrote to the model
//! itself (a nudge to go on, a summary, the carried state, an interrupt's
//! note, a stop hook's send-back) was never shown as a message, and is not
//! told.

use std::collections::HashMap;

use mecha_core::{Block, CarriedState, EXTERNAL_HEADER, INTERRUPTED_TURN, Message, Record, Role};

use crate::compaction::SUMMARY_HEADER;
use crate::ending::CONTINUE_PROMPT;
use crate::events::{Event, Excerpt, summary};
use crate::hooking::SENT_BACK;

/// One step of a conversation told again.
#[derive(Debug, Clone)]
pub enum Retold {
    /// What the person typed.
    Prompt(String),
    /// What the loop emitted.
    Event(Event),
    /// What the user attached at the prompt and no prompt has taken yet
    /// (each block with its label, as the model will get it).
    Attached(Vec<String>),
}

/// The text a person typed, if `message` is a prompt: the first block of
/// a user message of text alone (what hooks added follows it), and none
/// of the loop's own messages.
pub fn typed_prompt(message: &Message) -> Option<&str> {
    if message.role != Role::User || CarriedState::is_carried(message) {
        return None;
    }
    let mut texts = message.content.iter().map(|block| match block {
        Block::Text { text } => Some(text.as_str()),
        _ => None,
    });
    let first = texts.next()??;
    if texts.any(|text| text.is_none()) {
        return None;
    }
    let harness = first == CONTINUE_PROMPT
        || first == INTERRUPTED_TURN
        || first.starts_with(SUMMARY_HEADER)
        || first.starts_with(SENT_BACK);
    (!harness && !first.is_empty()).then_some(first)
}

/// The journal's `records`, in order, told again: a rewind takes back
/// what it dropped, and a compaction is told as its event, the messages it
/// replaced having been told already.
pub fn retell<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<Retold> {
    let mut told = Vec::new();
    // Where each message of the history as it stands began in `told`.
    let mut starts: Vec<usize> = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut turn = 0;
    for record in records {
        match record {
            Record::Message { message, .. } => {
                starts.push(told.len());
                tell(message, &mut names, &mut told);
            }
            Record::Rewind { keep } => {
                if let Some(&at) = starts.get(*keep) {
                    told.truncate(at);
                }
                starts.truncate(*keep);
            }
            Record::Compaction {
                messages,
                tokens_before,
                tokens_after,
            } => {
                told.push(Retold::Event(Event::Compacted {
                    turn,
                    tokens_before: *tokens_before,
                    tokens_after: *tokens_after,
                    messages_before: starts.len(),
                    messages_after: messages.len(),
                }));
                // A rewind into the rebuilt history takes nothing back
                // from before it.
                starts = vec![told.len(); messages.len()];
            }
            Record::Turn { turn: n, usage } => {
                turn = *n;
                told.push(Retold::Event(Event::Usage {
                    turn: *n,
                    usage: *usage,
                }));
            }
            // As the loop reported them: what the interlock holds, and a
            // skill's narrowing of the tools.
            Record::Taint { taint } => told.push(Retold::Event(Event::Tainted { taint: *taint })),
            Record::Surface { by, tools } => told.push(Retold::Event(Event::Narrowed {
                by: by.join(", "),
                tools: tools.clone(),
            })),
            Record::ToolState { .. } | Record::Prompt { .. } | Record::Checkpoint { .. } => {}
            Record::Attached { attached } => {
                // The list as it now stands: it replaces the one recorded
                // since the last prompt, if any.
                let since = told
                    .iter()
                    .rposition(|t| matches!(t, Retold::Prompt(_)))
                    .map_or(0, |at| at + 1);
                if let Some(at) = told[since..]
                    .iter()
                    .position(|t| matches!(t, Retold::Attached(_)))
                {
                    told.remove(since + at);
                }
                told.push(Retold::Attached(attached.clone()));
            }
        }
    }
    told
}

/// One message's part of the telling; `names` remembers each call's tool
/// for its result.
fn tell(message: &Message, names: &mut HashMap<String, String>, told: &mut Vec<Retold>) {
    if let Some(prompt) = typed_prompt(message) {
        told.push(Retold::Prompt(prompt.to_owned()));
        return;
    }
    for block in &message.content {
        let event = match block {
            Block::Text { text } if message.role == Role::Assistant => {
                Event::Text { text: text.clone() }
            }
            Block::Thinking { thinking, .. } => Event::Thinking {
                text: thinking.clone(),
            },
            Block::RedactedThinking { .. } => Event::RedactedThinking,
            Block::ToolUse(call) => {
                names.insert(call.id.clone(), call.name.clone());
                Event::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                    confined: None,
                }
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                // As the loop reports a result: without the label that
                // goes to the model.
                let shown = content.strip_prefix(EXTERNAL_HEADER).unwrap_or(content);
                Event::ToolResult {
                    id: tool_use_id.clone(),
                    name: names.get(tool_use_id).cloned().unwrap_or_default(),
                    is_error: *is_error,
                    bytes: content.len(),
                    summary: summary(shown, *is_error),
                    excerpt: Excerpt::of(shown),
                }
            }
            // The loop's own words beside results, or a harness message.
            Block::Text { .. } => continue,
        };
        told.push(Retold::Event(event));
    }
}

#[cfg(test)]
#[path = "retold_tests.rs"]
mod tests;
