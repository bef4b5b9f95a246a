//! `fs_write` (being written).

use async_trait::async_trait;
use mecha_core::{Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

pub struct FsWrite;

#[async_trait]
impl Tool for FsWrite {
    fn name(&self) -> &str {
        "fs_write"
    }

    fn description(&self) -> &str {
        "fs_write"
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }

    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        Ok(ToolOutput::err("not implemented yet"))
    }
}
