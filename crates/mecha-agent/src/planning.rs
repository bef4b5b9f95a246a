//! The mode in the loop: which of the tools the session's mode offers the
//! model (plan mode: the read-only ones), and the note that goes with a
//! prompt sent in plan mode. The system prompt never changes with the
//! mode (it heads the cached prefix); the tool list does, as the spec
//! accepts: absent tools cannot be called by an injection that guesses
//! their names, and the gate refuses them anyway.

use std::borrow::Cow;

use mecha_core::{Block, ModeSwitch, PermissionMode, Registry, ToolDefinition};

use crate::agent::Agent;

/// What a prompt sent in plan mode carries after its text.
pub const PLAN_NOTE: &str = "[mecha: plan mode] The user wants a plan before anything changes: \
only the read-only tools are available. Look around as much as you need, then end your answer \
with the plan: the steps, and the files or commands each one touches. The user approves it (or \
asks for changes) before any tool that changes things is offered again.";

impl Agent {
    /// The session's permission mode, shared with the gate and the
    /// approver: a front end changes it here (Shift-Tab, `/mode`, a
    /// plan's approval) and the next call and request follow.
    pub fn mode(&self) -> &ModeSwitch {
        &self.gate.mode
    }

    /// `definitions` (of `registry`'s tools) as the mode offers them: all
    /// of them, or in plan mode the read-only ones. The filter of a fixed,
    /// sorted list, so every request in one mode sends the same bytes.
    pub(crate) fn offered<'d>(
        &self,
        registry: &Registry,
        definitions: &'d [ToolDefinition],
    ) -> Cow<'d, [ToolDefinition]> {
        let mode = self.gate.mode.get();
        let offers = |name: &str| registry.get(name).is_none_or(|t| mode.offers(t.as_ref()));
        if definitions.iter().all(|d| offers(&d.name)) {
            return Cow::Borrowed(definitions);
        }
        Cow::Owned(
            definitions
                .iter()
                .filter(|d| offers(&d.name))
                .cloned()
                .collect(),
        )
    }

    /// The note for a prompt sent now, if the mode has one.
    pub(crate) fn mode_note(&self) -> Option<Block> {
        (self.gate.mode.get() == PermissionMode::Plan).then(|| Block::Text {
            text: PLAN_NOTE.to_owned(),
        })
    }
}
