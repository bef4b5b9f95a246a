//! `fs_write`: creates or replaces a whole file, atomically.

use async_trait::async_trait;
use mecha_core::{ArgKind, Capabilities, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

use crate::args::{jail_refusal, required_str};
use crate::atomic::{Written, replace_file};
use crate::blocking::off_thread;
use crate::regular;

pub struct FsWrite;

#[async_trait]
impl Tool for FsWrite {
    fn name(&self) -> &str {
        "fs_write"
    }

    fn description(&self) -> &str {
        "Create a file or replace its whole contents. Parent directories are created. \
         The path is relative to the workspace. To change part of a file, use fs_edit."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "content": {"type": "string", "description": "The complete new contents"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        &[("path", ArgKind::WritePath)]
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            destructive: true,
            ..Capabilities::NONE
        }
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        off_thread(self.name(), input, ctx, write).await
    }
}

fn write(input: &Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolOutput> {
    let requested = required_str(input, "path")?;
    let content = required_str(input, "content")?;
    let target = ctx.resolve_in_workspace(requested).map_err(jail_refusal)?;
    let written = replace_file(&target, content.as_bytes())
        .map_err(|e| regular::failure("write", requested, e))?;
    let verb = match written {
        Written::Created => "created",
        Written::Replaced => "replaced",
    };
    Ok(ToolOutput::ok(format!(
        "{verb} {requested} ({} bytes)",
        content.len()
    )))
}
