//! Carried state: what tools hand across a compaction (the todo list, the
//! skill bodies loaded so far), read fresh at the moment of compaction and
//! reproduced verbatim, because a summariser keeps what is true and drops
//! how far you got, and a paraphrased procedure is a different procedure.
//!
//! The state travels as one marked message after the summary. Each rebuild
//! drops every earlier marked message before placing the new one, so
//! exactly one copy survives however many compactions follow, and it holds
//! the state as it was at the latest.
//!
//! Compaction itself lives in the loop; this is the part it calls.

use crate::{Block, Message, Registry, Role};

/// The first line of the carried message: what it is, for the model, and
/// the mark by which the next rebuild finds it. Only a user-role message
/// whose one block is text starting with this counts, so neither a tool
/// result nor anything the model writes can pass for one.
pub const CARRIED_HEADER: &str = "[carried state: what the tools held at the last compaction, \
     reproduced verbatim; it is current, unlike the summary before it]\n";

/// The state of every tool that had any, in tool-name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedState {
    /// (tool name, its state), sorted by name like the registry.
    parts: Vec<(String, String)>,
}

impl CarriedState {
    /// Asks every tool for its state now. `None` when none has any: a
    /// tool with nothing to carry contributes nothing, not an empty heading.
    pub fn collect(registry: &Registry) -> Option<Self> {
        let parts: Vec<(String, String)> = registry
            .iter()
            .filter_map(|tool| {
                let state = tool.carried_state()?;
                (!state.trim().is_empty()).then(|| (tool.name().to_owned(), state))
            })
            .collect();
        (!parts.is_empty()).then_some(Self { parts })
    }

    /// The text of the carried message: the header, then each tool's state
    /// under a heading naming the tool.
    pub fn text(&self) -> String {
        let mut text = String::from(CARRIED_HEADER);
        for (tool, state) in &self.parts {
            text.push_str(&format!("\n## {tool}\n\n{state}\n"));
        }
        text
    }

    /// The carried message itself.
    pub fn message(&self) -> Message {
        Message::user_text(self.text())
    }

    /// Whether `message` is a carried message an earlier rebuild placed.
    pub fn is_carried(message: &Message) -> bool {
        message.role == Role::User
            && matches!(
                message.content.as_slice(),
                [Block::Text { text }] if text.starts_with(CARRIED_HEADER)
            )
    }

    /// Rebuilds a compacted conversation whose summary is at `summary`:
    /// every carried message an earlier rebuild placed goes, and the state
    /// the tools hold now lands right after the summary (at the end when
    /// `summary` is past it). Returns the index of the new carried message,
    /// `None` when no tool had state to carry.
    pub fn carry_across(
        messages: &mut Vec<Message>,
        summary: usize,
        registry: &Registry,
    ) -> Option<usize> {
        let mut at = summary.saturating_add(1);
        let mut index = 0;
        messages.retain(|m| {
            let keep = !Self::is_carried(m);
            if !keep && index < summary {
                at -= 1;
            }
            index += 1;
            keep
        });
        let carried = Self::collect(registry)?;
        let at = at.min(messages.len());
        messages.insert(at, carried.message());
        Some(at)
    }
}
