//! A session as plain text, record by record, for `mecha sessions show` and
//! the `recall` tool. Plain: whoever prints it to a terminal escapes it.

use std::collections::HashMap;
use std::fmt::Write as _;

use mecha_core::{Block, Message, Record, Role};

use crate::store::Loaded;

/// The whole session, a line (or an indented block) per message part, with
/// marker lines for turns, rewinds, compactions and the rest.
pub fn transcript(loaded: &Loaded) -> String {
    let h = &loaded.header;
    let mut out = format!(
        "session {} (mecha {}, `{}`, model {}, started {})\nworkspace: {}\n\n",
        h.id,
        h.mecha,
        h.command,
        h.model,
        h.started,
        h.workspace.display()
    );
    let mut names = CallNames::default();
    let markers = turn_markers(loaded);
    for (index, entry) in loaded.entries.iter().enumerate() {
        match &entry.record {
            Record::Message { message, external } => {
                if let Some(Record::Turn { turn, usage }) =
                    markers.get(&index).map(|&t| &loaded.entries[t].record)
                {
                    turn_line(&mut out, *turn, usage);
                }
                names.learn(message);
                render_message(&mut out, message, &names, external, "");
            }
            Record::Rewind { keep } => {
                let _ = writeln!(out, "--- rewound to the first {keep} messages ---");
            }
            Record::Compaction {
                messages,
                tokens_before,
                tokens_after,
            } => {
                let _ = writeln!(
                    out,
                    "--- compacted ({tokens_before} -> {tokens_after} tokens); the history is \
                     now: ---"
                );
                for message in messages {
                    names.learn(message);
                    render_message(&mut out, message, &names, &[], "  ");
                }
                out.push_str("--- end of the compacted history ---\n");
            }
            Record::Taint { taint } => {
                let legs: Vec<&str> = [
                    (taint.private_data, "private data"),
                    (taint.untrusted_input, "untrusted input"),
                ]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
                let legs = if legs.is_empty() {
                    "none".to_owned()
                } else {
                    legs.join(", ")
                };
                let _ = writeln!(out, "--- taint: {legs} ---");
            }
            Record::Surface { by, tools } => {
                let _ = writeln!(
                    out,
                    "--- tools narrowed by {} to: {} ---",
                    by.join(", "),
                    tools.join(", ")
                );
            }
            Record::ToolState { tool, state } => {
                let _ = writeln!(out, "--- {tool} saved its state: {state} ---");
            }
            Record::Attached { attached } => {
                let _ = writeln!(
                    out,
                    "--- waiting for the next prompt, as the user attached it: ---"
                );
                for text in attached {
                    for line in text.lines() {
                        let _ = writeln!(out, "  {line}");
                    }
                }
                out.push_str("--- end of what waits ---\n");
            }
            Record::Turn { .. } if markers.values().any(|&t| t == index) => {}
            Record::Turn { turn, usage } => turn_line(&mut out, *turn, usage),
            Record::Prompt { .. } => {}
            Record::Checkpoint {
                turn,
                id,
                changed,
                after,
            } => {
                let when = if *after { "after" } else { "before" };
                let short = id.get(..12).unwrap_or(id);
                let _ = write!(out, "--- workspace checkpoint {short} {when} prompt {turn}");
                if !changed.is_empty() {
                    let _ = write!(out, "; changed since the last: {}", changed.join(", "));
                }
                out.push_str(" ---\n");
            }
        }
    }
    out
}

/// Where each turn's marker goes: a turn is journaled once its answer is
/// in, and shown before the first assistant message it answered with,
/// so its calls and their results follow it. By entry index: the
/// assistant message's, and the turn record's.
fn turn_markers(loaded: &Loaded) -> HashMap<usize, usize> {
    let mut markers = HashMap::new();
    let mut first_answer = None;
    for (index, entry) in loaded.entries.iter().enumerate() {
        match &entry.record {
            Record::Message { message, .. } if message.role == Role::Assistant => {
                first_answer.get_or_insert(index);
            }
            Record::Turn { .. } => {
                if let Some(answer) = first_answer.take() {
                    markers.insert(answer, index);
                }
            }
            _ => {}
        }
    }
    markers
}

fn turn_line(out: &mut String, turn: u32, usage: &mecha_core::Usage) {
    let _ = writeln!(
        out,
        "--- turn {turn} (input {}, output {} tokens) ---",
        usage.input_tokens, usage.output_tokens
    );
}

/// The tool each call id named, learnt from the calls as they come, so a
/// result can say whose it is.
#[derive(Debug, Default)]
pub(crate) struct CallNames(HashMap<String, String>);

impl CallNames {
    pub(crate) fn learn(&mut self, message: &Message) {
        for call in message.tool_calls() {
            self.0.insert(call.id.clone(), call.name.clone());
        }
    }

    fn of(&self, id: &str) -> &str {
        self.0.get(id).map_or("a tool", String::as_str)
    }
}

/// Appends `message`, a part per line, each line after a part's first
/// indented under it. `external` names its results that came from outside.
pub(crate) fn render_message(
    out: &mut String,
    message: &Message,
    names: &CallNames,
    external: &[String],
    indent: &str,
) {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    for block in &message.content {
        let (label, body) = match block {
            Block::Text { text } => (role.to_owned(), text.clone()),
            Block::ToolUse(call) => (
                format!("{role} calls {}", call.name),
                call.input.to_string(),
            ),
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                images,
            } => {
                let mut marks = vec![format!("call {tool_use_id}")];
                if external.iter().any(|id| id == tool_use_id) {
                    marks.push("external: came from outside the machine".to_owned());
                }
                if *is_error {
                    marks.push("error".to_owned());
                }
                if !images.is_empty() {
                    marks.push(format!("{} images", images.len()));
                }
                let label = format!("result of {} ({})", names.of(tool_use_id), marks.join(", "));
                (label, content.clone())
            }
            Block::Thinking { thinking, .. } => ("thinking".to_owned(), thinking.clone()),
            Block::RedactedThinking { .. } => ("thinking (redacted)".to_owned(), String::new()),
        };
        push_part(out, indent, &label, &body);
    }
}

/// `label: body`, the body's later lines indented under it.
fn push_part(out: &mut String, indent: &str, label: &str, body: &str) {
    let mut lines = body.lines();
    let _ = write!(out, "{indent}{label}:");
    if let Some(first) = lines.next() {
        let _ = write!(out, " {first}");
    }
    out.push('\n');
    for line in lines {
        let _ = writeln!(out, "{indent}    {line}");
    }
}
