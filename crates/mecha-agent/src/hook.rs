//! The hook stage of the gate: a policy the user installs that sees every
//! call after the interlock and before the rules and the approver. It can
//! only narrow: refuse a call, or demand a fresh human decision on it,
//! never approve one past the later stages.

use async_trait::async_trait;
use mecha_core::Tool;
use serde_json::Value;

/// What the hooks said about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// No objection: the rules and the approver still decide.
    Pass,
    /// Refused, with the reason the model is given.
    Block(String),
    /// Only a fresh human decision may let it run (refused when nobody can
    /// answer, and `--yes` does not count), as for a `prompt` rule.
    Ask(String),
}

/// A pre-tool policy.
#[async_trait]
pub trait Hook: Send + Sync {
    /// Judges the call `call_id` to `tool` with `input`.
    async fn pre_tool(&self, tool: &dyn Tool, input: &Value, call_id: &str) -> HookVerdict;
}
