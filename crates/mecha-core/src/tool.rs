//! The one trait every tool implements, wherever it comes from.

use async_trait::async_trait;
use serde_json::Value;

use crate::{Capabilities, ToolCtx, ToolOutput};

/// A tool the model can call: built-in, MCP, subagent or skill, the loop
/// cannot tell which.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does and when to use it; all the model sees before calling.
    fn description(&self) -> &str;

    /// JSON Schema of the input object.
    fn input_schema(&self) -> Value;

    /// Read-only tools skip the approval gate and are safe to run in parallel.
    fn read_only(&self) -> bool {
        false
    }

    /// Declared risk surface.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// State this tool echoes at the end of every tool result of the run, so
    /// the model re-reads it without being re-prompted (the todo list).
    fn echo(&self) -> Option<String> {
        None
    }

    /// The most bytes [`echo`](Self::echo) may return after a call to this
    /// tool (at most [`crate::MAX_ECHO_BYTES`]). A turn that calls it keeps
    /// this much room after every result, since the call may change the echo.
    fn echo_limit(&self) -> usize {
        0
    }

    /// Runs the call. Expected failures are `Ok(ToolOutput::err(..))`; `Err`
    /// is for what the model cannot route around, and ends the run.
    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput>;
}
