//! `fs_read` (being written).

use async_trait::async_trait;
use mecha_core::{Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

pub struct FsRead;

#[async_trait]
impl Tool for FsRead {
    fn name(&self) -> &str {
        "fs_read"
    }

    fn description(&self) -> &str {
        "fs_read"
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }

    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        Ok(ToolOutput::err("not implemented yet"))
    }
}
