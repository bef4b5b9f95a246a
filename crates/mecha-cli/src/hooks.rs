//! The user's `[[hook]]` programs as the gate's hook stage: each call's
//! matching `pre_tool` hooks run (concurrently, in `mecha-hooks`), their
//! verdict decides the stage, and each hook's answer is a line on stderr.

use std::sync::Arc;

use async_trait::async_trait;
use mecha_agent::{Hook, HookVerdict};
use mecha_core::Tool;
use mecha_hooks::{Decision, HookContext, HookSet};
use serde_json::Value;

use crate::terminal::printable;

/// The run's hooks, with what every hook is told about the run.
pub struct UserHooks {
    pub set: Arc<HookSet>,
    pub context: HookContext,
}

#[async_trait]
impl Hook for UserHooks {
    async fn pre_tool(&self, tool: &dyn Tool, input: &Value, call_id: &str) -> HookVerdict {
        let verdicts = self
            .set
            .pre_tool(&self.context, tool.name(), input, call_id)
            .await;
        for run in &verdicts.each {
            let said = match &run.decision {
                Decision::Pass => "no objection".to_owned(),
                Decision::Block(reason) => format!("refused: {reason}"),
                Decision::Ask(reason) => format!("asks for a person: {reason}"),
            };
            crate::output::err_line(&printable(&format!(
                "mecha: hook `{}` on `{}`: {said}",
                run.command,
                tool.name()
            )));
        }
        for message in &verdicts.system_messages {
            crate::output::err_line(&printable(&format!("mecha: a hook says: {message}")));
        }
        match verdicts.decision {
            Decision::Pass => HookVerdict::Pass,
            Decision::Block(reason) => HookVerdict::Block(reason),
            Decision::Ask(reason) => HookVerdict::Ask(reason),
        }
    }
}
