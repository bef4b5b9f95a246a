//! The session as it stands after its records, replayed in order.

use std::collections::{BTreeMap, BTreeSet};

use mecha_core::{Message, Record, Role, Taint, Usage};
use serde_json::Value;

use crate::Entry;

/// What a resumed session starts from: the history after its last
/// compaction and rewinds, the session's taint (every taint record and
/// every result recorded as external), its narrowing and the tools' saved
/// state. A dangling tool call at the end is left as it is: closing it
/// is the resumer's to do and to journal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restored {
    pub messages: Vec<Message>,
    /// The tool results (by `tool_use_id`) whose content came from outside.
    pub external: BTreeSet<String>,
    pub taint: Taint,
    /// The last narrowing of the tool surface: what narrowed it, and the
    /// tools it keeps.
    pub surface: Option<(Vec<String>, Vec<String>)>,
    /// Each tool's last saved state.
    pub tool_states: BTreeMap<String, Value>,
    /// The highest turn recorded.
    pub turns: u32,
    /// What every recorded turn cost, added up.
    pub usage: Usage,
    /// What the user attached and no prompt has taken yet.
    pub attached: Vec<String>,
    /// The highest prompt number recorded: the next prompt's is one more.
    pub prompts: u32,
}

impl Restored {
    /// Replays `entries`, in order.
    pub fn replay(entries: &[Entry]) -> Self {
        let mut state = Self::default();
        for entry in entries {
            state.apply(&entry.record);
        }
        state
    }

    fn apply(&mut self, record: &Record) {
        match record {
            Record::Message { message, external } => {
                // A prompt takes what waited for it.
                if message.role == Role::User {
                    self.attached.clear();
                }
                self.messages.push(message.clone());
                self.external.extend(external.iter().cloned());
                // The taint record of a turn follows its results: a crash
                // between the two must not bring the session back disarmed.
                // Outside content is untrusted whatever the taint records
                // say (`Taint::record` says the same of a live result).
                self.taint.untrusted_input |= !external.is_empty();
            }
            Record::Rewind { keep } => self.messages.truncate(*keep),
            Record::Compaction { messages, .. } => self.messages = messages.clone(),
            // The union, not merely the last: taint only grows, so the two
            // agree on any file mecha wrote, and an edited one still cannot
            // disarm the interlock by recording less.
            Record::Taint { taint } => self.taint = self.taint.union(*taint),
            Record::Surface { by, tools } => self.surface = Some((by.clone(), tools.clone())),
            Record::ToolState { tool, state } => {
                self.tool_states.insert(tool.clone(), state.clone());
            }
            Record::Turn { turn, usage } => {
                self.turns = self.turns.max(*turn);
                self.usage.add(*usage);
            }
            Record::Attached { attached } => self.attached = attached.clone(),
            Record::Prompt { turn } => self.prompts = self.prompts.max(*turn),
            Record::Checkpoint { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, record: Record) -> Entry {
        Entry { seq, record }
    }

    #[test]
    fn a_rewind_cuts_the_history_but_keeps_the_taint_and_the_prompt_count() {
        let tainted = Taint {
            private_data: true,
            untrusted_input: false,
        };
        let entries = [
            entry(1, Record::Prompt { turn: 1 }),
            entry(
                2,
                Record::Message {
                    message: Message::user_text("one"),
                    external: Vec::new(),
                },
            ),
            entry(3, Record::Prompt { turn: 2 }),
            entry(
                4,
                Record::Message {
                    message: Message::user_text("two"),
                    external: Vec::new(),
                },
            ),
            entry(5, Record::Taint { taint: tainted }),
            entry(6, Record::Rewind { keep: 1 }),
        ];
        let state = Restored::replay(&entries);
        assert_eq!(state.messages, [Message::user_text("one")]);
        assert_eq!(state.taint, tainted);
        assert_eq!(state.prompts, 2, "the next prompt is the third");
    }
}
