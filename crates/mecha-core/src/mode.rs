//! Permission modes: how much runs without asking and, in plan mode, which
//! tools the model is offered at all. What each mode lets through is said
//! here once ([`PermissionMode::runs_unasked`], [`PermissionMode::offers`],
//! [`PermissionMode::refusal`]); the gate, the approvers and the loop ask.
//!
//! A session's mode can change while it runs (Shift-Tab in the TUI,
//! `/mode`, a plan's approval), so everyone who reads it (the gate, the
//! approver, the loop choosing the tool list, a subagent's child) holds
//! the same [`ModeSwitch`] and reads it at the moment it decides.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Deserialize;

use crate::{ArgKind, Egress, Tool};

/// How much runs without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Everything runs.
    Allow,
    /// Only read-only tools run.
    ReadOnly,
    /// Read-only tools run; the rest need someone to say yes.
    #[default]
    Ask,
    /// As `ask`, and a call that only writes files in the workspace
    /// ([`only_edits`]) runs too.
    AcceptEdits,
    /// Only read-only tools are offered and run: the model looks around
    /// and answers with a plan, which the user approves before anything
    /// changes.
    Plan,
}

/// Every mode, in the order of its number in a [`ModeSwitch`].
const MODES: [PermissionMode; 5] = [
    PermissionMode::Allow,
    PermissionMode::ReadOnly,
    PermissionMode::Ask,
    PermissionMode::AcceptEdits,
    PermissionMode::Plan,
];

impl PermissionMode {
    /// The mode as config and `--permission-mode` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::ReadOnly => "read-only",
            Self::Ask => "ask",
            Self::AcceptEdits => "accept-edits",
            Self::Plan => "plan",
        }
    }

    /// The mode `name` spells, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        MODES.into_iter().find(|mode| mode.as_str() == name)
    }

    /// Every spelling, for a message that lists them.
    pub fn names() -> impl Iterator<Item = &'static str> {
        MODES.into_iter().map(Self::as_str)
    }

    /// Whether a call of `tool` runs without asking anyone (rules and
    /// the interlock still judge it first).
    pub fn runs_unasked(self, tool: &dyn Tool) -> bool {
        match self {
            Self::Allow => true,
            Self::AcceptEdits => tool.read_only() || only_edits(tool),
            Self::Ask | Self::ReadOnly | Self::Plan => tool.read_only(),
        }
    }

    /// Whether a call this mode does not let run unasked is put to a
    /// person (where there is one) rather than refused.
    pub fn asks(self) -> bool {
        matches!(self, Self::Ask | Self::AcceptEdits)
    }

    /// Whether `tool` is in the list the model is sent. Plan mode sends
    /// only the read-only tools, so the others are absent rather than
    /// merely refused; a planning run (`--plan`) keeps the same ones.
    pub fn offers(self, tool: &dyn Tool) -> bool {
        self != Self::Plan || tool.read_only()
    }

    /// The gate's refusal of a call of `tool` in this mode, given before
    /// any rule or person is asked: neither an allow rule nor a yes lifts
    /// it.
    pub fn refusal(self, tool: &dyn Tool) -> Option<String> {
        let name = tool.name();
        match self {
            _ if tool.read_only() => None,
            Self::ReadOnly => Some(format!(
                "`{name}` changes things and this run is read-only; use a read-only tool or ask \
                 the user"
            )),
            Self::Plan => Some(format!(
                "`{name}` changes things and this conversation is in plan mode: only read-only \
                 tools run until the user approves a plan. Finish looking around and end your \
                 answer with the plan"
            )),
            Self::Allow | Self::Ask | Self::AcceptEdits => None,
        }
    }
}

/// Whether every effect a call of `tool` declares is a write to a file in
/// the workspace: it names a path it writes (which the gate resolves
/// through the jail, refusing one outside the workspace or protected,
/// before anyone is asked) and sends nothing anywhere. `fs_write` and
/// `fs_edit` are such tools; `shell` is not: its effects are whatever the
/// command does.
pub fn only_edits(tool: &dyn Tool) -> bool {
    tool.capabilities().egress == Egress::None
        && tool
            .argument_kinds()
            .iter()
            .any(|(_, kind)| *kind == ArgKind::WritePath)
}

/// A session's permission mode, shared by everyone who reads it; a clone
/// is the same switch.
#[derive(Debug, Clone, Default)]
pub struct ModeSwitch {
    now: Arc<AtomicU8>,
    /// The mode the run started in, which decides where it may go.
    started: PermissionMode,
}

impl From<PermissionMode> for ModeSwitch {
    fn from(mode: PermissionMode) -> Self {
        Self {
            now: Arc::new(AtomicU8::new(number(mode))),
            started: mode,
        }
    }
}

fn number(mode: PermissionMode) -> u8 {
    MODES.iter().position(|m| *m == mode).map_or(0, |n| n as u8)
}

impl ModeSwitch {
    pub fn get(&self) -> PermissionMode {
        MODES
            .get(usize::from(self.now.load(Ordering::SeqCst)))
            .copied()
            .unwrap_or_default()
    }

    /// Changes the mode to `mode`, if this run may be in it; `Err` says
    /// why not. A read-only run stays read-only, and only a run started
    /// in `allow` (`--yes`) may go back to it.
    pub fn set(&self, mode: PermissionMode) -> Result<(), String> {
        if self.started == PermissionMode::ReadOnly && mode != PermissionMode::ReadOnly {
            return Err(
                "this run is read-only (permission_mode = \"read-only\" in config); its \
                        mode cannot change on the way"
                    .to_owned(),
            );
        }
        if mode == PermissionMode::Allow && self.started != PermissionMode::Allow {
            return Err(
                "`allow` runs every call unasked: start mecha with --yes (or \
                        permission_mode = \"allow\") for it"
                    .to_owned(),
            );
        }
        self.now.store(number(mode), Ordering::SeqCst);
        Ok(())
    }

    /// The next mode in the cycle ask → accept-edits → plan (→ allow, for
    /// a run started in it) → ask, now in force.
    pub fn cycle(&self) -> Result<PermissionMode, String> {
        let mut cycle = vec![
            PermissionMode::Ask,
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
        ];
        if self.started == PermissionMode::Allow {
            cycle.push(PermissionMode::Allow);
        }
        let now = self.get();
        let next = cycle
            .iter()
            .position(|m| *m == now)
            .map_or(PermissionMode::Ask, |i| cycle[(i + 1) % cycle.len()]);
        self.set(next)?;
        Ok(next)
    }
}

#[cfg(test)]
#[path = "mode_tests.rs"]
mod tests;
