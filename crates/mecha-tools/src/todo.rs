//! `todo` (being written).

use async_trait::async_trait;
use mecha_core::{Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

#[derive(Default)]
pub struct Todo;

#[async_trait]
impl Tool for Todo {
    fn name(&self) -> &str {
        "todo"
    }

    fn description(&self) -> &str {
        "todo"
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }

    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        Ok(ToolOutput::err("not implemented yet"))
    }
}
