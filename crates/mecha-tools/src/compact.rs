//! `compact`: the model asks for a compaction at a point of its choosing.
//!
//! The loop compacts on its own when the conversation reaches the
//! threshold, which may fall in the middle of a step; the model knows
//! better where a step ends. It is not among [`crate::builtin_tools`]: the
//! CLI registers it only when the provider has a threshold and
//! `--no-compact-tool` was not given.
//!
//! It declares nothing: it touches no file, no network, no private data,
//! and the compaction it asks for keeps the session's taint.

use async_trait::async_trait;
use mecha_core::{Capabilities, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

/// What the model reads back: what happens, and when.
pub const COMPACT_RESULT: &str = "Compaction requested: before your next turn, the earlier \
conversation will be summarised. Your first message, the summary, your todo list and the \
skills you loaded, and the most recent turns are kept; continue with the next step.";

#[derive(Debug, Default)]
pub struct Compact;

#[async_trait]
impl Tool for Compact {
    fn name(&self) -> &str {
        "compact"
    }

    fn description(&self) -> &str {
        "Ask for the conversation so far to be summarised before your next turn, freeing \
         context for the work ahead. Call it after finishing a step, before starting a new \
         phase, or when the earlier conversation is no longer needed in detail: the summary \
         keeps what was decided and found, and your todo list and any skills you loaded carry \
         across verbatim. No arguments."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn read_only(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Arguments are ignored rather than refused: a model that sends a
    /// reason along with its request still gets the compaction it asked
    /// for, and nothing it could send changes what happens.
    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let mut out = ToolOutput::ok(COMPACT_RESULT);
        out.requests_compaction = true;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_call_asks_the_loop_to_compact_and_declares_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 4096).unwrap();
        let tool = Compact;
        for input in [json!({}), json!({"reason": "step 1 is done"})] {
            let out = tool.call(input, &ctx).await.unwrap();
            assert!(out.requests_compaction);
            assert!(!out.is_error);
            assert_eq!(out.content, COMPACT_RESULT);
        }
        assert_eq!(tool.capabilities(), Capabilities::NONE);
        assert!(tool.read_only());
        assert!(
            !crate::builtin_tools(&crate::BuiltinConfig::default())
                .iter()
                .any(|t| t.name() == "compact"),
            "registered by the CLI only when a threshold exists"
        );
    }
}
