//! `shell`: runs a command with `bash -c` in the workspace.

use std::time::Duration;

use async_trait::async_trait;
use mecha_core::{Capabilities, Egress, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

/// Timeouts for `shell`.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// Used when the call names no timeout.
    pub default_timeout: Duration,
    /// The most a call may ask for.
    pub max_timeout: Duration,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
        }
    }
}

pub struct Shell {
    config: ShellConfig,
}

impl Shell {
    pub fn new(config: ShellConfig) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a bash command in the workspace."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
    }

    fn capabilities(&self) -> Capabilities {
        // Unconfined, the shell can reach the network with a destination the
        // model writes, so it is a chosen send. Taint tracking cannot see
        // inside a command, so it is deliberately not an untrusted source.
        Capabilities {
            private_data: true,
            untrusted_input: false,
            egress: Egress::Chosen,
            destructive: true,
        }
    }

    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let _ = &self.config;
        Ok(ToolOutput::err("shell is not implemented yet"))
    }
}
