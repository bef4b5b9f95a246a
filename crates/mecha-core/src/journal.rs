//! The journal: what a session records as it goes, so that a run that dies
//! loses nothing and a resumed one starts where it stopped.
//!
//! The loop appends a [`Record`] at each change to the session (a message,
//! a rewind, a taint change, a narrowing, a tool's saved state, a
//! compaction) and syncs at every turn boundary. Where the records go is
//! the [`Journal`]'s business (`mecha-session` keeps them in an
//! append-only JSONL file); this is only the vocabulary both sides share.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Block, Message, Role, Taint, Usage};

/// One change to a session, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A message appended to the history. `external` names the tool
    /// results in it (by `tool_use_id`) whose content came from outside the
    /// machine, as the harness marked them.
    Message {
        message: Message,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        external: Vec<String>,
    },
    /// The history was cut back to its first `keep` messages: an exchange
    /// the model refused, or one a person interrupted.
    Rewind { keep: usize },
    /// The session's taint grew to this (it never shrinks).
    Taint { taint: Taint },
    /// The tool surface was narrowed: what narrowed it and what it keeps.
    Surface { by: Vec<String>, tools: Vec<String> },
    /// A tool's own state as it now stands ([`crate::Tool::saved_state`]),
    /// to be handed back on resume.
    ToolState { tool: String, state: Value },
    /// A compaction replaced the history with `messages` (the first prompt,
    /// the summary, the carried state, the recent turns). The messages it
    /// replaced stay in the journal before it.
    Compaction {
        messages: Vec<Message>,
        /// The estimated size of the conversation before and after, in
        /// tokens.
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A model request finished: its turn number and what it cost.
    Turn { turn: u32, usage: Usage },
    /// What the user brought in at the prompt (a `!command`'s output) and
    /// waits to go with their next prompt, as the list now stands; that
    /// prompt's message takes it. A session left before the prompt (quit,
    /// `/clear`, a crash) still gives it to the model when resumed.
    Attached { attached: Vec<String> },
    /// A user prompt (the `turn`-th of the session, from 1) entered the
    /// history: the message recorded next is it. Rewind numbers turns by
    /// these.
    Prompt { turn: u32 },
    /// A snapshot of the workspace (`id` in the checkpoint store): taken
    /// before the first call of prompt `turn` that could change the
    /// workspace, or, with `after`, when that prompt ended; `turn` 0 is the
    /// state a `mecha rewind` left. `changed` names the paths that differ
    /// from the snapshot before it.
    Checkpoint {
        turn: u32,
        id: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        after: bool,
    },
}

/// Where a session's records go. Appending is one write per record;
/// `sync` makes everything appended so far durable before it returns, and
/// `sync_behind` starts making it durable without waiting for the disk
/// (what the loop calls between a turn's results and its next request, so
/// the request does not queue behind an `fdatasync`). A journal that
/// cannot write says so itself (once) and never stops the run: losing the
/// record must not lose the run.
pub trait Journal: Send + Sync {
    fn append(&self, record: &Record);
    fn sync(&self);
    /// By default, a [`Journal::sync`].
    fn sync_behind(&self) {
        self.sync();
    }
}

/// What a tool result says when mecha stopped before the call's result was
/// recorded (a crash, a kill, an interrupt).
pub const LOST_RESULT: &str = "[mecha stopped before this call's result was recorded: the call \
     may have run, in part or in whole. Check its effects before calling it again.]";

/// What a tool result says when the user stopped its turn while it ran.
pub const INTERRUPTED_RESULT: &str = "[the user interrupted this call before it finished: it \
     may have run in part. Check its effects before calling it again.]";

/// What a tool result says when the user stopped its turn before the call
/// was let run (while it waited for approval, or behind one that did).
pub const NOT_RUN_RESULT: &str = "[the user interrupted the turn before this call ran: it did \
     not run.]";

/// What the model is told after a turn the user interrupted, so that the
/// next prompt is not read as leave to finish the old one.
pub const INTERRUPTED_TURN: &str = "[mecha: the user interrupted this turn]";

/// Results for every tool call in the last assistant message, which
/// therefore has none yet, each saying what `content` gives for its id;
/// empty when the history does not end in calls.
pub fn results_for_open_calls(
    messages: &[Message],
    content: impl Fn(&str) -> &'static str,
) -> Vec<Block> {
    let Some(last) = messages.last().filter(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    last.tool_calls()
        .map(|call| Block::ToolResult {
            tool_use_id: call.id.clone(),
            content: content(&call.id).to_owned(),
            is_error: true,
            images: Vec::new(),
        })
        .collect()
}

/// Gives every tool call in the last assistant message that has no result a
/// result saying it was lost, so the history is one an API accepts (no call
/// without its result) and the model knows the call may have run. Returns
/// the message appended, if one was needed.
pub fn close_dangling_calls(messages: &mut Vec<Message>) -> Option<&Message> {
    let results = results_for_open_calls(messages, |_| LOST_RESULT);
    if results.is_empty() {
        return None;
    }
    messages.push(Message {
        role: Role::User,
        content: results,
    });
    messages.last()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    fn call(id: &str) -> Block {
        Block::ToolUse(ToolCall {
            id: id.into(),
            name: "shell".into(),
            input: serde_json::json!({}),
            input_error: None,
        })
    }

    #[test]
    fn a_call_left_without_its_result_gets_one_that_says_so() {
        let mut messages = vec![
            Message::user_text("go"),
            Message {
                role: Role::Assistant,
                content: vec![call("a"), call("b")],
            },
        ];
        let added = close_dangling_calls(&mut messages).cloned();
        let Some(added) = added else {
            panic!("no results were added");
        };
        let ids: Vec<&str> = added
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error: true,
                    ..
                } if content == LOST_RESULT => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(messages.len(), 3);
        assert!(
            close_dangling_calls(&mut messages).is_none(),
            "a closed history is left alone"
        );
    }

    #[test]
    fn an_answer_or_a_prompt_at_the_end_needs_nothing() {
        let mut messages = vec![Message::user_text("go")];
        assert!(close_dangling_calls(&mut messages).is_none());
        messages.push(Message {
            role: Role::Assistant,
            content: vec![Block::Text {
                text: "done".into(),
            }],
        });
        assert!(close_dangling_calls(&mut messages).is_none());
        assert_eq!(messages.len(), 2);
    }

    #[test]
    fn records_read_back_as_written() {
        let records = vec![
            Record::Message {
                message: Message::user_text("hi"),
                external: vec!["t1".into()],
            },
            Record::Rewind { keep: 3 },
            Record::Taint {
                taint: Taint {
                    private_data: true,
                    untrusted_input: false,
                },
            },
            Record::Surface {
                by: vec!["deploy".into()],
                tools: vec!["fs_read".into(), "skill".into()],
            },
            Record::ToolState {
                tool: "todo".into(),
                state: serde_json::json!([{"text": "a", "status": "done"}]),
            },
            Record::Compaction {
                messages: vec![Message::user_text("first")],
                tokens_before: 900,
                tokens_after: 100,
            },
            Record::Turn {
                turn: 2,
                usage: Usage::default(),
            },
            Record::Prompt { turn: 3 },
            Record::Checkpoint {
                turn: 3,
                id: "ab12".into(),
                changed: vec!["src/main.rs".into()],
                after: true,
            },
        ];
        for record in records {
            let line = serde_json::to_string(&record).unwrap_or_default();
            assert!(!line.contains('\n'), "one record, one line: {line}");
            let back: Record = serde_json::from_str(&line).unwrap_or(Record::Rewind { keep: 0 });
            assert_eq!(back, record, "{line}");
        }
    }
}
