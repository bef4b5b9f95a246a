//! Running one turn's approved calls: concurrently, each within its share of
//! the turn's output budget.
//!
//! Deciding *whether* a call may run (interlock, hooks, rules, approval) is
//! the loop's job and happens before this.

use futures::future::join_all;
use serde_json::Value;

use crate::spill::share_of;
use crate::{Registry, ToolCtx, ToolOutput};

/// One call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// Runs `calls` concurrently and returns their results in call order.
///
/// `turn_budget` is divided evenly over the calls so one runaway tool cannot
/// starve its siblings. An unknown tool is a result the model can fix; an
/// `Err` from a tool is returned as is, for the loop to end the run.
pub async fn run_batch(
    registry: &Registry,
    ctx: &ToolCtx,
    turn: u32,
    turn_budget: usize,
    calls: &[Call],
) -> Vec<anyhow::Result<ToolOutput>> {
    let share = share_of(turn_budget, calls.len());
    let runs = calls.iter().map(|call| async move {
        let Some(tool) = registry.get(&call.name) else {
            let known: Vec<&str> = registry.names().collect();
            return Ok(ToolOutput::refusal(format!(
                "there is no tool named `{}`; the available tools are: {}",
                call.name,
                known.join(", ")
            )));
        };
        let call_ctx = ctx.for_call(&call.id, turn, share);
        let mut output = tool.call(call.input.clone(), &call_ctx).await?;
        output.content = call_ctx.fit(tool.name(), &output.content);
        if output.external {
            call_ctx.label_spills_external();
        }
        Ok(output)
    });
    join_all(runs).await
}
