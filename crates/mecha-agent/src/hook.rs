//! The hook stage of the gate: a policy the user installs that sees every
//! call before the rules and the approver. It can only narrow: refuse a
//! call, never approve one past the later stages.

use async_trait::async_trait;
use mecha_core::Tool;
use serde_json::Value;

/// A pre-tool policy.
#[async_trait]
pub trait Hook: Send + Sync {
    /// `Some(reason)` refuses the call; `None` passes it on.
    async fn pre_tool(&self, tool: &dyn Tool, input: &Value) -> Option<String>;
}
